// The controller manager: the effectful edge around the pure reconcilers. Informer events
// become keys on work queues (services; deployments; replicasets; statefulsets; daemonsets; the scheduler;
// one key per node for the fake kubelet); a worker per queue reads the informer caches, calls
// the reconciler, applies its operations through the KubeClient and records expectations.
// One bad object never stops it: a failed sync is logged, counted and retried with backoff
// (409 Conflict is an ordinary retry), and dropped after maxRetries. Nothing here decides
// what the cluster should look like; that is all in reconcile-*.ts.

import type { ApiKind, KubeClient } from '../kube/api-client.js';
import { isConflict, isNotFound } from '../kube/api-client.js';
import type { Informer } from '../kube/informer.js';
import { matchesSelectorMap } from '../kube/selectors.js';
import {
  LABEL_MANAGED_BY,
  LABEL_SERVICE_NAME,
  LABEL_TOPOLOGY_ZONE,
  MANAGED_BY_CONTROLLER,
} from '../kube/names.js';
import type { KubeObject, Node, Pod } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { applyOperations } from './apply.js';
import type { ControllerInformers, ControllerKind } from './kinds.js';
import { INFORMER_FIELD } from './kinds.js';
import { Expectations } from './expectations.js';
import type { Operation } from './operations.js';
import { describeOperation } from './operations.js';
import { reconcileDaemonSet } from './reconcile-daemonset.js';
import { reconcileDeployment } from './reconcile-deployment.js';
import { reconcileEndpoints } from './reconcile-endpoints.js';
import { reconcileEndpointSlices } from './reconcile-endpointslice.js';
import { reconcileKubelet } from './reconcile-kubelet.js';
import { reconcileMirroring } from './reconcile-mirroring.js';
import { reconcileReplicaSet } from './reconcile-replicaset.js';
import { reconcileScheduler } from './reconcile-scheduler.js';
import { reconcileStatefulSet } from './reconcile-statefulset.js';
import { controllerRef, nameOf, namespaceOf } from './reconcile-util.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { WorkQueue } from './workqueue.js';

/** The logging surface the manager needs (pino's Logger satisfies it). */
export interface Log {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ControllerManagerOptions {
  readonly client: KubeClient;
  readonly informers: ControllerInformers;
  readonly log: Log;
  readonly clock?: Clock;
  /** Mark bound pods Running/Ready with IPs and finish graceful deletions. */
  readonly fakeKubelet?: boolean;
  readonly maxEndpointsPerSlice?: number;
  /** Failed syncs of one key are retried this many times, then dropped until the next event. */
  readonly maxRetries?: number;
  /** Every key is resynced this often (0 disables). */
  readonly resyncPeriodMs?: number;
  /** Which controllers run (all when absent); the fake kubelet is governed by fakeKubelet. */
  readonly controllers?: ReadonlySet<ControllerKind>;
}

type ControllerName =
  'endpoints' | 'deployment' | 'replicaset' | 'statefulset' | 'daemonset' | 'scheduler' | 'kubelet';

interface Controller {
  readonly name: ControllerName;
  readonly queue: WorkQueue;
  readonly sync: (key: string, triggerTime: number | undefined) => Promise<void>;
  readonly keys: () => string[];
}

/** Counters a test or /metrics can read. */
export interface ManagerStats {
  syncs: number;
  writes: number;
  conflicts: number;
  errors: number;
  dropped: number;
  skippedObjects: number;
}

const SCHEDULER_KEY = 'all';

export class ControllerManager {
  private readonly client: KubeClient;
  private readonly inf: ControllerInformers;
  private readonly log: Log;
  private readonly clock: Clock;
  private readonly opts: ControllerManagerOptions;
  private readonly expectations = new Expectations();
  private readonly controllers: Controller[] = [];
  private readonly byName = new Map<ControllerName, Controller>();
  private readonly workers: Promise<void>[] = [];
  private resyncTimer: TimerHandle | undefined;
  private stopped = false;
  private readonly warned = new Set<string>();
  /**
   * Services seen deleted whose Endpoints the endpoints controller has still to remove. As
   * kube-controller-manager's, it removes an Endpoints object only when its Service goes: one a
   * user created for a Service that does not exist (yet) is left alone.
   */
  private readonly servicesGone = new Set<string>();
  readonly stats: ManagerStats = {
    syncs: 0,
    writes: 0,
    conflicts: 0,
    errors: 0,
    dropped: 0,
    skippedObjects: 0,
  };

