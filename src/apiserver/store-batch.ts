// Group commit bookkeeping of the Store: a write operation's undo log and revisions while it
// runs, and the batch of operations staged for the storage backend's next commit, with the
// promise `durable()` hands out. No I/O.

import { storeKey } from './object.js';
import type { ResourceType } from './resources.js';
import type { HistoryEntry } from './store-watch.js';
import type { Revision } from './store-types.js';

/** A write operation in progress, or a batch of them waiting for the backend. */
export interface Staged {
  readonly undo: (() => void)[];
  readonly events: { readonly rt: ResourceType; readonly entry: HistoryEntry }[];
}

/** Staged operations with the promise settled when their commit succeeds or fails. */
export interface Batch extends Staged {
  readonly done: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
}

export function newBatch(): Batch {
  let resolve: () => void = () => undefined;
  let reject: (e: unknown) => void = () => undefined;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting (bootstrap writes): a failure must not become an unhandled rejection.
  done.catch(() => undefined);
  return { undo: [], events: [], done, resolve, reject };
}

/** The revision a history entry persists as. */
export function toRevision(e: HistoryEntry): Revision {
  return {
    rv: e.rv,
    resource: e.resource,
    key: storeKey(e.object.metadata.namespace, e.object.metadata.name ?? ''),
    type: e.type,
    object: e.object,
  };
}
