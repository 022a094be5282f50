// The record index of the cluster DNS: Services, EndpointSlices, Pods, Namespaces (and MCS
// ServiceImports) reduced to what DNS answers need, kept in step one informer event at a time
// (no rebuilds, so a relist does not double memory), with the reverse maps PTR and NS glue
// need. It answers lookups for the resolver through the ZoneView interface. Pure: no I/O;
// the clock is injected (the SOA serial is the time of the last change, as in CoreDNS).

import { LABEL_SERVICE_NAME } from '../kube/names.js';
import type { EndpointSlice, KubeObject, Pod, Service } from '../kube/types.js';
import { realClock, type Clock } from '../util/clock.js';
import { canonicalIP } from '../util/ip.js';
import { fqdn } from './wire.js';

export interface PortEntry {
  readonly name: string;
  readonly protocol: string;
  /** -1 is the sentinel for a slice without ports: addresses still resolve, no SRV. */
  readonly port: number;
}

export type ServiceKind = 'ClusterIP' | 'Headless' | 'ExternalName';

export interface ServiceEntry {
  readonly namespace: string;
  readonly name: string;
  readonly kind: ServiceKind;
  /** ClusterIPs in spec order (both families for dual-stack); empty when headless. */
  readonly clusterIPs: readonly string[];
  readonly ports: readonly PortEntry[];
  /** FQDN with the trailing dot, for ExternalName Services. */
  readonly externalName: string;
}

export interface AddressEntry {
  readonly ip: string;
  readonly hostname: string;
  /** targetRef name when shorter than 64 characters (a usable label), else ''. */
  readonly targetRefName: string;
  /** Topology zone, lower-cased. */
  readonly zone: string;
}

/** One EndpointSlice, ready addresses only (conditions.ready unset counts as ready). */
export interface EndpointsEntry {
  /** `namespace/slice-name` */
  readonly key: string;
  readonly namespace: string;
  readonly service: string;
  readonly addresses: readonly AddressEntry[];
  readonly ports: readonly PortEntry[];
  /** Source cluster for MCS-API slices; '' otherwise. */
  readonly clusterId: string;
}

export interface PodEntry {
  readonly namespace: string;
  readonly name: string;
}

/** MCS-API ServiceImport (multicluster.x-k8s.io/v1alpha1), the fields DNS reads. */
export interface ServiceImport extends KubeObject {
  spec?: {
    type?: 'ClusterSetIP' | 'Headless';
    ips?: string[];
    ports?: { name?: string; protocol?: string; port: number }[];
  };
}

/** What the resolver reads. RecordIndex implements it; tests may wrap it. */
export interface ZoneView {
  namespaceExists(namespace: string): boolean;
  service(name: string, namespace: string): ServiceEntry | undefined;
  endpoints(name: string, namespace: string): readonly EndpointsEntry[];
  servicesByClusterIP(ip: string): readonly ServiceEntry[];
  endpointsByIP(ip: string): readonly EndpointsEntry[];
  podsByIP(ip: string): readonly PodEntry[];
  serviceImport(name: string, namespace: string): ServiceEntry | undefined;
  multiClusterEndpoints(name: string, namespace: string): readonly EndpointsEntry[];
  allServices(): readonly ServiceEntry[];
  allServiceImports(): readonly ServiceEntry[];
  /** SOA serial: Unix time of the last change (of MCS objects when `multicluster`). */
  serial(multicluster: boolean): number;
}

/** The kinds informers feed the index, with their object types. */
export interface IndexedObjects {
  Service: Service;
  EndpointSlice: EndpointSlice;
  Namespace: KubeObject;
  Pod: Pod;
  ServiceImport: ServiceImport;
}

export type IndexedKind = keyof IndexedObjects;

/**
 * The index's entry points for informer events, one pair per indexed kind: `upsert<Kind>`
 * (add or update; a problem string when the object was skipped) and `delete<Kind>`.
 */
export type IndexFeeds = {
  [K in IndexedKind as `upsert${K}`]: (obj: IndexedObjects[K]) => string | undefined;
} & {
  [K in IndexedKind as `delete${K}`]: (obj: IndexedObjects[K]) => void;
};

export const MC_SERVICE_NAME_LABEL = 'multicluster.kubernetes.io/service-name';
export const MC_SOURCE_CLUSTER_LABEL = 'multicluster.kubernetes.io/source-cluster';

