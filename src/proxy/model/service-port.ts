// ServicePortInfo: one port of one Service as kube-proxy programs it for one IP family —
// which Services are programmed at all (no headless, no ExternalName, no Services claimed
// by another proxy), the family's ClusterIP, externalIPs and LoadBalancer IPs only (wrong-
// family values are dropped with a warning), IPs read leniently and written canonically.
// Pure; no I/O. Warnings are returned as data.

import type { Protocol, Service, ServicePort } from '../../kube/types.js';
import {
  ANNOTATION_TOPOLOGY_AWARE_HINTS,
  ANNOTATION_TOPOLOGY_MODE,
  LABEL_HEADLESS,
  LABEL_SERVICE_PROXY_NAME,
} from '../../kube/names.js';
import { formatCIDR, parseCIDRSloppy, parseIPSloppy, formatIP } from '../../util/ip.js';
import type { IPFamily } from '../../util/ip.js';

/** Default ClientIP affinity timeout (the API's default, 3 hours). */
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10800;

/** Identifies one Service port: `namespace/name:portName` plus its protocol. */
export interface ServicePortName {
  readonly namespace: string;
  readonly name: string;
  /** The port's name; empty for a single unnamed port. */
  readonly port: string;
  readonly protocol: Protocol;
}

/** `ns/name:port` (or `ns/name` when the port is unnamed), as kube-proxy prints it. */
export function servicePortNameString(n: ServicePortName): string {
  return n.port === '' ? `${n.namespace}/${n.name}` : `${n.namespace}/${n.name}:${n.port}`;
}

/** Map key of a ServicePortName: `ns/name:port/TCP` (the protocol keeps TCP and UDP apart). */
export function servicePortKey(n: ServicePortName): string {
  return `${servicePortNameString(n)}/${n.protocol}`;
}

export type SessionAffinity =
  { readonly type: 'None' } | { readonly type: 'ClientIP'; readonly timeoutSeconds: number };

/** Everything about one Service port that rules depend on. Plain data; compare with JSON. */
export interface ServicePortInfo {
  readonly name: ServicePortName;
  /** servicePortKey(name). */
  readonly key: string;
  /** servicePortNameString(name), e.g. `default/web:http`. */
  readonly nameString: string;
  /** `namespace/name` of the Service. */
  readonly serviceKey: string;
  readonly clusterIP: string;
  readonly port: number;
  readonly protocol: Protocol;
  /** 0 when the port has no NodePort. */
  readonly nodePort: number;
  /** 0 unless the Service is externally accessible with externalTrafficPolicy Local. */
  readonly healthCheckNodePort: number;
  readonly externalIPs: readonly string[];
  /** LoadBalancer ingress IPs of this family, except those with ipMode Proxy. */
  readonly loadBalancerVIPs: readonly string[];
  /** Canonical CIDRs of this family (entries are trimmed first). */
  readonly loadBalancerSourceRanges: readonly string[];
  readonly sessionAffinity: SessionAffinity;
  readonly externalPolicyLocal: boolean;
  readonly internalPolicyLocal: boolean;
  /** `service.kubernetes.io/topology-mode` (or the older annotation), when set. */
  readonly hintsAnnotation: string;
  readonly trafficDistribution: string;
}

/** NodePort, externalIPs or LoadBalancer IPs: traffic may arrive from outside the cluster. */
export function isExternallyAccessible(sp: ServicePortInfo): boolean {
  return sp.nodePort !== 0 || sp.loadBalancerVIPs.length > 0 || sp.externalIPs.length > 0;
}

/** Cluster-wide endpoints are needed (iTP Cluster, or any external access: short-circuits). */
export function usesClusterEndpoints(sp: ServicePortInfo): boolean {
  return !sp.internalPolicyLocal || isExternallyAccessible(sp);
}

/** Node-local endpoints are needed (iTP Local, or eTP Local with external access). */
export function usesLocalEndpoints(sp: ServicePortInfo): boolean {
  return sp.internalPolicyLocal || (sp.externalPolicyLocal && isExternallyAccessible(sp));
}

/** Whether kube-proxy programs this Service at all (family aside). */
export function shouldSkipService(svc: Service): string | undefined {
  const labels = svc.metadata?.labels ?? {};
  if (Object.hasOwn(labels, LABEL_SERVICE_PROXY_NAME))
    return `labelled ${LABEL_SERVICE_PROXY_NAME}: served by another proxy`;
  if (Object.hasOwn(labels, LABEL_HEADLESS)) return `labelled ${LABEL_HEADLESS}`;
  const spec = svc.spec;
  if (spec?.type === 'ExternalName') return 'type ExternalName';
  const cip = spec?.clusterIP;
  if (cip === undefined || cip === '' || cip === 'None') return 'headless (no clusterIP)';
  return undefined;
}

