// The nftables proxier: kube-proxy's nftables mode on the shared proxier wiring
// (proxier-base.ts: informers → change trackers → bounded-frequency runner, health-check node
// ports, UDP conntrack cleanup). Each sync of a family takes a snapshot, asks the pure
// `planNftables` for the family's transaction (full: the whole `ip|ip6 kube-proxy` table,
// diffed against the kernel's elements read back first; partial: only the changed Services'
// chains and elements) and applies it as ONE atomic transaction through the backend (a full
// sync of more than ~1k Services in atomic parts at Service boundaries, see
// netfilter/nftables/README-speed.md). Stale
// service chains are flushed at once and deleted ≥ 1 s later (the plan ages them on the
// injected Clock) in a separate transaction run before the sync's own: a failed delete is
// counted (`…_nftables_cleanup_failures_total`) and forces a full sync, a refused sync is
// counted (`…_nftables_sync_failures_total`), leaves the kernel as it was (a split one: as
// its earlier parts left it) and is retried by the runner as a full sync. A Service port the kernel would refuse (a comment too long, an
// invalid port) is left out by the plan, logged and counted; the others are programmed.

import { serviceCIDRsOf } from '../../kube/service-cidr.js';
import type { Node } from '../../kube/types.js';
import type { NftBackend } from '../../netfilter/nftables/backend.js';
import type { IPFamily } from '../../util/ip.js';
import type { ProxySnapshot } from '../model/snapshot.js';
import { ProxierBase, newFamilyTrackers } from '../proxier-base.js';
import type { FamilyTrackers, ProxierBaseDeps } from '../proxier-base.js';
import type { ProxierInformers, SyncReport } from '../proxier.js';
import type { NftablesProxierOptions } from './options.js';
import { planNftables, tableRefOf } from './plan.js';
import type { NftPlanState, NftablesPlan } from './plan.js';
import type { NftablesMetrics } from './sync-metrics.js';

/** The nftables operations a sync uses (one family's NftBackend; real or Fake). */
export type ProxierNft = Pick<NftBackend, 'family' | 'apply' | 'readTable'>;

export interface NftablesProxierDeps extends ProxierBaseDeps {
  /** One entry per IP family the node runs (IPv4 first for dual-stack, like kube-proxy). */
  readonly families: readonly { readonly family: IPFamily; readonly nft: ProxierNft }[];
  /**
   * Plan options for a family, given the Node as last seen and the cluster's ServiceCIDRs
   * (any family; re-evaluated every sync).
   */
  readonly optionsFor: (
    family: IPFamily,
    node: Node | undefined,
    serviceCIDRs: readonly string[],
  ) => NftablesProxierOptions;
  /** The nftables-only counters (registered in nftables mode only). */
  readonly nftMetrics: NftablesMetrics;
}

interface FamilyState extends FamilyTrackers {
  readonly nft: ProxierNft;
  planState: NftPlanState | undefined;
  lastPlan: NftablesPlan | undefined;
}

/** See the file header. */
export class NftablesProxier extends ProxierBase<FamilyState> {
  private readonly optionsFor: NftablesProxierDeps['optionsFor'];
  private readonly nftMetrics: NftablesMetrics;
  /** The cluster's ServiceCIDRs, sorted (kube-proxy's OnServiceCIDRsChanged). */
  private serviceCIDRs: readonly string[] = [];

  constructor(deps: NftablesProxierDeps) {
    super(
      deps,
      deps.families.map(({ family, nft }) => ({
        ...newFamilyTrackers(family, deps.nodeName),
        nft,
        planState: undefined,
        lastPlan: undefined,
      })),
      'nftables',
    );
    this.optionsFor = deps.optionsFor;
    this.nftMetrics = deps.nftMetrics;
  }

  /** The last successful plan of a family (for debugging and tests), without its operations. */
  lastPlan(family: IPFamily): NftablesPlan | undefined {
    return this.families.find((f) => f.family === family)?.lastPlan;
  }

  protected async syncFamily(f: FamilyState): Promise<SyncReport> {
    const begun = this.beginSync(f);
    const { plan, bytes, cleanupFailed } = await this.planAndApply(
      f,
      begun.snapshot,
      begun.fullSync,
      begun.start,
    );
    f.planState = plan.state;
    if (plan.fullSync) f.lastFullSyncAt = begun.start;
    // A failed delete of stale chains: the next sync is full, with the kernel read back.
    f.needFullSync = cleanupFailed;
    // Kept without its operations: a full sync's are ~30 MB at 10k Services.
    f.lastPlan = { ...plan, cleanup: [], transaction: [] };
    this.nftMetrics.skippedServicePorts.set({ ip_family: f.family }, plan.skippedServicePorts);
    return this.finishSync(f, begun, { ...plan, bytes });
  }

