// The packet walker: follows one packet (the first of its connection, unless the context says
// otherwise) through an iptables ruleset the way netfilter does, and returns every possible
// outcome with its probability. Random choices (`-m statistic`) fork the walk; each branch
// carries its own path (hook, table, chain, rule number, rule text, the Service/endpoint its
// comment names), verdict, DNAT and masquerade.
//
// kernel mode: from a pod or outside the node, PREROUTING (raw, mangle, nat) then routing on
// the (possibly DNATed) destination: INPUT (mangle, nat, filter, security) when it is a node
// address, else FORWARD (mangle, filter, security) + POSTROUTING (mangle, nat). From the node
// itself, OUTPUT (raw, mangle, nat, filter, security) + POSTROUTING (mangle, nat), and, for a
// node address, back in over lo: PREROUTING and INPUT without nat (NAT is decided once, on
// the first packet). nat tables are consulted only for NEW connections.
//
// fixture-compatible mode reproduces kube-proxy's unit-test tracer on the same walker (see
// TraceMode in packet.ts). Pure: no I/O.

import type { IptablesDocument, IptablesTableName, Rule } from '../netfilter/iptables/model.js';
import { renderRule } from '../netfilter/iptables/render.js';
import { formatIP, type ParsedIP } from '../util/ip.js';
import { compileRule, evaluateMatches, type CompiledRule } from './compile.js';
import type { MatchEnv } from './eval-match.js';
import type { Target } from './eval-target.js';
import { objectsFromComment } from './explain.js';
import { buildView, type RulesetView } from './hooks.js';
import { setMatch } from './ipvs/ipset.js';
import {
  findVirtualServer,
  ipvsBranches,
  virtualServerAddresses,
  type IpvsTraceState,
} from './ipvs/step.js';
import {
  formatHostPort,
  isLocalAddress,
  type Packet,
  type Protocol,
  type TraceContext,
} from './packet.js';
import type { Hook, StepEffect, TraceResult, Verdict } from './result.js';
import {
  cloneState,
  PathRunner,
  formatProbability,
  initialState,
  toOutcome,
  type Exit,
  type State,
  WalkerBase,
} from './walk-state.js';

// Importers of the walker's result types from before result.ts existed.
export type { Outcome, TraceResult, TraceStep } from './result.js';
export { nameEndpoints } from './result.js';

export interface TraceOptions {
  /** Add kube-proxy's built-in-chain jumps when the input has none (default true). */
  readonly assumeKubeProxyHooks?: boolean;
  /** IPVS mode: the ipsets `-m set` reads and the virtual servers the IPVS step follows. */
  readonly ipvs?: IpvsTraceState;
}

/** A ruleset ready to trace many packets: the view, and rules compiled as they are met. */
export interface PreparedRuleset {
  readonly view: RulesetView;
  readonly compiled: Map<Rule, CompiledRule>;
  readonly ipvs?: IpvsTraceState;
}

/** Prepares `doc` once for several traces (tracePacket accepts either). */
export function prepareRuleset(doc: IptablesDocument, options: TraceOptions = {}): PreparedRuleset {
  return {
    view: buildView(doc, options.assumeKubeProxyHooks ?? true),
    compiled: new Map(),
    ...(options.ipvs ? { ipvs: options.ipvs } : {}),
  };
}

const MAX_DEPTH = 64;

/** Where the walker is: the rule being evaluated and its chain. */
interface At {
  readonly hook: Hook;
  readonly table: IptablesTableName;
  readonly chain: string;
  readonly depth: number;
  readonly ref: { readonly r: Rule; readonly index: number; readonly comment: string | undefined };
}

/** The walker over one ruleset view; one instance per trace. */
class Walker extends WalkerBase<Rule> {
  private readonly compiled: Map<Rule, CompiledRule>;
  private readonly view: RulesetView;
  readonly ipvs: IpvsTraceState | undefined;

  constructor(rules: PreparedRuleset, packet: Packet, ctx: TraceContext) {
    super(packet, ctx);
    this.view = rules.view;
    this.compiled = rules.compiled;
    this.ipvs = rules.ipvs;
  }

  get protocol(): Protocol {
    return this.packet.protocol;
  }

