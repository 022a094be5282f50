// The nftables packet walker: follows one packet (the first of its connection, unless the
// context says otherwise) through an nftables ruleset (netfilter/nftables/model.ts Ruleset:
// our render, or a kernel's `nft list ruleset`) and returns every possible outcome with its
// probability, in the same TraceResult the iptables walker gives (result.ts), so format.ts
// presents both alike.
//
// Within a chain: rules in order, statements left to right; a match that fails ends the rule;
// `jump` returns to the next rule, `goto` does not, `return` and the end of a regular chain go
// back to the caller; verdict maps (`vmap @map`, `vmap { … }`) and NAT maps look their key up
// (concatenations, prefixes and ranges included); `numgen random mod N` forks the walk into N
// branches of probability 1/N each. `dnat`, `snat` and `masquerade` end the chain like an
// accept. Affinity sets start empty (so `ip saddr @affinity-…` never matches) unless the
// caller says the source is in one (`recent`).
//
// Across chains (kernel mode), as the kernel runs them: each hook's base chains of the
// packet's family tables (`ip`/`ip6` and `inet`) by priority — prerouting (filter -110, nat
// -100), then routing on the (DNATed) destination to input or to forward + postrouting; from
// the node itself output then postrouting, and back in over lo for a node address. accept
// ends one base chain, drop and reject end the packet, a base chain's `policy drop` applies
// when the walk falls off it. nat chains are consulted only for NEW connections, and at one
// hook only until one translated the packet. fixture-compatible mode runs kube-proxy's
// unit-test tracer order instead (packet.ts TraceMode). Pure: no I/O.

import type {
  ChainHook,
  NftRule,
  Ruleset,
  Statement,
  TableState,
  Verdict as NftVerdict,
} from '../../netfilter/nftables/model.js';
import { renderRule } from '../../netfilter/nftables/rule.js';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { formatHostPort, isLocalAddress, type Packet, type TraceContext } from '../packet.js';
import type { Hook, StepEffect } from '../result.js';
import { WalkerBase, cloneState, type Exit, type State } from '../walk-state.js';
import { objectsOfStep, roleOfSet } from './explain.js';
import { evalMatch, lookupMap, type EvalEnv, type Lookup } from './rule-eval.js';
import { parseNumber, readValues, usesNumgen, type PacketView } from './values.js';
import { buildNftView, type BaseChain, type NftView } from './view.js';

/** A ruleset prepared for tracing many packets of one family. */
export interface PreparedNftRuleset {
  readonly view: NftView;
}

export function prepareNftRuleset(
  ruleset: Ruleset,
  family: ParsedIP['family'],
): PreparedNftRuleset {
  return { view: buildNftView(ruleset, family) };
}

const MAX_DEPTH = 64;

const HOOK_NAMES: Readonly<Record<ChainHook, Hook>> = {
  prerouting: 'PREROUTING',
  input: 'INPUT',
  forward: 'FORWARD',
  output: 'OUTPUT',
  postrouting: 'POSTROUTING',
  ingress: 'PREROUTING',
};

/** Where the walker is. */
interface At {
  readonly hook: Hook;
  readonly table: TableState;
  readonly chain: string;
  readonly depth: number;
}

/** A rule being evaluated: where, which, and the numgen value of this branch. */
interface RuleAt extends At {
  readonly rule: NftRule;
  readonly index: number;
  readonly numgen: number | undefined;
}

interface StepExtra {
  readonly elementComment?: string;
  readonly target?: string;
  readonly endpoint?: string;
  readonly role?: string;
}

function tableName(t: TableState): string {
  return `${t.table.family} ${t.table.table}`;
}

/** The walker over one view; one instance per trace. */
class Walker extends WalkerBase<NftRule> {
  private readonly texts = new Map<NftRule, string>();
  readonly view: NftView;

  constructor(view: NftView, packet: Packet, ctx: TraceContext) {
    super(packet, ctx);
    this.view = view;
  }

  private text(r: NftRule): string {
    let t = this.texts.get(r);
    if (t === undefined) {
      t = renderRule(r);
      this.texts.set(r, t);
    }
    return t;
  }