  /**
   * Plans one family's sync (a full sync reads the kernel's table first, the diff base of
   * its elements and the source of stale chains), deletes aged stale chains in their own
   * transaction, then applies the sync in one. Counts and logs a refused sync, then throws.
   */
  private async planAndApply(
    f: FamilyState,
    snapshot: ProxySnapshot,
    fullSync: boolean,
    start: number,
  ): Promise<{ plan: NftablesPlan; bytes: number; cleanupFailed: boolean }> {
    const { log } = this.deps;
    let plan: NftablesPlan;
    try {
      // Chains and elements are what the diff needs; rules are the costly part to read.
      const current = fullSync
        ? await f.nft.readTable(tableRefOf(f.family), { rules: false })
        : undefined;
      plan = planNftables(
        {
          family: f.family,
          services: snapshot.services,
          endpoints: snapshot.endpoints,
          options: this.optionsFor(f.family, this.node, this.serviceCIDRs),
          changedServices: fullSync ? 'all' : snapshot.changedServices,
          nowMs: start,
          ...(current !== undefined ? { current } : {}),
        },
        f.planState,
      );
    } catch (err) {
      this.nftMetrics.syncFailuresTotal.inc();
      log.error({ err, ipFamily: f.family, fullSync }, 'Failed to read the nftables table');
      throw err;
    }
    for (const w of plan.warnings) log.info({ ipFamily: f.family }, w);
    if (plan.skippedServicePorts > 0)
      log.warn(
        { ipFamily: f.family, skipped: plan.skippedServicePorts },
        'Skipping Service ports the kernel would refuse',
      );
    let cleanupFailed = false;
    if (plan.cleanup.length > 0) {
      log.info(
        { ipFamily: f.family, numChains: plan.cleanup.length },
        'Deleting stale nftables chains',
      );
      try {
        await f.nft.apply(plan.cleanup);
      } catch (err) {
        // The chains stay flushed; the next (full) sync finds them in the kernel again.
        cleanupFailed = true;
        this.nftMetrics.cleanupFailuresTotal.inc();
        log.error({ err, ipFamily: f.family }, 'Unable to delete stale chains; will retry later');
      }
    }
    log.debug(
      { ipFamily: f.family, numServices: plan.numServices, numEndpoints: plan.numEndpoints },
      'Reloading service nftables data',
    );
    try {
      // A full sync larger than the backend's part (~1k Services) may go in atomic parts cut
      // at Service boundaries: one transaction is quadratic in nf_tables at 10k (netfilter/nftables/README-speed.md).
      // A failing part leaves the family marked for a full sync, as any failure does.
      const bytes =
        plan.transaction.length > 0
          ? await f.nft.apply(plan.transaction, { split: plan.fullSync })
          : 0;
      return { plan, bytes, cleanupFailed };
    } catch (err) {
      this.nftMetrics.syncFailuresTotal.inc();
      log.error({ err, ipFamily: f.family, fullSync }, 'nftables sync failed');
      throw err;
    }
  }

  /** Also follows the ServiceCIDR informer, when there is one. */
  override attach(informers: ProxierInformers): void {
    super.attach(informers);
    const cidrs = informers.serviceCIDRs;
    if (cidrs === undefined) return;
    const changed = (): void => {
      this.onServiceCIDRs(serviceCIDRsOf(cidrs.list()));
    };
    cidrs.addHandlers({ onAdd: changed, onUpdate: changed, onDelete: changed });
  }

  /**
   * The cluster's ServiceCIDRs changed (any family). An actual change is logged and queues a
   * sync; the new options make that sync full, so the drop rule is rewritten at once (kube-
   * proxy waits for its next full sync).
   */
  onServiceCIDRs(cidrs: readonly string[]): void {
    const next = [...new Set(cidrs)].sort();
    if (next.join(',') === this.serviceCIDRs.join(',')) return;
    this.serviceCIDRs = next;
    this.deps.log.info({ serviceCIDRs: next }, 'ServiceCIDRs changed');
    this.queueSync();
  }
}