  constructor(opts: ControllerManagerOptions) {
    this.opts = opts;
    this.client = opts.client;
    this.inf = opts.informers;
    this.log = opts.log;
    this.clock = opts.clock ?? realClock;
    const inf = this.inf;
    const on = (k: ControllerKind): boolean => opts.controllers?.has(k) ?? true;
    const keysOf = (i: Informer<KubeObject>) => (): string[] => i.list().map(objectKey);
    if (on('endpointslice') || on('endpoints') || on('mirroring'))
      this.addController('endpoints', (k, t) => this.syncService(k, t), keysOf(inf.services));
    if (on('deployment'))
      this.addController('deployment', (k) => this.syncDeployment(k), keysOf(inf.deployments));
    if (on('replicaset'))
      this.addController('replicaset', (k) => this.syncReplicaSet(k), keysOf(inf.replicaSets));
    if (on('statefulset'))
      this.addController('statefulset', (k) => this.syncStatefulSet(k), keysOf(inf.statefulSets));
    if (on('daemonset'))
      this.addController('daemonset', (k) => this.syncDaemonSet(k), keysOf(inf.daemonSets));
    if (on('scheduler'))
      this.addController(
        'scheduler',
        () => this.syncScheduler(),
        () => [SCHEDULER_KEY],
      );
    if (opts.fakeKubelet === true)
      this.addController(
        'kubelet',
        (k) => this.syncKubelet(k),
        () => inf.nodes.list().map(nameOf),
      );
    this.wireHandlers();
  }

  private addController(
    name: ControllerName,
    sync: Controller['sync'],
    keys: Controller['keys'],
  ): void {
    const c: Controller = { name, queue: new WorkQueue({ clock: this.clock }), sync, keys };
    this.controllers.push(c);
    this.byName.set(name, c);
  }

  private enqueue(name: ControllerName, key: string): void {
    this.byName.get(name)?.queue.add(key);
  }

  // ---- event wiring -------------------------------------------------------------------

  private wireHandlers(): void {
    const inf = this.inf;
    for (const [name, i] of Object.entries(inf) as [string, Informer<KubeObject>][])
      i.addHandlers({
        onError: (err) => {
          this.log.warn({ informer: name, err: errText(err) }, 'List/watch failed; retrying');
        },
      });
    const onObj = <T extends KubeObject>(i: Informer<T>, fn: (o: T) => void): void => {
      i.addHandlers({
        onAdd: fn,
        onUpdate: (a, b) => {
          fn(a);
          fn(b);
        },
        onDelete: fn,
      });
    };
    onObj(inf.services, (s) => {
      this.enqueue('endpoints', objectKey(s));
    });
    inf.services.addHandlers({
      onAdd: (s) => this.servicesGone.delete(objectKey(s)),
      onDelete: (s) => this.servicesGone.add(objectKey(s)),
    });
    onObj(inf.endpoints, (e) => {
      this.enqueue('endpoints', objectKey(e));
    });
    onObj(inf.endpointSlices, (s) => {
      const svc = s.metadata?.labels?.[LABEL_SERVICE_NAME];
      if (svc !== undefined) this.enqueue('endpoints', `${namespaceOf(s)}/${svc}`);
    });
    onObj(inf.pods, (p) => {
      this.onPod(p);
    });
    inf.nodes.addHandlers({
      onAdd: (n) => {
        this.onNode(n, true);
      },
      onUpdate: (a, b) => {
        const zoneChanged =
          a.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] !== b.metadata?.labels?.[LABEL_TOPOLOGY_ZONE];
        this.onNode(b, zoneChanged);
      },
      onDelete: (n) => {
        this.onNode(n, true);
      },
    });
    onObj(inf.deployments, (d) => {
      this.enqueue('deployment', objectKey(d));
    });
    onObj(inf.replicaSets, (rs) => {
      this.enqueue('replicaset', objectKey(rs));
      const ref = controllerRef(rs);
      if (ref?.kind === 'Deployment') this.enqueue('deployment', `${namespaceOf(rs)}/${ref.name}`);
    });
    onObj(inf.statefulSets, (s) => {
      this.enqueue('statefulset', objectKey(s));
    });
    onObj(inf.daemonSets, (d) => {
      this.enqueue('daemonset', objectKey(d));
    });
    // A revision deleted or renumbered by hand is put back by its DaemonSet.
    onObj(inf.controllerRevisions, (r) => {
      const ref = controllerRef(r);
      if (ref?.kind === 'DaemonSet') this.enqueue('daemonset', `${namespaceOf(r)}/${ref.name}`);
    });
  }

