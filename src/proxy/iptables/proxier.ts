// The iptables proxier: the wiring between informers and the kernel. Service, EndpointSlice
// and Node events go into per-family change trackers; the bounded-frequency runner calls
// `syncProxyRules`, which (once both caches have synced) takes a snapshot, asks the pure
// `planIptables` for the restore document, applies it with one `iptables-restore --noflush
// --counters` per IP family, and then does the bookkeeping: jump rules and canaries (full
// syncs), metrics, healthz, health-check node ports and stale UDP conntrack entries. A
// failed sync marks that family for a full sync and goes back to the runner, which retries.
// Bad objects are skipped, logged and counted; they never stop the daemon.

import type { Logger } from 'pino';
import type { InformerHandlers } from '../../kube/informer.js';
import type { EndpointSlice, Node, Service } from '../../kube/types.js';
import { describeObject, objectKey } from '../../kube/types.js';
import { validateEndpointSlice, validateService } from '../../kube/validate.js';
import { formatFieldError } from '../../errors.js';
import type { FieldError } from '../../errors.js';
import type { IptablesBackend } from '../../netfilter/iptables/backend.js';
import type { Conntrack } from '../../os/conntrack.js';
import type { IPFamily } from '../../util/ip.js';
import { EndpointsChangeTracker, localReadyEndpoints } from '../model/endpoints-change-tracker.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import { takeSnapshot } from '../model/snapshot.js';
import type { ProxySnapshot } from '../model/snapshot.js';
import type { IptablesProxierOptions } from './options.js';
import { planIptables } from './plan.js';
import type { IptablesPlan, JumpRule, PlanState } from './plan.js';
import { LABEL_TOPOLOGY_ZONE } from '../../kube/names.js';
import type { Clock } from '../../util/clock.js';
import type { ConntrackView } from '../conntrack-cleanup.js';
import { conntrackViewOf, planConntrackCleanup } from '../conntrack-cleanup.js';
import type { ServiceHealthServers } from '../healthcheck-nodeports.js';
import type { ProxyHealth } from '../healthz.js';
import type { ProxyMetrics } from '../metrics.js';
import { BoundedFrequencyRunner } from '../runner.js';
import { canaryChecks } from './canary.js';
import { addHooks, scanKernelState, withHooks } from './plan-hooks.js';
import type { Hooks, KernelState } from './plan-hooks.js';
import type { IptablesTableName } from '../../netfilter/iptables/model.js';
import type { CanaryCheck } from './canary.js';
import type { Proxier, ProxierInformers, SyncReport } from '../proxier.js';
import { recordNetworkProgramming, recordSyncMetrics } from './sync-metrics.js';

/** The iptables operations a sync uses (the `Iptables` seam; real or Fake). */
export type ProxierIptables = Pick<
  IptablesBackend,
  'family' | 'restore' | 'save' | 'ensureChain' | 'ensureRule' | 'chainExists'
>;

export interface ProxierDeps {
  readonly nodeName: string;
  /** One entry per IP family the node runs (IPv4 first for dual-stack, like kube-proxy). */
  readonly families: readonly { readonly family: IPFamily; readonly iptables: ProxierIptables }[];
  /** Plan options for a family, given the Node as last seen (re-evaluated every sync). */
  readonly optionsFor: (family: IPFamily, node: Node | undefined) => IptablesProxierOptions;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: ProxyMetrics;
  readonly health: ProxyHealth;
  readonly serviceHealth?: ServiceHealthServers;
  readonly conntrack?: Conntrack;
  readonly minSyncPeriodMs: number;
  readonly syncPeriodMs: number;
  /** A full sync happens at least this often (kube-proxy: 1 hour). */
  readonly fullSyncPeriodMs?: number;
}

interface FamilyState {
  readonly family: IPFamily;
  readonly iptables: ProxierIptables;
  readonly services: ServiceChangeTracker;
  readonly endpoints: EndpointsChangeTracker;
  planState: PlanState | undefined;
  needFullSync: boolean;
  lastFullSyncAt: number | undefined;
  conntrackView: ConntrackView;
  lastPlan: IptablesPlan | undefined;
  /** Jumps and canaries of the last full sync (what the canary monitor checks). */
  hooks: { jumps: readonly JumpRule[]; canaries: IptablesPlan['canaryChains'] } | undefined;
}

const DEFAULT_FULL_SYNC_PERIOD_MS = 3_600_000;

/** The parts of a Node the rules depend on. */
function nodeFingerprint(node: Node | undefined): string {
  return JSON.stringify([
    node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] ?? '',
    node?.status?.addresses ?? [],
    node?.spec?.podCIDRs ?? node?.spec?.podCIDR ?? [],
  ]);
}

