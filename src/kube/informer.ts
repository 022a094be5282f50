// The Informer seam: a cache of one kind of API object kept in step by list+watch, with
// add/update/delete handlers and a synced signal. Consumers (proxy, dns, controllers) depend
// only on this interface; client.ts backs it with list+watch over HTTP, and FakeInformer
// (here) is the in-memory implementation for tests, dry runs and the tracer. Both keep their
// cache and handlers in InformerCache, so both deliver events the same way.

import type { KubeObject } from './types.js';
import { objectKey } from './types.js';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
  /** Called once, after the initial list has been delivered through onAdd. */
  onSynced?(): void;
  /** A list or watch failed; the informer retries by itself. */
  onError?(err: unknown): void;
}

export interface Informer<T extends KubeObject> {
  addHandlers(h: InformerHandlers<T>): void;
  /** Starts list+watch; resolves after the first successful list (the cache has synced). */
  start(): Promise<void>;
  stop(): Promise<void>;
  hasSynced(): boolean;
  list(): T[];
  get(key: string): T | undefined;
}

/**
 * What every Informer keeps, whatever feeds it: the objects by key, the handlers in the order
 * they were added, and the synced flag. Implementations store objects and tell the handlers
 * through the protected helpers; how objects arrive (a watch, a test) is theirs.
 */
export abstract class InformerCache<T extends KubeObject> implements Informer<T> {
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly objects = new Map<string, T>();
  private synced = false;

  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** Stores an object; returns the one it replaced (undefined for a new key). */
  protected put(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    return old;
  }

  /** Removes an object; returns it (undefined when the key was not cached). */
  protected take(key: string): T | undefined {
    const old = this.objects.get(key);
    this.objects.delete(key);
    return old;
  }

  /** onAdd (no `old`) or onUpdate to every handler. */
  protected emitUpsert(old: T | undefined, obj: T): void {
    for (const h of this.handlers) {
      if (old === undefined) h.onAdd?.(obj);
      else h.onUpdate?.(old, obj);
    }
  }

  protected emitDelete(old: T): void {
    for (const h of this.handlers) h.onDelete?.(old);
  }

  protected emitError(err: unknown): void {
    for (const h of this.handlers) h.onError?.(err);
  }

  /** Marks the cache synced and calls every onSynced. */
  protected markSynced(): void {
    this.synced = true;
    for (const h of this.handlers) h.onSynced?.();
  }
}

/**
 * In-memory informer. Tests drive it with add/update/delete (or `replace` for a relist,
 * which emits deletes for vanished objects as a real relist does); `start()` marks it synced.
 */
export class FakeInformer<T extends KubeObject> extends InformerCache<T> {
  private readonly onStop: (() => void) | undefined;

  /** `onStop` runs on `stop()`: whatever feeds the informer detaches there. */
  constructor(initial: readonly T[] = [], onStop?: () => void) {
    super();
    for (const o of initial) this.put(o);
    this.onStop = onStop;
  }

  start(): Promise<void> {
    for (const o of this.list()) this.emitUpsert(undefined, o);
    this.markSynced();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.onStop?.();
    return Promise.resolve();
  }

  /** Adds or updates an object, emitting onAdd or onUpdate. */
  upsert(obj: T): void {
    const old = this.put(obj);
    if (this.hasSynced()) this.emitUpsert(old, obj);
  }

  delete(key: string): void {
    const old = this.take(key);
    if (old !== undefined && this.hasSynced()) this.emitDelete(old);
  }

  /** Replaces the whole cache as a relist would. */
  replace(objs: readonly T[]): void {
    const keep = new Set(objs.map(objectKey));
    for (const o of this.list()) {
      const key = objectKey(o);
      if (!keep.has(key)) this.delete(key);
    }
    for (const o of objs) this.upsert(o);
  }

  /** Reports an error to the handlers, as a failed watch would. */
  fail(err: unknown): void {
    this.emitError(err);
  }
}