  private compile(r: Rule): CompiledRule {
    let c = this.compiled.get(r);
    if (!c) {
      c = compileRule(r.args, { withIpsets: this.ipvs !== undefined });
      this.compiled.set(r, c);
    }
    for (const n of c.notes) this.notes.add(`line ${r.line ?? '?'}: ${n}`);
    return c;
  }

  private env(s: State): MatchEnv {
    const ctx = this.ctx;
    const recent = new Map<string, number>();
    for (const e of ctx.recent) recent.set(e.name, e.ageSeconds);
    const src = this.packet.src;
    return {
      src: s.src,
      dst: s.dst,
      protocol: this.packet.protocol,
      srcPort: s.srcPort,
      dstPort: s.dstPort,
      inInterface: s.inInterface,
      outInterface: s.outInterface,
      mark: s.mark,
      ctState: ctx.ctState,
      dnatDone: s.dnat !== undefined,
      snatDone: s.snat !== undefined,
      isLocal: (ip) => isLocalAddress(ctx, ip),
      // The recent lists the user described hold the client's (original) source address.
      recentAge: (name, ip) =>
        ip.family === src.family && ip.value === src.value ? recent.get(name) : undefined,
      neverMatchStateful: ctx.mode === 'fixture-compatible',
      ...(this.ipvs ? { inSet: (name, flags) => this.inSet(name, flags, s) } : {}),
    };
  }

  /** `-m set`: a set the state does not hold matches nothing (iptables would refuse it). */
  private inSet(name: string, flags: readonly string[], s: State): boolean {
    const set = this.ipvs?.ipsets.get(name);
    if (!set) {
      this.notes.add(`ipset ${name} is not in the input: assumed empty`);
      return false;
    }
    const p = { ...s, protocol: this.packet.protocol };
    return setMatch(set, flags, p) !== undefined;
  }

  private step(
    s: State,
    hook: Hook,
    table: IptablesTableName,
    chain: string,
    depth: number,
    effect: StepEffect,
    detail: string,
    rule?: { r: Rule; index: number; comment: string | undefined },
  ): void {
    const objects = objectsFromComment(rule?.comment);
    const prefix = this.takePrefix();
    s.path.push({
      hook,
      table,
      chain,
      depth,
      effect,
      detail: prefix + detail,
      ...(rule
        ? {
            rule: rule.index + 1,
            text: renderRule({ chain: rule.r.chain, args: rule.r.args }),
            ...(rule.r.line !== undefined ? { line: rule.r.line } : {}),
            ...(this.view.assumed.has(rule.r) ? { assumed: true } : {}),
            ...(rule.comment !== undefined ? { comment: rule.comment } : {}),
          }
        : {}),
      ...objects,
    });
  }

  /**
   * Runs `chain` of `table` from rule `from`; returns every way the packet leaves it. Where
   * a random rule forks the walk, the branch that takes it comes first.
   */
  runChain(
    hook: Hook,
    table: IptablesTableName,
    chain: string,
    from: number,
    state: State,
    depth: number,
  ): Exit[] {
    const notTaken: Exit[] = [];
    const exits = this.runChainFrom(hook, table, chain, from, state, depth, notTaken);
    return [...exits, ...notTaken];
  }

  private runChainFrom(
    hook: Hook,
    table: IptablesTableName,
    chain: string,
    from: number,
    state: State,
    depth: number,
    notTaken: Exit[],
  ): Exit[] {
    const rules = this.view.tables.get(table)?.chains.get(chain)?.rules ?? [];
    const s = state;
    const exits: Exit[] = [];
    for (let i = from; i < rules.length; i++) {
      const r = rules[i];
      if (!r) continue;
      const c = this.compile(r);
      const at: At = { hook, table, chain, depth, ref: { r, index: i, comment: c.comment } };
      if (this.isUnsupported(at, c, s)) continue;
      const m = evaluateMatches(c, this.env(s));
      if (m === false) continue;
      if (m !== true && !this.forkRandom(at, m.probability, s, notTaken)) return exits;
      if (this.applyTarget(at, c.target, s, exits)) return exits;
    }
    exits.push({ kind: 'return', state: s });
    return exits;
  }