/** See the file header. */
export class IptablesProxier implements Proxier {
  private readonly deps: ProxierDeps;
  private readonly families: FamilyState[];
  private readonly runner: BoundedFrequencyRunner;
  private readonly acceptedServices = new Map<string, Service>();
  private readonly acceptedSlices = new Map<string, EndpointSlice>();
  private node: Node | undefined;
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  private readonly syncListeners: ((reports: SyncReport[]) => void)[] = [];
  private syncedOnce = false;

  constructor(deps: ProxierDeps) {
    this.deps = deps;
    this.families = deps.families.map(({ family, iptables }) => ({
      family,
      iptables,
      services: new ServiceChangeTracker(family),
      endpoints: new EndpointsChangeTracker(family, deps.nodeName),
      planState: undefined,
      needFullSync: true,
      lastFullSyncAt: undefined,
      conntrackView: new Map(),
      lastPlan: undefined,
      hooks: undefined,
    }));
    this.runner = new BoundedFrequencyRunner(() => this.syncProxyRules(), {
      minIntervalMs: deps.minSyncPeriodMs,
      retryIntervalMs: deps.syncPeriodMs,
      maxIntervalMs: deps.syncPeriodMs,
      clock: deps.clock,
      onError: (err) => {
        deps.log.error({ err }, 'Sync failed; retrying');
      },
    });
  }

  /** Registers handlers on the informers (call before starting them). */
  attach(informers: ProxierInformers): void {
    informers.services.addHandlers({
      ...this.watchHandlers<Service>(
        'services',
        (s) => {
          this.onServiceUpdate(s);
        },
        (s) => {
          this.onServiceDelete(s);
        },
      ),
      onSynced: () => {
        this.setServicesSynced();
      },
    });
    informers.endpointSlices.addHandlers({
      ...this.watchHandlers<EndpointSlice>(
        'endpointslices',
        (s) => {
          this.onEndpointSliceUpdate(s);
        },
        (s) => {
          this.onEndpointSliceDelete(s);
        },
      ),
      onSynced: () => {
        this.setEndpointSlicesSynced();
      },
    });
    informers.nodes?.addHandlers(
      this.watchHandlers<Node>(
        'nodes',
        (n) => {
          this.onNodeUpdate(n);
        },
        () => {
          this.onNodeUpdate(undefined);
        },
      ),
    );
  }

  /**
   * One informer's handlers: adds and updates go to `update`, deletes to `remove`, and a failed
   * watch is logged (the informer retries by itself).
   */
  private watchHandlers<T>(
    resource: string,
    update: (obj: T) => void,
    remove: (obj: T) => void,
  ): InformerHandlers<T> {
    return {
      onAdd: update,
      onUpdate: (_old, obj) => {
        update(obj);
      },
      onDelete: remove,
      onError: (err) => {
        this.deps.log.warn(
          { error: err instanceof Error ? err.message : String(err), resource },
          'Watch failed; retrying',
        );
      },
    };
  }

  /** Starts the sync loop (nothing is programmed until both caches have synced). */
  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** Called after every sync attempt that programmed something (tests, bench). */
  onSync(listener: (reports: SyncReport[]) => void): void {
    this.syncListeners.push(listener);
  }

  /** Whether at least one sync succeeded. */
  hasSynced(): boolean {
    return this.syncedOnce;
  }

  /** The last successful plan of a family (for debugging and the canary). */
  lastPlan(family: IPFamily): IptablesPlan | undefined {
    return this.families.find((f) => f.family === family)?.lastPlan;
  }

  /** What the canary monitor should find for a family (empty before the first full sync). */
  canaryChecks(family: IPFamily): CanaryCheck[] {
    const h = this.families.find((f) => f.family === family)?.hooks;
    return h === undefined ? [] : canaryChecks(h.canaries, h.jumps);
  }

  /** Whether a sync is in progress. */
  isSyncing(): boolean {
    return this.runner.isRunning();
  }

  /** Forces a full resync soon (canary loss, topology change). */
  forceFullSync(reason: string): void {
    this.deps.log.info({ reason }, 'Forcing full sync');
    for (const f of this.families) {
      f.needFullSync = true;
      this.deps.health.queuedUpdate(f.family);
    }
    this.runner.run();
  }

  setServicesSynced(): void {
    this.servicesSynced = true;
    this.queueSync();
  }

  setEndpointSlicesSynced(): void {
    this.endpointSlicesSynced = true;
    this.queueSync();
  }

