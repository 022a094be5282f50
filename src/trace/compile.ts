// Turns one rule of the iptables document model (its argument vector) into something the
// walker can evaluate: a list of matches and one target. It understands the matches and
// targets that matter for Service traffic (see SUPPORTED_* below); anything else is kept as
// an "unsupported" reason so the walker can report it and assume the rule does not match.
// Compiling never throws: a rule the kernel would refuse is reported the same way. Pure.

import {
  cidrContains,
  parseCIDR,
  parseIP,
  maskOf,
  type ParsedCIDR,
  type ParsedIP,
} from '../util/ip.js';
import type { CtState, Protocol } from './packet.js';
import { parsePort } from './packet.js';

/** What a match needs to know about the packet at the point it is evaluated. */
export interface MatchEnv {
  readonly src: ParsedIP;
  readonly dst: ParsedIP;
  readonly protocol: Protocol;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly inInterface: string | undefined;
  readonly outInterface: string | undefined;
  readonly mark: bigint;
  readonly ctState: CtState;
  readonly dnatDone: boolean;
  readonly snatDone: boolean;
  /** LOCAL address test (addrtype). */
  isLocal(ip: ParsedIP): boolean;
  /** xt_recent lookup: age in seconds of `ip` in list `name`, or undefined when absent. */
  recentAge(name: string, ip: ParsedIP): number | undefined;
  /** fixture-compatible mode: recent, mark and conntrack/state matches never match. */
  readonly neverMatchStateful: boolean;
}

/** true / false, or "matches with this probability" (statistic). */
export type MatchResult = boolean | { readonly probability: number };

export interface Match {
  /** Module or option family, e.g. `tcp`, `statistic`, `source`. */
  readonly kind: string;
  /** Matches whose result depends on state the fixture tracer ignores. */
  readonly stateful: boolean;
  evaluate(env: MatchEnv): MatchResult;
}

export type MarkOp = 'set' | 'or' | 'and' | 'xor' | 'xset';

export type Target =
  | { readonly kind: 'none' }
  | { readonly kind: 'chain'; readonly chain: string; readonly goto: boolean }
  | { readonly kind: 'ACCEPT' | 'DROP' | 'RETURN' }
  | { readonly kind: 'REJECT'; readonly rejectWith: string }
  | {
      readonly kind: 'DNAT' | 'SNAT';
      readonly ip: ParsedIP | undefined;
      readonly port: number | undefined;
      readonly text: string;
    }
  | { readonly kind: 'MASQUERADE'; readonly text: string }
  | { readonly kind: 'MARK'; readonly op: MarkOp; readonly value: bigint; readonly mask: bigint }
  | { readonly kind: 'LOG'; readonly prefix: string };

export interface CompiledRule {
  readonly matches: readonly Match[];
  readonly target: Target;
  /** The `-m comment --comment` text, if any. */
  readonly comment: string | undefined;
  /** Why this rule cannot be evaluated faithfully; non-empty means "assumed not to match". */
  readonly unsupported: readonly string[];
  /** Non-fatal remarks (e.g. an unquoted multi-word comment). */
  readonly notes: readonly string[];
}

/** Targets the walker implements (besides jumps/gotos to user chains). */
export const SUPPORTED_TARGETS: readonly string[] = [
  'ACCEPT',
  'DROP',
  'RETURN',
  'REJECT',
  'DNAT',
  'SNAT',
  'MASQUERADE',
  'MARK',
  'LOG',
];

type Arity = 0 | 1 | 2 | 'words';

