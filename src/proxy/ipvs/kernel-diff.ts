// The IPVS applier's diffs, pure: planned virtual servers against the ones read back from
// the kernel (`ipvsadm -S -n`), as ipvsadm commands (add, edit, delete), the planned ipsets
// as ipset commands, and the kube-ipvs0 addresses to bind and unbind. A real server the plan
// no longer wants is first kept at weight 0 (graceful termination: new connections go
// elsewhere while the old ones drain) and deleted by a later sync that finds it at weight 0.

import type { IpsetSet } from '../../netfilter/ipset/model.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import { normalizeFlags, realServerKey, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type { IpvsOperation, IpvsService, VirtualServer } from '../../netfilter/ipvs/model.js';
import type { IpsetPlan } from './plan.js';

function sameVirtualServer(a: VirtualServer, b: VirtualServer): boolean {
  const fa = normalizeFlags(a.flags).filter((f) => f !== 'hashed');
  const fb = normalizeFlags(b.flags).filter((f) => f !== 'hashed');
  const persistent = fa.includes('persistent');
  return (
    a.scheduler === b.scheduler &&
    fa.join(',') === fb.join(',') &&
    (!persistent || (a.timeoutSeconds ?? 0) === (b.timeoutSeconds ?? 0))
  );
}

/**
 * The ipvsadm commands turning `current` into `wanted`. `owned(address)` tells which
 * current virtual servers are svcnet's to delete (addresses on kube-ipvs0, NodePort addresses).
 */
export function diffIpvs(
  wanted: readonly IpvsService[],
  current: readonly IpvsService[],
  owned: (address: string) => boolean,
): IpvsOperation[] {
  const ops: IpvsOperation[] = [];
  const have = new Map(current.map((s) => [virtualServerKey(s.virtualServer), s]));
  const want = new Set<string>();
  for (const w of wanted) {
    const vs = w.virtualServer;
    const key = virtualServerKey(vs);
    want.add(key);
    const c = have.get(key);
    if (c === undefined) {
      ops.push({ verb: 'addService', virtualServer: vs });
      for (const rs of w.realServers) ops.push({ verb: 'addReal', id: vs, realServer: rs });
      continue;
    }
    if (!sameVirtualServer(vs, c.virtualServer))
      ops.push({ verb: 'editService', virtualServer: vs });
    const cur = new Map(c.realServers.map((rs) => [realServerKey(rs), rs]));
    const wantRs = new Set<string>();
    for (const rs of w.realServers) {
      const k = realServerKey(rs);
      wantRs.add(k);
      const old = cur.get(k);
      if (old === undefined) ops.push({ verb: 'addReal', id: vs, realServer: rs });
      else if (old.weight !== rs.weight || old.forward !== rs.forward)
        ops.push({ verb: 'editReal', id: vs, realServer: rs });
    }
    for (const [k, old] of cur) {
      if (wantRs.has(k)) continue;
      if (old.weight !== 0)
        ops.push({ verb: 'editReal', id: vs, realServer: { ...old, weight: 0 } });
      else ops.push({ verb: 'deleteReal', id: vs, realServer: old });
    }
  }
  for (const [key, c] of have) {
    if (!want.has(key) && owned(c.virtualServer.address))
      ops.push({ verb: 'deleteService', id: c.virtualServer });
  }
  return ops;
}

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
