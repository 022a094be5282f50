// planIptables: the pure core of kube-proxy's iptables mode. Given one family's Service
// ports, endpoints and proxier options (and, for partial syncs, what changed plus the
// previous plan's state), it returns the iptables-restore input a sync applies with
// `--noflush --counters` (as text, and as a typed document on demand), the jump rules to
// ensure from the built-in chains, the state the next plan starts from, and rule counts for
// metrics. It does no I/O: the caller applies the text and adopts `state` only if the
// restore succeeded (after a failure, plan a full sync from the old state).
//
// Full sync: every chain is written. Partial sync (KEP-3453): the filter table and the fixed
// nat chains are written in full, but only the KUBE-SVC/SVL/EXT/FW/SEP chains of changed
// Services; per-port results of unchanged Services are reused from the previous state.
// Stale service chains (existing minus active) are declared and deleted with `-X`.

import type { IptablesDocument } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import type { IPFamily } from '../../util/ip.js';
import {
  CANARY_TABLES,
  FILTER_FIXED_CHAINS,
  KUBE_FIREWALL,
  KUBE_PROXY_CANARY,
  NAT_FIXED_CHAINS,
  isServiceChainName,
} from './names.js';
import type { IptablesProxierOptions } from './options.js';
import {
  forwardRules,
  jumpRules,
  kubeFirewallRules,
  markMasqRules,
  nodePortsJumpRules,
  postroutingRules,
  writesKubeFirewall,
} from './plan-fixed.js';
import type { JumpRule } from './plan-fixed.js';
import { planServicePort } from './plan-service.js';
import type { SepName, ServicePlanContext, ServicePortFragment } from './plan-service.js';
import type { EndpointInfo } from '../model/endpoint.js';
import { RuleWriter, chainLine } from './rule-writer.js';

export type { JumpRule } from './plan-fixed.js';
export type { ServicePortFragment } from './plan-service.js';

export interface IptablesPlanInput {
  readonly family: IPFamily;
  readonly services: ServicePortMap;
  readonly endpoints: EndpointsMap;
  readonly options: IptablesProxierOptions;
  /**
   * `namespace/name` of Services changed since the previous successful plan, for a partial
   * sync; `'all'` (or absent, or no previous state, or changed options) means a full sync.
   */
  readonly changedServices?: ReadonlySet<string> | 'all';
  /**
   * Nat chains that exist in the kernel now (from `iptables-save -t nat`); defaults to the
   * chains the previous state says exist. Only KUBE-SVC/SVL/EXT/FW/SEP names matter.
   */
  readonly existingNatChains?: Iterable<string>;
  /** Milliseconds clock (for large-cluster stale-chain cleanup throttling). */
  readonly nowMs?: number;
}

/** What the next plan needs from this one. Adopt it only after a successful restore. */
export interface PlanState {
  readonly family: IPFamily;
  readonly optionsText: string;
  /** Per Service port (servicePortKey), what it contributed. */
  readonly fragments: ReadonlyMap<string, ServicePortFragment>;
  /** Stale service chains left in place (large-cluster cleanup throttling). */
  readonly orphans: ReadonlySet<string>;
  readonly lastCleanupMs: number;
  readonly largeClusterMode: boolean;
  /** Memo of endpoint chain names (carried from plan to plan). */
  readonly sepNames: WeakMap<EndpointInfo, SepName>;
}

/** Every service chain that exists once `state`'s plan is applied. */
export function natChainsOf(state: Pick<PlanState, 'fragments' | 'orphans'>): Set<string> {
  const out = new Set(state.orphans);
  for (const f of state.fragments.values()) for (const c of f.natChains) out.add(c);
  return out;
}

export interface RuleCounts {
  readonly filterChains: number;
  readonly filterRules: number;
  readonly natChains: number;
  /** nat `-A` lines written by this restore (`…_iptables_last{table=nat}`). */
  readonly natRulesLast: number;
  /** nat rules in the kernel after it (`…_iptables_total{table=nat}`). */
  readonly natRulesTotal: number;
  readonly deletedChains: number;
}

export interface IptablesPlan {
  /** The iptables-restore input (`*filter … COMMIT *nat … COMMIT`), no comments. */
  readonly text: string;
  /** `text` as a typed document (parsed on first access). */
  readonly document: IptablesDocument;
  /** Rules to ensure at the top of built-in chains; non-empty on full syncs only. */
  readonly jumps: readonly JumpRule[];
  /** Chains kube-proxy keeps (empty) in mangle, nat and filter to detect flushes. */
  readonly canaryChains: readonly {
    readonly table: 'mangle' | 'nat' | 'filter';
    readonly chain: string;
  }[];
  readonly state: PlanState;
  readonly fullSync: boolean;
  readonly counts: RuleCounts;
  readonly numServices: number;
  readonly numEndpoints: number;
  /** Service ports with iTP/eTP Local and no local endpoints (the no_local_endpoints gauge). */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
  readonly largeClusterMode: boolean;
  readonly warnings: readonly string[];
}