/** Options of each match module the walker understands, with their argument counts. */
const MODULE_OPTIONS: Readonly<Record<string, Readonly<Record<string, Arity>>>> = {
  comment: { '--comment': 'words' },
  tcp: {
    '--dport': 1,
    '--destination-port': 1,
    '--sport': 1,
    '--source-port': 1,
    '--tcp-flags': 2,
    '--syn': 0,
  },
  udp: { '--dport': 1, '--destination-port': 1, '--sport': 1, '--source-port': 1 },
  sctp: { '--dport': 1, '--destination-port': 1, '--sport': 1, '--source-port': 1 },
  multiport: {
    '--dports': 1,
    '--destination-ports': 1,
    '--sports': 1,
    '--source-ports': 1,
    '--ports': 1,
  },
  addrtype: { '--src-type': 1, '--dst-type': 1, '--limit-iface-in': 0, '--limit-iface-out': 0 },
  statistic: { '--mode': 1, '--probability': 1, '--every': 1, '--packet': 1 },
  recent: {
    '--name': 1,
    '--set': 0,
    '--rcheck': 0,
    '--update': 0,
    '--remove': 0,
    '--seconds': 1,
    '--reap': 0,
    '--rsource': 0,
    '--rdest': 0,
    '--mask': 1,
    '--hitcount': 1,
    '--rttl': 0,
  },
  mark: { '--mark': 1 },
  conntrack: { '--ctstate': 1 },
  state: { '--state': 1 },
  nfacct: { '--nfacct-name': 1 },
};

const TARGET_OPTIONS: Readonly<Record<string, Readonly<Record<string, Arity>>>> = {
  DNAT: { '--to-destination': 1, '--random': 0, '--persistent': 0 },
  SNAT: { '--to-source': 1, '--random': 0, '--random-fully': 0, '--persistent': 0 },
  MASQUERADE: { '--to-ports': 1, '--random': 0, '--random-fully': 0 },
  REJECT: { '--reject-with': 1 },
  MARK: { '--set-mark': 1, '--set-xmark': 1, '--or-mark': 1, '--and-mark': 1, '--xor-mark': 1 },
  LOG: {
    '--log-prefix': 1,
    '--log-level': 1,
    '--log-tcp-sequence': 0,
    '--log-tcp-options': 0,
    '--log-ip-options': 0,
    '--log-uid': 0,
  },
  ACCEPT: {},
  DROP: {},
  RETURN: {},
};

const PROTOCOL_NUMBERS: Readonly<Record<string, string>> = {
  '6': 'tcp',
  '17': 'udp',
  '132': 'sctp',
  '1': 'icmp',
  '58': 'ipv6-icmp',
};

/** An option as written: name, its values, and whether `!` preceded it. */
interface Opt {
  readonly name: string;
  readonly values: readonly string[];
  readonly negate: boolean;
}

function isOptionToken(t: string): boolean {
  return t.startsWith('-') && !/^-\d/.test(t);
}

/** Parses `ADDR[/PREFIX|/MASK]` (one or a comma list) into CIDRs. */
function parseAddressSpec(text: string): ParsedCIDR[] | undefined {
  const out: ParsedCIDR[] = [];
  for (const part of text.split(',')) {
    const slash = part.indexOf('/');
    if (slash < 0) {
      const ip = parseIP(part);
      if (!ip) return undefined;
      out.push({ family: ip.family, base: ip.value, prefix: ip.family === 'IPv4' ? 32 : 128 });
      continue;
    }
    const maskText = part.slice(slash + 1);
    if (maskText.includes('.') || (maskText.includes(':') && part.includes(':'))) {
      const ip = parseIP(part.slice(0, slash));
      const mask = parseIP(maskText);
      if (!ip || mask?.family !== ip.family) return undefined;
      // A dotted mask must be contiguous; find its prefix length.
      const bits = ip.family === 'IPv4' ? 32 : 128;
      let prefix = -1;
      for (let p = 0; p <= bits; p++) if (maskOf(ip.family, p) === mask.value) prefix = p;
      if (prefix < 0) return undefined;
      out.push({ family: ip.family, base: ip.value & mask.value, prefix });
      continue;
    }
    const c = parseCIDR(part);
    if (!c) {
      // iptables accepts host bits in the address (it clears them).
      const ip = parseIP(part.slice(0, slash));
      const prefix = Number(maskText);
      if (!ip || !/^\d+$/.test(maskText) || prefix > (ip.family === 'IPv4' ? 32 : 128))
        return undefined;
      out.push({ family: ip.family, base: ip.value & maskOf(ip.family, prefix), prefix });
      continue;
    }
    out.push(c);
  }
  return out;
}