  private env(at: RuleAt, s: State): EvalEnv {
    const ctx = this.ctx;
    const packet: PacketView = {
      src: s.src,
      dst: s.dst,
      protocol: this.packet.protocol,
      srcPort: s.srcPort,
      dstPort: s.dstPort,
      mark: s.mark,
      ctState: ctx.ctState.toLowerCase(),
      ctStatus: [
        ...(s.dnat !== undefined ? ['dnat'] : []),
        ...(s.snat !== undefined ? ['snat'] : []),
      ],
      inInterface: s.inInterface,
      outInterface: s.outInterface,
      numgen: at.numgen,
      isLocal: (ip) => isLocalAddress(ctx, ip),
    };
    return {
      view: this.view,
      table: at.table,
      packet,
      originalSrc: { kind: 'ip', ip: this.packet.src },
      recent: ctx.recent,
    };
  }

  private step(
    s: State,
    at: At,
    effect: StepEffect,
    detail: string,
    rule?: RuleAt,
    extra: StepExtra = {},
  ): void {
    const prefix = this.takePrefix();
    const objects = objectsOfStep(rule?.rule.comment, extra.elementComment, extra.target, at.chain);
    const role = extra.role ?? objects.role;
    const endpoint = extra.endpoint ?? objects.endpoint;
    s.path.push({
      hook: at.hook,
      table: tableName(at.table),
      chain: at.chain,
      depth: at.depth,
      effect,
      detail: prefix + detail,
      ...(rule
        ? {
            rule: rule.index + 1,
            text: this.text(rule.rule),
            ...(rule.rule.comment !== undefined ? { comment: rule.rule.comment } : {}),
          }
        : {}),
      ...(objects.servicePort !== undefined ? { servicePort: objects.servicePort } : {}),
      ...(endpoint !== undefined ? { endpoint } : {}),
      ...(role !== undefined ? { role } : {}),
    });
  }

  /** Reports a rule the walker cannot evaluate; it is then assumed not to match. */
  private reportUnsupported(s: State, at: RuleAt, reason: string): void {
    this.listUnsupported(at.rule, () => ({
      table: tableName(at.table),
      chain: at.chain,
      rule: at.index + 1,
      text: this.text(at.rule),
      reasons: [reason],
    }));
    this.step(s, at, 'unsupported', `not evaluated (${reason}); assumed not to match`, at);
  }

  /** Runs `chain` from rule `from`; returns every way the packet leaves it. */
  runChain(at: At, from: number, state: State): Exit[] {
    const rules = at.table.chains.get(at.chain)?.rules ?? [];
    const exits: Exit[] = [];
    for (let i = from; i < rules.length; i++) {
      const rule = rules[i];
      if (!rule) continue;
      const numgen = firstNumgen(rule.statements);
      if (numgen !== undefined && numgen > 0) {
        // Fork: each value of `numgen random mod N` with probability 1/N.
        for (let v = 0; v < numgen; v++) {
          const s = v === numgen - 1 ? state : cloneState(state);
          s.probability /= numgen;
          if (numgen > 1) this.chosenAtRandom(1 / numgen);
          const ra: RuleAt = { ...at, rule, index: i, numgen: v };
          if (this.evalRule(ra, s, exits)) continue;
          this.clearPrefix();
          exits.push(...this.runChain(at, i + 1, s));
        }
        return exits;
      }
      if (this.evalRule({ ...at, rule, index: i, numgen: undefined }, state, exits)) return exits;
    }
    exits.push({ kind: 'return', state });
    return exits;
  }

  /**
   * Evaluates one rule on `s`; true when it ended the chain (its exits are pushed), false
   * when the walk goes on with the next rule.
   */
  private evalRule(at: RuleAt, s: State, exits: Exit[]): boolean {
    let acted = false;
    for (const st of at.rule.statements) {
      const r = this.evalStatement(at, st, s, exits);
      if (r === 'stop') return false;
      if (r === 'end') return true;
      if (r === 'acted') acted = true;
    }
    if (!acted) this.step(s, at, 'match', 'matched; no verdict (counts only)', at);
    return false;
  }

