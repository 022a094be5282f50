// The cluster map's model: Nodes, Pods, Services and EndpointSlices (as informers hold them)
// reduced to the ClusterSnapshot the page draws, with each Service's endpoints joined from its
// slices and the DNS names the cluster DNS answers for it (A/AAAA, SRV per named port, the
// per-endpoint names of a headless Service, CNAME for ExternalName), as CoreDNS's kubernetes
// plugin forms them. Pure: no I/O; not the DNS server's index (src/dns/record-index.ts), which
// answers queries — this only lists names for people to read.

import { LABEL_SERVICE_NAME } from '../kube/names.js';
import type { EndpointSlice, Node, Pod, Service } from '../kube/types.js';
import type {
  ClusterSnapshot,
  DnsName,
  EndpointInfo,
  NodeInfo,
  PodInfo,
  RulesSourceInfo,
  ServiceInfo,
} from './api-types.js';

export interface SnapshotInput {
  readonly nodes: readonly Node[];
  readonly pods: readonly Pod[];
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  readonly rules: readonly RulesSourceInfo[];
  readonly revision: number;
  /** The cluster domain (default cluster.local). */
  readonly zone?: string;
}

function nodeInfo(n: Node): NodeInfo {
  const addrs = n.status?.addresses ?? [];
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  return {
    name: n.metadata?.name ?? '',
    addresses: [
      ...addrs.filter((a) => a.type === 'InternalIP').map((a) => a.address),
      ...addrs.filter((a) => a.type === 'ExternalIP').map((a) => a.address),
    ],
    podCIDRs: n.spec?.podCIDRs ?? (n.spec?.podCIDR !== undefined ? [n.spec.podCIDR] : []),
    // A Node without conditions (the lab's, a manifest's) counts as ready.
    ready: ready === undefined || ready === 'True',
  };
}

function podInfo(p: Pod): PodInfo {
  const ips = p.status?.podIPs?.map((i) => i.ip) ?? [];
  const ip = p.status?.podIP;
  return {
    namespace: p.metadata?.namespace ?? 'default',
    name: p.metadata?.name ?? '',
    node: p.spec?.nodeName ?? '',
    ips: ips.length > 0 ? ips : ip !== undefined && ip !== '' ? [ip] : [],
    phase: p.status?.phase ?? 'Pending',
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    labels: p.metadata?.labels ?? {},
  };
}

function endpointsOf(slices: readonly EndpointSlice[]): EndpointInfo[] {
  const out: EndpointInfo[] = [];
  for (const s of slices) {
    const ports = (s.ports ?? []).map(
      (p) => `${p.name ?? ''}/${p.protocol ?? 'TCP'}/${p.port ?? ''}`,
    );
    for (const e of s.endpoints ?? []) {
      const ref = e.targetRef;
      const ready = e.conditions?.ready ?? true;
      out.push({
        addresses: e.addresses,
        ready,
        serving: e.conditions?.serving ?? ready,
        terminating: e.conditions?.terminating ?? false,
        node: e.nodeName ?? '',
        ...(ref?.name !== undefined && (ref.kind ?? 'Pod') === 'Pod'
          ? { pod: `${ref.namespace ?? s.metadata?.namespace ?? 'default'}/${ref.name}` }
          : {}),
        ...(e.hostname !== undefined ? { hostname: e.hostname } : {}),
        ports,
      });
    }
  }
  return out.sort((a, b) => (a.addresses[0] ?? '').localeCompare(b.addresses[0] ?? ''));
}

function addressRecord(name: string, ip: string): DnsName {
  return { type: ip.includes(':') ? 'AAAA' : 'A', name, value: ip };
}