/** The Service's ClusterIP of `family`, canonical, or undefined. */
export function clusterIPForFamily(svc: Service, family: IPFamily): string | undefined {
  const ips = svc.spec?.clusterIPs?.length ? svc.spec.clusterIPs : [svc.spec?.clusterIP ?? ''];
  for (const text of ips) {
    const ip = parseIPSloppy(text);
    if (ip?.family === family) return formatIP(ip);
  }
  return undefined;
}

function filterIPs(
  values: readonly string[],
  family: IPFamily,
  what: string,
  warnings: string[],
): string[] {
  const out: string[] = [];
  for (const v of values) {
    const ip = parseIPSloppy(v.trim());
    if (!ip) warnings.push(`${what} ${JSON.stringify(v)} is not an IP address: ignored`);
    else if (ip.family === family) out.push(formatIP(ip));
  }
  return out;
}

function filterCIDRs(values: readonly string[], family: IPFamily, warnings: string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    const c = parseCIDRSloppy(v.trim());
    if (!c)
      warnings.push(`loadBalancerSourceRanges entry ${JSON.stringify(v)} is not a CIDR: ignored`);
    else if (c.family === family) out.push(formatCIDR(c));
  }
  return out;
}

function isExternallyAccessibleService(svc: Service): boolean {
  const t = svc.spec?.type ?? 'ClusterIP';
  return (
    t === 'LoadBalancer' ||
    t === 'NodePort' ||
    (t === 'ClusterIP' && (svc.spec?.externalIPs?.length ?? 0) > 0)
  );
}

export interface ServicePortsResult {
  readonly ports: ServicePortInfo[];
  /** Why nothing (or less) is programmed, e.g. wrong-family externalIPs. */
  readonly warnings: string[];
}

/**
 * The ServicePortInfos kube-proxy derives from one Service for one IP family. Returns no
 * ports for skipped Services (headless, ExternalName, another proxy's, no ClusterIP of the
 * family). Never throws: bad values become warnings.
 */
/** One shared empty list: most Services have no externalIPs, LB IPs or source ranges. */
const NONE: readonly string[] = Object.freeze([]);

function orNone(list: readonly string[]): readonly string[] {
  return list.length === 0 ? NONE : list;
}

export function servicePortsFor(svc: Service, family: IPFamily): ServicePortsResult {
  const warnings: string[] = [];
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  const skip = shouldSkipService(svc);
  if (skip !== undefined) return { ports: [], warnings };
  const clusterIP = clusterIPForFamily(svc, family);
  if (clusterIP === undefined) return { ports: [], warnings };
  const spec = svc.spec ?? {};
  const externalIPs = filterIPs(spec.externalIPs ?? [], family, 'externalIP', warnings);
  const lbVIPs: string[] = [];
  for (const ing of svc.status?.loadBalancer?.ingress ?? []) {
    if (ing.ip === undefined || ing.ip === '') continue;
    if (ing.ipMode === 'Proxy') continue; // KEP-1860: the LB proxies; do not capture the IP
    lbVIPs.push(...filterIPs([ing.ip], family, 'loadBalancer ingress IP', warnings));
  }
  const sourceRanges = filterCIDRs(spec.loadBalancerSourceRanges ?? [], family, warnings);
  const affinity: SessionAffinity =
    spec.sessionAffinity === 'ClientIP'
      ? {
          type: 'ClientIP',
          timeoutSeconds:
            spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ??
            DEFAULT_AFFINITY_TIMEOUT_SECONDS,
        }
      : { type: 'None' };
  const externalPolicyLocal =
    isExternallyAccessibleService(svc) && spec.externalTrafficPolicy === 'Local';
  const annotations = svc.metadata?.annotations ?? {};
  const hintsAnnotation =
    annotations[ANNOTATION_TOPOLOGY_MODE] ?? annotations[ANNOTATION_TOPOLOGY_AWARE_HINTS] ?? '';
  const ports = (spec.ports ?? []).map((p: ServicePort): ServicePortInfo => {
    const spn: ServicePortName = {
      namespace: ns,
      name,
      port: p.name ?? '',
      protocol: p.protocol ?? 'TCP',
    };
    return {
      name: spn,
      key: servicePortKey(spn),
      nameString: servicePortNameString(spn),
      serviceKey: `${ns}/${name}`,
      clusterIP,
      port: p.port,
      protocol: spn.protocol,
      nodePort: p.nodePort ?? 0,
      healthCheckNodePort: externalPolicyLocal ? (spec.healthCheckNodePort ?? 0) : 0,
      externalIPs: orNone(externalIPs),
      loadBalancerVIPs: orNone(lbVIPs),
      loadBalancerSourceRanges: orNone(sourceRanges),
      sessionAffinity: affinity,
      externalPolicyLocal,
      internalPolicyLocal: spec.internalTrafficPolicy === 'Local',
      hintsAnnotation,
      trafficDistribution: spec.trafficDistribution ?? '',
    };
  });
  return { ports, warnings };
}