  private onPod(p: Pod): void {
    const ns = namespaceOf(p);
    for (const svc of this.inf.services.list()) {
      const sel = svc.spec?.selector;
      if (
        namespaceOf(svc) === ns &&
        sel !== undefined &&
        matchesSelectorMap(sel, p.metadata?.labels)
      )
        this.enqueue('endpoints', objectKey(svc));
    }
    const ref = controllerRef(p);
    if (ref?.kind === 'ReplicaSet') this.enqueue('replicaset', `${ns}/${ref.name}`);
    if (ref?.kind === 'StatefulSet') this.enqueue('statefulset', `${ns}/${ref.name}`);
    if (ref?.kind === 'DaemonSet') this.enqueue('daemonset', `${ns}/${ref.name}`);
    const node = p.spec?.nodeName ?? '';
    if (node === '') this.enqueue('scheduler', SCHEDULER_KEY);
    else this.enqueue('kubelet', node);
  }

  private onNode(n: Node, affectsEndpoints: boolean): void {
    if (affectsEndpoints)
      for (const s of this.inf.services.list()) this.enqueue('endpoints', objectKey(s));
    this.enqueue('scheduler', SCHEDULER_KEY);
    this.enqueue('kubelet', nameOf(n));
    for (const d of this.inf.daemonSets.list()) this.enqueue('daemonset', objectKey(d));
  }

  // ---- lifecycle ----------------------------------------------------------------------

  /** Starts the informers and waits for their caches (no workers: see runUntilIdle). */
  async startInformers(): Promise<void> {
    const all = Object.values(this.inf) as Informer<KubeObject>[];
    await Promise.all(all.map((i) => i.start()));
  }

  /** Starts the informers, waits for their caches, then the workers. */
  async start(): Promise<void> {
    await this.startInformers();
    this.log.info(
      { controllers: this.controllers.map((c) => c.name) },
      'Caches synced; starting controllers',
    );
    for (const c of this.controllers) this.workers.push(this.runWorker(c));
    this.scheduleResync();
  }

  /** Stops workers and informers; resolves when the workers have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    for (const c of this.controllers) c.queue.shutdown();
    await Promise.all(this.workers);
    const all = Object.values(this.inf) as Informer<KubeObject>[];
    await Promise.all(all.map((i) => i.stop()));
  }

  private scheduleResync(): void {
    const period = this.opts.resyncPeriodMs ?? 60_000;
    if (period <= 0 || this.stopped) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resyncAll();
      this.scheduleResync();
    }, period);
  }

  /** Queues every key of every controller. */
  resyncAll(): void {
    for (const c of this.controllers) for (const k of c.keys()) c.queue.add(k);
  }

  private async runWorker(c: Controller): Promise<void> {
    for (;;) {
      const key = await c.queue.get();
      if (key === undefined) return;
      await this.process(c, key);
    }
  }

  private async process(c: Controller, key: string): Promise<void> {
    const trigger = c.queue.takeTriggerTime(key);
    try {
      this.stats.syncs += 1;
      await c.sync(key, trigger);
      c.queue.forget(key);
    } catch (e) {
      this.handleError(c, key, e);
    } finally {
      c.queue.done(key);
    }
  }

