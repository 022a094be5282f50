// The IPVS applier's other diffs, pure (the virtual servers' are reconcile.ts): the planned
// ipsets as ipset commands — all of them for a full sync (created -exist, flushed, refilled),
// only the entries that changed since the last applied sync for a partial one — and the
// kube-ipvs0 addresses to bind and unbind.

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

/** Each planned set created if missing (-exist), flushed and refilled. */
export function ipsetOps(sets: readonly IpsetPlan[]): IpsetOperation[] {
  const ops: IpsetOperation[] = [];
  for (const s of sets) {
    ops.push({ verb: 'create', set: emptySet(s), exist: true });
    ops.push({ verb: 'flush', name: s.name });
    for (const entry of s.entries) ops.push({ verb: 'add', name: s.name, entry });
  }
  return ops;
}

/** What `sets` hold once applied. */
export function ipsetContents(sets: readonly IpsetPlan[]): Map<string, ReadonlySet<string>> {
  return new Map(sets.map((s) => [s.name, new Set(s.entries.map((e) => e.value))]));
}

/**
 * The entries to delete and add to turn `applied` into `sets`, set by set (deletes first, so
 * a full set has room); a set not applied yet is created (-exist) and filled.
 */
export function ipsetDiffOps(sets: readonly IpsetPlan[], applied: IpsetContents): IpsetOperation[] {
  const ops: IpsetOperation[] = [];
  for (const s of sets) {
    const have = applied.get(s.name);
    if (have === undefined) {
      ops.push({ verb: 'create', set: emptySet(s), exist: true });
      for (const entry of s.entries) ops.push({ verb: 'add', name: s.name, entry });
      continue;
    }
    const want = new Set(s.entries.map((e) => e.value));
    for (const value of have)
      if (!want.has(value)) ops.push({ verb: 'del', name: s.name, entry: { value } });
    for (const entry of s.entries)
      if (!have.has(entry.value)) ops.push({ verb: 'add', name: s.name, entry });
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
