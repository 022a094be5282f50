// The iptables proxier, on the wiring every proxier shares (../proxier-base.ts: informers →
// change trackers → bounded-frequency runner, health-check node ports, stale UDP conntrack
// entries, bad objects skipped, logged and counted). Each sync of a family takes a snapshot,
// asks the pure `planIptables` for the restore document, applies it with one
// `iptables-restore --noflush --counters` (a partial sync only what changed, nothing when
// nothing did) and records jump rules and canaries (full syncs)
// and the rule-count metrics. A failed sync marks that family for a full sync and goes back
// to the runner, which retries.

import type { IptablesBackend } from '../../netfilter/iptables/backend.js';
import type { IPFamily } from '../../util/ip.js';
import type { Node } from '../../kube/types.js';
import type { ProxySnapshot } from '../model/snapshot.js';
import type { IptablesProxierOptions } from './options.js';
import { planIptables } from './plan.js';
import type { IptablesPlan, JumpRule, PlanState } from './plan.js';
import { canaryChecks } from './canary.js';
import { addHooks, scanKernelState, withHooks } from './plan-hooks.js';
import type { Hooks, KernelState } from './plan-hooks.js';
import type { IptablesTableName } from '../../netfilter/iptables/model.js';
import type { CanaryCheck } from './canary.js';
import type { SyncReport } from '../proxier.js';
import { ProxierBase, newFamilyTrackers } from '../proxier-base.js';
import type { FamilyTrackers, ProxierBaseDeps } from '../proxier-base.js';
import { recordIptablesCounts } from './sync-metrics.js';

/** The iptables operations a sync uses (the `Iptables` seam; real or Fake). */
export type ProxierIptables = Pick<
  IptablesBackend,
  'family' | 'restore' | 'save' | 'ensureChain' | 'ensureRule' | 'chainExists'
>;

export interface ProxierDeps extends ProxierBaseDeps {
  /** One entry per IP family the node runs (IPv4 first for dual-stack, like kube-proxy). */
  readonly families: readonly { readonly family: IPFamily; readonly iptables: ProxierIptables }[];
  /** Plan options for a family, given the Node as last seen (re-evaluated every sync). */
  readonly optionsFor: (family: IPFamily, node: Node | undefined) => IptablesProxierOptions;
}

/**
 * The last applied plan without its text, tables and state: the restore text of 10k Services
 * is 8 MB, and the next sync needs only `planState`.
 */
export type PlanSummary = Omit<IptablesPlan, 'text' | 'changes' | 'tables' | 'document' | 'state'>;

/** Field by field: a spread would read the plan's lazy `document` getter. */
function summaryOf(plan: IptablesPlan): PlanSummary {
  return {
    jumps: plan.jumps,
    canaryChains: plan.canaryChains,
    fullSync: plan.fullSync,
    counts: plan.counts,
    numServices: plan.numServices,
    numEndpoints: plan.numEndpoints,
    noLocalEndpointsInternal: plan.noLocalEndpointsInternal,
    noLocalEndpointsExternal: plan.noLocalEndpointsExternal,
    largeClusterMode: plan.largeClusterMode,
    warnings: plan.warnings,
  };
}

interface FamilyState extends FamilyTrackers {
  readonly iptables: ProxierIptables;
  planState: PlanState | undefined;
  lastPlan: PlanSummary | undefined;
  /** Jumps and canaries of the last full sync (what the canary monitor checks). */
  hooks: { jumps: readonly JumpRule[]; canaries: IptablesPlan['canaryChains'] } | undefined;
}

/** See the file header. */
export class IptablesProxier extends ProxierBase<FamilyState> {
  private readonly optionsFor: ProxierDeps['optionsFor'];

  constructor(deps: ProxierDeps) {
    super(
      deps,
      deps.families.map(({ family, iptables }) => ({
        ...newFamilyTrackers(family, deps.nodeName),
        iptables,
        planState: undefined,
        lastPlan: undefined,
        hooks: undefined,
      })),
      'iptables',
    );
    this.optionsFor = deps.optionsFor;
  }

