// The IPVS applier's other diffs, pure (the virtual servers' are reconcile.ts): the planned
// ipsets as ipset commands, and the kube-ipvs0 addresses to bind and unbind.

import type { IpsetSet } from '../../netfilter/ipset/model.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import type { IpsetPlan } from './plan.js';

/** Each planned set created if missing (-exist), flushed and refilled. */
export function ipsetOps(sets: readonly IpsetPlan[]): IpsetOperation[] {
  const ops: IpsetOperation[] = [];
  for (const s of sets) {
    const set: IpsetSet = {
      name: s.name,
      type: s.type,
      ...(s.family !== undefined ? { family: s.family } : {}),
      options: s.options,
      entries: [],
    };
    ops.push({ verb: 'create', set, exist: true });
    ops.push({ verb: 'flush', name: s.name });
    for (const entry of s.entries) ops.push({ verb: 'add', name: s.name, entry });
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