function isFullSync(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  optionsText: string,
) {
  return (
    input.changedServices === undefined ||
    input.changedServices === 'all' ||
    previous === undefined ||
    previous.family !== input.family ||
    previous.optionsText !== optionsText
  );
}

function countEndpoints(input: IptablesPlanInput): number {
  let total = 0;
  for (const key of input.services.keys()) total += input.endpoints.get(key)?.length ?? 0;
  return total;
}

interface StaleResult {
  readonly deleted: string[];
  readonly orphans: ReadonlySet<string>;
  readonly cleanedAt: number;
}

/** Chains of previous Service ports that their current version (if any) no longer has. */
function replacedChains(
  previous: PlanState,
  fragments: ReadonlyMap<string, ServicePortFragment>,
): string[] {
  const out: string[] = [];
  for (const [key, before] of previous.fragments) {
    const now = fragments.get(key);
    if (now === before) continue;
    const keep = new Set(now?.natChains ?? []);
    for (const c of before.natChains) if (!keep.has(c)) out.push(c);
  }
  return out;
}

/**
 * Stale service chains: from the kernel's list when given (as kube-proxy reads
 * `iptables-save`; this costs a pass over every active chain), else by diffing each
 * Service port against the previous state (cheap: only re-planned ports are compared).
 */
function staleCandidates(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  fragments: ReadonlyMap<string, ServicePortFragment>,
): string[] {
  if (input.existingNatChains !== undefined) {
    const active = natChainsOf({ fragments, orphans: new Set() });
    return [...new Set(input.existingNatChains)].filter(
      (c) => isServiceChainName(c) && !active.has(c),
    );
  }
  if (!previous) return [];
  const replaced = replacedChains(previous, fragments);
  if (previous.orphans.size === 0) return replaced;
  // An orphan is active again only if its Service port was re-planned in this sync.
  const revived = new Set<string>();
  for (const [key, f] of fragments)
    if (previous.fragments.get(key) !== f) for (const c of f.natChains) revived.add(c);
  const orphans = [...previous.orphans].filter((c) => !revived.has(c));
  return [...new Set([...replaced, ...orphans])];
}

function staleChains(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  fragments: ReadonlyMap<string, ServicePortFragment>,
  largeClusterMode: boolean,
): StaleResult {
  const now = input.nowMs ?? 0;
  const candidates = staleCandidates(input, previous, fragments).sort();
  // In large clusters kube-proxy deletes stale chains at most once per syncPeriod.
  const throttled =
    largeClusterMode &&
    previous !== undefined &&
    now - previous.lastCleanupMs <= input.options.syncPeriodMs;
  if (throttled)
    return { deleted: [], orphans: new Set(candidates), cleanedAt: previous.lastCleanupMs };
  return { deleted: candidates, orphans: new Set(), cleanedAt: now };
}

/** Per-service results gathered into the two tables' text. */
interface Assembly {
  readonly filter: string[];
  readonly natDecls: string[];
  readonly natDispatch: string[];
  readonly natChainRules: string[];
  readonly fragments: Map<string, ServicePortFragment>;
  filterRules: number;
  natRules: number;
  natChains: number;
  skippedNatRules: number;
  noLocalInternal: number;
  noLocalExternal: number;
}

const NO_ENDPOINTS: readonly EndpointInfo[] = [];