  /** Reports a rule the walker cannot evaluate (it is then assumed not to match). */
  private isUnsupported(at: At, c: CompiledRule, s: State): boolean {
    const { table, chain, depth } = at;
    const { r, index } = at.ref;
    const reasons = [...c.unsupported];
    const t = c.target;
    if (t.kind === 'chain' && !this.view.tables.get(table)?.chains.has(t.chain))
      reasons.push(`target ${t.chain} is neither a chain of table ${table} nor a supported target`);
    if (t.kind === 'chain' && depth >= MAX_DEPTH) reasons.push('jumps nested too deep (a loop?)');
    if (reasons.length === 0) return false;
    this.listUnsupported(r, () => ({
      table,
      chain,
      rule: index + 1,
      text: renderRule({ chain: r.chain, args: r.args }),
      ...(r.line !== undefined ? { line: r.line } : {}),
      reasons,
    }));
    this.stepAt(
      s,
      at,
      'unsupported',
      `not evaluated (${reasons.join('; ')}); assumed not to match`,
    );
    return true;
  }

  /**
   * A random rule (`-m statistic`): the branch that does not take it continues the chain
   * into `notTaken`; `s` takes it. Returns false when it is never taken.
   */
  private forkRandom(at: At, p: number, s: State, notTaken: Exit[]): boolean {
    if (p < 1) {
      const other = cloneState(s);
      other.probability *= 1 - p;
      this.stepAt(
        other,
        at,
        'random-not-taken',
        `not chosen at random (probability ${formatProbability(1 - p)})`,
      );
      notTaken.push(
        ...this.runChain(at.hook, at.table, at.chain, at.ref.index + 1, other, at.depth),
      );
    }
    if (p <= 0) return false;
    s.probability *= p;
    this.chosenAtRandom(p);
    return true;
  }

  /** Applies a matched rule's target; true when it ends the chain (exits are pushed). */
  private applyTarget(at: At, t: Target, s: State, exits: Exit[]): boolean {
    switch (t.kind) {
      case 'none':
        this.stepAt(s, at, 'match', 'matched; no target (counts only)');
        return false;
      case 'LOG':
        this.stepAt(
          s,
          at,
          'log',
          `logged${t.prefix ? ` with prefix ${JSON.stringify(t.prefix)}` : ''}`,
        );
        return false;
      case 'MARK': {
        const before = s.mark;
        s.mark = applyMark(s.mark, t.op, t.value, t.mask);
        if ((s.mark & this.ctx.masqueradeMark) !== 0n) s.markedForMasquerade = true;
        this.stepAt(s, at, 'mark', `mark 0x${before.toString(16)} -> 0x${s.mark.toString(16)}`);
        return false;
      }
      case 'ACCEPT':
        return this.verdict(at, s, exits, 'accept', 'accept', 'ACCEPT');
      case 'DROP':
        return this.verdict(at, s, exits, 'drop', 'drop', 'DROP');
      case 'REJECT':
        return this.verdict(at, s, exits, 'reject', 'reject', `REJECT (${t.rejectWith})`);
      case 'RETURN':
        this.stepAt(s, at, 'return', 'RETURN');
        exits.push({ kind: 'return', state: s });
        return true;
      case 'DNAT': {
        const ip = t.ip ?? s.dst;
        // kube-proxy's own tracer rewrites the address only (fixtures README).
        const port = this.ctx.mode === 'fixture-compatible' ? s.dstPort : (t.port ?? s.dstPort);
        s.dst = ip;
        s.dstPort = port;
        s.dnat = formatHostPort(ip, t.port ?? port);
        return this.verdict(at, s, exits, 'dnat', 'nat', `DNAT to ${t.text}`);
      }
      case 'SNAT':
        if (t.ip) s.src = t.ip;
        if (t.port !== undefined) s.srcPort = t.port;
        s.snat = t.text;
        return this.verdict(at, s, exits, 'snat', 'nat', `SNAT to ${t.text}`);
      case 'MASQUERADE':
        s.snat = 'masquerade';
        return this.verdict(
          at,
          s,
          exits,
          'masquerade',
          'nat',
          "MASQUERADE (source becomes the outgoing interface's address)",
        );
      case 'chain':
        this.jump(at, t.chain, t.goto, s, exits);
        return true;
    }
  }

