// The Informer seam: a cache of one kind of API object kept in step by list+watch, with
// add/update/delete handlers and a synced signal. Consumers (proxy, dns, controllers) depend
// only on this interface; client.ts backs it with @kubernetes/client-node, and FakeInformer
// (here) is the in-memory implementation for tests, dry runs and the tracer.

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
 * In-memory informer. Tests drive it with add/update/delete (or `replace` for a relist,
 * which emits deletes for vanished objects as a real relist does); `start()` marks it synced.
 */
export class FakeInformer<T extends KubeObject> implements Informer<T> {
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly objects = new Map<string, T>();
  private synced = false;

  constructor(initial: readonly T[] = []) {
    for (const o of initial) this.objects.set(objectKey(o), o);
  }

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  start(): Promise<void> {
    for (const o of this.objects.values()) for (const h of this.handlers) h.onAdd?.(o);
    this.synced = true;
    for (const h of this.handlers) h.onSynced?.();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
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

  /** Adds or updates an object, emitting onAdd or onUpdate. */
  upsert(obj: T): void {
    const key = objectKey(obj);
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    if (!this.synced) return;
    for (const h of this.handlers) {
      if (old === undefined) h.onAdd?.(obj);
      else h.onUpdate?.(old, obj);
    }
  }

  delete(key: string): void {
    const old = this.objects.get(key);
    if (old === undefined) return;
    this.objects.delete(key);
    if (!this.synced) return;
    for (const h of this.handlers) h.onDelete?.(old);
  }

  /** Replaces the whole cache as a relist would. */
  replace(objs: readonly T[]): void {
    const keep = new Set(objs.map(objectKey));
    for (const key of [...this.objects.keys()]) if (!keep.has(key)) this.delete(key);
    for (const o of objs) this.upsert(o);
  }

  /** Reports an error to the handlers, as a failed watch would. */
  fail(err: unknown): void {
    for (const h of this.handlers) h.onError?.(err);
  }
}