interface PortRange {
  readonly lo: number;
  readonly hi: number;
}

function parsePortRanges(text: string): PortRange[] | undefined {
  const out: PortRange[] = [];
  for (const part of text.split(',')) {
    const [a, b] = part.split(':');
    const lo = a === '' || a === undefined ? 0 : parsePort(a, true);
    const hi = b === undefined ? lo : b === '' ? 65535 : parsePort(b, true);
    if (lo === undefined || hi === undefined || lo > hi) return undefined;
    out.push({ lo, hi });
  }
  return out;
}

function parseMarkValue(text: string): { value: bigint; mask: bigint } | undefined {
  const [v, m] = text.split('/');
  try {
    const value = BigInt(v ?? '');
    const mask = m === undefined ? 0xffffffffn : BigInt(m);
    return { value, mask };
  } catch {
    return undefined;
  }
}

function interfaceMatches(pattern: string, name: string): boolean {
  return pattern.endsWith('+') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

function negated(m: Match, negate: boolean): Match {
  if (!negate) return m;
  return {
    kind: m.kind,
    stateful: m.stateful,
    evaluate(env) {
      const r = m.evaluate(env);
      return typeof r === 'boolean' ? !r : { probability: 1 - r.probability };
    },
  };
}

function simple(kind: string, f: (env: MatchEnv) => boolean, stateful = false): Match {
  return { kind, stateful, evaluate: f };
}

function addrTypeOf(env: MatchEnv, ip: ParsedIP): string {
  if (env.isLocal(ip)) return 'LOCAL';
  if (ip.family === 'IPv4') {
    if (ip.value === 0xffffffffn) return 'BROADCAST';
    if (ip.value >> 28n === 0xen) return 'MULTICAST';
    if (ip.value === 0n) return 'UNSPEC';
    return 'UNICAST';
  }
  if (ip.value >> 120n === 0xffn) return 'MULTICAST';
  if (ip.value === 0n) return 'UNSPEC';
  return 'UNICAST';
}

const ADDR_TYPES = ['LOCAL', 'UNICAST', 'BROADCAST', 'MULTICAST', 'UNSPEC'];
const CT_STATE_WORDS = ['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED', 'SNAT', 'DNAT'];

/** Compiles the matches of one module from its options. */
function compileModule(
  module: string,
  opts: readonly Opt[],
  protocol: string | undefined,
  bad: (reason: string) => void,
): Match[] {
  const out: Match[] = [];
  const one = (o: Opt): string => o.values[0] ?? '';
  switch (module) {
    case 'comment':
      return out;
    case 'nfacct':
      return out; // a counter: always matches
    case 'tcp':
    case 'udp':
    case 'sctp': {
      if (protocol !== module) {
        bad(`-m ${module} needs -p ${module}`);
        return out;
      }
      for (const o of opts) {
        if (o.name === '--syn' || o.name === '--tcp-flags') {
          // The traced packet is the first of its connection: flags SYN only.
          let mask = ['SYN', 'RST', 'ACK', 'FIN'];
          let comp = ['SYN'];
          if (o.name === '--tcp-flags') {
            const expand = (s: string): string[] =>
              s === 'ALL'
                ? ['SYN', 'ACK', 'FIN', 'RST', 'URG', 'PSH', 'ECE', 'CWR']
                : s === 'NONE'
                  ? []
                  : s.split(',');
            mask = expand(o.values[0] ?? '');
            comp = expand(o.values[1] ?? '');
          }
          const packetFlags = new Set(['SYN']);
          const ok = mask.every((f) => packetFlags.has(f) === comp.includes(f));
          out.push(
            negated(
              simple('tcp-flags', () => ok),
              o.negate,
            ),
          );
          continue;
        }
        const ranges = parsePortRanges(one(o));
        if (!ranges || ranges.length !== 1) {
          bad(`${module} ${o.name} ${one(o)}: not a port or port range`);
          continue;
        }
        const r = ranges[0] ?? { lo: 0, hi: 65535 };
        const isDst = o.name === '--dport' || o.name === '--destination-port';
        out.push(
          negated(
            simple(module, (env) => {
              const p = isDst ? env.dstPort : env.srcPort;
              return p >= r.lo && p <= r.hi;
            }),
            o.negate,
          ),
        );
      }
      return out;
    }
    case 'multiport': {
      if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') {
        bad('-m multiport needs -p tcp, udp or sctp');
        return out;
      }
      for (const o of opts) {
        const ranges = parsePortRanges(one(o));
        if (!ranges) {
          bad(`multiport ${o.name} ${one(o)}: not a port list`);
          continue;
        }
        const which = o.name.startsWith('--d')
          ? 'dst'
          : o.name.startsWith('--s')
            ? 'src'
            : 'either';
        out.push(
          negated(
            simple('multiport', (env) => {
              const hit = (p: number): boolean => ranges.some((r) => p >= r.lo && p <= r.hi);
              if (which === 'dst') return hit(env.dstPort);
              if (which === 'src') return hit(env.srcPort);
              return hit(env.dstPort) || hit(env.srcPort);
            }),
            o.negate,
          ),
        );
      }
      return out;
    }
    case 'addrtype': {
      for (const o of opts) {
        if (o.name === '--limit-iface-in' || o.name === '--limit-iface-out') {
          bad(`addrtype ${o.name} is not supported`);
          continue;
        }
        const types = one(o).split(',');
        const unknown = types.filter((t) => !ADDR_TYPES.includes(t));
        if (unknown.length > 0) {
          bad(`addrtype type ${unknown.join(',')} is not supported`);
          continue;
        }
        const isSrc = o.name === '--src-type';
        out.push(
          negated(
            simple('addrtype', (env) => types.includes(addrTypeOf(env, isSrc ? env.src : env.dst))),
            o.negate,
          ),
        );
      }
      return out;
    }
    case 'statistic': {
      const mode = opts.find((o) => o.name === '--mode');
      const prob = opts.find((o) => o.name === '--probability');
      const every = opts.find((o) => o.name === '--every');
      let p: number | undefined;
      if (one(mode ?? { name: '', values: [], negate: false }) === 'random' && prob) {
        p = Number(one(prob));
        if (!Number.isFinite(p) || p < 0 || p > 1) {
          bad(`statistic --probability ${one(prob)}: not a probability`);
          return out;
        }
        if (prob.negate) p = 1 - p;
      } else if (mode && one(mode) === 'nth' && every) {
        // Every n-th new connection: over many connections each is chosen 1/n of the time.
        const n = Number(one(every));
        if (!Number.isInteger(n) || n < 1) {
          bad(`statistic --every ${one(every)}: not a positive integer`);
          return out;
        }
        p = 1 / n;
        if (every.negate) p = 1 - p;
      } else {
        bad('statistic: only --mode random --probability P and --mode nth --every N are supported');
        return out;
      }
      const probability = p;
      out.push({ kind: 'statistic', stateful: false, evaluate: () => ({ probability }) });
      return out;
    }
    case 'recent': {
      const name = one(
        opts.find((o) => o.name === '--name') ?? { name: '', values: ['DEFAULT'], negate: false },
      );
      const secondsOpt = opts.find((o) => o.name === '--seconds');
      const seconds = secondsOpt ? Number(one(secondsOpt)) : undefined;
      const rdest = opts.some((o) => o.name === '--rdest');
      const cmd = opts.find((o) => ['--set', '--rcheck', '--update', '--remove'].includes(o.name));
      // iptables-save prints the default `--mask 255.255.255.255` (a whole address).
      const mask = opts.find((o) => o.name === '--mask');
      const fullMask =
        mask === undefined ||
        one(mask) === '255.255.255.255' ||
        /^ffff(:ffff){7}$/i.test(one(mask));
      if (opts.some((o) => o.name === '--hitcount' || o.name === '--rttl') || !fullMask) {
        bad('recent --hitcount, --rttl and partial --mask are not supported');
        return out;
      }
      if (!cmd) {
        bad('recent: one of --set, --rcheck, --update, --remove is required');
        return out;
      }
      if (cmd.name === '--set') {
        // Recording the source always matches; kube-proxy's tracer follows it too.
        out.push(
          negated(
            simple('recent', () => true),
            cmd.negate,
          ),
        );
        return out;
      }
      out.push(
        negated(
          simple(
            'recent',
            (env) => {
              const age = env.recentAge(name, rdest ? env.dst : env.src);
              return age !== undefined && (seconds === undefined || age <= seconds);
            },
            true,
          ),
          cmd.negate,
        ),
      );
      return out;
    }
    case 'mark': {
      for (const o of opts) {
        const mv = parseMarkValue(one(o));
        if (!mv) {
          bad(`mark --mark ${one(o)}: not a mark value`);
          continue;
        }
        out.push(
          negated(
            simple('mark', (env) => (env.mark & mv.mask) === mv.value, true),
            o.negate,
          ),
        );
      }
      return out;
    }
    case 'conntrack':
    case 'state': {
      for (const o of opts) {
        const states = one(o).split(',');
        const unknown = states.filter((s) => !CT_STATE_WORDS.includes(s));
        if (unknown.length > 0) {
          bad(`${module} state ${unknown.join(',')} is not supported`);
          continue;
        }
        out.push(
          negated(
            simple(
              module,
              (env) =>
                states.some(
                  (s) =>
                    s === env.ctState ||
                    (s === 'DNAT' && env.dnatDone) ||
                    (s === 'SNAT' && env.snatDone),
                ),
              true,
            ),
            o.negate,
          ),
        );
      }
      return out;
    }
    default:
      bad(`match -m ${module} is not supported`);
      return out;
  }
}

