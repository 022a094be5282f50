// The state both walkers (iptables walk.ts, nftables nft/walk.ts) carry along one path —
// the packet's addresses and ports as rewritten so far, mark, NAT done, probability, the
// steps taken — how a chain is left (a return or a verdict), how a path ends, and the
// Outcome (result.ts) each ended path becomes; also what both walkers keep for one trace
// (WalkerBase). Pure.

import type { ParsedIP } from '../util/ip.js';
import type { Packet, TraceContext } from './packet.js';
import type { Outcome, TraceStep, UnsupportedRule, Verdict } from './result.js';

/** One path's state; cloned where the walk forks. */
export interface State {
  src: ParsedIP;
  dst: ParsedIP;
  srcPort: number;
  dstPort: number;
  mark: bigint;
  markedForMasquerade: boolean;
  dnat: string | undefined;
  snat: string | undefined;
  probability: number;
  path: TraceStep[];
  inInterface: string | undefined;
  outInterface: string | undefined;
}

/** How the walk leaves a chain: back to its caller, or with a verdict (`nat`: translated). */
export type Exit =
  | { readonly kind: 'return'; readonly state: State }
  | { readonly kind: 'verdict'; readonly verdict: Verdict | 'nat'; readonly state: State };

/** How one path ends. */
export interface Done {
  readonly state: State;
  readonly verdict: Verdict;
  readonly by: 'rule' | 'policy' | 'end';
  readonly delivery?: 'local' | 'forward';
}

export function cloneState(s: State): State {
  return { ...s, path: [...s.path] };
}

export function initialState(packet: Packet, ctx: TraceContext): State {
  return {
    src: packet.src,
    dst: packet.dst,
    srcPort: packet.srcPort,
    dstPort: packet.dstPort,
    mark: ctx.mark,
    markedForMasquerade: (ctx.mark & ctx.masqueradeMark) !== 0n,
    dnat: undefined,
    snat: undefined,
    probability: 1,
    path: [],
    inInterface: ctx.origin === 'node' ? undefined : ctx.inInterface,
    outInterface: undefined,
  };
}

/**
 * Goes on (`next`) with every exit that lets the packet continue — a return, a NAT, and an
 * accept unless `acceptEnds` (an accept ends one table's or base chain's walk at a hook; in
 * fixture-compatible chain stages it is the verdict) — and records the others in `done`.
 */
export function continueExits(
  exits: readonly Exit[],
  acceptEnds: boolean,
  done: Done[],
  next: (s: State, e: Exit) => void,
): void {
  for (const e of exits) {
    if (e.kind === 'return' || e.verdict === 'nat' || (e.verdict === 'accept' && !acceptEnds)) {
      next(e.state, e);
      continue;
    }
    const last = e.state.path.at(-1);
    done.push({
      state: e.state,
      verdict: e.verdict,
      by: last?.effect === 'policy' ? 'policy' : 'rule',
    });
  }
}

/**
 * What both pipelines (the stages of a packet's path over one walker) share: the ends
 * recorded so far, the walker, the context, whether nat is consulted (NEW connections).
 */
export abstract class PathRunner<W> {
  readonly done: Done[] = [];
  protected readonly walker: W;
  protected readonly ctx: TraceContext;
  protected readonly isNew: boolean;

  constructor(walker: W, ctx: TraceContext) {
    this.walker = walker;
    this.ctx = ctx;
    this.isNew = ctx.ctState === 'NEW';
  }

  /** The path ends accepted: at the end of its stages, or delivered (local or forward). */
  protected accepted(state: State, delivery?: 'local' | 'forward'): void {
    this.done.push({
      state,
      verdict: 'accept',
      by: 'end',
      ...(delivery !== undefined ? { delivery } : {}),
    });
  }

  /** Goes on with the exits that let the packet continue; records the others. */
  protected continueWith(
    exits: readonly Exit[],
    acceptEnds: boolean,
    next: (s: State, e: Exit) => void,
  ): void {
    continueExits(exits, acceptEnds, this.done, next);
  }
}

/** A probability as step text (`0.5`, `0.3333333333`). */
export function formatProbability(p: number): string {
  return Number(p.toFixed(10)).toString();
}

/**
 * The outcome of one path. The Service port is the last one named on the path (not by a
 * random branch that was not taken), the endpoint the last one named (else the DNAT target)
 * when the packet was translated. `masquerade`: kernel mode, a SNAT/MASQUERADE applied;
 * fixture-compatible mode, also the masquerade mark set (kube-proxy's tracers' `masq`).
 */
export function toOutcome(d: Done, ctx: TraceContext): Outcome {
  const s = d.state;
  const named = [...s.path].reverse();
  const endpoint = named.find((p) => p.endpoint !== undefined)?.endpoint ?? s.dnat;
  const servicePort = named.find(
    (p) => p.servicePort !== undefined && p.effect !== 'random-not-taken',
  )?.servicePort;
  const masquerade =
    s.snat !== undefined || (ctx.mode === 'fixture-compatible' && s.markedForMasquerade);
  return {
    probability: Number(s.probability.toFixed(12)),
    verdict: d.verdict,
    verdictBy: d.by,
    ...(s.dnat !== undefined ? { dnat: s.dnat } : {}),
    ...(s.snat !== undefined ? { snat: s.snat } : {}),
    masquerade,
    ...(d.delivery !== undefined ? { delivery: d.delivery } : {}),
    ...(servicePort !== undefined ? { servicePort } : {}),
    ...(endpoint !== undefined && s.dnat !== undefined ? { endpoint } : {}),
    path: s.path,
  };
}

/**
 * What both walkers keep for one trace besides their ruleset: the packet and its context,
 * notes, the rules they could not evaluate (each listed once, as first reported), and the
 * text a random branch leaves for the step it leads to. `R` is the walker's rule type.
 */
export abstract class WalkerBase<R> {
  readonly notes = new Set<string>();
  protected readonly packet: Packet;
  protected readonly ctx: TraceContext;
  private readonly unsupported = new Map<R, UnsupportedRule>();
  /** Text for the next step: set when a random branch was taken, consumed by its target step. */
  private pendingPrefix = '';

  constructor(packet: Packet, ctx: TraceContext) {
    this.packet = packet;
    this.ctx = ctx;
  }

  unsupportedRules(): UnsupportedRule[] {
    return [...this.unsupported.values()];
  }

  /** Lists `rule` as not evaluable, unless it already is. */
  protected listUnsupported(rule: R, entry: () => UnsupportedRule): void {
    if (!this.unsupported.has(rule)) this.unsupported.set(rule, entry());
  }

  /** The next step was reached by a random choice of probability `p` (0 < p ≤ 1). */
  protected chosenAtRandom(p: number): void {
    this.pendingPrefix = `chosen at random (probability ${formatProbability(p)}): `;
  }

  /** No random choice leads to the next step. */
  protected clearPrefix(): void {
    this.pendingPrefix = '';
  }

  /** The prefix of this step's detail ('' unless a random choice led here); consumed. */
  protected takePrefix(): string {
    const prefix = this.pendingPrefix;
    this.pendingPrefix = '';
    return prefix;
  }
}
