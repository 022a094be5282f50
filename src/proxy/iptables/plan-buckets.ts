// Service ports grouped into buckets by a hash of their Service's `namespace/name`, each
// bucket keeping its rules' text joined. A partial sync rebuilds only the buckets of changed
// Services and reuses the other buckets' text as is, so its cost follows the change, not
// the cluster (the order of KUBE-SERVICES rules does not matter: each matches its own
// destination; kube-proxy itself writes them in Go map order). Small clusters use one
// bucket, which keeps the input order. Pure.

import type { ServicePortInfo } from '../model/service-port.js';
import type { ServicePortFragment } from './plan-service.js';

/** Below this many Service ports everything goes into one bucket. */
const ONE_BUCKET_BELOW = 1000;
const MANY_BUCKETS = 256;

/** One bucket's ports (in output order) and their rules, joined. */
export interface Bucket {
  readonly fragments: ReadonlyMap<string, ServicePortFragment>;
  readonly filterText: string;
  readonly filterRules: number;
  readonly dispatchText: string;
  readonly dispatchRules: number;
  /** Rules in the ports' own nat chains (written or not): for the nat total. */
  readonly chainRules: number;
  readonly numEndpoints: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
}

export function bucketCount(servicePorts: number): number {
  return servicePorts < ONE_BUCKET_BELOW ? 1 : MANY_BUCKETS;
}

/** FNV-1a of the Service key, modulo n. */
export function bucketOf(serviceKey: string, n: number): number {
  if (n === 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < serviceKey.length; i++) {
    h ^= serviceKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % n;
}

export function makeBucket(fragments: ReadonlyMap<string, ServicePortFragment>): Bucket {
  const filter: string[] = [];
  const dispatch: string[] = [];
  let filterRules = 0;
  let dispatchRules = 0;
  let chainRules = 0;
  let numEndpoints = 0;
  let noLocalInternal = 0;
  let noLocalExternal = 0;
  for (const f of fragments.values()) {
    filter.push(f.filterText);
    dispatch.push(f.natDispatchText);
    filterRules += f.filterRules;
    dispatchRules += f.natDispatchRules;
    chainRules += f.natChainRules;
    numEndpoints += f.numEndpoints;
    if (f.noLocalEndpointsInternal) noLocalInternal++;
    if (f.noLocalEndpointsExternal) noLocalExternal++;
  }
  return {
    fragments,
    filterText: filter.join(''),
    filterRules,
    dispatchText: dispatch.join(''),
    dispatchRules,
    chainRules,
    numEndpoints,
    noLocalInternal,
    noLocalExternal,
  };
}

/** The fragment a bucketed state holds for a port, if any. */
export function findFragment(
  buckets: readonly Bucket[],
  key: string,
  serviceKey: string,
): ServicePortFragment | undefined {
  return buckets[bucketOf(serviceKey, buckets.length)]?.fragments.get(key);
}

/** What a partial sync regroups: the previous buckets and the changed Services' ports. */
export interface PartialInput {
  readonly previous: readonly Bucket[];
  readonly changed: ReadonlySet<string>;
  /** Current ports of the changed Services (key, info). */
  readonly changedPorts: readonly (readonly [string, ServicePortInfo])[];
}

/** Current ports of the changed Services: one pass over the map. */
export function portsOfServices(
  services: ReadonlyMap<string, ServicePortInfo>,
  changed: ReadonlySet<string>,
): [string, ServicePortInfo][] {
  const out: [string, ServicePortInfo][] = [];
  if (changed.size === 0) return out;
  for (const entry of services) if (changed.has(entry[1].serviceKey)) out.push(entry);
  return out;
}

/**
 * Total endpoints of all ports after a partial change: the previous buckets' totals, minus
 * the previous ports of changed Services, plus their current ports' endpoints.
 */
export function partialEndpointCount(
  partial: PartialInput,
  endpoints: ReadonlyMap<string, readonly unknown[]>,
): number {
  let total = 0;
  for (const b of partial.previous) total += b.numEndpoints;
  const dirty = new Set<number>();
  for (const s of partial.changed) dirty.add(bucketOf(s, partial.previous.length));
  for (const b of dirty)
    for (const f of partial.previous[b]?.fragments.values() ?? [])
      if (partial.changed.has(f.serviceKey)) total -= f.numEndpoints;
  for (const [key] of partial.changedPorts) total += endpoints.get(key)?.length ?? 0;
  return total;
}

/**
 * Groups ports into `n` buckets, planning each with `fragmentFor`. `only` restricts the
 * work to some buckets (a partial sync): their members are the previous members whose
 * Service did not change plus the current ports of changed Services.
 */
export function groupPorts(
  services: ReadonlyMap<string, ServicePortInfo>,
  n: number,
  fragmentFor: (key: string, sp: ServicePortInfo) => ServicePortFragment,
  partial?: PartialInput,
): Map<number, Map<string, ServicePortFragment>> {
  const out = new Map<number, Map<string, ServicePortFragment>>();
  const bucket = (b: number) => {
    let m = out.get(b);
    if (!m) {
      m = new Map();
      out.set(b, m);
    }
    return m;
  };
  if (!partial) {
    for (let b = 0; b < n; b++) bucket(b);
    for (const [key, sp] of services)
      bucket(bucketOf(sp.serviceKey, n)).set(key, fragmentFor(key, sp));
    return out;
  }
  const dirty = new Set<number>();
  for (const s of partial.changed) dirty.add(bucketOf(s, n));
  for (const b of dirty) {
    const m = bucket(b);
    for (const [key, f] of partial.previous[b]?.fragments ?? [])
      if (!partial.changed.has(f.serviceKey)) m.set(key, f);
  }
  for (const [key, sp] of partial.changedPorts)
    bucket(bucketOf(sp.serviceKey, n)).set(key, fragmentFor(key, sp));
  return out;
}
