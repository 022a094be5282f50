// Write expectations (after upstream's ControllerExpectations): informer caches lag behind
// our own writes, so a controller that just created three pods must not look at a cache
// without them and create three more. After applying operations for a key, the controller
// records what the cache must show (object present at least at the written resourceVersion,
// or gone); until then, or until the deadline passes, syncs of that key wait. Pure
// bookkeeping over an injected lookup and time.

import type { ApiKind } from '../kube/api-client.js';
import type { KubeObject } from '../kube/types.js';

export interface Expectation {
  readonly kind: ApiKind;
  readonly namespace: string;
  readonly name: string;
  /** 'present': cache has the object at resourceVersion >= rv; 'gone': absent or terminating. */
  readonly want: 'present' | 'gone';
  readonly resourceVersion?: string;
  readonly uid?: string;
  /** For a binding: the cached pod must show this spec.nodeName. */
  readonly nodeName?: string;
}

export type CacheLookup = (
  kind: ApiKind,
  namespace: string,
  name: string,
) => KubeObject | undefined;

/** Does `have` reach resourceVersion `want`? Numeric when both are numbers, else equality. */
export function reachedResourceVersion(have: string | undefined, want: string): boolean {
  if (have === undefined) return false;
  if (/^[0-9]+$/.test(have) && /^[0-9]+$/.test(want)) return BigInt(have) >= BigInt(want);
  return have === want;
}

export class Expectations {
  private readonly pending = new Map<string, { items: Expectation[]; deadline: number }>();

  private readonly timeoutMs: number;

  constructor(timeoutMs = 15_000) {
    this.timeoutMs = timeoutMs;
  }

  /** Records expectations for a key (added to any still pending). */
  expect(key: string, items: readonly Expectation[], now: number): void {
    if (items.length === 0) return;
    const cur = this.pending.get(key);
    this.pending.set(key, {
      items: [...(cur?.items ?? []), ...items],
      deadline: now + this.timeoutMs,
    });
  }

  /**
   * True when every expectation of the key is met (or expired); met ones are dropped.
   * Returns the ms left until the deadline otherwise.
   */
  check(key: string, lookup: CacheLookup, now: number): true | number {
    const cur = this.pending.get(key);
    if (cur === undefined) return true;
    if (now >= cur.deadline) {
      this.pending.delete(key);
      return true;
    }
    const left = cur.items.filter((e) => !met(e, lookup));
    if (left.length === 0) {
      this.pending.delete(key);
      return true;
    }
    cur.items = left;
    return cur.deadline - now;
  }

  clear(key: string): void {
    this.pending.delete(key);
  }
}

function met(e: Expectation, lookup: CacheLookup): boolean {
  const o = lookup(e.kind, e.namespace, e.name);
  if (e.want === 'gone')
    return (
      o === undefined ||
      o.metadata?.deletionTimestamp !== undefined ||
      (e.uid !== undefined && o.metadata?.uid !== e.uid)
    );
  if (o === undefined) return false;
  if (
    e.nodeName !== undefined &&
    (o as { spec?: { nodeName?: string } }).spec?.nodeName !== e.nodeName
  )
    return false;
  return (
    e.resourceVersion === undefined ||
    reachedResourceVersion(o.metadata?.resourceVersion, e.resourceVersion)
  );
}
