// The result of a trace, common to both dataplanes (the iptables walker in walk.ts and the
// nftables walker in nft/walk.ts): every possible outcome with its probability, verdict,
// translations and the steps of its path (hook, table, chain, rule, text, the Service and
// endpoint behind it), plus the rules that could not be evaluated and notes. format.ts
// presents it; walk-state.ts builds it. Pure types and one pure transformation (naming
// endpoint objects).

import type { OutcomeHop } from './hop.js';
import type { Packet, TraceContext } from './packet.js';

export type Hook = 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING';

export type StepEffect =
  | 'jump'
  | 'goto'
  | 'return'
  | 'accept'
  | 'drop'
  | 'reject'
  | 'dnat'
  | 'snat'
  | 'masquerade'
  | 'mark'
  | 'log'
  | 'match'
  | 'random-not-taken'
  | 'policy'
  | 'unsupported'
  | 'skip-nat'
  /** nftables: `update @set { … }` / `add @set { … }` (ClientIP affinity). */
  | 'set-update';

/** One thing that happened to the packet. */
export interface TraceStep {
  readonly hook: Hook;
  /** iptables: the table (`nat`, `filter`, …); nftables: family and table (`ip kube-proxy`). */
  readonly table: string;
  readonly chain: string;
  /** 1-based position of the rule in its chain (absent for policies and notes). */
  readonly rule?: number;
  /** `-A CHAIN ...` as it would be saved. */
  readonly text?: string;
  /** Line in the input, when the rule came from it. */
  readonly line?: number;
  /** The rule is one of kube-proxy's built-in-chain jumps assumed to be installed. */
  readonly assumed?: boolean;
  /** Call depth (0 = built-in chain). */
  readonly depth: number;
  readonly effect: StepEffect;
  /** Human text: `jump KUBE-SVC-…`, `DNAT to 10.180.0.1:80`, `chosen with probability 0.33`. */
  readonly detail: string;
  readonly comment?: string;
  readonly servicePort?: string;
  readonly endpoint?: string;
  readonly role?: string;
  /** A jump into a chain where no rule matched (the walk came straight back). */
  readonly empty?: boolean;
}

export type Verdict = 'accept' | 'drop' | 'reject';

export interface Outcome {
  /** Probability of this outcome among all outcomes (they sum to 1). */
  readonly probability: number;
  readonly verdict: Verdict;
  /** How the verdict was reached: a rule, a chain policy, or the end of the path. */
  readonly verdictBy: 'rule' | 'policy' | 'end';
  /** The destination after DNAT, when a rule translated it. */
  readonly dnat?: string;
  /** The source after SNAT/MASQUERADE (`masquerade` = the outgoing interface's address). */
  readonly snat?: string;
  /** Whether the source is rewritten (kernel: SNAT/MASQUERADE applied; fixture: marked). */
  readonly masquerade: boolean;
  /** Where an accepted packet goes: a process on the node, or out of the node. */
  readonly delivery?: 'local' | 'forward';
  /** The Service port and endpoint the path went through (from rule comments). */
  readonly servicePort?: string;
  readonly endpoint?: string;
  /** The object behind the endpoint (e.g. `Pod default/nginx-…`), when the caller knows it. */
  readonly endpointObject?: string;
  /** The hop on to the endpoint after this node, and its source (hop.ts), when known. */
  readonly hop?: OutcomeHop;
  readonly path: readonly TraceStep[];
}

export interface UnsupportedRule {
  readonly table: string;
  readonly chain: string;
  readonly rule: number;
  readonly text: string;
  readonly line?: number;
  readonly reasons: readonly string[];
}

export interface TraceResult {
  readonly packet: Packet;
  readonly context: TraceContext;
  readonly outcomes: readonly Outcome[];
  /** Rules met on the way that the walker could not evaluate (assumed not to match). */
  readonly unsupported: readonly UnsupportedRule[];
  /** Remarks: assumed hooks, skipped nat, lenient parsing. */
  readonly notes: readonly string[];
  /** The rules walked; absent means iptables. */
  readonly dataplane?: 'iptables' | 'nftables';
}

/**
 * Names the object behind each outcome's endpoint (`ip` → e.g. `Pod default/web-1`), as
 * EndpointSlice targetRefs give them when the rules came from manifests.
 */
export function nameEndpoints(r: TraceResult, names: ReadonlyMap<string, string>): TraceResult {
  return {
    ...r,
    outcomes: r.outcomes.map((o) => {
      const host = o.dnat?.replace(/^\[?([^\]]*?)\]?:\d+$/, '$1');
      const name = host === undefined ? undefined : names.get(host);
      return name === undefined ? o : { ...o, endpointObject: name };
    }),
  };
}