  private verdict(
    at: At,
    s: State,
    exits: Exit[],
    effect: StepEffect,
    verdict: Verdict | 'nat',
    detail: string,
  ): true {
    this.stepAt(s, at, effect, detail);
    exits.push({ kind: 'verdict', verdict, state: s });
    return true;
  }

  /** A jump (or goto) into `target`; after a return the calling chain goes on. */
  private jump(at: At, target: string, goto: boolean, s: State, exits: Exit[]): void {
    const { hook, table, chain, depth } = at;
    this.stepAt(s, at, goto ? 'goto' : 'jump', `${goto ? 'goto' : 'jump to'} ${target}`);
    const mark = s.path.length - 1;
    const sub = this.runChain(hook, table, target, 0, s, depth + 1);
    for (const e of sub) {
      const jumpStep = e.state.path[mark];
      if (e.kind === 'return' && e.state.path.length === mark + 1 && jumpStep)
        e.state.path[mark] = { ...jumpStep, empty: true };
      if (e.kind === 'verdict') exits.push(e);
      else if (goto) exits.push(e);
      else exits.push(...this.runChain(hook, table, chain, at.ref.index + 1, e.state, depth));
    }
  }

  private stepAt(s: State, at: At, effect: StepEffect, detail: string): void {
    this.step(s, at.hook, at.table, at.chain, at.depth, effect, detail, at.ref);
  }

  /** Runs a built-in chain; falling off its end applies its policy. */
  runBuiltin(hook: Hook, table: IptablesTableName, state: State): Exit[] {
    const tv = this.view.tables.get(table);
    const cv = tv?.chains.get(hook);
    if (!cv) return [{ kind: 'return', state }];
    return this.runChain(hook, table, hook, 0, state, 0).map((e) => {
      if (e.kind === 'verdict') return e;
      if (cv.policy === 'DROP') {
        const s = e.state;
        this.step(s, hook, table, hook, 0, 'policy', `end of built-in chain: policy ${cv.policy}`);
        return { kind: 'verdict', verdict: 'drop', state: s } as const;
      }
      return e;
    });
  }
}

function applyMark(mark: bigint, op: string, value: bigint, mask: bigint): bigint {
  const m32 = 0xffffffffn;
  switch (op) {
    case 'set':
      return value & m32;
    case 'xset':
      return ((mark & ~mask) ^ value) & m32;
    case 'or':
      return (mark | value) & m32;
    case 'and':
      return mark & value & m32;
    default:
      return (mark ^ value) & m32;
  }
}

type Stage =
  | { readonly kind: 'hook'; readonly hook: Hook; readonly tables: readonly IptablesTableName[] }
  | {
      readonly kind: 'chain';
      readonly hook: Hook;
      readonly table: IptablesTableName;
      readonly chain: string;
    }
  | { readonly kind: 'route'; readonly after: 'prerouting' | 'output' }
  | { readonly kind: 'ipvs'; readonly hook: 'INPUT' | 'OUTPUT' }
  | { readonly kind: 'deliver'; readonly where: 'local' | 'forward' };

function deliver(where: 'local' | 'forward'): Stage[] {
  return [{ kind: 'deliver', where }];
}

/** Runs the stages of a packet's path; every way the packet leaves it is one `done`. */
class Pipeline extends PathRunner<Walker> {
  /** nat tables are consulted only for NEW connections. */
  natTables(tables: IptablesTableName[]): IptablesTableName[] {
    return this.isNew ? tables : tables.filter((t) => t !== 'nat');
  }

