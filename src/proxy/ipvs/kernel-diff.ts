// The IPVS applier's other diffs, pure (the virtual servers' are reconcile.ts): the planned
// ipsets as the ipset commands that change the entries listed by the kernel (a full sync) or
// applied by the last sync (a partial one), and the kube-ipvs0 addresses to bind and unbind.

import type { IpsetSet } from '../../netfilter/ipset/model.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import type { IpsetPlan } from './plan.js';

/** The entries of each set by name, as applied (the base of the next partial sync). */
export type IpsetContents = ReadonlyMap<string, ReadonlySet<string>>;

function emptySet(s: IpsetPlan): IpsetSet {
  return {
    name: s.name,
    type: s.type,
    ...(s.family !== undefined ? { family: s.family } : {}),
    options: s.options,
    entries: [],
  };
}

/** What `sets` hold once applied. */
export function ipsetContents(sets: readonly IpsetPlan[]): Map<string, ReadonlySet<string>> {
  return new Map(sets.map((s) => [s.name, new Set(s.entries.map((e) => e.value))]));
}

/**
 * The entries to delete and add to turn `have` into `sets`, set by set (deletes first, so a
 * full set has room); a set missing from `have` is created (-exist) and filled. A partial
 * sync diffs against what it applied last, and the kernel refuses an entry that is not as
 * it thinks (the sync fails and the next is full). A full sync (`fromKernel`) diffs against
 * what the kernel listed, as kube-proxy does (never a flush: no moment without the
 * entries): every set is created -exist first, and adds and deletes take -exist, so an entry
 * the kernel spells otherwise than the plan is deleted and added back, not refused.
 */
export function ipsetDiffOps(
  sets: readonly IpsetPlan[],
  have: IpsetContents,
  fromKernel = false,
): IpsetOperation[] {
  const ops: IpsetOperation[] = [];
  const exist = fromKernel ? { exist: true } : {};
  for (const s of sets) {
    const current = have.get(s.name);
    if (current === undefined || fromKernel)
      ops.push({ verb: 'create', set: emptySet(s), exist: true });
    const want = new Set(s.entries.map((e) => e.value));
    for (const value of current ?? [])
      if (!want.has(value)) ops.push({ verb: 'del', name: s.name, entry: { value }, ...exist });
    for (const entry of s.entries)
      if (current?.has(entry.value) !== true)
        ops.push({ verb: 'add', name: s.name, entry, ...exist });
  }
  return ops;
}

/** Addresses to bind on and unbind from kube-ipvs0. */
export function diffAddresses(
  wanted: readonly string[],
  current: readonly string[],
): { readonly bind: string[]; readonly unbind: string[] } {
  const w = new Set(wanted);
  const c = new Set(current);
  return {
    bind: wanted.filter((a) => !c.has(a)),
    unbind: current.filter((a) => !w.has(a)),
  };
}
