// The API server's storage semantics, in memory and without I/O: one global resourceVersion
// counter, create/get/list/update/delete with the metadata rules of kube-apiserver (uid,
// creationTimestamp, generation, generateName, optimistic concurrency, finalizers and
// deletionTimestamp, graceful pod deletion, namespace existence and teardown, owner-reference
// garbage collection), and watches over a bounded window of recent revisions (410 Expired
// before it, 504 past the current resourceVersion), label/field selectors with ADDED/DELETED
// on selector transitions, and synthetic initial events. Per-kind defaulting, validation and
// allocation come from injected strategies (strategies.ts). Durability is an injected backend
// (sqlite-storage.ts): each write operation is staged with an undo log, the staged operations
// of one turn of the event loop are committed by the backend together (group commit), and
// only then are they applied to what reads see and sent to watchers; a failed commit undoes
// them all. HTTP is server.ts. Parts live beside it: the watch window and watchers
// (store-watch.ts), selectors and paginated lists (store-query.ts), metadata rules
// (store-meta.ts), the ownerReference index (store-owners.ts), group-commit bookkeeping
// (store-batch.ts) and the public types (store-types.ts, re-exported here).

import type { OwnerReference } from '../kube/types.js';
import { clone, deepEqual } from '../util/json.js';
import { formatTime, storeKey, type StoredObject } from './object.js';
import { NAMESPACES, PODS, RESOURCES, resourceKey, type ResourceType } from './resources.js';
import { ApiError } from './status.js';
import { newBatch, toRevision, type Batch, type Staged } from './store-batch.js';
import {
  checkBodyNamespace,
  mergeUpdate,
  normalizeInput,
  setMeta,
  specChanged,
} from './store-meta.js';
import { OwnerIndex, ownerUids } from './store-owners.js';
import { listObjects } from './store-query.js';
import type {
  DeleteOptions,
  ListOptions,
  ListResult,
  LoadedRevision,
  StoreBackend,
  StoreOptions,
  Strategy,
  StrategyContext,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './store-types.js';
import { History, Watches, bookmarkObject } from './store-watch.js';

export type {
  DeleteOptions,
  HistoryLimits,
  ListOptions,
  ListResult,
  LoadedRevision,
  Revision,
  StoreBackend,
  StoreOptions,
  Strategy,
  StrategyContext,
  WatchEvent,
  WatchEventType,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './store-types.js';

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

function defaultUid(): string {
  return crypto.randomUUID();
}

function isTerminalPod(o: StoredObject): boolean {
  const phase = (o.status as { phase?: string } | undefined)?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

export class Store {
  /** The working resourceVersion: what the next write builds on (staged writes included). */
  private rvCounter = 0;
  /** The resourceVersion reads and watches see: everything up to it is durable. */
  private committedRV = 0;
  /** Working state: what write operations read and change. */
  private readonly data = new Map<string, Map<string, StoredObject>>();
  /** Committed state for lists and watches; the same maps as `data` without a backend. */
  private readonly view = new Map<string, Map<string, StoredObject>>();
  private readonly hist: History;
  private readonly watches: Watches;
  private readonly owners = new OwnerIndex();
  private readonly byKey = new Map<string, ResourceType>(
    RESOURCES.map((rt) => [resourceKey(rt), rt]),
  );
  private readonly now: () => number;
  private readonly uid: () => string;
  private readonly random: () => number;
  private readonly strategies: ReadonlyMap<string, Strategy>;
  private readonly backend: StoreBackend | undefined;
  /** The write operation running now (nested store calls join it). */
  private op: (Staged & { deletion: boolean }) | undefined;
  /** Operations staged since the last commit. */
  private staged: Batch | undefined;
  private flushScheduled = false;

  constructor(opts: StoreOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.uid = opts.uid ?? defaultUid;
    this.random = opts.random ?? Math.random;
    this.strategies = opts.strategies ?? new Map();
    this.backend = opts.backend;
    this.hist = new History(
      {
        revisions: opts.history?.revisions ?? opts.historySize ?? 10_000,
        ageMs: opts.history?.ageMs ?? 0,
        bytes: opts.history?.bytes ?? 128 * 1024 * 1024,
      },
      0,
    );
    this.watches = new Watches(this.hist);
    for (const rt of RESOURCES) {
      const t = new Map<string, StoredObject>();
      this.data.set(resourceKey(rt), t);
      this.view.set(resourceKey(rt), this.backend ? new Map<string, StoredObject>() : t);
    }
  }

  /** Current resourceVersion of the whole store (of what is committed). */
  get resourceVersion(): number {
    return this.committedRV;
  }

  /** Oldest resourceVersion a watch may resume from. */
  get compactedResourceVersion(): number {
    return this.hist.floor;
  }

  private table(rt: ResourceType): Map<string, StoredObject> {
    const t = this.data.get(resourceKey(rt));
    if (!t) throw ApiError.internal(`no storage for ${resourceKey(rt)}`);
    return t;
  }

  private committed(rt: ResourceType): Map<string, StoredObject> {
    const t = this.view.get(resourceKey(rt));
    if (!t) throw ApiError.internal(`no storage for ${resourceKey(rt)}`);
    return t;
  }

  private strategy(rt: ResourceType): Strategy {
    return this.strategies.get(resourceKey(rt)) ?? {};
  }

  /** Number of stored objects of a resource (all namespaces). */
  count(rt: ResourceType): number {
    return this.committed(rt).size;
  }

  /**
   * Loads objects from storage: no events, no defaulting; allocators are rebuilt through the
   * strategies' restore hooks. The watch window starts at `floor` with the given retained
   * revisions (oldest first), so watches from a retained resourceVersion resume.
   */
  load(
    objects: Iterable<{ resource: string; object: StoredObject }>,
    rv: number,
    history: { floor: number; revisions: Iterable<LoadedRevision> } = {
      floor: rv,
      revisions: [],
    },
  ): void {
    for (const { resource, object } of objects) {
      const rt = this.byKey.get(resource);
      if (!rt) continue;
      const key = storeKey(object.metadata.namespace, object.metadata.name ?? '');
      this.table(rt).set(key, object);
      this.committed(rt).set(key, object);
      this.indexOwners(rt, object, undefined);
      this.strategy(rt).restore?.(object);
    }
    this.rvCounter = Math.max(this.rvCounter, rv);
    this.committedRV = this.rvCounter;
    this.hist.floor = Math.min(Math.max(this.hist.floor, history.floor), this.rvCounter);
    const now = this.now();
    for (const r of history.revisions)
      if (r.rv > this.hist.floor && this.byKey.has(r.resource))
        this.hist.push(
          {
            rv: r.rv,
            resource: r.resource,
            type: r.type,
            object: r.object,
            prev: r.prev,
            bytes: r.bytes,
            at: r.at,
          },
          now,
        );
  }

  /** Every stored object (committed state). */
  *entries(): Generator<{ resource: string; key: string; object: StoredObject }> {
    for (const [resource, t] of this.view)
      for (const [key, object] of t) yield { resource, key, object };
  }

  /**
   * Settles once every write made so far is durable and visible (rejects with the storage
   * error if their commit failed, in which case none of them happened). Undefined when
   * nothing is waiting: always without a backend.
   */
  durable(): Promise<void> | undefined {
    return this.staged?.done;
  }

  // ---- reads ----

  /**
   * One object as the next write would see it (staged writes included); the HTTP edge answers
   * only once those are durable (`durable()`).
   */
  get(rt: ResourceType, ns: string | undefined, name: string): StoredObject {
    const o = this.table(rt).get(storeKey(rt.namespaced ? ns : undefined, name));
    if (!o) throw ApiError.notFound(rt.group, rt.plural, name);
    return o;
  }

  tryGet(rt: ResourceType, ns: string | undefined, name: string): StoredObject | undefined {
    return this.table(rt).get(storeKey(rt.namespaced ? ns : undefined, name));
  }

  list(rt: ResourceType, ns: string | undefined, opts: ListOptions = {}): ListResult {
    return listObjects(rt, ns, opts, this.committed(rt), this.committedRV);
  }

  // ---- watch ----

  /**
   * Starts a watch; events are delivered synchronously to sink once committed. Resuming from
   * a resourceVersion older than the retained window throws 410 Expired; from one the server
   * has not reached, 504 Too large resource version.
   */
  watch(
    rt: ResourceType,
    ns: string | undefined,
    opts: WatchOptions,
    sink: (e: WatchEvent) => void,
  ): WatchHandle {
    return this.watches.watch(rt, ns, opts, sink, {
      committedRV: this.committedRV,
      objects: this.committed(rt),
    });
  }

  /** A BOOKMARK object at the current resourceVersion. */
  bookmark(rt: ResourceType, initialEventsEnd = false): StoredObject {
    return bookmarkObject(rt, this.committedRV, initialEventsEnd);
  }

  /** Records a revision of the running write operation; delivered once committed. */
  private emit(
    rt: ResourceType,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: StoredObject,
    prev: StoredObject | undefined,
  ): void {
    const op = this.op;
    if (!op) throw ApiError.internal('store: a change outside a write operation');
    const rv = Number(object.metadata.resourceVersion);
    op.events.push({
      rt,
      entry: { rv, resource: resourceKey(rt), type, object, prev, bytes: 0, at: 0 },
    });
  }

  // ---- transactions ----

  /**
   * Runs one write operation: its changes to the working state are recorded with an undo
   * log; on an exception they are undone. Without a backend the revisions are applied and
   * delivered at once; with one they are admitted (quota) and staged for the next group
   * commit. Nested store calls (cascades) join the running operation.
   */
  private write<T>(deletion: boolean, fn: () => T): T {
    if (this.op) return fn();
    const op = { undo: [] as (() => void)[], events: [] as Staged['events'], deletion };
    const rv0 = this.rvCounter;
    this.op = op;
    try {
      const out = fn();
      if (this.backend && op.events.length > 0) {
        const bytes = this.backend.admit(
          op.events.map((e) => toRevision(e.entry)),
          deletion,
        );
        op.events.forEach((e, i) => {
          (e.entry as { bytes: number }).bytes = bytes[i] ?? 0;
        });
      }
      this.op = undefined;
      if (op.events.length > 0) this.stage(op);
      return out;
    } catch (e) {
      this.op = undefined;
      for (let i = op.undo.length - 1; i >= 0; i--) op.undo[i]?.();
      this.rvCounter = rv0;
      throw e;
    }
  }

  private stage(op: Staged): void {
    if (!this.backend) {
      this.apply(op.events);
      return;
    }
    this.staged ??= newBatch();
    for (const u of op.undo) this.staged.undo.push(u);
    for (const e of op.events) this.staged.events.push(e);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flush();
      });
    }
  }

  /**
   * Group commit: every operation staged since the last flush goes to the backend in one
   * transaction; then it becomes visible and watchers hear of it. A failed commit undoes all
   * of them and rejects their `durable()` promise.
   */
  flush(): void {
    this.flushScheduled = false;
    const batch = this.staged;
    const backend = this.backend;
    if (!batch || !backend) return;
    this.staged = undefined;
    const revisions = batch.events.map((e) => toRevision(e.entry));
    try {
      backend.commit(revisions, this.hist.floor);
    } catch (e) {
      for (let i = batch.undo.length - 1; i >= 0; i--) batch.undo[i]?.();
      this.rvCounter = this.committedRV;
      batch.reject(e);
      return;
    }
    this.apply(batch.events);
    batch.resolve();
  }

  /** Makes committed revisions visible: committed state, history, watchers. */
  private apply(events: Staged['events']): void {
    const now = this.now();
    const separate = this.backend !== undefined;
    for (const { rt, entry } of events) {
      if (separate) {
        const view = this.committed(rt);
        const key = storeKey(entry.object.metadata.namespace, entry.object.metadata.name ?? '');
        if (entry.type === 'DELETED') view.delete(key);
        else view.set(key, entry.object);
      }
      this.watches.record(entry, now);
      if (entry.rv > this.committedRV) this.committedRV = entry.rv;
      this.watches.notify(rt, entry);
    }
    if (!separate) this.committedRV = this.rvCounter;
  }

  /** Sets a key of the working state, remembering how to undo it. */
  private put(rt: ResourceType, key: string, obj: StoredObject): void {
    const t = this.table(rt);
    const prev = t.get(key);
    t.set(key, obj);
    this.op?.undo.push(() => {
      if (prev === undefined) t.delete(key);
      else t.set(key, prev);
    });
  }

  private drop(rt: ResourceType, key: string): void {
    const t = this.table(rt);
    const prev = t.get(key);
    if (prev === undefined) return;
    t.delete(key);
    this.op?.undo.push(() => t.set(key, prev));
  }

  // ---- writes ----

  private nextRV(): number {
    return ++this.rvCounter;
  }

  private generateName(rt: ResourceType, ns: string | undefined, prefix: string): string {
    for (let attempt = 0; attempt < 8; attempt++) {
      let suffix = '';
      for (let i = 0; i < 5; i++)
        suffix += NAME_CHARS[Math.floor(this.random() * NAME_CHARS.length)] ?? 'b';
      const name = `${prefix.slice(0, 58)}${suffix}`;
      if (!this.table(rt).has(storeKey(ns, name))) return name;
    }
    throw ApiError.alreadyExists(rt.group, rt.plural, prefix);
  }

  private requireNamespace(rt: ResourceType, ns: string | undefined): void {
    if (!rt.namespaced) return;
    if (ns === undefined || ns === '')
      throw ApiError.badRequest(
        'the server could not find the requested resource: namespace is required',
      );
    const n = this.table(NAMESPACES).get(ns);
    if (!n) throw ApiError.notFound('', 'namespaces', ns);
    if (n.metadata.deletionTimestamp !== undefined)
      throw new ApiError(
        403,
        'Forbidden',
        `${rt.plural} is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
      );
  }

  private check(rt: ResourceType, obj: StoredObject, old: StoredObject | undefined): void {
    const causes = this.strategy(rt).validate?.(obj, old) ?? [];
    if (causes.length > 0)
      throw ApiError.invalid(
        rt.group,
        rt.kind,
        obj.metadata.name ?? obj.metadata.generateName ?? '',
        causes,
      );
  }

  /** POST: creates an object (201). The input is not modified. */
  create(
    rt: ResourceType,
    ns: string | undefined,
    input: unknown,
    opts: WriteOptions = {},
  ): StoredObject {
    return this.write(false, () => this.doCreate(rt, ns, input, opts));
  }

  private doCreate(
    rt: ResourceType,
    ns: string | undefined,
    input: unknown,
    opts: WriteOptions,
  ): StoredObject {
    const obj = normalizeInput(rt, input);
    const meta = obj.metadata;
    if (rt.namespaced) {
      if (ns !== undefined) {
        checkBodyNamespace(meta.namespace, ns);
        meta.namespace = ns;
      }
    } else delete meta.namespace;
    this.requireNamespace(rt, meta.namespace);
    if ((meta.name === undefined || meta.name === '') && meta.generateName)
      meta.name = this.generateName(rt, meta.namespace, meta.generateName);
    if (meta.name === undefined || meta.name === '')
      throw ApiError.invalid(rt.group, rt.kind, '', [
        {
          reason: 'FieldValueRequired',
          field: 'metadata.name',
          message: 'Required value: name or generateName is required',
        },
      ]);
    const now = this.now();
    const ctx: StrategyContext = { now, dryRun: opts.dryRun === true };
    meta.uid = this.uid();
    meta.creationTimestamp = formatTime(now);
    meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.managedFields;
    this.strategy(rt).prepareForCreate?.(obj, ctx);
    this.check(rt, obj, undefined);
    const key = storeKey(meta.namespace, meta.name);
    if (this.table(rt).has(key)) throw ApiError.alreadyExists(rt.group, rt.plural, meta.name);
    const undo = this.strategy(rt).allocate?.(obj, undefined, ctx);
    if (opts.dryRun === true) {
      undo?.();
      meta.resourceVersion = String(this.rvCounter);
      return obj;
    }
    if (undo) this.op?.undo.push(undo);
    return this.commitWrite(rt, obj, undefined);
  }

  /**
   * PUT: replaces an object. A non-empty metadata.resourceVersion that is not current is a
   * 409 Conflict. A main-resource write keeps the stored status; a status write keeps
   * everything else. An update that changes nothing returns the stored object unchanged.
   */
  update(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    input: unknown,
    opts: WriteOptions = {},
  ): StoredObject {
    return this.write(false, () => this.doUpdate(rt, ns, name, input, opts));
  }

  private doUpdate(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    input: unknown,
    opts: WriteOptions,
  ): StoredObject {
    const old = this.get(rt, ns, name);
    const incoming = normalizeInput(rt, input);
    const inMeta = incoming.metadata;
    if (inMeta.name !== undefined && inMeta.name !== '' && inMeta.name !== name)
      throw ApiError.badRequest(
        `the name of the object (${inMeta.name}) does not match the name on the URL (${name})`,
      );
    if (rt.namespaced) checkBodyNamespace(inMeta.namespace, ns);
    if (
      inMeta.resourceVersion !== undefined &&
      inMeta.resourceVersion !== '' &&
      inMeta.resourceVersion !== old.metadata.resourceVersion
    )
      throw ApiError.conflict(rt.group, rt.plural, name);
    const obj = mergeUpdate(rt, old, incoming, name, opts.subresource);
    const ctx: StrategyContext = { now: this.now(), dryRun: opts.dryRun === true };
    if (opts.subresource !== 'status') this.strategy(rt).prepareForUpdate?.(obj, old, ctx);
    this.check(rt, obj, old);
    setMeta(obj.metadata, 'resourceVersion', old.metadata.resourceVersion);
    if (specChanged(obj, old)) obj.metadata.generation = (old.metadata.generation ?? 0) + 1;
    if (deepEqual(obj, old)) return old;
    const undo = this.strategy(rt).allocate?.(obj, old, ctx);
    if (opts.dryRun === true) {
      undo?.();
      return obj;
    }
    if (undo) this.op?.undo.push(undo);
    const finalizersGone =
      obj.metadata.deletionTimestamp !== undefined && (obj.metadata.finalizers ?? []).length === 0;
    // As kube-apiserver: an update that leaves a terminating object without finalizers and
    // with no grace period left removes it (a pod still in its grace period stays).
    if (finalizersGone && (obj.metadata.deletionGracePeriodSeconds ?? 0) === 0) {
      this.remove(rt, this.bump(rt, obj));
      return obj;
    }
    return this.commitWrite(rt, obj, old);
  }

  /**
   * DELETE: removes an object, or marks it terminating (deletionTimestamp) when it has
   * finalizers or is a pod on a node that gets a grace period. Returns the object as it is
   * now (terminating) or as it was removed.
   */
  delete(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): StoredObject {
    return this.write(true, () => this.doDelete(rt, ns, name, opts));
  }

  private doDelete(
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    opts: DeleteOptions,
  ): StoredObject {
    const old = this.get(rt, ns, name);
    const pre = opts.preconditions;
    if (pre?.uid !== undefined && pre.uid !== old.metadata.uid)
      throw ApiError.conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid ?? ''}`,
      );
    if (pre?.resourceVersion !== undefined && pre.resourceVersion !== old.metadata.resourceVersion)
      throw ApiError.conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in meta: ${old.metadata.resourceVersion ?? ''}`,
      );
    if (opts.dryRun === true) return old;
    const now = this.now();
    const obj = clone(old);
    const m = obj.metadata;
    const policy = opts.propagationPolicy ?? 'Background';

    if (rt === NAMESPACES) return this.deleteNamespace(obj, old, now);

    let grace = 0;
    if (
      rt === PODS &&
      !isTerminalPod(old) &&
      (obj.spec as { nodeName?: string } | undefined)?.nodeName
    ) {
      grace =
        opts.gracePeriodSeconds ??
        (obj.spec as { terminationGracePeriodSeconds?: number } | undefined)
          ?.terminationGracePeriodSeconds ??
        30;
      if (grace < 0) grace = 0;
    }
    const finalizers = new Set(m.finalizers ?? []);
    if (policy === 'Foreground' && this.hasDependents(old)) finalizers.add('foregroundDeletion');
    if (policy === 'Orphan') this.orphanDependents(old);

    const pending = finalizers.size > 0;
    if (m.deletionTimestamp !== undefined) {
      // Already terminating: only a shorter grace period changes anything.
      const current = m.deletionGracePeriodSeconds ?? 0;
      if (grace === 0 && !pending) return this.remove(rt, this.bump(rt, obj));
      if (grace < current) {
        m.deletionGracePeriodSeconds = grace;
        m.deletionTimestamp = formatTime(now + grace * 1000);
        return this.commitModified(rt, obj, old);
      }
      return old;
    }
    if (grace === 0 && !pending) {
      return this.remove(rt, this.bump(rt, obj));
    }
    m.deletionTimestamp = formatTime(now + grace * 1000);
    m.deletionGracePeriodSeconds = grace;
    if (finalizers.size > 0) m.finalizers = [...finalizers];
    const out = this.commitModified(rt, obj, old);
    if (policy === 'Foreground') this.deleteDependents(old);
    return out;
  }

  /** Gives `obj` the next resourceVersion and writes it to the working state. */
  private bump(rt: ResourceType, obj: StoredObject): StoredObject {
    obj.metadata.resourceVersion = String(this.nextRV());
    this.put(rt, storeKey(obj.metadata.namespace, obj.metadata.name ?? ''), obj);
    return obj;
  }

  /** Stages a created (`old` undefined) or replaced object, indexing its owners anew. */
  private commitWrite(
    rt: ResourceType,
    obj: StoredObject,
    old: StoredObject | undefined,
  ): StoredObject {
    this.bump(rt, obj);
    this.indexOwners(rt, obj, old);
    this.emit(rt, old ? 'MODIFIED' : 'ADDED', obj, old);
    return obj;
  }

  private commitModified(rt: ResourceType, obj: StoredObject, old: StoredObject): StoredObject {
    this.bump(rt, obj);
    this.emit(rt, 'MODIFIED', obj, old);
    return obj;
  }

  private deleteNamespace(obj: StoredObject, old: StoredObject, now: number): StoredObject {
    const name = obj.metadata.name ?? '';
    if (obj.metadata.deletionTimestamp === undefined) {
      obj.metadata.deletionTimestamp = formatTime(now);
      obj.metadata.deletionGracePeriodSeconds = 0;
      obj.status = { ...(obj.status as object | undefined), phase: 'Terminating' };
      this.commitModified(NAMESPACES, obj, old);
    }
    for (const rt of RESOURCES) {
      if (!rt.namespaced) continue;
      for (const o of [...this.table(rt).values()])
        if (o.metadata.namespace === name && o.metadata.deletionTimestamp === undefined)
          this.delete(rt, name, o.metadata.name ?? '', { gracePeriodSeconds: 0 });
    }
    return this.finishNamespace(name) ?? this.tryGet(NAMESPACES, undefined, name) ?? obj;
  }

  /** Removes a terminating namespace once nothing is left in it. */
  private finishNamespace(name: string): StoredObject | undefined {
    const ns = this.table(NAMESPACES).get(name);
    if (!ns || ns.metadata.deletionTimestamp === undefined) return undefined;
    for (const rt of RESOURCES) {
      if (!rt.namespaced) continue;
      for (const o of this.table(rt).values()) if (o.metadata.namespace === name) return undefined;
    }
    const obj = clone(ns);
    return this.remove(NAMESPACES, this.bump(NAMESPACES, obj));
  }

  /** Final removal: DELETED event, allocator release, garbage collection of dependents. */
  private remove(rt: ResourceType, obj: StoredObject): StoredObject {
    const key = storeKey(obj.metadata.namespace, obj.metadata.name ?? '');
    this.drop(rt, key);
    this.unindexOwners(rt, obj);
    const strategy = this.strategy(rt);
    if (strategy.release) {
      strategy.release(obj);
      this.op?.undo.push(() => strategy.restore?.(obj));
    }
    this.emit(rt, 'DELETED', obj, undefined);
    this.deleteDependents(obj);
    for (const uid of ownerUids(obj)) this.maybeFinishForeground(uid);
    if (rt.namespaced && obj.metadata.namespace !== undefined)
      this.finishNamespace(obj.metadata.namespace);
    return obj;
  }

  // ---- garbage collection ----

  private indexOwners(rt: ResourceType, obj: StoredObject, old: StoredObject | undefined): void {
    this.owners.index(rt, obj, old, this.op?.undo);
  }

  private unindexOwners(rt: ResourceType, obj: StoredObject): void {
    this.owners.unindex(rt, obj, this.op?.undo);
  }

  private dependentsOf(owner: StoredObject): { rt: ResourceType; obj: StoredObject }[] {
    return this.owners.dependentsOf(owner, (rk, key) => {
      const rt = this.byKey.get(rk);
      const obj = rt ? this.table(rt).get(key) : undefined;
      return rt && obj ? { rt, obj } : undefined;
    });
  }

  private hasDependents(owner: StoredObject): boolean {
    return this.dependentsOf(owner).length > 0;
  }

  private deleteDependents(owner: StoredObject): void {
    for (const { rt, obj } of this.dependentsOf(owner)) {
      if (obj.metadata.deletionTimestamp !== undefined) continue;
      const remaining = (obj.metadata.ownerReferences ?? []).filter(
        (r) => r.uid !== owner.metadata.uid && this.ownerExists(r),
      );
      if (remaining.length > 0) continue;
      const current = this.tryGet(rt, obj.metadata.namespace, obj.metadata.name ?? '');
      if (current) this.delete(rt, obj.metadata.namespace, obj.metadata.name ?? '', {});
    }
  }

  private ownerExists(ref: OwnerReference): boolean {
    for (const rt of RESOURCES)
      if (rt.kind === ref.kind)
        for (const o of this.table(rt).values())
          if (o.metadata.uid === ref.uid && o.metadata.deletionTimestamp === undefined) return true;
    return false;
  }

  private orphanDependents(owner: StoredObject): void {
    for (const { rt, obj } of this.dependentsOf(owner)) {
      const next = clone(obj);
      next.metadata.ownerReferences = (obj.metadata.ownerReferences ?? []).filter(
        (r) => r.uid !== owner.metadata.uid,
      );
      if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences;
      this.indexOwners(rt, next, obj);
      this.commitModified(rt, next, obj);
    }
  }

  private maybeFinishForeground(ownerUid: string): void {
    if (this.owners.count(ownerUid) > 0) return;
    for (const rt of RESOURCES)
      for (const o of this.table(rt).values())
        if (
          o.metadata.uid === ownerUid &&
          (o.metadata.finalizers ?? []).includes('foregroundDeletion')
        ) {
          const next = clone(o);
          next.metadata.finalizers = (o.metadata.finalizers ?? []).filter(
            (f) => f !== 'foregroundDeletion',
          );
          if (next.metadata.finalizers.length === 0) delete next.metadata.finalizers;
          this.update(rt, o.metadata.namespace, o.metadata.name ?? '', next);
          return;
        }
  }
}
