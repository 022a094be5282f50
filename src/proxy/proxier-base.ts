// What every dataplane's proxier shares, whatever it programs: Service, EndpointSlice and Node
// events go into per-family change trackers (bad objects are skipped, logged and counted, and
// never stop the daemon); the bounded-frequency runner calls `syncProxyRules` once both caches
// have synced, which syncs each family through the subclass's `syncFamily` (a failed family
// is retried by the runner with a full sync) and then does the bookkeeping no mode differs
// in: health-check node port servers, sync listeners, and stale UDP conntrack entries
// (conntrack-cleanup.ts). The iptables and nftables proxiers extend it with their plan and
// apply; neither knows how informers or the runner work.

import type { Logger } from 'pino';
import type { InformerHandlers } from '../kube/informer.js';
import { LABEL_TOPOLOGY_ZONE } from '../kube/names.js';
import type { EndpointSlice, Node, Service } from '../kube/types.js';
import { describeObject, objectKey } from '../kube/types.js';
import { validateEndpointSlice, validateService } from '../kube/validate.js';
import { formatFieldError } from '../errors.js';
import type { FieldError } from '../errors.js';
import type { Conntrack } from '../os/conntrack.js';
import type { Clock } from '../util/clock.js';
import type { IPFamily } from '../util/ip.js';
import type { ConntrackView } from './conntrack-cleanup.js';
import { conntrackViewOf, planConntrackCleanup } from './conntrack-cleanup.js';
import type { ServiceHealthServers } from './healthcheck-nodeports.js';
import type { ProxyHealth } from './healthz.js';
import type { ProxyMetrics } from './metrics.js';
import { EndpointsChangeTracker, localReadyEndpoints } from './model/endpoints-change-tracker.js';
import type { EndpointsMap } from './model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from './model/service-change-tracker.js';
import type { ServicePortMap } from './model/service-change-tracker.js';
import { takeSnapshot } from './model/snapshot.js';
import type { ProxySnapshot } from './model/snapshot.js';
import type { Proxier, ProxierInformers, SyncReport } from './proxier.js';
import { BoundedFrequencyRunner } from './runner.js';
import { recordNetworkProgramming, recordSyncTiming } from './sync-metrics.js';
import type { SyncFigures } from './sync-metrics.js';