export interface RecordIndexOptions {
  /** The SOA serial is derived from its time; default the wall clock. */
  readonly clock?: Clock;
  /**
   * When true, namespaces exist only once seen (a Namespace informer feeds them); when
   * false every namespace is taken to exist (no Namespace watch).
   */
  readonly trackNamespaces?: boolean;
}

const V4 =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** canonicalIP with a fast path for the common case of canonical dotted IPv4. */
function canonical(ip: string): string | undefined {
  return V4.test(ip) ? ip : canonicalIP(ip);
}

function svcKey(name: string, namespace: string): string {
  return `${name.toLowerCase()}.${namespace.toLowerCase()}`;
}

function addTo<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

function removeFrom<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (!list) return;
  const i = list.indexOf(v);
  if (i >= 0) list.splice(i, 1);
  if (list.length === 0) m.delete(k);
}

/** The ports of a Service or ServiceImport spec (protocol TCP when unset, as the API defaults). */
function servicePorts(
  ports: readonly { name?: string; protocol?: string; port: number }[] | undefined,
): PortEntry[] {
  return (ports ?? []).map((p) => ({
    name: p.name ?? '',
    protocol: p.protocol ?? 'TCP',
    port: p.port,
  }));
}

/** Reduces a Service to its DNS view; returns a problem string for objects we must skip. */
export function toServiceEntry(svc: Service): ServiceEntry | string {
  const name = svc.metadata?.name;
  const namespace = svc.metadata?.namespace;
  if (!name || !namespace) return 'metadata.name and metadata.namespace are required';
  const spec = svc.spec ?? {};
  const ports = servicePorts(spec.ports);
  if (spec.type === 'ExternalName') {
    if (!spec.externalName) return 'spec.externalName is required for type ExternalName';
    return {
      namespace,
      name,
      kind: 'ExternalName',
      clusterIPs: [],
      ports,
      externalName: fqdn(spec.externalName),
    };
  }
  const raw = spec.clusterIPs && spec.clusterIPs.length > 0 ? spec.clusterIPs : [spec.clusterIP];
  if (raw[0] === 'None')
    return { namespace, name, kind: 'Headless', clusterIPs: [], ports, externalName: '' };
  const clusterIPs: string[] = [];
  for (const ip of raw) {
    if (ip === undefined || ip === '') continue;
    const c = canonical(ip);
    if (c === undefined) return `spec.clusterIPs: ${ip} is not an IP address`;
    clusterIPs.push(c);
  }
  return { namespace, name, kind: 'ClusterIP', clusterIPs, ports, externalName: '' };
}

function toImportEntry(si: ServiceImport): ServiceEntry | string {
  const name = si.metadata?.name;
  const namespace = si.metadata?.namespace;
  if (!name || !namespace) return 'metadata.name and metadata.namespace are required';
  const ports = servicePorts(si.spec?.ports);
  const ips: string[] = [];
  for (const ip of si.spec?.ips ?? []) {
    const c = canonicalIP(ip);
    if (c === undefined) return `spec.ips: ${ip} is not an IP address`;
    ips.push(c);
  }
  const headless = si.spec?.type === 'Headless' || ips.length === 0;
  return {
    namespace,
    name,
    kind: headless ? 'Headless' : 'ClusterIP',
    clusterIPs: headless ? [] : ips,
    ports,
    externalName: '',
  };
}

/** Reduces an EndpointSlice to its DNS view, or undefined when DNS does not use it. */
export function toEndpointsEntry(slice: EndpointSlice): EndpointsEntry | string | undefined {
  const name = slice.metadata?.name;
  const namespace = slice.metadata?.namespace;
  if (!name || !namespace) return 'metadata.name and metadata.namespace are required';
  if (slice.addressType === 'FQDN') return undefined;
  const labels = slice.metadata?.labels ?? {};
  const mcService = labels[MC_SERVICE_NAME_LABEL];
  const service = mcService ?? labels[LABEL_SERVICE_NAME];
  if (service === undefined || service === '') return undefined;
  const ports: PortEntry[] =
    slice.ports && slice.ports.length > 0
      ? slice.ports.map((p) => ({
          name: p.name ?? '',
          protocol: p.protocol ?? '',
          port: p.port ?? -1,
        }))
      : [{ name: '', protocol: '', port: -1 }];
  const addresses: AddressEntry[] = [];
  for (const ep of slice.endpoints ?? []) {
    // EndpointSlice semantics: an unset ready condition means ready.
    if (ep.conditions?.ready === false) continue;
    for (const a of ep.addresses) {
      const ip = canonical(a);
      if (ip === undefined) continue;
      const ref = ep.targetRef?.name ?? '';
      addresses.push({
        ip,
        hostname: ep.hostname ?? '',
        targetRefName: ref.length < 64 ? ref : '',
        zone: (ep.zone ?? '').toLowerCase(),
      });
    }
  }
  return {
    key: `${namespace}/${name}`,
    namespace,
    service,
    addresses,
    ports,
    clusterId: mcService !== undefined ? (labels[MC_SOURCE_CLUSTER_LABEL] ?? '') : '',
  };
}

