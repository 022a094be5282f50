// Small pure helpers shared by the reconcilers: pod state predicates, owner and pod references,
// targetPort resolution and IP families (label selectors are kube/selectors.ts). No I/O;
// nothing here knows about the API client or the work queue.

import type {
  IPFamilyName,
  KubeObject,
  ObjectReference,
  OwnerReference,
  Pod,
  Service,
  ServicePort,
} from '../kube/types.js';
import { parseIPSloppy } from '../util/ip.js';

export function isPodTerminal(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

export function isPodTerminating(pod: Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined;
}

/** The pod's Ready condition is True. */
export function isPodReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Neither terminal nor being deleted: counts towards a workload's replicas. */
export function isPodActive(pod: Pod): boolean {
  return !isPodTerminal(pod) && !isPodTerminating(pod);
}

/** The pod's IPs: status.podIPs, else status.podIP. */
export function podIPs(pod: Pod): string[] {
  const ips = (pod.status?.podIPs ?? []).map((p) => p.ip).filter((ip) => ip !== '');
  if (ips.length > 0) return ips;
  const ip = pod.status?.podIP;
  return ip !== undefined && ip !== '' ? [ip] : [];
}

/** IP family of an address, or undefined when it is not an IP. */
export function ipFamilyOfAddress(ip: string): IPFamilyName | undefined {
  return parseIPSloppy(ip)?.family;
}

/** The controller ownerReference of an object, if any. */
export function controllerRef(obj: KubeObject): OwnerReference | undefined {
  return (obj.metadata?.ownerReferences ?? []).find((r) => r.controller === true);
}

/** Is `obj` controlled by `owner` (controller ownerReference with owner's uid)? */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  const ref = controllerRef(obj);
  return ref !== undefined && ref.uid === owner.metadata?.uid;
}

/** A controller ownerReference pointing at `owner`. */
export function ownerRefTo(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Resolves a Service port's targetPort for one pod: a number (or numeric string) is used as
 * is; a name is looked up among the pod's container ports with the same name and protocol.
 * Returns undefined when a named port does not exist in this pod.
 */
export function resolveTargetPort(sp: ServicePort, pod: Pod): number | undefined {
  const tp = sp.targetPort ?? sp.port;
  if (typeof tp === 'number') return tp === 0 ? sp.port : tp;
  if (/^[0-9]+$/.test(tp)) return Number(tp);
  if (tp === '') return sp.port;
  const protocol = sp.protocol ?? 'TCP';
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? [])
      if (p.name === tp && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
  return undefined;
}

/** Object name, or '' when missing. */
export function nameOf(obj: KubeObject): string {
  return obj.metadata?.name ?? '';
}

/** Object namespace, or '' when missing. */
export function namespaceOf(obj: KubeObject): string {
  return obj.metadata?.namespace ?? '';
}

/** An endpoint's reference to the pod behind it. */
export function podRef(pod: Pod): ObjectReference {
  return {
    kind: 'Pod',
    namespace: namespaceOf(pod),
    name: nameOf(pod),
    ...(pod.metadata?.uid !== undefined ? { uid: pod.metadata.uid } : {}),
  };
}

/** The hostname of `pod`'s endpoint in `svc`: spec.hostname, if its subdomain names `svc`. */
export function podHostname(svc: Service, pod: Pod): string | undefined {
  const hostname = pod.spec?.hostname;
  return hostname !== undefined && hostname !== '' && pod.spec?.subdomain === nameOf(svc)
    ? hostname
    : undefined;
}

/** A copy of a string map without one key. */
export function omitKey(
  m: Readonly<Record<string, string>> | undefined,
  key: string,
): Record<string, string> {
  return Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k !== key));
}