/** The names CoreDNS's kubernetes plugin answers for a Service (ready endpoints only). */
export function dnsNamesOf(
  svc: ServiceInfo,
  endpoints: readonly EndpointInfo[],
  zone: string,
): DnsName[] {
  const base = `${svc.name}.${svc.namespace}.svc.${zone}`;
  if (svc.type === 'ExternalName') return [];
  const out: DnsName[] = [];
  const ready = endpoints.filter((e) => e.ready);
  const named = svc.ports.filter((p) => p.name !== '');
  if (!svc.headless) {
    for (const ip of svc.clusterIPs) out.push(addressRecord(base, ip));
    for (const p of named)
      out.push({
        type: 'SRV',
        name: `_${p.name}._${p.protocol.toLowerCase()}.${base}`,
        value: `0 100 ${p.port} ${base}`,
      });
    return out;
  }
  // Headless: the Service name answers every ready address; each endpoint has its own name
  // (its hostname, else its address with dashes), which the SRV records point at.
  const targets: { name: string; ip: string }[] = [];
  for (const e of ready)
    for (const ip of e.addresses) {
      const label = e.hostname ?? ip.replaceAll(/[.:]/g, '-');
      targets.push({ name: `${label}.${base}`, ip });
    }
  for (const t of targets) out.push(addressRecord(base, t.ip));
  for (const t of targets) out.push(addressRecord(t.name, t.ip));
  for (const p of named)
    for (const t of targets)
      out.push({
        type: 'SRV',
        name: `_${p.name}._${p.protocol.toLowerCase()}.${base}`,
        value: `0 ${Math.round(100 / Math.max(targets.length, 1))} ${p.port} ${t.name}`,
      });
  return out;
}

function serviceInfo(
  svc: Service,
  slices: readonly EndpointSlice[],
  zone: string,
): ServiceInfo | undefined {
  const spec = svc.spec;
  const name = svc.metadata?.name;
  if (spec === undefined || name === undefined) return undefined;
  const clusterIPs = (
    spec.clusterIPs ?? (spec.clusterIP !== undefined ? [spec.clusterIP] : [])
  ).filter((ip) => ip !== '' && ip !== 'None');
  const endpoints = endpointsOf(slices);
  const info: Omit<ServiceInfo, 'dns'> = {
    namespace: svc.metadata?.namespace ?? 'default',
    name,
    type: spec.type ?? 'ClusterIP',
    headless: spec.clusterIP === 'None',
    clusterIPs,
    externalIPs: spec.externalIPs ?? [],
    loadBalancerIPs: (svc.status?.loadBalancer?.ingress ?? []).flatMap((i) =>
      i.ip !== undefined ? [i.ip] : [],
    ),
    ports: (spec.ports ?? []).map((p) => ({
      name: p.name ?? '',
      protocol: p.protocol ?? 'TCP',
      port: p.port,
      targetPort: String(p.targetPort ?? p.port),
      ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
    })),
    endpoints,
  };
  const dns =
    info.type === 'ExternalName'
      ? [
          {
            type: 'CNAME' as const,
            name: `${name}.${info.namespace}.svc.${zone}`,
            value: spec.externalName ?? '',
          },
        ]
      : dnsNamesOf({ ...info, dns: [] }, endpoints, zone);
  return { ...info, dns };
}

const byName = <T extends { readonly name: string; readonly namespace?: string }>(
  a: T,
  b: T,
): number => `${a.namespace ?? ''}/${a.name}`.localeCompare(`${b.namespace ?? ''}/${b.name}`, 'en');

/** The snapshot the page draws from the informers' objects. */
export function buildSnapshot(input: SnapshotInput): ClusterSnapshot {
  const zone = input.zone ?? 'cluster.local';
  const slicesByService = new Map<string, EndpointSlice[]>();
  for (const s of input.endpointSlices) {
    const svc = s.metadata?.labels?.[LABEL_SERVICE_NAME];
    if (svc === undefined) continue;
    const key = `${s.metadata?.namespace ?? 'default'}/${svc}`;
    slicesByService.set(key, [...(slicesByService.get(key) ?? []), s]);
  }
  const services = input.services
    .map((svc) =>
      serviceInfo(
        svc,
        slicesByService.get(`${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name}`) ?? [],
        zone,
      ),
    )
    .filter((s): s is ServiceInfo => s !== undefined)
    .sort(byName);
  return {
    revision: input.revision,
    nodes: input.nodes.map(nodeInfo).sort(byName),
    pods: input.pods.map(podInfo).sort(byName),
    services,
    rules: input.rules,
  };
}