  /** The stages a packet goes through, by mode and origin (see file header). */
  stages(): Stage[] {
    if (this.ctx.mode === 'fixture-compatible')
      return [
        { kind: 'hook', hook: 'PREROUTING', tables: ['nat'] },
        { kind: 'chain', hook: 'FORWARD', table: 'filter', chain: 'KUBE-SERVICES' },
        { kind: 'chain', hook: 'FORWARD', table: 'filter', chain: 'KUBE-EXTERNAL-SERVICES' },
        { kind: 'chain', hook: 'FORWARD', table: 'filter', chain: 'KUBE-NODEPORTS' },
        { kind: 'chain', hook: 'FORWARD', table: 'filter', chain: 'KUBE-PROXY-FIREWALL' },
      ];
    if (this.ctx.origin === 'node' && this.walker.ipvs)
      // IPVS takes the node's own packets in LOCAL_OUT right after nat OUTPUT.
      return [
        { kind: 'hook', hook: 'OUTPUT', tables: this.natTables(['raw', 'mangle', 'nat']) },
        { kind: 'ipvs', hook: 'OUTPUT' },
        { kind: 'hook', hook: 'OUTPUT', tables: ['filter', 'security'] },
        { kind: 'hook', hook: 'POSTROUTING', tables: this.natTables(['mangle', 'nat']) },
        { kind: 'route', after: 'output' },
      ];
    if (this.ctx.origin === 'node')
      return [
        {
          kind: 'hook',
          hook: 'OUTPUT',
          tables: this.natTables(['raw', 'mangle', 'nat', 'filter', 'security']),
        },
        { kind: 'hook', hook: 'POSTROUTING', tables: this.natTables(['mangle', 'nat']) },
        { kind: 'route', after: 'output' },
      ];
    return [
      { kind: 'hook', hook: 'PREROUTING', tables: this.natTables(['raw', 'mangle', 'nat']) },
      { kind: 'route', after: 'prerouting' },
    ];
  }

  run(stages: readonly Stage[], state: State): void {
    const [stage, ...rest] = stages;
    if (!stage) {
      this.accepted(state);
      return;
    }
    if (stage.kind === 'deliver') {
      this.accepted(state, stage.where);
      return;
    }
    if (stage.kind === 'route') {
      this.route(stage.after, state);
      return;
    }
    if (stage.kind === 'ipvs') {
      this.ipvsStep(stage.hook, state, rest);
      return;
    }
    if (stage.kind === 'chain') {
      const exits = this.walker.runChain(stage.hook, stage.table, stage.chain, 0, state, 0);
      this.continueWith(exits, true, (s) => {
        this.run(rest, s);
      });
      return;
    }
    const [table, ...moreTables] = stage.tables;
    if (table === undefined) {
      this.run(rest, state);
      return;
    }
    if (table === 'nat' && !this.isNew) {
      this.run([{ ...stage, tables: moreTables }, ...rest], state);
      return;
    }
    // With the packet's interfaces as this hook sees them.
    if (stage.hook === 'POSTROUTING' && state.outInterface === undefined)
      state.outInterface = this.ctx.outInterface;
    const exits = this.walker.runBuiltin(stage.hook, table, state);
    this.continueWith(exits, false, (next) => {
      this.run([{ ...stage, tables: moreTables }, ...rest], next);
    });
  }

  /**
   * The IPVS step: a packet to a virtual server goes on once per real server (DNATed, with
   * its probability); from LOCAL_IN it is sent out through OUTPUT and POSTROUTING. Any
   * other packet goes on with `rest`.
   */
  private ipvsStep(hook: 'INPUT' | 'OUTPUT', state: State, rest: readonly Stage[]): void {
    const t = this.walker.ipvs;
    const p = this.walker.protocol;
    const vs = t && findVirtualServer(t, p, state.dst, state.dstPort);
    if (!t || !vs) {
      this.run(rest, state);
      return;
    }
    for (const b of ipvsBranches(t, vs, hook)) {
      if (b.probability === 0) {
        this.walker.notes.add(`IPVS: ${b.step.detail}`);
        continue;
      }
      const s = cloneState(state);
      s.path.push(b.step);
      s.probability *= b.probability;
      const rs = b.realServer;
      if (!rs) {
        this.done.push({ state: s, verdict: 'reject', by: 'rule' });
        continue;
      }
      s.dst = rs.ip;
      s.dstPort = rs.port;
      s.dnat = formatHostPort(rs.ip, rs.port);
      if (hook === 'OUTPUT') {
        this.run(rest, s);
        continue;
      }
      s.outInterface = this.ctx.outInterface;
      const where = isLocalAddress(this.ctx, rs.ip) ? 'local' : 'forward';
      this.run(
        [
          { kind: 'hook', hook: 'OUTPUT', tables: ['mangle', 'filter', 'security'] },
          { kind: 'hook', hook: 'POSTROUTING', tables: this.natTables(['mangle', 'nat']) },
          ...deliver(where),
        ],
        s,
      );
    }
  }

