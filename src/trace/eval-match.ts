// The tracer's match evaluators: one small compiler per kind of the typed rule vocabulary
// (netfilter/iptables/rule.ts) — the built-in matches (`-p`, `-s`, `-d`, `-i`, `-o`, `-f`)
// and the match extensions in MODULE_COMPILERS — each turning its part's options, read
// through their typed views (netfilter/iptables/rule-views.ts), into predicates over the packet (MatchEnv), or reporting why it cannot (the rule is then
// "unsupported" and assumed not to match). An extension without a compiler here (physdev,
// limit, anything unknown) is reported by name; `set` is evaluated only when the trace has an
// ipset state (IPVS mode, moduleCompiler), else it is reported too. Pure.

import {
  addrtypeOf,
  conntrackOf,
  markOf,
  multiportOf,
  portMatchOf,
  recentOf,
  setOf,
  statisticOf,
} from '../netfilter/iptables/rule-views.js';
import type { RuleOption } from '../netfilter/iptables/rule.js';
import { cidrContains, type ParsedIP } from '../util/ip.js';
import {
  ADDR_TYPES,
  addrTypeOf,
  interfaceMatches,
  parseAddressSpec,
  parseMarkValue,
  parsePortRanges,
} from './eval-values.js';
import type { CtState, Protocol } from './packet.js';

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
  /** `-m set` lookup (IPVS mode traces): whether the packet is in set `name` with `flags`. */
  readonly inSet?: (name: string, flags: readonly string[]) => boolean;
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

/** Reports why a part cannot be evaluated faithfully. */
export type Bad = (reason: string) => void;