  /** One statement: 'next' (go on), 'acted' (did something, go on), 'stop' (rule ends), 'end' (chain ends). */
  private evalStatement(
    at: RuleAt,
    st: Statement,
    s: State,
    exits: Exit[],
  ): 'next' | 'acted' | 'stop' | 'end' {
    switch (st.kind) {
      case 'match': {
        const m = evalMatch(st, this.env(at, s));
        if (m === true) return 'next';
        if (m !== false) this.reportUnsupported(s, at, m.reason);
        return 'stop';
      }
      case 'vmap': {
        const found = lookupMap(st.key, st.map, this.env(at, s));
        if (!found.found) {
          if (found.reason !== undefined) this.reportUnsupported(s, at, found.reason);
          return 'stop';
        }
        if (found.value.kind === 'data') {
          this.reportUnsupported(s, at, 'vmap element with a data value');
          return 'stop';
        }
        // `numgen … vmap { … }`: the branch (already named) is the key.
        const keyText =
          at.numgen !== undefined && st.key.kind === 'numgen'
            ? ''
            : `${found.key} in ${st.map.kind === 'setref' ? `@${st.map.name}` : '{ … }'}: `;
        return this.verdict(
          at,
          found.value,
          s,
          exits,
          keyText,
          found,
          st.map.kind === 'setref' ? st.map.name : undefined,
        );
      }
      case 'set':
        return this.setStatement(at, st, s);
      case 'nat':
        return this.nat(at, st, s, exits);
      case 'masquerade':
        s.snat = 'masquerade';
        this.step(
          s,
          at,
          'masquerade',
          "MASQUERADE (source becomes the outgoing interface's address)",
          at,
        );
        exits.push({ kind: 'verdict', verdict: 'nat', state: s });
        return 'end';
      case 'setupdate':
        this.step(
          s,
          at,
          'set-update',
          `${st.op} @${st.set} (records the source for ClientIP affinity)`,
          at,
          { target: st.set },
        );
        return 'acted';
      case 'counter':
        return 'next';
      case 'log':
        this.step(
          s,
          at,
          'log',
          `logged${st.prefix !== undefined ? ` with prefix ${JSON.stringify(st.prefix)}` : ''}`,
          at,
        );
        return 'acted';
      case 'verdict':
        return this.verdict(at, st.verdict, s, exits, '');
      case 'unsupported':
        this.reportUnsupported(s, at, `unsupported statement "${st.text}"`);
        return 'stop';
    }
  }

  private setStatement(
    at: RuleAt,
    st: Extract<Statement, { kind: 'set' }>,
    s: State,
  ): 'acted' | 'stop' {
    const isMark = st.target.kind === 'meta' && st.target.key === 'mark';
    let n: bigint | undefined;
    if (st.value.kind === 'value') n = parseNumber(st.value.value);
    else if (
      st.value.kind !== 'list' &&
      st.value.kind !== 'setref' &&
      st.value.kind !== 'anonset'
    ) {
      const r = readValues(st.value, this.env(at, s).packet);
      const v = r.ok ? r.vals[0] : undefined;
      if (v?.kind === 'num') n = v.n;
    }
    if (!isMark || n === undefined) {
      this.reportUnsupported(s, at, 'only `mark set …` is supported among set statements');
      return 'stop';
    }
    const before = s.mark;
    s.mark = n & 0xffffffffn;
    if ((s.mark & this.ctx.masqueradeMark) !== 0n) s.markedForMasquerade = true;
    this.step(s, at, 'mark', `mark 0x${before.toString(16)} -> 0x${s.mark.toString(16)}`, at);
    return 'acted';
  }

  private nat(
    at: RuleAt,
    st: Extract<Statement, { kind: 'nat' }>,
    s: State,
    exits: Exit[],
  ): 'end' | 'stop' {
    let addr: string | undefined;
    let port: number | undefined;
    if (st.to.kind === 'address') {
      addr = st.to.addr;
      port = st.to.port;
    } else {
      const found: Lookup = lookupMap(
        st.to.key,
        { kind: 'anonmap', entries: st.to.entries },
        this.env(at, s),
      );
      if (!found.found || found.value.kind !== 'data') {
        if (!found.found && found.reason !== undefined) this.reportUnsupported(s, at, found.reason);
        return 'stop';
      }
      addr = found.value.parts[0];
      const p = found.value.parts[1];
      port = st.addrPort && p !== undefined ? Number(p) : undefined;
    }
    const ip = addr === undefined || addr === '' ? undefined : parseIP(addr);
    if (addr !== undefined && addr !== '' && !ip) {
      this.reportUnsupported(s, at, `${st.type} to ${addr}: not an address`);
      return 'stop';
    }
    if (st.type === 'dnat') {
      s.dst = ip ?? s.dst;
      s.dstPort = port ?? s.dstPort;
      s.dnat = formatHostPort(s.dst, s.dstPort);
      this.step(s, at, 'dnat', `DNAT to ${s.dnat}`, at, { endpoint: s.dnat });
    } else {
      s.src = ip ?? s.src;
      s.srcPort = port ?? s.srcPort;
      s.snat = formatHostPort(s.src, s.srcPort);
      this.step(s, at, 'snat', `SNAT to ${s.snat}`, at);
    }
    exits.push({ kind: 'verdict', verdict: 'nat', state: s });
    return 'end';
  }