function compileTarget(
  name: string,
  opts: readonly Opt[],
  isGoto: boolean,
  bad: (reason: string) => void,
): Target {
  const val = (n: string): string | undefined => opts.find((o) => o.name === n)?.values[0];
  if (isGoto) return { kind: 'chain', chain: name, goto: true };
  switch (name) {
    case 'ACCEPT':
    case 'DROP':
    case 'RETURN':
      return { kind: name };
    case 'REJECT':
      return { kind: 'REJECT', rejectWith: val('--reject-with') ?? 'icmp-port-unreachable' };
    case 'DNAT':
    case 'SNAT': {
      const text = val(name === 'DNAT' ? '--to-destination' : '--to-source') ?? '';
      const parsed = parseNatAddress(text);
      if (!parsed) {
        bad(`${name} ${text}: not an address[:port] this tracer understands`);
        return { kind: 'none' };
      }
      return { kind: name, ip: parsed.ip, port: parsed.port, text };
    }
    case 'MASQUERADE':
      return {
        kind: 'MASQUERADE',
        text: opts.map((o) => [o.name, ...o.values].join(' ')).join(' '),
      };
    case 'MARK': {
      const o = opts[0];
      const mv = o ? parseMarkValue(o.values[0] ?? '') : undefined;
      if (!o || !mv) {
        bad('MARK: missing or bad mark value');
        return { kind: 'none' };
      }
      const op: MarkOp =
        o.name === '--set-mark'
          ? 'set'
          : o.name === '--set-xmark'
            ? 'xset'
            : o.name === '--or-mark'
              ? 'or'
              : o.name === '--and-mark'
                ? 'and'
                : 'xor';
      return { kind: 'MARK', op, value: mv.value, mask: mv.mask };
    }
    case 'LOG':
      return { kind: 'LOG', prefix: val('--log-prefix') ?? '' };
    default:
      return { kind: 'chain', chain: name, goto: false };
  }
}