  /**
   * Processes queued keys until every queue is empty (for tests and dry runs driven by a
   * FakeClock and Fake informers). Returns the number of syncs made.
   */
  async runUntilIdle(maxSyncs = 10_000): Promise<number> {
    let n = 0;
    for (;;) {
      let progressed = false;
      for (const c of this.controllers) {
        const key = c.queue.tryGet();
        if (key === undefined) continue;
        progressed = true;
        n += 1;
        await this.process(c, key);
      }
      if (!progressed || n >= maxSyncs) return n;
    }
  }

  private handleError(c: Controller, key: string, e: unknown): void {
    const retries = c.queue.numRequeues(key);
    if (isConflict(e) || isNotFound(e)) {
      // Our cache was stale (a 409, or an object deleted under us): retry from fresh state.
      this.stats.conflicts += 1;
      this.log.debug({ controller: c.name, key, err: errText(e) }, 'Stale cache; requeued');
      c.queue.addRateLimited(key);
      return;
    }
    this.stats.errors += 1;
    if (retries < (this.opts.maxRetries ?? 15)) {
      this.log.warn({ controller: c.name, key, retries, err: errText(e) }, 'Sync failed; retrying');
      c.queue.addRateLimited(key);
      return;
    }
    this.stats.dropped += 1;
    this.log.error(
      { controller: c.name, key, retries, err: errText(e) },
      'Sync failed; dropping key',
    );
    c.queue.forget(key);
  }

  // ---- syncs --------------------------------------------------------------------------

  private lookup(kind: ApiKind, namespace: string, name: string): KubeObject | undefined {
    const key = namespace === '' ? name : `${namespace}/${name}`;
    return (this.inf[INFORMER_FIELD[kind]] as Informer<KubeObject>).get(key);
  }

  /** False (and a requeue at the deadline) while earlier writes are not in the caches yet. */
  private ready(c: ControllerName, key: string): boolean {
    const res = this.expectations.check(
      `${c}|${key}`,
      (k, ns, n) => this.lookup(k, ns, n),
      this.clock.now(),
    );
    if (res === true) return true;
    this.byName.get(c)?.queue.addAfter(key, res);
    return false;
  }

  private async write(c: ControllerName, key: string, ops: readonly Operation[]): Promise<void> {
    if (ops.length === 0) return;
    for (const o of ops) this.log.debug({ controller: c, key }, describeOperation(o));
    try {
      const exp = await applyOperations(this.client, ops);
      this.expectations.expect(`${c}|${key}`, exp, this.clock.now());
    } finally {
      this.stats.writes += ops.length;
    }
  }

  private warn(controller: ControllerName, warnings: readonly string[]): void {
    for (const w of warnings) {
      this.stats.skippedObjects += 1;
      if (this.warned.has(w)) continue;
      if (this.warned.size > 10_000) this.warned.clear();
      this.warned.add(w);
      this.log.warn({ controller }, w);
    }
  }

  private podsIn(ns: string): Pod[] {
    return this.inf.pods.list().filter((p) => namespaceOf(p) === ns);
  }

  private async syncService(key: string, trigger: number | undefined): Promise<void> {
    if (!this.ready('endpoints', key)) return;
    const [ns, name] = splitKey(key);
    const service = this.inf.services.get(key);
    const pods = this.podsIn(ns);
    const slices = this.inf.endpointSlices
      .list()
      .filter((s) => namespaceOf(s) === ns && s.metadata?.labels?.[LABEL_SERVICE_NAME] === name);
    const triggerTime = new Date(trigger ?? this.clock.now()).toISOString();
    const ops: Operation[] = [];
    const on = (k: ControllerKind): boolean => this.opts.controllers?.has(k) ?? true;
    if (on('endpointslice') && service !== undefined) {
      const nodes = new Map(this.inf.nodes.list().map((n) => [nameOf(n), n]));
      const r = reconcileEndpointSlices({
        service,
        pods,
        nodes,
        existing: slices,
        triggerTime,
        ...(this.opts.maxEndpointsPerSlice !== undefined
          ? { maxEndpointsPerSlice: this.opts.maxEndpointsPerSlice }
          : {}),
      });
      this.warn('endpoints', r.warnings);
      ops.push(...r.operations);
    } else if (on('endpointslice')) {
      // The Service is gone: remove our slices even when no garbage collector runs.
      for (const s of slices)
        if (s.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_CONTROLLER)
          ops.push({ op: 'delete', kind: 'EndpointSlice', namespace: ns, name: nameOf(s) });
    }
    // An Endpoints object without a Service is removed only when that Service was deleted.
    const orphan = service === undefined && !this.servicesGone.has(key);
    if (on('endpoints') && !orphan) {
      if (service === undefined && this.inf.endpoints.get(key) === undefined)
        this.servicesGone.delete(key);
      const ep = reconcileEndpoints({
        service,
        namespace: ns,
        name,
        pods,
        existing: this.inf.endpoints.get(key),
        triggerTime,
      });
      this.warn('endpoints', ep.warnings);
      ops.push(...ep.operations);
    }
    if (on('mirroring')) {
      const mirror = reconcileMirroring({
        service,
        endpoints: this.inf.endpoints.get(key),
        existing: slices,
        triggerTime,
      });
      this.warn('endpoints', mirror.warnings);
      ops.push(...mirror.operations);
    }
    await this.write('endpoints', key, ops);
  }

