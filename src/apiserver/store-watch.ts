// The watch side of the Store: the window of recent revisions (History, bounded as etcd's
// compaction is), the registered watchers, and how a revision reaches them (ADDED/DELETED on
// selector transitions, synthetic initial events, BOOKMARKs). Resuming before the window is
// 410 Expired, past the committed resourceVersion 504. No I/O; the Store decides when a
// revision is committed and hands it to `publish`.

import type { StoredObject } from './object.js';
import { apiVersionOf, resourceKey, type ResourceType } from './resources.js';
import { ApiError } from './status.js';
import { matchesSelection, parseRV, parseSelection, type Selection } from './store-query.js';
import type { HistoryLimits, WatchEvent, WatchHandle, WatchOptions } from './store-types.js';

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

interface Watcher {
  readonly ns: string | undefined;
  readonly selection: Selection;
  readonly rt: ResourceType;
  readonly sink: (e: WatchEvent) => void;
}

/** One retained revision, with the object before it (for selector transitions). */
export interface HistoryEntry {
  readonly rv: number;
  readonly resource: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: StoredObject;
  readonly prev: StoredObject | undefined;
  readonly bytes: number;
  readonly at: number;
}

/**
 * The window of recent revisions of all resources, oldest first, as etcd's compaction keeps
 * it: at least `revisions` (or everything younger than `ageMs`), never more than `bytes`.
 * Watches may resume from any resourceVersion >= floor.
 */
export class History {
  private items: HistoryEntry[] = [];
  private head = 0;
  private bytes = 0;
  floor: number;
  private readonly maxRevisions: number;
  private readonly maxBytes: number;
  private readonly ageMs: number;

  constructor(limits: Required<HistoryLimits>, floor: number) {
    this.maxRevisions = limits.revisions;
    this.maxBytes = limits.bytes;
    this.ageMs = limits.ageMs;
    this.floor = floor;
  }

  get size(): number {
    return this.items.length - this.head;
  }

  push(e: HistoryEntry, now: number): void {
    this.items.push(e);
    this.bytes += e.bytes;
    this.trim(now);
  }

  private trim(now: number): void {
    while (this.size > 0) {
      const e = this.items[this.head];
      if (!e) break;
      const tooMany = this.size > this.maxRevisions && now - e.at >= this.ageMs;
      if (!tooMany && this.bytes <= this.maxBytes) break;
      this.items[this.head] = undefined as unknown as HistoryEntry;
      this.head++;
      this.bytes -= e.bytes;
      this.floor = e.rv;
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  since(resource: string, rv: number): HistoryEntry[] {
    const out: HistoryEntry[] = [];
    for (let i = this.items.length - 1; i >= this.head; i--) {
      const e = this.items[i];
      if (!e || e.rv <= rv) break;
      if (e.resource === resource) out.push(e);
    }
    return out.reverse();
  }
}

/** A BOOKMARK object at resourceVersion `rv`; `initialEventsEnd` marks the end of initial events. */
export function bookmarkObject(
  rt: ResourceType,
  rv: number,
  initialEventsEnd: boolean,
): StoredObject {
  return {
    kind: rt.kind,
    apiVersion: apiVersionOf(rt),
    metadata: {
      resourceVersion: String(rv),
      ...(initialEventsEnd ? { annotations: { [INITIAL_EVENTS_END]: 'true' } } : {}),
    },
  };
}

/** The committed state a new watch starts from. */
export interface WatchView {
  readonly committedRV: number;
  /** Committed objects of the watched resource, by store key. */
  readonly objects: ReadonlyMap<string, StoredObject>;
}

/** The history window and the watchers of every resource. */
export class Watches {
  private readonly watchers = new Map<string, Set<Watcher>>();

  private readonly history: History;

  constructor(history: History) {
    this.history = history;
  }

  /** Starts a watch (see Store.watch). */
  watch(
    rt: ResourceType,
    ns: string | undefined,
    opts: WatchOptions,
    sink: (e: WatchEvent) => void,
    view: WatchView,
  ): WatchHandle {
    const selection = parseSelection(rt, opts);
    const rv = parseRV(opts.resourceVersion);
    const w: Watcher = { ns, selection, rt, sink };
    const initial = opts.sendInitialEvents === true || rv === undefined || rv === 0;
    let replay: HistoryEntry[] = [];
    if (!initial) {
      if (rv > view.committedRV) throw ApiError.tooLargeResourceVersion(rv, view.committedRV);
      if (rv < this.history.floor)
        throw ApiError.gone(`too old resource version: ${rv} (${this.history.floor + 1})`);
      replay = this.history.since(resourceKey(rt), rv);
    }
    let set = this.watchers.get(resourceKey(rt));
    if (!set) {
      set = new Set();
      this.watchers.set(resourceKey(rt), set);
    }
    set.add(w);
    if (initial) {
      const keys = [...view.objects.keys()].sort();
      for (const k of keys) {
        const o = view.objects.get(k);
        if (o && matchesSelection(rt, o, ns, selection)) sink({ type: 'ADDED', object: o });
      }
      if (opts.sendInitialEvents === true && opts.allowWatchBookmarks === true)
        sink({ type: 'BOOKMARK', object: bookmarkObject(rt, view.committedRV, true) });
    } else for (const e of replay) deliver(w, e);
    return {
      stop: () => {
        set.delete(w);
      },
    };
  }

  /** Records a committed revision in the window, stamped with the time `now`. */
  record(entry: HistoryEntry, now: number): void {
    (entry as { at: number }).at = now;
    this.history.push(entry, now);
  }

  /** Tells the watchers of `rt` of a committed revision. */
  notify(rt: ResourceType, entry: HistoryEntry): void {
    const set = this.watchers.get(resourceKey(rt));
    if (set) for (const w of [...set]) deliver(w, entry);
  }
}

function deliver(w: Watcher, e: HistoryEntry): void {
  const cur = matchesSelection(w.rt, e.object, w.ns, w.selection);
  if (e.type === 'MODIFIED') {
    const was = e.prev !== undefined && matchesSelection(w.rt, e.prev, w.ns, w.selection);
    if (cur && was) w.sink({ type: 'MODIFIED', object: e.object });
    else if (cur) w.sink({ type: 'ADDED', object: e.object });
    else if (was) w.sink({ type: 'DELETED', object: e.object });
  } else if (cur) w.sink({ type: e.type, object: e.object });
}
