// planIptables: the pure core of kube-proxy's iptables mode. Given one family's Service
// ports, endpoints and proxier options (and, for partial syncs, what changed plus the
// previous plan's state), it returns the iptables-restore document a sync applies with
// `--noflush --counters`, the jump rules to ensure from the built-in chains, the state the
// next plan starts from, and rule counts for metrics. It does no I/O: the caller applies
// the document and keeps `state` only if the restore succeeded.
//
// Full sync: every chain is written. Partial sync (KEP-3453): the filter table and the fixed
// nat chains are written in full, but only the KUBE-SVC/SVL/EXT/FW/SEP chains of changed
// Services; per-port results of unchanged Services are reused from the previous state.
// Stale service chains (existing minus active) are declared and deleted with `-X`.

import type {
  ChainDecl,
  IptablesDocument,
  Rule,
  TableDoc,
} from '../../netfilter/iptables/model.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import type { IPFamily } from '../../util/ip.js';
import {
  FILTER_FIXED_CHAINS,
  KUBE_FIREWALL,
  KUBE_PROXY_CANARY,
  CANARY_TABLES,
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
import type { ServicePlanContext, ServicePortFragment } from './plan-service.js';

export type { JumpRule } from './plan-fixed.js';

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
  readonly fragments: ReadonlyMap<string, ServicePortFragment>;
  /** Service chains that exist once this plan is applied. */
  readonly natChains: ReadonlySet<string>;
  readonly lastCleanupMs: number;
  readonly largeClusterMode: boolean;
  readonly sepNames: Map<string, string>;
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
  readonly document: IptablesDocument;
  /** Rules to ensure at the top of built-in chains; non-empty on full syncs only. */
  readonly jumps: readonly JumpRule[];
  /** Chains kube-proxy keeps (empty) in mangle, nat and filter to detect flushes. */
  readonly canaryChains: readonly { table: 'mangle' | 'nat' | 'filter'; chain: string }[];
  readonly state: PlanState;
  readonly fullSync: boolean;
  readonly counts: RuleCounts;
  readonly numServices: number;
  readonly numEndpoints: number;
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
  readonly largeClusterMode: boolean;
  readonly warnings: readonly string[];
}

function decl(name: string): ChainDecl {
  return { name, policy: '-' };
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
  readonly natChains: Set<string>;
  readonly cleanedAt: number;
}

function staleChains(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  active: ReadonlySet<string>,
  largeClusterMode: boolean,
): StaleResult {
  const now = input.nowMs ?? 0;
  const existing = [...(input.existingNatChains ?? previous?.natChains ?? [])].filter(
    isServiceChainName,
  );
  const natChains = new Set(active);
  const throttled =
    largeClusterMode &&
    previous !== undefined &&
    now - previous.lastCleanupMs <= input.options.syncPeriodMs;
  const deleted: string[] = [];
  for (const c of existing) {
    if (active.has(c)) continue;
    if (throttled) natChains.add(c);
    else deleted.push(c);
  }
  deleted.sort();
  return { deleted, natChains, cleanedAt: throttled ? previous.lastCleanupMs : now };
}

/**
 * Plans one sync of one IP family (see the file header). Never throws on odd Services:
 * anything kube-proxy would skip is skipped, and notable cases come back in `warnings`.
 */
export function planIptables(input: IptablesPlanInput, previous?: PlanState): IptablesPlan {
  const { family, options } = input;
  const optionsText = JSON.stringify(options);
  const fullSync = isFullSync(input, previous, optionsText);
  const changed = input.changedServices instanceof Set ? input.changedServices : undefined;
  const numEndpoints = countEndpoints(input);
  const largeClusterMode = numEndpoints > options.largeClusterEndpointsThreshold;
  const ctx: ServicePlanContext = {
    family,
    options,
    largeClusterMode,
    sepNames: previous?.sepNames ?? new Map<string, string>(),
  };
  const warnings: string[] = [];

  const filterChains = FILTER_FIXED_CHAINS.map(decl);
  const filterRules: Rule[] = [];
  if (writesKubeFirewall(options, family)) {
    filterChains.push(decl(KUBE_FIREWALL));
    filterRules.push(...kubeFirewallRules());
  }
  const natChains = NAT_FIXED_CHAINS.map(decl);
  const natRules: Rule[] = [...postroutingRules(options), ...markMasqRules(options)];
  const active = new Set<string>();
  const fragments = new Map<string, ServicePortFragment>();
  let skippedNatRules = 0;
  let noLocalInternal = 0;
  let noLocalExternal = 0;

  for (const [key, sp] of input.services) {
    const reuse = !fullSync && !(changed?.has(sp.serviceKey) ?? true);
    const old = reuse ? previous?.fragments.get(key) : undefined;
    const frag = old ?? planServicePort(sp, input.endpoints.get(key) ?? [], ctx);
    fragments.set(key, frag);
    for (const r of frag.filterRules) filterRules.push(r);
    for (const r of frag.natDispatchRules) natRules.push(r);
    for (const c of frag.natChains) active.add(c);
    if (frag.noLocalEndpointsInternal) noLocalInternal++;
    if (frag.noLocalEndpointsExternal) noLocalExternal++;
    if (old) {
      skippedNatRules += frag.natChainRules.length;
      continue;
    }
    for (const c of frag.natChains) natChains.push(decl(c));
    for (const r of frag.natChainRules) natRules.push(r);
  }

  const stale = staleChains(input, previous, active, largeClusterMode);
  for (const c of stale.deleted) natChains.push(decl(c));
  const last = nodePortsJumpRules(options, family);
  warnings.push(...last.warnings);
  natRules.push(...last.rules);
  filterRules.push(...forwardRules(options));

  const filter: TableDoc = {
    name: 'filter',
    chains: filterChains,
    rules: filterRules,
    deleteChains: [],
  };
  const nat: TableDoc = {
    name: 'nat',
    chains: natChains,
    rules: natRules,
    deleteChains: stale.deleted,
  };
  const state: PlanState = {
    family,
    optionsText,
    fragments,
    natChains: stale.natChains,
    lastCleanupMs: stale.cleanedAt,
    largeClusterMode,
    sepNames: ctx.sepNames,
  };
  return {
    document: { tables: [filter, nat] },
    jumps: fullSync ? jumpRules() : [],
    canaryChains: CANARY_TABLES.map((table) => ({
      table,
      chain: KUBE_PROXY_CANARY,
    })) as IptablesPlan['canaryChains'],
    state,
    fullSync,
    counts: {
      filterChains: filterChains.length,
      filterRules: filterRules.length,
      natChains: natChains.length,
      natRulesLast: natRules.length,
      natRulesTotal: natRules.length + skippedNatRules,
      deletedChains: stale.deleted.length,
    },
    numServices: input.services.size,
    numEndpoints,
    noLocalEndpointsInternal: noLocalInternal,
    noLocalEndpointsExternal: noLocalExternal,
    largeClusterMode,
    warnings,
  };
}