function assembleServices(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  fullSync: boolean,
  ctx: ServicePlanContext,
  optionsText: string,
): Assembly {
  const changed = input.changedServices instanceof Set ? input.changedServices : undefined;
  const a: Assembly = {
    filter: [],
    natDecls: [],
    natDispatch: [],
    natChainRules: [],
    fragments: new Map(),
    filterRules: 0,
    natRules: 0,
    natChains: 0,
    skippedNatRules: 0,
    noLocalInternal: 0,
    noLocalExternal: 0,
  };
  for (const [key, sp] of input.services) {
    const endpoints = input.endpoints.get(key) ?? NO_ENDPOINTS;
    const prev = previous?.fragments.get(key);
    const unchanged = !fullSync && changed !== undefined && !changed.has(sp.serviceKey);
    const old = unchanged ? prev : undefined;
    // Same inputs give the same rules: reuse them, but a full sync still writes them.
    const same =
      prev?.source.sp === sp &&
      prev.source.endpoints === endpoints &&
      prev.largeClusterMode === ctx.largeClusterMode &&
      previous?.optionsText === optionsText;
    const frag = old ?? (same ? prev : planServicePort(sp, endpoints, ctx));
    a.fragments.set(key, frag);
    a.filter.push(frag.filterText);
    a.filterRules += frag.filterRules;
    a.natDispatch.push(frag.natDispatchText);
    a.natRules += frag.natDispatchRules;
    if (frag.noLocalEndpointsInternal) a.noLocalInternal++;
    if (frag.noLocalEndpointsExternal) a.noLocalExternal++;
    if (old) {
      a.skippedNatRules += frag.natChainRules;
      continue;
    }
    a.natDecls.push(frag.natChainDecls);
    a.natChains += frag.natChains.length;
    a.natChainRules.push(frag.natChainText);
    a.natRules += frag.natChainRules;
  }
  return a;
}

function lazyDocument(text: string): () => IptablesDocument {
  let doc: IptablesDocument | undefined;
  return () => (doc ??= parseDocument(text));
}

/**
 * Plans one sync of one IP family (see the file header). Never throws on odd Services:
 * anything kube-proxy would skip is skipped, and notable cases come back in `warnings`.
 */
export function planIptables(input: IptablesPlanInput, previous?: PlanState): IptablesPlan {
  const { family, options } = input;
  const optionsText = JSON.stringify(options);
  const fullSync = isFullSync(input, previous, optionsText);
  const numEndpoints = countEndpoints(input);
  const largeClusterMode = numEndpoints > options.largeClusterEndpointsThreshold;
  const ctx: ServicePlanContext = {
    family,
    options,
    largeClusterMode,
    sepNames: previous?.sepNames ?? new WeakMap<EndpointInfo, SepName>(),
  };
  const a = assembleServices(input, previous, fullSync, ctx, optionsText);
  const stale = staleChains(input, previous, a.fragments, largeClusterMode);
  const last = nodePortsJumpRules(options, family);

  const filterChains: string[] = [...FILTER_FIXED_CHAINS];
  const filterHead = new RuleWriter();
  if (writesKubeFirewall(options, family)) {
    filterChains.push(KUBE_FIREWALL);
    for (const r of kubeFirewallRules()) filterHead.addArgs(r.chain, r.args);
  }
  const filterTail = new RuleWriter();
  for (const r of forwardRules(options)) filterTail.addArgs(r.chain, r.args);
  const natHead = new RuleWriter();
  for (const r of [...postroutingRules(options), ...markMasqRules(options)])
    natHead.addArgs(r.chain, r.args);
  const natTail = new RuleWriter();
  for (const r of last.rules) natTail.addArgs(r.chain, r.args);

  const text = [
    '*filter\n',
    ...filterChains.map(chainLine),
    filterHead.text,
    ...a.filter,
    filterTail.text,
    'COMMIT\n*nat\n',
    ...NAT_FIXED_CHAINS.map(chainLine),
    ...a.natDecls,
    ...stale.deleted.map(chainLine),
    natHead.text,
    ...a.natDispatch,
    ...a.natChainRules,
    ...stale.deleted.map((c) => `-X ${c}\n`),
    natTail.text,
    'COMMIT\n',
  ].join('');
  const filterRules = filterHead.count + a.filterRules + filterTail.count;
  const natRulesLast = natHead.count + a.natRules + natTail.count;
  const natChainCount = NAT_FIXED_CHAINS.length + a.natChains + stale.deleted.length;
  const getDocument = lazyDocument(text);
  return {
    text,
    get document() {
      return getDocument();
    },
    jumps: fullSync ? jumpRules() : [],
    canaryChains: CANARY_TABLES.map((table) => ({
      table: table as 'mangle' | 'nat' | 'filter',
      chain: KUBE_PROXY_CANARY,
    })),
    state: {
      family,
      optionsText,
      fragments: a.fragments,
      orphans: stale.orphans,
      lastCleanupMs: stale.cleanedAt,
      largeClusterMode,
      sepNames: ctx.sepNames,
    },
    fullSync,
    counts: {
      filterChains: filterChains.length,
      filterRules,
      natChains: natChainCount,
      natRulesLast,
      natRulesTotal: natRulesLast + a.skippedNatRules,
      deletedChains: stale.deleted.length,
    },
    numServices: input.services.size,
    numEndpoints,
    noLocalEndpointsInternal: a.noLocalInternal,
    noLocalEndpointsExternal: a.noLocalExternal,
    largeClusterMode,
    warnings: last.warnings,
  };
}
