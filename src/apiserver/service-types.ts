// Which Service fields depend on spec.type, and what an update that changes the type does to
// them, as kube-apiserver's Service strategy (dropTypeDependentFields) has it: a field the old
// type needed, the new type does not, and the client left as it was (omitted or equal to the
// stored value) is cleared, so `kubectl patch -p '{"spec":{"type":"ClusterIP"}}'` on a
// NodePort Service or a GET-modify-PUT of the type alone succeeds. A value the client changed
// is kept for validation to reject. The allocator frees what was cleared (services.ts). Pure.

import type { ServiceSpec } from '../kube/types.js';

/** Every type but ExternalName holds a cluster IP (or "None"). */
export function needsClusterIP(s: ServiceSpec): boolean {
  return s.type !== 'ExternalName';
}

/** NodePort and LoadBalancer Services may hold node ports. */
export function needsNodePort(s: ServiceSpec): boolean {
  return s.type === 'NodePort' || s.type === 'LoadBalancer';
}

/** Node ports the server picks for ports without one (not for allocateLoadBalancerNodePorts=false). */
export function shouldAllocateNodePorts(s: ServiceSpec): boolean {
  return (
    s.type === 'NodePort' ||
    (s.type === 'LoadBalancer' && s.allocateLoadBalancerNodePorts !== false)
  );
}

export function needsHealthCheckNodePort(s: ServiceSpec): boolean {
  return s.type === 'LoadBalancer' && s.externalTrafficPolicy === 'Local';
}

/**
 * kube-apiserver's ExternallyAccessible: the Services that may (and by default do) carry
 * externalTrafficPolicy — NodePort, LoadBalancer and a ClusterIP Service with externalIPs
 * (kubernetes/kubernetes#119150, 1.29).
 */
export function externallyAccessible(s: ServiceSpec): boolean {
  return (
    s.type === 'NodePort' ||
    s.type === 'LoadBalancer' ||
    ((s.type ?? 'ClusterIP') === 'ClusterIP' && (s.externalIPs ?? []).length > 0)
  );
}

function sameList<T>(a: readonly T[] | undefined, b: readonly T[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Left alone: omitted, emptied or equal to the stored value. */
function untouched<T>(now: T | undefined, before: T | undefined): boolean {
  return now === undefined || now === '' || now === before;
}

/** The client did not ask for new node port numbers (it may drop or reorder ports). */
function sameNodePorts(s: ServiceSpec, o: ServiceSpec): boolean {
  const old = new Set((o.ports ?? []).map((p) => p.nodePort));
  return (s.ports ?? []).every((p) => p.nodePort === undefined || old.has(p.nodePort));
}

/**
 * Clears, in `s` (the defaulted new spec), the type-dependent fields that `o` (the stored
 * spec) needed, `s` does not, and the client did not change. Also what kube-apiserver hides
 * from an ExternalName Service on read (internalTrafficPolicy).
 */
export function dropTypeDependentFields(s: ServiceSpec, o: ServiceSpec): void {
  if (needsClusterIP(o) && !needsClusterIP(s)) {
    const ipsKept = (s.clusterIPs ?? []).length === 0 || sameList(s.clusterIPs, o.clusterIPs);
    if (untouched(s.clusterIP, o.clusterIP) && ipsKept) {
      delete s.clusterIP;
      delete s.clusterIPs;
    }
    if (s.ipFamilies === undefined || sameList(s.ipFamilies, o.ipFamilies)) delete s.ipFamilies;
    if (untouched(s.ipFamilyPolicy, o.ipFamilyPolicy)) delete s.ipFamilyPolicy;
  }
  if (needsNodePort(o) && !needsNodePort(s) && sameNodePorts(s, o))
    for (const p of s.ports ?? []) delete p.nodePort;
  if (
    needsHealthCheckNodePort(o) &&
    !needsHealthCheckNodePort(s) &&
    untouched(s.healthCheckNodePort, o.healthCheckNodePort)
  )
    delete s.healthCheckNodePort;
  if (o.type === 'LoadBalancer' && s.type !== 'LoadBalancer') {
    if (s.allocateLoadBalancerNodePorts === o.allocateLoadBalancerNodePorts)
      delete s.allocateLoadBalancerNodePorts;
    if (s.loadBalancerClass === o.loadBalancerClass) delete s.loadBalancerClass;
  }
  if (
    externallyAccessible(o) &&
    !externallyAccessible(s) &&
    s.externalTrafficPolicy === o.externalTrafficPolicy
  )
    delete s.externalTrafficPolicy;
  if (s.type === 'ExternalName') delete s.internalTrafficPolicy;
}