  /** The last successful plan of a family, without its text (for debugging). */
  lastPlan(family: IPFamily): PlanSummary | undefined {
    return this.families.find((f) => f.family === family)?.lastPlan;
  }

  /** What the canary monitor should find for a family (empty before the first full sync). */
  canaryChecks(family: IPFamily): CanaryCheck[] {
    const h = this.families.find((f) => f.family === family)?.hooks;
    return h === undefined ? [] : canaryChecks(h.canaries, h.jumps);
  }

  protected async syncFamily(f: FamilyState): Promise<SyncReport> {
    const begun = this.beginSync(f);
    const { plan, text } = await this.planAndRestore(
      f,
      begun.snapshot,
      begun.fullSync,
      begun.start,
    );
    f.planState = plan.state;
    if (plan.fullSync) {
      f.hooks = { jumps: plan.jumps, canaries: plan.canaryChains };
      f.lastFullSyncAt = begun.start;
    }
    f.needFullSync = false;
    f.lastPlan = summaryOf(plan);
    recordIptablesCounts(this.deps.metrics, plan, f.family);
    // Never spread the plan itself: that reads its lazy `document` getter, parsing the whole
    // restore text into a typed document (100 MiB at 10k Services).
    return this.finishSync(f, begun, { ...f.lastPlan, bytes: text.length });
  }

  /**
   * Plans one family's sync and applies it in one restore; a full sync reads the kernel
   * once for stale chains and missing hooks. Counts and logs a failed restore, then throws.
   */
  private async planAndRestore(
    f: FamilyState,
    snapshot: ProxySnapshot,
    fullSync: boolean,
    start: number,
  ): Promise<{ plan: IptablesPlan; text: string }> {
    const { log, metrics } = this.deps;
    try {
      const options = this.optionsFor(f.family, this.node);
      // A full sync reads the kernel once: stale service chains to delete, and which hooks
      // (jumps from built-in chains, canaries) are missing.
      const kernel = fullSync ? scanKernelState(await f.iptables.save()) : undefined;
      const existingNatChains = kernel?.chains.get('nat');
      const plan = planIptables(
        {
          family: f.family,
          services: snapshot.services,
          endpoints: snapshot.endpoints,
          options,
          changedServices: fullSync ? 'all' : snapshot.changedServices,
          ...(existingNatChains !== undefined ? { existingNatChains } : {}),
          nowMs: start,
        },
        f.planState,
      );
      for (const w of plan.warnings) log.info({ ipFamily: f.family }, w);
      // The plan may decide on a full sync by itself (changed options): read the kernel then.
      const hookState = plan.fullSync
        ? (kernel ?? scanKernelState(await f.iptables.save()))
        : undefined;
      // A partial sync applies only what changed (plan.ts changesOnly): with
      // iptables-legacy every table named costs a copy of it out of the kernel and back.
      const text =
        hookState !== undefined
          ? withHooks(plan.text, plan.tables, this.hooksFor(plan, hookState))
          : plan.changes;
      log.debug(
        {
          ipFamily: f.family,
          numServices: plan.numServices,
          numEndpoints: plan.numEndpoints,
          numFilterChains: plan.counts.filterChains,
          numFilterRules: plan.counts.filterRules,
          numNATChains: plan.counts.natChains,
          numNATRules: plan.counts.natRulesLast,
        },
        'Reloading service iptables data',
      );
      if (text !== '') await f.iptables.restore(text, { noflush: true, counters: true });
      return { plan, text };
    } catch (err) {
      metrics.iptablesRestoreFailuresTotal.inc();
      if (!fullSync) metrics.iptablesPartialRestoreFailuresTotal.inc();
      log.error({ err, ipFamily: f.family, fullSync }, 'Failed to execute iptables-restore');
      throw err;
    }
  }

  /** The hook lines a full sync adds, given what the kernel has. */
  private hooksFor(plan: IptablesPlan, state: KernelState): Hooks {
    const declares = (table: IptablesTableName, chain: string): boolean =>
      plan.tables.some((t) => t.name === table && t.fixedChains.includes(chain));
    return addHooks(plan.jumps, plan.canaryChains, state, declares);
  }
}
