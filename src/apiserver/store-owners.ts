// The Store's index of ownerReferences: owner uid -> its dependents, kept in step with every
// write (and undone with it), so garbage collection, foreground deletion and orphaning find
// an owner's dependents without scanning every resource. The cascades themselves stay in
// the Store, since they are writes.

import { storeKey, type StoredObject } from './object.js';
import { resourceKey, type ResourceType } from './resources.js';

/** Undo steps of the running write operation; undefined outside one. */
export type UndoLog = (() => void)[] | undefined;

/** The uids an object names in its ownerReferences. */
export function ownerUids(o: StoredObject): string[] {
  return (o.metadata.ownerReferences ?? []).map((r) => r.uid);
}

function refOf(rt: ResourceType, obj: StoredObject): string {
  return `${resourceKey(rt)}\u0000${storeKey(obj.metadata.namespace, obj.metadata.name ?? '')}`;
}

/** owner uid -> dependents as `resourceKey\u0000storeKey`. */
export class OwnerIndex {
  private readonly dependents = new Map<string, Set<string>>();

  /** Number of indexed dependents of owner `uid`. */
  count(uid: string): number {
    return this.dependents.get(uid)?.size ?? 0;
  }

  /** Indexes `obj` under its owners (replacing what `old` indexed). */
  index(rt: ResourceType, obj: StoredObject, old: StoredObject | undefined, undo: UndoLog): void {
    if (old) this.unindex(rt, old, undo);
    const ref = refOf(rt, obj);
    for (const uid of ownerUids(obj)) {
      let s = this.dependents.get(uid);
      if (!s) {
        s = new Set();
        this.dependents.set(uid, s);
      }
      if (s.has(ref)) continue;
      s.add(ref);
      const set = s;
      undo?.push(() => {
        set.delete(ref);
        if (set.size === 0 && this.dependents.get(uid) === set) this.dependents.delete(uid);
      });
    }
  }

  /** Removes `obj` from its owners' dependents. */
  unindex(rt: ResourceType, obj: StoredObject, undo: UndoLog): void {
    const ref = refOf(rt, obj);
    for (const uid of ownerUids(obj)) {
      const s = this.dependents.get(uid);
      if (!s?.has(ref)) continue;
      s.delete(ref);
      if (s.size === 0) this.dependents.delete(uid);
      undo?.push(() => {
        let back = this.dependents.get(uid);
        if (!back) {
          back = new Set();
          this.dependents.set(uid, back);
        }
        back.add(ref);
      });
    }
  }

  /** The dependents of `owner` that `lookup` still finds (by resource key and store key). */
  dependentsOf(
    owner: StoredObject,
    lookup: (resource: string, key: string) => { rt: ResourceType; obj: StoredObject } | undefined,
  ): { rt: ResourceType; obj: StoredObject }[] {
    const uid = owner.metadata.uid;
    if (uid === undefined) return [];
    const out: { rt: ResourceType; obj: StoredObject }[] = [];
    for (const ref of this.dependents.get(uid) ?? []) {
      const [rk = '', key = ''] = ref.split('\u0000');
      const found = lookup(rk, key);
      if (found) out.push(found);
    }
    return out;
  }
}