function podIPs(pod: Pod): string[] {
  const ips = new Set<string>();
  for (const p of pod.status?.podIPs ?? []) {
    const c = canonical(p.ip);
    if (c) ips.add(c);
  }
  const primary = pod.status?.podIP;
  if (primary) {
    const c = canonicalIP(primary);
    if (c) ips.add(c);
  }
  return [...ips];
}

/**
 * The incremental record index. Every upsert/delete is O(size of that object). Upserts
 * return a problem string when the object was skipped (the caller logs and counts it).
 */
export class RecordIndex implements ZoneView, IndexFeeds {
  private readonly clock: Clock;
  private readonly trackNamespaces: boolean;
  private readonly services = new Map<string, ServiceEntry>();
  private readonly serviceByObject = new Map<string, string>();
  private readonly slices = new Map<string, EndpointsEntry>();
  private readonly slicesByService = new Map<string, EndpointsEntry[]>();
  private readonly mcSlicesByService = new Map<string, EndpointsEntry[]>();
  private readonly servicesByIP = new Map<string, ServiceEntry[]>();
  private readonly slicesByIP = new Map<string, EndpointsEntry[]>();
  private readonly pods = new Map<string, { entry: PodEntry; ips: string[] }>();
  private readonly podsByIPMap = new Map<string, PodEntry[]>();
  private readonly namespaces = new Set<string>();
  private readonly imports = new Map<string, ServiceEntry>();
  private modified = 0;
  private mcModified = 0;
  /** Bumped on every change; response caches compare it. */
  generation = 0;

  constructor(opts: RecordIndexOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.trackNamespaces = opts.trackNamespaces ?? false;
    this.modified = Math.floor(this.clock.now() / 1000);
    this.mcModified = this.modified;
  }

  private touch(multicluster = false): void {
    this.generation++;
    const t = Math.floor(this.clock.now() / 1000);
    if (multicluster) this.mcModified = t;
    else this.modified = t;
  }

  upsertService(svc: Service): string | undefined {
    const entry = toServiceEntry(svc);
    const objKey = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
    if (typeof entry === 'string') {
      this.deleteService(svc);
      return entry;
    }
    this.removeService(objKey);
    const key = svcKey(entry.name, entry.namespace);
    this.services.set(key, entry);
    this.serviceByObject.set(objKey, key);
    for (const ip of entry.clusterIPs) addTo(this.servicesByIP, ip, entry);
    this.touch();
    return undefined;
  }

  private removeService(objKey: string): boolean {
    const key = this.serviceByObject.get(objKey);
    if (key === undefined) return false;
    const old = this.services.get(key);
    if (old) for (const ip of old.clusterIPs) removeFrom(this.servicesByIP, ip, old);
    this.services.delete(key);
    this.serviceByObject.delete(objKey);
    return true;
  }

  deleteService(svc: Service): void {
    const objKey = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
    if (this.removeService(objKey)) this.touch();
  }

  upsertEndpointSlice(slice: EndpointSlice): string | undefined {
    const entry = toEndpointsEntry(slice);
    const key = `${slice.metadata?.namespace ?? ''}/${slice.metadata?.name ?? ''}`;
    const mc = this.slices.get(key)?.clusterId !== '' && this.slices.has(key);
    this.removeSlice(key);
    if (entry === undefined || typeof entry === 'string') {
      this.touch(mc);
      return entry;
    }
    this.slices.set(key, entry);
    const byService = entry.clusterId !== '' ? this.mcSlicesByService : this.slicesByService;
    addTo(byService, svcKey(entry.service, entry.namespace), entry);
    const seen = new Set<string>();
    for (const a of entry.addresses) {
      if (seen.has(a.ip)) continue;
      seen.add(a.ip);
      addTo(this.slicesByIP, a.ip, entry);
    }
    this.touch(entry.clusterId !== '');
    return undefined;
  }