export function negated(m: Match, negate: boolean): Match {
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

export function simple(kind: string, f: (env: MatchEnv) => boolean, stateful = false): Match {
  return { kind, stateful, evaluate: f };
}

// --- built-in matches -------------------------------------------------------------------

/** `-s` / `-d` with its value. */
export function addressMatch(
  isSrc: boolean,
  flag: string,
  value: string,
  negate: boolean,
  bad: Bad,
): Match | undefined {
  const cidrs = parseAddressSpec(value);
  if (!cidrs) {
    bad(`${flag} ${value}: not an address or CIDR`);
    return undefined;
  }
  return negated(
    simple(isSrc ? 'source' : 'destination', (env) =>
      cidrs.some((c) => cidrContains(c, isSrc ? env.src : env.dst)),
    ),
    negate,
  );
}

/** `-i` / `-o` with its pattern. */
export function interfaceMatch(isIn: boolean, value: string, negate: boolean): Match {
  return negated(
    simple(isIn ? 'in-interface' : 'out-interface', (env) => {
      const name = isIn ? env.inInterface : env.outInterface;
      return name !== undefined && interfaceMatches(value, name);
    }),
    negate,
  );
}

/** `-p NAME` (already a protocol name); `all` matches everything. */
export function protocolMatch(protocol: string, negate: boolean): Match | undefined {
  if (protocol === 'all') return undefined;
  return negated(
    simple('protocol', (env) => env.protocol === protocol),
    negate,
  );
}

/** `-f`: the first packet of a connection is never a non-first fragment. */
export function fragmentMatch(negate: boolean): Match {
  return negated(
    simple('fragment', () => false),
    negate,
  );
}

// --- match extensions -------------------------------------------------------------------

/** What every extension compiler is given besides its options. */
export interface ModuleContext {
  readonly module: string;
  /** The rule's `-p` protocol, undefined when absent or negated. */
  readonly protocol: string | undefined;
  readonly bad: Bad;
}

export type ModuleCompiler = (opts: readonly RuleOption[], ctx: ModuleContext) => Match[];

/** A TCP flags test against the traced packet: the first, flags SYN only. */
function tcpFlags(mask: readonly string[], comp: readonly string[], negate: boolean): Match {
  const packetFlags = new Set(['SYN']);
  const ok = mask.every((f) => packetFlags.has(f) === comp.includes(f));
  return negated(
    simple('tcp-flags', () => ok),
    negate,
  );
}

/** tcp, udp, sctp: `--dport`/`--sport` (one port or range), tcp flags. */
const portModule: ModuleCompiler = (opts, { module, protocol, bad }) => {
  const out: Match[] = [];
  if (protocol !== module) {
    bad(`-m ${module} needs -p ${module}`);
    return out;
  }
  for (const o of portMatchOf(opts)) {
    if (o.kind === 'tcp-flags') {
      out.push(tcpFlags(o.mask, o.comp, o.negate));
      continue;
    }
    const ranges = parsePortRanges(o.text);
    if (!ranges || ranges.length !== 1) {
      bad(`${module} ${o.name} ${o.text}: not a port or port range`);
      continue;
    }
    const r = ranges[0] ?? { lo: 0, hi: 65535 };
    const isDst = o.dir === 'dst';
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
};

const multiportModule: ModuleCompiler = (opts, { protocol, bad }) => {
  const out: Match[] = [];
  if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') {
    bad('-m multiport needs -p tcp, udp or sctp');
    return out;
  }
  for (const o of multiportOf(opts)) {
    const ranges = parsePortRanges(o.text);
    if (!ranges) {
      bad(`multiport ${o.name} ${o.text}: not a port list`);
      continue;
    }
    const which = o.dir;
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
};

const addrtypeModule: ModuleCompiler = (opts, { bad }) => {
  const out: Match[] = [];
  for (const o of addrtypeOf(opts)) {
    if (o.kind === 'limit-iface') {
      bad(`addrtype ${o.name} is not supported`);
      continue;
    }
    const types = o.types;
    const unknown = types.filter((t) => !ADDR_TYPES.includes(t));
    if (unknown.length > 0) {
      bad(`addrtype type ${unknown.join(',')} is not supported`);
      continue;
    }
    const isSrc = o.dir === 'src';
    out.push(
      negated(
        simple('addrtype', (env) => {
          const ip = isSrc ? env.src : env.dst;
          return types.includes(addrTypeOf(env.isLocal(ip), ip));
        }),
        o.negate,
      ),
    );
  }
  return out;
};

/** The probability a statistic match selects a new connection, or undefined (reported). */
function statisticProbability(opts: readonly RuleOption[], bad: Bad): number | undefined {
  const { mode, probability: prob, every } = statisticOf(opts);
  if (mode === 'random' && prob) {
    const p = Number(prob.text);
    if (!Number.isFinite(p) || p < 0 || p > 1) {
      bad(`statistic --probability ${prob.text}: not a probability`);
      return undefined;
    }
    return prob.negate ? 1 - p : p;
  }
  if (mode === 'nth' && every) {
    // Every n-th new connection: over many connections each is chosen 1/n of the time.
    const n = Number(every.text);
    if (!Number.isInteger(n) || n < 1) {
      bad(`statistic --every ${every.text}: not a positive integer`);
      return undefined;
    }
    return every.negate ? 1 - 1 / n : 1 / n;
  }
  bad('statistic: only --mode random --probability P and --mode nth --every N are supported');
  return undefined;
}

const statisticModule: ModuleCompiler = (opts, { bad }) => {
  const probability = statisticProbability(opts, bad);
  if (probability === undefined) return [];
  return [{ kind: 'statistic', stateful: false, evaluate: () => ({ probability }) }];
};

const recentModule: ModuleCompiler = (opts, { bad }) => {
  const { name, seconds, rdest, command: cmd, mask, hitcount, rttl } = recentOf(opts);
  // iptables-save prints the default `--mask 255.255.255.255` (a whole address).
  const fullMask =
    mask === undefined || mask === '255.255.255.255' || /^ffff(:ffff){7}$/i.test(mask);
  if (hitcount !== undefined || rttl || !fullMask) {
    bad('recent --hitcount, --rttl and partial --mask are not supported');
    return [];
  }
  if (!cmd) {
    bad('recent: one of --set, --rcheck, --update, --remove is required');
    return [];
  }
  // Recording the source always matches; kube-proxy's tracer follows it too.
  if (cmd.kind === 'set')
    return [
      negated(
        simple('recent', () => true),
        cmd.negate,
      ),
    ];
  const seen = (env: MatchEnv): boolean => {
    const age = env.recentAge(name, rdest ? env.dst : env.src);
    return age !== undefined && (seconds === undefined || age <= seconds);
  };
  return [negated(simple('recent', seen, true), cmd.negate)];
};

const markModule: ModuleCompiler = (opts, { bad }) => {
  const out: Match[] = [];
  for (const o of markOf(opts)) {
    const mv = parseMarkValue(o.text);
    if (!mv) {
      bad(`mark --mark ${o.text}: not a mark value`);
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
};

const CT_STATE_WORDS = ['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED', 'SNAT', 'DNAT'];

/** conntrack `--ctstate` and state `--state`, including the DNAT/SNAT virtual states. */
const ctStateModule: ModuleCompiler = (opts, { module, bad }) => {
  const out: Match[] = [];
  for (const o of conntrackOf(opts)) {
    const states = o.states;
    const unknown = states.filter((s) => !CT_STATE_WORDS.includes(s));
    if (unknown.length > 0) {
      bad(`${module} state ${unknown.join(',')} is not supported`);
      continue;
    }
    const inState = (env: MatchEnv): boolean =>
      states.some(
        (s) =>
          s === env.ctState || (s === 'DNAT' && env.dnatDone) || (s === 'SNAT' && env.snatDone),
      );
    out.push(negated(simple(module, inState, true), o.negate));
  }
  return out;
};

/** Options with no effect on the traced packet: a comment, a counter (nfacct). */
const noCondition: ModuleCompiler = () => [];

/**
 * The extensions the tracer evaluates, by name. Their unknown options are reported; any
 * other extension is reported as a whole (`match -m NAME is not supported`).
 */
export const MODULE_COMPILERS: Readonly<Record<string, ModuleCompiler>> = {
  comment: noCondition,
  nfacct: noCondition,
  tcp: portModule,
  udp: portModule,
  sctp: portModule,
  multiport: multiportModule,
  addrtype: addrtypeModule,
  statistic: statisticModule,
  recent: recentModule,
  mark: markModule,
  conntrack: ctStateModule,
  state: ctStateModule,
};

export function isTracedModule(name: string): boolean {
  return Object.hasOwn(MODULE_COMPILERS, name);
}

/** `-m set --match-set NAME FLAGS` (each set, `!` per set) against the trace's ipsets. */
const setModule: ModuleCompiler = (opts, { bad }) => {
  const view = setOf(opts);
  if (view.returnNomatch) bad('set --return-nomatch is not supported');
  return view.sets.map((s) =>
    negated(
      simple('set', (env) => env.inSet?.(s.name, s.flags) ?? false),
      s.negate,
    ),
  );
};

/** The compiler of extension `name`; `set` only for traces that carry an ipset state. */
export function moduleCompiler(name: string, withIpsets: boolean): ModuleCompiler | undefined {
  if (withIpsets && name === 'set') return setModule;
  return isTracedModule(name) ? MODULE_COMPILERS[name] : undefined;
}