/**
 * Parses a DNAT/SNAT address: `IP`, `IP:PORT`, `[IPv6]:PORT`, with ranges (`IP-IP`,
 * `PORT-PORT`) reduced to their first value (the kernel picks within the range).
 */
function parseNatAddress(
  text: string,
): { ip: ParsedIP | undefined; port: number | undefined } | undefined {
  let host = text;
  let port: string | undefined;
  const m6 = /^\[([^\]]+)\](?::(.+))?$/.exec(text);
  if (m6) {
    host = m6[1] ?? '';
    port = m6[2];
  } else if (text.split(':').length === 2) {
    [host, port] = text.split(':') as [string, string];
  }
  const firstHost = host.split('-')[0] ?? '';
  const ip = firstHost === '' ? undefined : parseIP(firstHost);
  if (firstHost !== '' && !ip) return undefined;
  let p: number | undefined;
  if (port !== undefined) {
    p = parsePort(port.split('-')[0] ?? '');
    if (p === undefined) return undefined;
  }
  if (!ip && p === undefined) return undefined;
  return { ip, port: p };
}

/** Compiles one rule's arguments (what follows `-A CHAIN`). Never throws. */
export function compileRule(args: readonly string[]): CompiledRule {
  const unsupported: string[] = [];
  const notes: string[] = [];
  const bad = (reason: string): void => {
    unsupported.push(reason);
  };
  const matches: Match[] = [];
  const modules: { name: string; opts: Opt[] }[] = [];
  // Assigned from the `generic` closure, so kept in an object (closure writes are not narrowed).
  const proto: { name: string | undefined; negated: boolean } = { name: undefined, negated: false };
  let targetName: string | undefined;
  let isGoto = false;
  const targetOpts: Opt[] = [];
  let comment: string | undefined;
  let negate = false;
  let current: { name: string; opts: Opt[] } | undefined;
  let i = 0;
  const take = (): string | undefined => args[i++];

  const generic = (flag: string, value: string | undefined, neg: boolean): void => {
    if (value === undefined) {
      bad(`${flag} needs a value`);
      return;
    }
    switch (flag) {
      case '-s':
      case '--source':
      case '-d':
      case '--destination': {
        const cidrs = parseAddressSpec(value);
        if (!cidrs) {
          bad(`${flag} ${value}: not an address or CIDR`);
          return;
        }
        const isSrc = flag === '-s' || flag === '--source';
        matches.push(
          negated(
            simple(isSrc ? 'source' : 'destination', (env) =>
              cidrs.some((c) => cidrContains(c, isSrc ? env.src : env.dst)),
            ),
            neg,
          ),
        );
        return;
      }
      case '-i':
      case '--in-interface':
      case '-o':
      case '--out-interface': {
        const isIn = flag === '-i' || flag === '--in-interface';
        matches.push(
          negated(
            simple(isIn ? 'in-interface' : 'out-interface', (env) => {
              const name = isIn ? env.inInterface : env.outInterface;
              return name !== undefined && interfaceMatches(value, name);
            }),
            neg,
          ),
        );
        return;
      }
      case '-p':
      case '--protocol': {
        const p = PROTOCOL_NUMBERS[value] ?? value.toLowerCase();
        proto.name = p;
        proto.negated = neg;
        if (p === 'all') return;
        matches.push(
          negated(
            simple('protocol', (env) => env.protocol === p),
            neg,
          ),
        );
        return;
      }
      default:
        bad(`option ${flag} is not supported`);
    }
  };

  while (i < args.length) {
    const tok = take() ?? '';
    if (tok === '!') {
      negate = true;
      continue;
    }
    const neg = negate;
    negate = false;
    if (tok === '-m' || tok === '--match') {
      const name = take() ?? '';
      current = { name, opts: [] };
      modules.push(current);
      continue;
    }
    if (tok === '-j' || tok === '--jump' || tok === '-g' || tok === '--goto') {
      targetName = take();
      isGoto = tok === '-g' || tok === '--goto';
      current = undefined;
      continue;
    }
    if (tok === '-c' || tok === '--set-counters') {
      take();
      take();
      continue;
    }
    if (tok === '-f' || tok === '--fragment') {
      // The first packet of a connection is never a non-first fragment.
      matches.push(
        negated(
          simple('fragment', () => false),
          neg,
        ),
      );
      continue;
    }
    if (
      [
        '-s',
        '--source',
        '-d',
        '--destination',
        '-i',
        '--in-interface',
        '-o',
        '--out-interface',
        '-p',
        '--protocol',
      ].includes(tok)
    ) {
      let v = take();
      let n = neg;
      if (v === '!') {
        n = !n; // old syntax: -s ! ADDR
        v = take();
      }
      generic(tok, v, n);
      continue;
    }
    if (!isOptionToken(tok)) {
      bad(`unexpected argument ${JSON.stringify(tok)}`);
      continue;
    }
    // A module or target option. Targets' options follow -j; modules' follow -m (or -p for
    // the protocol's implicit module).
    let owner: { name: string; opts: Opt[] } | undefined;
    let arity: Arity | undefined;
    const tname = current === undefined ? targetName : undefined;
    const forTarget = tname !== undefined;
    if (tname !== undefined) {
      arity = TARGET_OPTIONS[tname]?.[tok];
    } else {
      owner = current;
      arity = owner ? MODULE_OPTIONS[owner.name]?.[tok] : undefined;
      const pname = proto.name;
      if (
        arity === undefined &&
        pname !== undefined &&
        MODULE_OPTIONS[pname]?.[tok] !== undefined
      ) {
        // Implicit protocol module (`-p tcp --dport 80` without `-m tcp`).
        let implicit = modules.find((m) => m.name === pname);
        if (!implicit) {
          implicit = { name: pname, opts: [] };
          modules.push(implicit);
        }
        owner = implicit;
        arity = MODULE_OPTIONS[pname][tok];
      }
    }
    const values: string[] = [];
    if (arity === undefined) {
      while (i < args.length && !isOptionToken(args[i] ?? '') && args[i] !== '!')
        values.push(take() ?? '');
      // Options of a module or target that is itself unsupported are covered by that report.
      const knownOwner =
        tname !== undefined
          ? tname in TARGET_OPTIONS
          : owner === undefined || owner.name in MODULE_OPTIONS;
      if (knownOwner)
        bad(
          `${tname !== undefined ? `target ${tname}` : owner ? `match ${owner.name}` : 'rule'}: option ${tok} is not supported`,
        );
      owner?.opts.push({ name: tok, values, negate: neg });
      continue;
    }
    if (arity === 'words') {
      const v = take();
      if (v !== undefined) values.push(v);
      // iptables-save quotes multi-word comments; hand-written dumps sometimes do not.
      const extra: string[] = [];
      while (i < args.length && !isOptionToken(args[i] ?? '') && args[i] !== '!')
        extra.push(take() ?? '');
      if (extra.length > 0) {
        values[0] = [values[0] ?? '', ...extra].join(' ');
        notes.push(`unquoted comment with spaces read as ${JSON.stringify(values[0])}`);
      }
    } else {
      for (let k = 0; k < arity; k++) values.push(take() ?? '');
    }
    if (forTarget) targetOpts.push({ name: tok, values, negate: neg });
    else owner?.opts.push({ name: tok, values, negate: neg });
    if (owner?.name === 'comment' && tok === '--comment') comment = values[0];
  }
  // `! -p tcp -m tcp` makes no sense: protocol modules then see no protocol.
  const protocol = proto.negated ? undefined : proto.name;
  for (const m of modules) {
    if (!(m.name in MODULE_OPTIONS)) {
      bad(`match -m ${m.name} is not supported`);
      continue;
    }
    matches.push(...compileModule(m.name, m.opts, protocol, bad));
  }
  const target: Target =
    targetName === undefined
      ? { kind: 'none' }
      : compileTarget(targetName, targetOpts, isGoto, bad);
  return { matches, target, comment, unsupported, notes };
}

/** Combines match results: false wins; probabilities multiply. */
export function evaluateMatches(rule: CompiledRule, env: MatchEnv): MatchResult {
  let p = 1;
  let random = false;
  for (const m of rule.matches) {
    if (m.stateful && env.neverMatchStateful) return false;
    const r = m.evaluate(env);
    if (r === false) return false;
    if (r === true) continue;
    random = true;
    p *= r.probability;
  }
  return random ? { probability: p } : true;
}