  /** Routing on the (possibly DNATed) destination: to the node itself, or on out of it. */
  private route(after: 'prerouting' | 'output', state: State): void {
    const local = isLocalAddress(this.ctx, state.dst);
    if (after === 'prerouting') {
      if (local && this.walker.ipvs) {
        // IPVS takes the packet in LOCAL_IN after filter INPUT, before nat INPUT.
        state.outInterface = undefined;
        this.run(
          [
            { kind: 'hook', hook: 'INPUT', tables: ['mangle', 'filter', 'security'] },
            { kind: 'ipvs', hook: 'INPUT' },
            { kind: 'hook', hook: 'INPUT', tables: this.natTables(['nat']) },
            ...deliver('local'),
          ],
          state,
        );
      } else if (local) {
        state.outInterface = undefined;
        const tables = this.natTables(['mangle', 'nat', 'filter', 'security']);
        this.run([{ kind: 'hook', hook: 'INPUT', tables }, ...deliver('local')], state);
      } else {
        state.outInterface = this.ctx.outInterface;
        this.run(
          [
            { kind: 'hook', hook: 'FORWARD', tables: ['mangle', 'filter', 'security'] },
            { kind: 'hook', hook: 'POSTROUTING', tables: this.natTables(['mangle', 'nat']) },
            ...deliver('forward'),
          ],
          state,
        );
      }
      return;
    }
    // After OUTPUT + POSTROUTING: a node address loops back in over lo.
    if (!local) {
      this.run(deliver('forward'), state);
      return;
    }
    state.inInterface = 'lo';
    state.outInterface = undefined;
    this.run(
      [
        { kind: 'hook', hook: 'PREROUTING', tables: ['raw', 'mangle'] },
        { kind: 'hook', hook: 'INPUT', tables: ['mangle', 'filter', 'security'] },
        ...deliver('local'),
      ],
      state,
    );
  }
}

function traceNotes(view: RulesetView, ctx: TraceContext): string[] {
  const notes: string[] = [];
  if (view.assumedChains.length > 0)
    notes.push(
      `the input has no jumps from ${view.assumedChains.join(', ')} into kube-proxy's chains; assumed the ones kube-proxy installs (marked "assumed")`,
    );
  if (ctx.ctState !== 'NEW')
    notes.push(
      `conntrack state ${ctx.ctState}: nat tables are not consulted (NAT is decided on a connection's first packet)`,
    );
  return notes;
}

/**
 * Traces `packet` through the rules of `doc` in `ctx`. Never throws for rules it cannot
 * evaluate: they are listed in `unsupported` and assumed not to match.
 */
export function tracePacket(
  rules: IptablesDocument | PreparedRuleset,
  packet: Packet,
  ctx: TraceContext,
  options: TraceOptions = {},
): TraceResult {
  const prepared = 'view' in rules ? rules : prepareRuleset(rules, options);
  // Virtual server addresses are bound on kube-ipvs0: local to the node.
  const runCtx = prepared.ipvs
    ? {
        ...ctx,
        localAddresses: [...ctx.localAddresses, ...virtualServerAddresses(prepared.ipvs)],
      }
    : ctx;
  const walker = new Walker(prepared, packet, runCtx);
  const notes = traceNotes(prepared.view, ctx);
  const fwmark = prepared.ipvs?.ipvs.ignored.length ?? 0;
  if (fwmark > 0)
    notes.push(`IPVS: ${fwmark} fwmark service line(s) not followed (kube-proxy writes none)`);
  const pipeline = new Pipeline(walker, runCtx);
  pipeline.run(pipeline.stages(), initialState(packet, runCtx));
  return {
    packet,
    context: ctx,
    outcomes: pipeline.done.map((d) => toOutcome(d, runCtx)),
    unsupported: walker.unsupportedRules(),
    notes: [...notes, ...walker.notes],
  };
}

/** The address text used in outputs. */
export function addressText(ip: ParsedIP): string {
  return formatIP(ip);
}