/** The dependencies every proxier has. */
export interface ProxierBaseDeps {
  readonly nodeName: string;
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

/** What an applied sync tells the shared bookkeeping (`finishSync`). */
export interface AppliedSync extends SyncFigures {
  readonly numServices: number;
  readonly numEndpoints: number;
  /** Size of what was handed to the kernel. */
  readonly bytes: number;
}

/** A family's sync as `beginSync` started it. */
export interface SyncStart {
  /** Clock time the sync started. */
  readonly start: number;
  readonly fullSync: boolean;
  readonly snapshot: ProxySnapshot;
}

/** One IP family's trackers and sync bookkeeping (subclasses add their own state). */
export interface FamilyTrackers {
  readonly family: IPFamily;
  readonly services: ServiceChangeTracker;
  readonly endpoints: EndpointsChangeTracker;
  needFullSync: boolean;
  lastFullSyncAt: number | undefined;
  conntrackView: ConntrackView;
}

/** Fresh trackers of one family. */
export function newFamilyTrackers(family: IPFamily, nodeName: string): FamilyTrackers {
  return {
    family,
    services: new ServiceChangeTracker(family),
    endpoints: new EndpointsChangeTracker(family, nodeName),
    needFullSync: true,
    lastFullSyncAt: undefined,
    conntrackView: new Map(),
  };
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

/** See the file header. `F` is the subclass's per-family state. */
export abstract class ProxierBase<F extends FamilyTrackers> implements Proxier {
  protected readonly deps: ProxierBaseDeps;
  protected readonly families: F[];
  protected node: Node | undefined;
  /** Set by a subclass after its first successful sync. */
  protected syncedOnce = false;
  private readonly runner: BoundedFrequencyRunner;
  private readonly acceptedServices = new Map<string, Service>();
  private readonly acceptedSlices = new Map<string, EndpointSlice>();
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  private readonly syncListeners: ((reports: SyncReport[]) => void)[] = [];
  /** `iptables` or `nftables`, in log messages. */
  private readonly what: string;

  constructor(deps: ProxierBaseDeps, families: F[], what: string) {
    this.deps = deps;
    this.families = families;
    this.what = what;
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

  /** Syncs one family; throws (after marking it for a full sync) when it failed. */
  protected abstract syncFamily(f: F): Promise<SyncReport>;

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
    update: (f: F) => boolean,
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

  /** Asks the runner for a sync (once both caches have synced). */
  protected queueSync(): void {
    if (!this.servicesSynced || !this.endpointSlicesSynced) return;
    for (const f of this.families) this.deps.health.queuedUpdate(f.family);
    this.deps.metrics.syncProxyRulesLastQueuedTimestamp.set(this.deps.clock.now() / 1000);
    this.runner.run();
  }

  /**
   * Starts one family's sync: full or partial (first, after a failure, or periodic: full),
   * and the trackers' snapshot. The trackers' changes are consumed from here on, so the family
   * is marked for a full sync until the subclass has applied this one.
   */
  protected beginSync(f: F): SyncStart {
    const { clock, log, metrics } = this.deps;
    const start = clock.now();
    const period = this.deps.fullSyncPeriodMs ?? DEFAULT_FULL_SYNC_PERIOD_MS;
    const fullSync =
      f.needFullSync || f.lastFullSyncAt === undefined || start - f.lastFullSyncAt >= period;
    log.debug({ ipFamily: f.family, fullSync }, `Syncing ${this.what} rules`);
    const snapshot = takeSnapshot(f.services, f.endpoints);
    metrics.serviceChangesPending.set(0);
    metrics.endpointChangesPending.set(0);
    f.needFullSync = true;
    return { start, fullSync, snapshot };
  }

  /**
   * The bookkeeping after a family's rules were applied: the shared metrics (`record` adds the
   * mode's own, given the end time), healthz, the completion log line and the stale UDP
   * conntrack entries; returns the sync's report.
   */
  protected async finishSync(f: F, begun: SyncStart, applied: AppliedSync): Promise<SyncReport> {
    const { clock, log, metrics } = this.deps;
    const { start, snapshot } = begun;
    this.syncedOnce = true;
    const end = clock.now();
    recordSyncTiming(metrics, applied, f.family, (end - start) / 1000, end);
    recordNetworkProgramming(metrics, log, f.family, snapshot.lastChangeTriggerTimes, end);
    this.deps.health.updated(f.family);
    log.info(
      {
        ipFamily: f.family,
        fullSync: applied.fullSync,
        elapsed: `${end - start}ms`,
        elapsedMs: end - start,
        numServices: applied.numServices,
        numEndpoints: applied.numEndpoints,
      },
      'SyncProxyRules complete',
    );
    await this.cleanConntrack(f, snapshot.services, snapshot.endpoints);
    return {
      family: f.family,
      fullSync: applied.fullSync,
      startedAt: start,
      elapsedMs: end - start,
      restoreBytes: applied.bytes,
    };
  }

  /**
   * One sync of every family (the runner's function). Resolves when all families synced;
   * rejects (after syncing the others) if any failed, so the runner retries.
   */
  async syncProxyRules(): Promise<void> {
    if (!this.servicesSynced || !this.endpointSlicesSynced) {
      this.deps.log.info(
        `Not syncing ${this.what} until Services and Endpoints have been received from master`,
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

  /** Deletes the UDP conntrack entries the last sync made stale (after a successful sync). */
  private async cleanConntrack(
    f: F,
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
