// EndpointInfo: one endpoint (ip:port) of one Service port as kube-proxy sees it, built from
// EndpointSlices: nil `ready` counts as ready, nil `serving` as `ready`, nil `terminating` as
// false; only the first address is used; IPs are read leniently and written canonically;
// duplicates across slices collapse (a local copy wins). Pure; no I/O.

import type { EndpointSlice } from '../../kube/types.js';
import { LABEL_SERVICE_NAME } from '../../kube/names.js';
import { formatIP, parseIPSloppy } from '../../util/ip.js';
import type { IPFamily } from '../../util/ip.js';
import { servicePortKey } from './service-port.js';
import type { ServicePortName } from './service-port.js';

export interface EndpointInfo {
  /** Canonical IP. */
  readonly ip: string;
  readonly port: number;
  /** `ip:port`, or `[ip]:port` for IPv6: the DNAT target and the SEP-hash input. */
  readonly endpoint: string;
  /** On this node (EndpointSlice nodeName equals the proxy's node name). */
  readonly isLocal: boolean;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** hints.forZones names; empty when the endpoint has none. */
  readonly zoneHints: readonly string[];
  /** hints.forNodes names; empty when the endpoint has none. */
  readonly nodeHints: readonly string[];
}

/** One shared empty hint list (most endpoints have none: 10k Services × 10 endpoints). */
const NO_HINTS: readonly string[] = Object.freeze([]);

/**
 * `ip:port` with brackets around IPv6. Built with join, which gives one flat string (a
 * template literal gives a chain of pieces: twice the memory for 100k kept endpoints).
 */
export function joinHostPort(ip: string, port: number): string {
  return ip.includes(':') ? ['[', ip, ']:', String(port)].join('') : [ip, String(port)].join(':');
}

/** Endpoints of one slice, grouped by the Service port they serve (servicePortKey). */
export type SliceEndpoints = ReadonlyMap<string, readonly EndpointInfo[]>;

/** The `namespace/name` of the Service a slice belongs to, or undefined if unlabelled. */
export function sliceServiceKey(slice: EndpointSlice): string | undefined {
  const svc = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
  if (svc === undefined || svc === '') return undefined;
  return `${slice.metadata?.namespace ?? 'default'}/${svc}`;
}

/**
 * Converts one EndpointSlice into per-service-port endpoint lists for `family`. Slices of
 * another address type, without the service-name label, or ports without a number yield
 * nothing.
 */
export function endpointsFromSlice(
  slice: EndpointSlice,
  family: IPFamily,
  nodeName: string,
): Map<string, EndpointInfo[]> {
  const out = new Map<string, EndpointInfo[]>();
  if (slice.addressType !== family) return out;
  const svc = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
  if (svc === undefined || svc === '') return out;
  const ns = slice.metadata?.namespace ?? 'default';
  for (const p of slice.ports ?? []) {
    if (p.port === undefined || p.port === 0) continue;
    const spn: ServicePortName = {
      namespace: ns,
      name: svc,
      port: p.name ?? '',
      protocol: p.protocol ?? 'TCP',
    };
    const list: EndpointInfo[] = [];
    for (const ep of slice.endpoints ?? []) {
      const first = ep.addresses[0];
      const ip = first === undefined ? undefined : parseIPSloppy(first);
      if (ip?.family !== family) continue;
      const formatted = formatIP(ip);
      // The slice's own string when it is already canonical: informers keep it anyway.
      const canonical = formatted === first ? first : formatted;
      const ready = ep.conditions?.ready ?? true;
      list.push({
        ip: canonical,
        port: p.port,
        endpoint: joinHostPort(canonical, p.port),
        isLocal: nodeName !== '' && ep.nodeName === nodeName,
        ready,
        serving: ep.conditions?.serving ?? ready,
        terminating: ep.conditions?.terminating ?? false,
        zoneHints: ep.hints?.forZones ? ep.hints.forZones.map((z) => z.name) : NO_HINTS,
        nodeHints: ep.hints?.forNodes ? ep.hints.forNodes.map((n) => n.name) : NO_HINTS,
      });
    }
    out.set(servicePortKey(spn), list);
  }
  return out;
}

function strictlySorted(list: readonly EndpointInfo[]): boolean {
  for (let i = 1; i < list.length; i++)
    if (!((list[i - 1] as EndpointInfo).endpoint < (list[i] as EndpointInfo).endpoint))
      return false;
  return true;
}

/**
 * Merges the endpoint lists of several slices for one Service port: deduplicated by
 * `ip:port` (a local copy wins), sorted by that string, as kube-proxy orders them.
 */
export function mergeEndpoints(lists: Iterable<readonly EndpointInfo[]>): readonly EndpointInfo[] {
  const all = [...lists];
  // One slice already sorted without duplicates (the common case) is its own merge: keep
  // that list rather than a copy of it.
  const [only] = all;
  if (all.length === 1 && only !== undefined && strictlySorted(only)) return only;
  const byKey = new Map<string, EndpointInfo>();
  for (const list of all)
    for (const ep of list) {
      if (!byKey.has(ep.endpoint) || ep.isLocal) byKey.set(ep.endpoint, ep);
    }
  return [...byKey.values()].sort((a, b) =>
    a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0,
  );
}
