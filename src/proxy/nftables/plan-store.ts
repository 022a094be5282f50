// The nftables plan's memory of what it put in the kernel, kept cheap to update: a
// persistent map split into 256 buckets (a change copies only the buckets it touches, so a
// partial sync at 10k Services costs what it changes), and on top of it the element store
// that diffs the shared sets and maps. An element (a hairpin entry, a ClusterIP shared by
// two ports) may be wanted by several Service ports: it stays while any of them wants it,
// and when owners disagree on its value the lowest port key wins and the plan warns. Pure.

import type { NftElement } from '../../netfilter/nftables/model.js';
import { elementKey } from '../../netfilter/nftables/model.js';

const BUCKETS = 256;

/** FNV-1a of the key, modulo the bucket count. */
function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % BUCKETS;
}

/** A read-only map of string keys; `draft()` starts a copy-on-write change. */
export class BucketMap<V> {
  private readonly buckets: readonly ReadonlyMap<string, V>[];
  readonly size: number;

  private constructor(buckets: readonly ReadonlyMap<string, V>[], size: number) {
    this.buckets = buckets;
    this.size = size;
  }

  static empty<V>(): BucketMap<V> {
    const empty = new Map<string, V>();
    return new BucketMap<V>(new Array<ReadonlyMap<string, V>>(BUCKETS).fill(empty), 0);
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.buckets[bucketOf(key)]?.has(key) ?? false;
  }

  /** All entries (an array: cheaper than a generator over 256 maps). */
  entries(): [string, V][] {
    const out: [string, V][] = [];
    for (const b of this.buckets) for (const e of b) out.push(e);
    return out;
  }

  values(): V[] {
    const out: V[] = [];
    for (const b of this.buckets) for (const v of b.values()) out.push(v);
    return out;
  }

  draft(): BucketMapDraft<V> {
    return new BucketMapDraft(this.buckets, this.size, (b, n) => new BucketMap(b, n));
  }
}

/** A change to a BucketMap: copies a bucket on its first write. */
export class BucketMapDraft<V> {
  private readonly buckets: ReadonlyMap<string, V>[];
  private readonly copied = new Set<number>();
  private size: number;
  private readonly make: (b: ReadonlyMap<string, V>[], n: number) => BucketMap<V>;

  constructor(
    buckets: readonly ReadonlyMap<string, V>[],
    size: number,
    make: (b: ReadonlyMap<string, V>[], n: number) => BucketMap<V>,
  ) {
    this.buckets = [...buckets];
    this.size = size;
    this.make = make;
  }

  private writable(key: string): Map<string, V> {
    const b = bucketOf(key);
    if (!this.copied.has(b)) {
      this.buckets[b] = new Map(this.buckets[b]);
      this.copied.add(b);
    }
    return this.buckets[b] as Map<string, V>;
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  set(key: string, v: V): void {
    const m = this.writable(key);
    if (!m.has(key)) this.size++;
    m.set(key, v);
  }

  delete(key: string): void {
    if (!this.buckets[bucketOf(key)]?.has(key)) return;
    this.writable(key).delete(key);
    this.size--;
  }

  finish(): BucketMap<V> {
    return this.make(this.buckets, this.size);
  }
}

/** An element wanted by one Service port (the common case: one small object per element). */
class OwnedElement {
  readonly owner: string;
  readonly element: NftElement;
  constructor(owner: string, element: NftElement) {
    this.owner = owner;
    this.element = element;
  }
}

/** An element wanted by several Service ports, with what each wants; sorted by port key. */
interface SharedElement {
  readonly owners: readonly (readonly [string, NftElement])[];
}

/** One element of the kernel as the plan keeps it: who wants it, and what is written. */
export type ElementSlot = OwnedElement | SharedElement;

function ownersOf(slot: ElementSlot): readonly (readonly [string, NftElement])[] {
  return slot instanceof OwnedElement ? [[slot.owner, slot.element]] : slot.owners;
}

function slotOf(owners: readonly (readonly [string, NftElement])[]): ElementSlot {
  const [only] = owners;
  return owners.length === 1 && only !== undefined
    ? new OwnedElement(only[0], only[1])
    : { owners };
}

/** Store key of an element: `set|k1 . k2`. */
export function slotKey(e: Pick<NftElement, 'set' | 'key'>): string {
  // join gives one flat string (a template literal, a chain of pieces: 40k kept keys).
  return [e.set, elementKey(e.key)].join('|');
}

/** What an element is written as, beyond its key: value and comment. */
export function elementText(e: NftElement): string {
  const v = e.value;
  let value = '';
  if (v !== undefined)
    value =
      v.kind === 'data'
        ? v.parts.join(' . ')
        : v.kind === 'jump' || v.kind === 'goto'
          ? `${v.kind} ${v.chain}`
          : v.kind;
  return `${value}#${e.comment ?? ''}`;
}

/** The element written for a slot (the lowest port key's), or undefined. */
export function effective(slot: ElementSlot | undefined): NftElement | undefined {
  if (slot === undefined) return undefined;
  return slot instanceof OwnedElement ? slot.element : slot.owners[0]?.[1];
}

/** Adds or removes one owner's element, recording the touched key. */
export class ElementStoreDraft {
  readonly draft: BucketMapDraft<ElementSlot>;
  readonly touched = new Set<string>();
  readonly conflicts: string[] = [];

  constructor(draft: BucketMapDraft<ElementSlot>) {
    this.draft = draft;
  }

  add(owner: string, e: NftElement): void {
    const k = slotKey(e);
    this.touched.add(k);
    const slot = this.draft.get(k);
    if (slot === undefined) {
      // The common case: one owner, nothing to sort or compare.
      this.draft.set(k, new OwnedElement(owner, e));
      return;
    }
    const owners = [...ownersOf(slot).filter(([o]) => o !== owner), [owner, e] as const];
    owners.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const first = owners[0]?.[1];
    const text = first === undefined ? '' : elementText(first);
    if (first !== undefined && owners.some(([, x]) => x !== first && elementText(x) !== text))
      this.conflicts.push(
        `${e.set} element ${elementKey(e.key)} is wanted by ${owners.map(([o]) => o).join(', ')} with different values: ${owners[0]?.[0] ?? ''} wins`,
      );
    this.draft.set(k, slotOf(owners));
  }

  remove(owner: string, e: NftElement): void {
    const k = slotKey(e);
    const slot = this.draft.get(k);
    if (!slot) return;
    this.touched.add(k);
    const owners = ownersOf(slot).filter(([o]) => o !== owner);
    if (owners.length === 0) this.draft.delete(k);
    else this.draft.set(k, slotOf(owners));
  }
}
