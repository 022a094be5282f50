// The lab load balancer's allocation decisions (like cloud-provider-kind or MetalLB's
// controller): which `type: LoadBalancer` Services are the lab's (no spec.loadBalancerClass, or
// LAB_LB_CLASS), which pool address each holds, and the status.loadBalancer each should show.
// Stateless: the addresses in use are the ones the lab's Services already show in their status,
// so an address is free again as soon as its Service is deleted or stops being a lab
// LoadBalancer (the API server clears the status of a Service whose type changes). Older
// Services keep theirs; spec.loadBalancerIP is honoured when it is in the pool and free;
// ipMode is VIP unless the Service's LB_IP_MODE_ANNOTATION says Proxy (KEP-1860: the nodes'
// proxies then leave the IP alone). Pure: lb-controller.ts writes the results.

import type { LoadBalancerIngress, Service } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { inLbPool, lbPoolAddresses, type LbPool } from './lb-pool.js';

/** The spec.loadBalancerClass the lab's load balancer serves (besides Services with none). */
export const LAB_LB_CLASS = 'svcnet.io/lab-lb';
/** `Proxy` makes the Service's ingress ipMode Proxy; anything else (or none) gives VIP. */
export const LB_IP_MODE_ANNOTATION = 'svcnet.io/lb-ip-mode';

/** Whether the lab's load balancer serves this Service. */
export function isLabLoadBalancer(svc: Service): boolean {
  const cls = svc.spec?.loadBalancerClass;
  return svc.spec?.type === 'LoadBalancer' && (cls === undefined || cls === LAB_LB_CLASS);
}

export interface LbStatusUpdate {
  readonly service: Service;
  /** The whole status.loadBalancer.ingress to write (empty: no address for now). */
  readonly ingress: readonly LoadBalancerIngress[];
}

export interface LbReconcileResult {
  /** `namespace/name` → the address it holds after this round. */
  readonly assigned: ReadonlyMap<string, string>;
  /** Services whose status must change. */
  readonly updates: readonly LbStatusUpdate[];
  /** Why a Service is left pending, as data for the edge to log. */
  readonly warnings: readonly string[];
}

/** The ipMode the lab gives the Service's ingress (LB_IP_MODE_ANNOTATION). */
export function ipModeOf(svc: Service): 'VIP' | 'Proxy' {
  return svc.metadata?.annotations?.[LB_IP_MODE_ANNOTATION] === 'Proxy' ? 'Proxy' : 'VIP';
}

function currentIP(svc: Service): string | undefined {
  return svc.status?.loadBalancer?.ingress?.find((i) => i.ip !== undefined)?.ip;
}

/** Oldest first (creationTimestamp, then key): the older Service keeps a contested address. */
function byAge(a: Service, b: Service): number {
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return objectKey(a) < objectKey(b) ? -1 : objectKey(a) > objectKey(b) ? 1 : 0;
}

function sameIngress(
  a: readonly LoadBalancerIngress[],
  b: readonly LoadBalancerIngress[],
): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Assigns pool addresses to the lab's LoadBalancer Services. A Service keeps the address its
 * status shows when that is in the pool, not taken by an older Service, and agrees with its
 * spec.loadBalancerIP (if set); the others get their requested address if free, else (with no
 * request) the lowest free one. A request outside the pool or taken leaves the Service
 * pending with a warning, as does an exhausted pool.
 */
export function reconcileLoadBalancers(
  services: readonly Service[],
  pool: LbPool,
): LbReconcileResult {
  const mine = services.filter(isLabLoadBalancer).sort(byAge);
  const used = new Set<string>();
  const assigned = new Map<string, string>();
  const warnings: string[] = [];
  // Keep what is held first, so a newer Service never takes an older one's address.
  for (const svc of mine) {
    const ip = currentIP(svc);
    const want = svc.spec?.loadBalancerIP;
    if (ip === undefined || !inLbPool(pool, ip) || used.has(ip)) continue;
    if (want !== undefined && want !== '' && want !== ip) continue;
    used.add(ip);
    assigned.set(objectKey(svc), ip);
  }
  const free = lbPoolAddresses(pool).filter((ip) => !used.has(ip));
  for (const svc of mine) {
    const key = objectKey(svc);
    if (assigned.has(key)) continue;
    const want = svc.spec?.loadBalancerIP;
    let ip: string | undefined;
    if (want !== undefined && want !== '') {
      if (!inLbPool(pool, want))
        warnings.push(`Service ${key}: spec.loadBalancerIP: ${want} is not in the lab's pool`);
      else if (used.has(want))
        warnings.push(`Service ${key}: spec.loadBalancerIP: ${want} is held by another Service`);
      else ip = want;
    } else {
      ip = free.find((a) => !used.has(a));
      if (ip === undefined) warnings.push(`Service ${key}: no free address in the lab's pool`);
    }
    if (ip === undefined) continue;
    used.add(ip);
    assigned.set(key, ip);
  }
  const updates: LbStatusUpdate[] = [];
  for (const svc of mine) {
    const ip = assigned.get(objectKey(svc));
    const ingress: LoadBalancerIngress[] = ip === undefined ? [] : [{ ip, ipMode: ipModeOf(svc) }];
    if (!sameIngress(svc.status?.loadBalancer?.ingress ?? [], ingress))
      updates.push({ service: svc, ingress });
  }
  return { assigned, updates, warnings };
}