  onServiceUpdate(svc: Service): void {
    if (this.admits('Service', svc, validateService(svc))) this.trackService(objectKey(svc), svc);
  }

  onServiceDelete(svc: Service): void {
    this.trackService(objectKey(svc), undefined);
  }

  onEndpointSliceUpdate(slice: EndpointSlice): void {
    if (this.admits('EndpointSlice', slice, validateEndpointSlice(slice)))
      this.trackSlice(objectKey(slice), slice);
  }

  onEndpointSliceDelete(slice: EndpointSlice): void {
    this.trackSlice(objectKey(slice), undefined);
  }

  onNodeUpdate(node: Node | undefined): void {
    const before = nodeFingerprint(this.node);
    const oldZone = this.node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE];
    this.node = node;
    this.deps.health.syncNode(node);
    // Only what the rules depend on (zone, addresses, podCIDRs) triggers a sync; status
    // heartbeats do not. Changed options make the plan do a full sync by itself.
    if (nodeFingerprint(node) === before) return;
    const zone = node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE];
    if (oldZone !== zone) this.deps.log.info({ zone }, 'Node topology labels changed');
    this.queueSync();
  }

  /** Whether an object passed validation; a rejected one is counted and logged, then skipped. */
  private admits(
    kind: 'Service' | 'EndpointSlice',
    obj: Service | EndpointSlice,
    errors: FieldError[],
  ): boolean {
    if (errors.length === 0) return true;
    this.deps.metrics.invalidObjectsTotal.inc({ kind });
    this.deps.log.warn(
      { object: describeObject({ ...obj, kind }), errors: errors.map(formatFieldError) },
      'Skipping invalid object',
    );
    return false;
  }

  /**
   * Runs `update` for every family; whether any tracker changed. A tracker that throws has
   * refused the object: it is counted as invalid and logged with `subject`, the rest go on.
   */
  private updateTrackers(
    kind: 'Service' | 'EndpointSlice',
    subject: Record<string, string>,
    update: (f: FamilyState) => boolean,
  ): boolean {
    let changed = false;
    for (const f of this.families) {
      try {
        changed = update(f) || changed;
      } catch (err) {
        this.deps.metrics.invalidObjectsTotal.inc({ kind });
        this.deps.log.error({ err, ...subject }, `Skipping ${kind} the proxy cannot handle`);
      }
    }
    return changed;
  }

  private trackService(key: string, svc: Service | undefined): void {
    const prev = this.acceptedServices.get(key);
    if (prev === undefined && svc === undefined) return;
    if (svc === undefined) this.acceptedServices.delete(key);
    else this.acceptedServices.set(key, svc);
    const changed = this.updateTrackers('Service', { service: key }, (f) => {
      const c = f.services.update(prev, svc);
      for (const w of f.services.takeWarnings()) this.deps.log.info({ ipFamily: f.family }, w);
      return c;
    });
    this.deps.metrics.serviceChangesTotal.inc();
    this.deps.metrics.serviceChangesPending.set(
      Math.max(...this.families.map((f) => f.services.pending)),
    );
    if (changed) this.queueSync();
  }

  private trackSlice(key: string, slice: EndpointSlice | undefined): void {
    const prev = this.acceptedSlices.get(key);
    if (prev === undefined && slice === undefined) return;
    if (slice === undefined) this.acceptedSlices.delete(key);
    else this.acceptedSlices.set(key, slice);
    const changed = this.updateTrackers('EndpointSlice', { endpointSlice: key }, (f) =>
      f.endpoints.update(prev, slice),
    );
    this.deps.metrics.endpointChangesTotal.inc();
    this.deps.metrics.endpointChangesPending.set(
      Math.max(...this.families.map((f) => f.endpoints.pendingCount)),
    );
    if (changed) this.queueSync();
  }

  private queueSync(): void {
    if (!this.servicesSynced || !this.endpointSlicesSynced) return;
    for (const f of this.families) this.deps.health.queuedUpdate(f.family);
    this.deps.metrics.syncProxyRulesLastQueuedTimestamp.set(this.deps.clock.now() / 1000);
    this.runner.run();
  }

  /**
   * One sync of every family (the runner's function). Resolves when all families synced;
   * rejects (after syncing the others) if any failed, so the runner retries.
   */
  async syncProxyRules(): Promise<void> {
    if (!this.servicesSynced || !this.endpointSlicesSynced) {
      this.deps.log.info(
        'Not syncing iptables until Services and Endpoints have been received from master',
      );
      return;
    }
    const reports: SyncReport[] = [];
    const failures: unknown[] = [];
    for (const f of this.families) {
      try {
        reports.push(await this.syncFamily(f));
      } catch (err) {
        failures.push(err);
      }
    }
    await this.syncServiceHealth();
    for (const l of this.syncListeners) l(reports);
    if (failures.length > 0) throw failures[0];
  }

  private async syncFamily(f: FamilyState): Promise<SyncReport> {
    const { clock, log, metrics } = this.deps;
    const start = clock.now();
    const fullSyncPeriod = this.deps.fullSyncPeriodMs ?? DEFAULT_FULL_SYNC_PERIOD_MS;
    const fullSync =
      f.needFullSync ||
      f.lastFullSyncAt === undefined ||
      start - f.lastFullSyncAt >= fullSyncPeriod;
    log.debug({ ipFamily: f.family, fullSync }, 'Syncing iptables rules');
    const snapshot = takeSnapshot(f.services, f.endpoints);
    metrics.serviceChangesPending.set(0);
    metrics.endpointChangesPending.set(0);
    // From here on the trackers' changes are consumed: any failure must force a full sync.
    f.needFullSync = true;
    const { plan, text } = await this.planAndRestore(f, snapshot, fullSync, start);
    f.planState = plan.state;
    if (plan.fullSync) {
      f.hooks = { jumps: plan.jumps, canaries: plan.canaryChains };
      f.lastFullSyncAt = start;
    }
    f.needFullSync = false;
    f.lastPlan = plan;
    this.syncedOnce = true;

    const end = clock.now();
    recordSyncMetrics(metrics, plan, f.family, (end - start) / 1000, end);
    recordNetworkProgramming(metrics, log, f.family, snapshot.lastChangeTriggerTimes, end);
    this.deps.health.updated(f.family);
    log.info(
      {
        ipFamily: f.family,
        fullSync: plan.fullSync,
        elapsed: `${end - start}ms`,
        elapsedMs: end - start,
        numServices: plan.numServices,
        numEndpoints: plan.numEndpoints,
      },
      'SyncProxyRules complete',
    );
    await this.cleanConntrack(f, snapshot.services, snapshot.endpoints);
    return {
      family: f.family,
      fullSync: plan.fullSync,
      startedAt: start,
      elapsedMs: end - start,
      restoreBytes: text.length,
    };
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
      const options = this.deps.optionsFor(f.family, this.node);
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
      const text =
        hookState !== undefined
          ? withHooks(plan.text, plan.tables, this.hooksFor(plan, hookState))
          : plan.text;
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
      await f.iptables.restore(text, { noflush: true, counters: true });
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

  private async syncServiceHealth(): Promise<void> {
    const sh = this.deps.serviceHealth;
    if (sh === undefined) return;
    const ports = new Map<string, number>();
    const counts = new Map<string, number>();
    for (const f of this.families) {
      for (const sp of f.services.services.values())
        if (sp.healthCheckNodePort > 0) ports.set(sp.serviceKey, sp.healthCheckNodePort);
      for (const [k, n] of localReadyEndpoints(f.endpoints.endpoints))
        counts.set(k, Math.max(counts.get(k) ?? 0, n));
    }
    try {
      await sh.syncServices(ports);
      sh.syncEndpoints(counts);
    } catch (err) {
      this.deps.log.error({ err }, 'Failed to sync health check node port servers');
    }
  }

  private async cleanConntrack(
    f: FamilyState,
    services: ServicePortMap,
    endpoints: EndpointsMap,
  ): Promise<void> {
    const view = conntrackViewOf(f.family, services, endpoints, {
      nodeName: this.deps.nodeName,
      zone: this.node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] ?? '',
    });
    const filters = planConntrackCleanup(f.conntrackView, view);
    f.conntrackView = view;
    const ct = this.deps.conntrack;
    if (ct === undefined || filters.length === 0) return;
    const start = this.deps.clock.now();
    let deleted = 0;
    for (const filter of filters) {
      try {
        deleted += await ct.deleteEntries(filter);
      } catch (err) {
        this.deps.log.error({ err, filter }, 'Failed to delete stale conntrack entries');
      }
    }
    this.deps.metrics.conntrackReconcilerSyncDuration.observe(
      (this.deps.clock.now() - start) / 1000,
    );
    this.deps.metrics.conntrackReconcilerDeletedEntriesTotal.inc({ ip_family: f.family }, deleted);
    this.deps.log.debug(
      { ipFamily: f.family, filters: filters.length, deleted },
      'Deleted stale conntrack entries',
    );
  }
}