  /** Applies a verdict (of a rule or of a map element). */
  private verdict(
    at: RuleAt,
    v: NftVerdict,
    s: State,
    exits: Exit[],
    prefix: string,
    element?: { readonly comment?: string },
    mapName?: string,
  ): 'acted' | 'end' | 'stop' {
    const role = mapName !== undefined ? roleOfSet(mapName) : undefined;
    const extra: StepExtra = {
      ...(element?.comment !== undefined ? { elementComment: element.comment } : {}),
      ...(role !== undefined ? { role } : {}),
    };
    switch (v.kind) {
      case 'continue':
        this.step(s, at, 'match', `${prefix}continue`, at, extra);
        return 'acted';
      case 'accept':
      case 'drop':
        this.step(s, at, v.kind, `${prefix}${v.kind.toUpperCase()}`, at, extra);
        exits.push({ kind: 'verdict', verdict: v.kind, state: s });
        return 'end';
      case 'reject':
        this.step(
          s,
          at,
          'reject',
          `${prefix}REJECT${v.with !== undefined ? ` (with ${v.with})` : ''}`,
          at,
          extra,
        );
        exits.push({ kind: 'verdict', verdict: 'reject', state: s });
        return 'end';
      case 'return':
        this.step(s, at, 'return', `${prefix}return`, at, extra);
        exits.push({ kind: 'return', state: s });
        return 'end';
      case 'jump':
      case 'goto':
        if (!at.table.chains.has(v.chain)) {
          this.reportUnsupported(
            s,
            at,
            `${v.kind} to ${v.chain}: no such chain in ${tableName(at.table)}`,
          );
          return 'stop';
        }
        if (at.depth >= MAX_DEPTH) {
          this.reportUnsupported(s, at, 'jumps nested too deep (a loop?)');
          return 'stop';
        }
        this.jump(at, v.kind, v.chain, s, exits, prefix, { ...extra, target: v.chain });
        return 'end';
    }
  }

  /** A jump (or goto) into `target`; after a return the calling chain goes on. */
  private jump(
    at: RuleAt,
    kind: 'jump' | 'goto',
    target: string,
    s: State,
    exits: Exit[],
    prefix: string,
    extra: StepExtra,
  ): void {
    this.step(s, at, kind, `${prefix}${kind === 'goto' ? 'goto' : 'jump to'} ${target}`, at, extra);
    const mark = s.path.length - 1;
    const sub = this.runChain(
      { hook: at.hook, table: at.table, chain: target, depth: at.depth + 1 },
      0,
      s,
    );
    for (const e of sub) {
      const jumpStep = e.state.path[mark];
      if (e.kind === 'return' && e.state.path.length === mark + 1 && jumpStep)
        e.state.path[mark] = { ...jumpStep, empty: true };
      if (e.kind === 'verdict' || kind === 'goto') exits.push(e);
      else exits.push(...this.runChain(at, at.index + 1, e.state));
    }
  }

  /** Runs a base chain; falling off its end applies its policy. */
  runBase(hook: Hook, bc: BaseChain, state: State): Exit[] {
    const at: At = { hook, table: bc.table, chain: bc.chain.chain.name, depth: 0 };
    return this.runChain(at, 0, state).map((e) => {
      if (e.kind === 'verdict' || bc.chain.chain.policy !== 'drop') return e;
      this.step(e.state, at, 'policy', 'end of base chain: policy drop');
      return { kind: 'verdict', verdict: 'drop', state: e.state } as const;
    });
  }
}

/** The modulus of the rule's `numgen` expression, if it has one. */
function firstNumgen(stmts: readonly Statement[]): number | undefined {
  for (const st of stmts) {
    const sel =
      st.kind === 'match' || st.kind === 'vmap'
        ? st.kind === 'match'
          ? st.left
          : st.key
        : st.kind === 'nat' && st.to.kind === 'map'
          ? st.to.key
          : undefined;
    const n = sel ? usesNumgen(sel) : undefined;
    if (n) return n.modulus;
  }
  return undefined;
}

export { Walker, HOOK_NAMES };