  /** A workload controller's sync: reconcile the object under `key` (if any) and write. */
  private async syncWorkload<T extends KubeObject>(
    c: ControllerName,
    key: string,
    informer: Informer<T>,
    reconcile: (obj: T, ns: string) => Operation[],
  ): Promise<void> {
    if (!this.ready(c, key)) return;
    const obj = informer.get(key);
    if (obj === undefined) return;
    await this.write(c, key, reconcile(obj, namespaceOf(obj)));
  }

  private syncDeployment(key: string): Promise<void> {
    return this.syncWorkload('deployment', key, this.inf.deployments, (deployment, ns) =>
      reconcileDeployment({
        deployment,
        replicaSets: this.inf.replicaSets.list().filter((r) => namespaceOf(r) === ns),
        now: isoNow(this.clock),
      }),
    );
  }

  private syncReplicaSet(key: string): Promise<void> {
    return this.syncWorkload('replicaset', key, this.inf.replicaSets, (replicaSet, ns) =>
      reconcileReplicaSet({ replicaSet, pods: this.podsIn(ns), now: this.clock.now() }),
    );
  }

  private syncStatefulSet(key: string): Promise<void> {
    return this.syncWorkload('statefulset', key, this.inf.statefulSets, (statefulSet, ns) =>
      reconcileStatefulSet({ statefulSet, pods: this.podsIn(ns), now: this.clock.now() }),
    );
  }

  private syncDaemonSet(key: string): Promise<void> {
    return this.syncWorkload('daemonset', key, this.inf.daemonSets, (daemonSet, ns) =>
      reconcileDaemonSet({
        daemonSet,
        nodes: this.inf.nodes.list(),
        pods: this.podsIn(ns),
        revisions: this.inf.controllerRevisions.list().filter((r) => namespaceOf(r) === ns),
        now: this.clock.now(),
      }),
    );
  }

  private async syncScheduler(): Promise<void> {
    if (!this.ready('scheduler', SCHEDULER_KEY)) return;
    const r = reconcileScheduler({ pods: this.inf.pods.list(), nodes: this.inf.nodes.list() });
    if (r.unschedulable.length > 0)
      this.log.debug(
        { pods: r.unschedulable.slice(0, 20), count: r.unschedulable.length },
        'Pods unschedulable: no schedulable node',
      );
    await this.write('scheduler', SCHEDULER_KEY, r.operations);
  }

  private async syncKubelet(nodeName: string): Promise<void> {
    if (!this.ready('kubelet', nodeName)) return;
    const node = this.inf.nodes.get(nodeName);
    if (node === undefined) return;
    const pods = this.inf.pods.list().filter((p) => p.spec?.nodeName === nodeName);
    const r = reconcileKubelet({ node, pods, now: isoNow(this.clock) });
    this.warn('kubelet', r.warnings);
    await this.write('kubelet', nodeName, r.operations);
  }
}

function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return i < 0 ? ['', key] : [key.slice(0, i), key.slice(i + 1)];
}

function isoNow(clock: Clock): string {
  return new Date(Math.floor(clock.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
