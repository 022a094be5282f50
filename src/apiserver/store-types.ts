// The public types of the API server's Store (store.ts re-exports them): watch events, the
// revisions a storage backend persists, history limits, per-kind strategies, and the
// options of list, watch, write and delete. Types only.

import type { StoredObject } from './object.js';
import type { StatusCause } from './status.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  readonly type: WatchEventType;
  readonly object: StoredObject;
}

/** One revision: what a write operation changed, as the storage backend persists it. */
export interface Revision {
  readonly rv: number;
  /** `resourceKey()` of the resource. */
  readonly resource: string;
  /** `storeKey()`: `ns/name` or `name`. */
  readonly key: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object as written (for DELETED: as it was removed). */
  readonly object: StoredObject;
}

/**
 * Where committed revisions go (sqlite-storage.ts). `admit` runs at the end of every write
 * operation, before it is staged, and may refuse it (507 past the quota): it returns the
 * bytes the revisions will take. `commit` makes a batch durable in one transaction, or
 * throws and stores none of it; `floor` is the compaction point (revisions a watch can no
 * longer resume from).
 */
export interface StoreBackend {
  admit(revisions: readonly Revision[], deletion: boolean): number[];
  commit(revisions: readonly Revision[], floor: number): void;
}

/** A retained revision loaded from storage, so watches resume across a restart. */
export interface LoadedRevision extends Revision {
  readonly prev: StoredObject | undefined;
  readonly bytes: number;
  /** When it was written (ms since the epoch). */
  readonly at: number;
}

/** Bounds of the watch history (and, with a backend, of the stored revisions). */
export interface HistoryLimits {
  /** Revisions kept at least, unless `bytes` is exceeded. Default 10,000. */
  readonly revisions?: number;
  /** Revisions younger than this are kept beyond `revisions` (ms; default 0). */
  readonly ageMs?: number;
  /** Serialised size of the window, at most (default 128 MiB; counted only with a backend). */
  readonly bytes?: number;
}

export interface StrategyContext {
  readonly now: number;
  readonly dryRun: boolean;
}

/** Per-kind behaviour: defaulting, validation, allocation. All hooks are optional. */
export interface Strategy {
  /** Defaulting and status reset on create; may throw ApiError. */
  prepareForCreate?(obj: StoredObject, ctx: StrategyContext): void;
  /** Defaulting on update (old is the stored object). */
  prepareForUpdate?(obj: StoredObject, old: StoredObject, ctx: StrategyContext): void;
  validate?(obj: StoredObject, old: StoredObject | undefined): StatusCause[];
  /**
   * Reserves resources (IPs, ports) for obj; returns an undo function. Throws ApiError when
   * allocation fails. Called after validation, before commit.
   */
  allocate?(obj: StoredObject, old: StoredObject | undefined, ctx: StrategyContext): () => void;
  /** Releases what allocate reserved, when the object is finally removed. */
  release?(obj: StoredObject): void;
  /** Rebuilds allocator state from a stored object (after loading from disk). */
  restore?(obj: StoredObject): void;
}

export interface StoreOptions {
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  readonly uid?: () => string;
  /** Uniform in [0,1): generateName suffixes. */
  readonly random?: () => number;
  /** Revisions retained for watches that resume from a resourceVersion (history.revisions). */
  readonly historySize?: number;
  readonly history?: HistoryLimits;
  readonly strategies?: ReadonlyMap<string, Strategy>;
  /** Durable storage; without it every write is applied at once (in memory only). */
  readonly backend?: StoreBackend;
}

export interface ListOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: string;
}

export interface ListResult {
  readonly items: StoredObject[];
  readonly resourceVersion: string;
  readonly continue?: string;
  readonly remainingItemCount?: number;
}

export interface WatchOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly resourceVersion?: string;
  readonly sendInitialEvents?: boolean;
  readonly allowWatchBookmarks?: boolean;
}

export interface DeleteOptions {
  readonly gracePeriodSeconds?: number;
  readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  readonly dryRun?: boolean;
}

export interface WriteOptions {
  readonly dryRun?: boolean;
  /** Write only `status` (the /status subresource). */
  readonly subresource?: 'status';
}

export interface WatchHandle {
  stop(): void;
}
