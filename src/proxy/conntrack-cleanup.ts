// Which conntrack entries a sync made stale (kube-proxy's UDP conntrack cleanup), as a pure
// decision over two views of the UDP service ports: before and after the sync. Two cases:
//  - an endpoint stopped serving a service port: its flows (addressed to any of the port's
//    service IPs, or to its NodePort, and answered by that endpoint) must go, or a client
//    with a fixed source port keeps talking to the dead backend;
//  - a service port went from no endpoints to some: flows created while it had none were
//    never DNATed (they are black holes) and must go so the next packet is DNATed.
// TCP is left alone (a new TCP connection gets a new conntrack entry). Any proxier builds
// its views with `conntrackViewOf` after each sync. No I/O here: the proxier hands the
// filters to the Conntrack seam.

import type { ConntrackFilter } from '../os/conntrack.js';
import type { IPFamily } from '../util/ip.js';
import { categorizeEndpoints } from './model/categorize.js';
import type { EndpointsMap } from './model/endpoints-change-tracker.js';
import type { ServicePortMap } from './model/service-change-tracker.js';

/** What the cleanup needs to know about one service port of one IP family. */
export interface ConntrackServicePort {
  /** `ns/name:port` (for logs). */
  readonly name: string;
  readonly family: IPFamily;
  readonly protocol: 'TCP' | 'UDP' | 'SCTP';
  /** ClusterIP, external IPs and load-balancer IPs of this family. */
  readonly serviceIPs: readonly string[];
  readonly port: number;
  readonly nodePort?: number;
  /** Endpoints traffic is sent to (as programmed), `ip` and target port. */
  readonly endpoints: readonly { readonly ip: string; readonly port: number }[];
}

/** Key → view; the key identifies the service port across syncs (e.g. `ns/name:port/UDP`). */
export type ConntrackView = ReadonlyMap<string, ConntrackServicePort>;

/**
 * The view of one family's UDP service ports as a sync programs them: the endpoints traffic
 * is sent to from this node (`node`: its name and zone, for traffic policies and hints).
 */
export function conntrackViewOf(
  family: IPFamily,
  services: ServicePortMap,
  endpoints: EndpointsMap,
  node: { readonly nodeName: string; readonly zone: string },
): ConntrackView {
  const view = new Map<string, ConntrackServicePort>();
  for (const [key, sp] of services) {
    if (sp.protocol !== 'UDP') continue;
    const cat = categorizeEndpoints(endpoints.get(key) ?? [], sp, node);
    view.set(key, {
      name: sp.nameString,
      family,
      protocol: sp.protocol,
      serviceIPs: [sp.clusterIP, ...sp.externalIPs, ...sp.loadBalancerVIPs],
      port: sp.port,
      ...(sp.nodePort > 0 ? { nodePort: sp.nodePort } : {}),
      endpoints: cat.allReachableEndpoints.map((e) => ({ ip: e.ip, port: e.port })),
    });
  }
  return view;
}

function filterKey(f: ConntrackFilter): string {
  return [f.family, f.protocol, f.origDst, f.origDstPort, f.replySrc, f.replySrcPort].join('|');
}

/**
 * The conntrack deletions needed after moving from `before` to `after`. Only UDP ports are
 * considered; the result has no duplicates and a stable order.
 */
export function planConntrackCleanup(
  before: ConntrackView,
  after: ConntrackView,
): ConntrackFilter[] {
  const out = new Map<string, ConntrackFilter>();
  const add = (f: ConntrackFilter): void => {
    out.set(filterKey(f), f);
  };
  for (const [key, old] of before) {
    if (old.protocol !== 'UDP') continue;
    const cur = after.get(key);
    const still = new Set((cur?.endpoints ?? []).map((e) => `${e.ip}|${e.port}`));
    for (const ep of old.endpoints) {
      if (still.has(`${ep.ip}|${ep.port}`)) continue;
      for (const ip of old.serviceIPs)
        add({
          family: old.family,
          protocol: 'UDP',
          origDst: ip,
          origDstPort: old.port,
          replySrc: ep.ip,
          replySrcPort: ep.port,
        });
      if (old.nodePort !== undefined && old.nodePort > 0)
        add({
          family: old.family,
          protocol: 'UDP',
          origDstPort: old.nodePort,
          replySrc: ep.ip,
          replySrcPort: ep.port,
        });
    }
  }
  for (const [key, cur] of after) {
    if (cur.protocol !== 'UDP' || cur.endpoints.length === 0) continue;
    const old = before.get(key);
    if (old !== undefined && old.endpoints.length > 0) continue;
    for (const ip of cur.serviceIPs)
      add({ family: cur.family, protocol: 'UDP', origDst: ip, origDstPort: cur.port });
    if (cur.nodePort !== undefined && cur.nodePort > 0)
      add({ family: cur.family, protocol: 'UDP', origDstPort: cur.nodePort });
  }
  return [...out.values()];
}