  private removeSlice(key: string): boolean {
    const old = this.slices.get(key);
    if (!old) return false;
    const byService = old.clusterId !== '' ? this.mcSlicesByService : this.slicesByService;
    removeFrom(byService, svcKey(old.service, old.namespace), old);
    for (const a of old.addresses) removeFrom(this.slicesByIP, a.ip, old);
    this.slices.delete(key);
    return true;
  }

  deleteEndpointSlice(slice: EndpointSlice): void {
    const key = `${slice.metadata?.namespace ?? ''}/${slice.metadata?.name ?? ''}`;
    const mc = this.slices.get(key)?.clusterId !== '';
    if (this.removeSlice(key)) this.touch(mc);
  }

  upsertPod(pod: Pod): string | undefined {
    const name = pod.metadata?.name;
    const namespace = pod.metadata?.namespace;
    if (!name || !namespace) return 'metadata.name and metadata.namespace are required';
    this.deletePod(pod);
    const entry = { namespace, name };
    const ips = podIPs(pod);
    this.pods.set(`${namespace}/${name}`, { entry, ips });
    for (const ip of ips) addTo(this.podsByIPMap, ip, entry);
    this.generation++;
    return undefined;
  }

  deletePod(pod: Pod): void {
    const key = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    const old = this.pods.get(key);
    if (!old) return;
    for (const ip of old.ips) removeFrom(this.podsByIPMap, ip, old.entry);
    this.pods.delete(key);
    this.generation++;
  }

  upsertNamespace(ns: KubeObject): string | undefined {
    const name = ns.metadata?.name;
    if (!name) return 'metadata.name is required';
    if (!this.namespaces.has(name)) {
      this.namespaces.add(name);
      this.generation++;
    }
    return undefined;
  }

  deleteNamespace(ns: KubeObject): void {
    if (this.namespaces.delete(ns.metadata?.name ?? '')) this.generation++;
  }

  upsertServiceImport(si: ServiceImport): string | undefined {
    const entry = toImportEntry(si);
    if (typeof entry === 'string') return entry;
    this.imports.set(svcKey(entry.name, entry.namespace), entry);
    this.touch(true);
    return undefined;
  }

  deleteServiceImport(si: ServiceImport): void {
    const key = svcKey(si.metadata?.name ?? '', si.metadata?.namespace ?? '');
    if (this.imports.delete(key)) this.touch(true);
  }

  // ZoneView

  namespaceExists(namespace: string): boolean {
    if (!this.trackNamespaces) return true;
    return this.namespaces.has(namespace.toLowerCase());
  }

  service(name: string, namespace: string): ServiceEntry | undefined {
    return this.services.get(svcKey(name, namespace));
  }

  endpoints(name: string, namespace: string): readonly EndpointsEntry[] {
    return this.slicesByService.get(svcKey(name, namespace)) ?? [];
  }

  servicesByClusterIP(ip: string): readonly ServiceEntry[] {
    return this.servicesByIP.get(ip) ?? [];
  }

  endpointsByIP(ip: string): readonly EndpointsEntry[] {
    return this.slicesByIP.get(ip) ?? [];
  }

  podsByIP(ip: string): readonly PodEntry[] {
    return this.podsByIPMap.get(ip) ?? [];
  }

  serviceImport(name: string, namespace: string): ServiceEntry | undefined {
    return this.imports.get(svcKey(name, namespace));
  }

  multiClusterEndpoints(name: string, namespace: string): readonly EndpointsEntry[] {
    return this.mcSlicesByService.get(svcKey(name, namespace)) ?? [];
  }

  allServices(): readonly ServiceEntry[] {
    return [...this.services.values()];
  }

  allServiceImports(): readonly ServiceEntry[] {
    return [...this.imports.values()];
  }

  serial(multicluster: boolean): number {
    return multicluster ? this.mcModified : this.modified;
  }

  /** Sets the SOA serial (tests, and fixtures that pin it). */
  setSerial(serial: number): void {
    this.modified = serial;
    this.mcModified = serial;
    this.generation++;
  }

  /** Sizes, for logs and the memory benchmark. */
  stats(): { services: number; slices: number; addresses: number; pods: number } {
    let addresses = 0;
    for (const s of this.slices.values()) addresses += s.addresses.length;
    return {
      services: this.services.size,
      slices: this.slices.size,
      addresses,
      pods: this.pods.size,
    };
  }
}
