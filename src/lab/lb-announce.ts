// Where the lab's load balancer sends each LB IP (MetalLB L2's announcement, done as routing in
// the hub instead of ARP): for externalTrafficPolicy Cluster every ready node; for Local only
// the ready nodes whose healthCheckNodePort answers 200, as cloud load balancers probe
// `http://NODE:HCNP/healthz`. The result becomes one /32 route per LB IP in the hub, a
// multipath (ECMP) route when several nodes receive it, and no route when none does. Nodes
// labelled node.kubernetes.io/exclude-from-external-load-balancers receive nothing, as with
// the cloud providers. An ipMode Proxy address is not routed: the nodes' proxies leave it
// alone, and with no proxying load balancer in the lab a route would loop between hub and node. Pure: lb-controller.ts probes, and applies the ops through the Ip seam.

import type { Node, Service } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { nodeHostIPs } from '../kube/node-model.js';
import { parseIP } from '../util/ip.js';
import { routeDel, routeReplace, type IpOp } from '../util/ip-ops.js';
import { ipModeOf } from './lb-reconcile.js';

export const LABEL_EXCLUDE_FROM_LB = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** One health check a Local Service needs: GET http://nodeIP:port/healthz. */
export interface HealthProbe {
  readonly nodeIP: string;
  readonly port: number;
}

export function probeKey(p: HealthProbe): string {
  return `${p.nodeIP}:${String(p.port)}`;
}

/** IPv4 addresses of the nodes that may receive load-balanced traffic, in name order. */
export function lbNodeIPs(nodes: readonly Node[]): string[] {
  return [...nodes]
    .sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1))
    .filter(
      (n) =>
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
        n.metadata?.labels?.[LABEL_EXCLUDE_FROM_LB] === undefined,
    )
    .map((n) => nodeHostIPs(n).find((ip) => parseIP(ip)?.family === 'IPv4'))
    .filter((ip): ip is string => ip !== undefined);
}

function localHealthPort(svc: Service): number | undefined {
  return svc.spec?.externalTrafficPolicy === 'Local' ? svc.spec.healthCheckNodePort : undefined;
}

/** The probes the Services' health checks need now (each node × each Local Service's port). */
export function healthProbes(
  services: readonly Service[],
  assigned: ReadonlyMap<string, string>,
  nodeIPs: readonly string[],
): HealthProbe[] {
  const out = new Map<string, HealthProbe>();
  for (const svc of services) {
    const port = localHealthPort(svc);
    if (port === undefined || !assigned.has(objectKey(svc))) continue;
    for (const nodeIP of nodeIPs) out.set(probeKey({ nodeIP, port }), { nodeIP, port });
  }
  return [...out.values()];
}

/**
 * LB IP → the node IPs that receive it (possibly none). `healthy` holds probeKey()s that
 * answered 200 at the last check; a Local Service without a healthCheckNodePort (not
 * allocated yet) goes to every node, as upstream's service controller does.
 */
export function planAnnouncements(
  services: readonly Service[],
  assigned: ReadonlyMap<string, string>,
  nodeIPs: readonly string[],
  healthy: ReadonlySet<string>,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const svc of services) {
    const ip = assigned.get(objectKey(svc));
    if (ip === undefined) continue;
    const port = localHealthPort(svc);
    if (ipModeOf(svc) === 'Proxy') {
      out.set(ip, []);
      continue;
    }
    out.set(
      ip,
      port === undefined
        ? [...nodeIPs]
        : nodeIPs.filter((nodeIP) => healthy.has(probeKey({ nodeIP, port }))),
    );
  }
  return out;
}

/**
 * The route ops that take the hub from `applied` to `desired` on device `dev`: a replace for
 * every LB IP whose nodes changed, a delete for every LB IP that lost all of them.
 */
export function announcementOps(
  desired: ReadonlyMap<string, readonly string[]>,
  applied: ReadonlyMap<string, readonly string[]>,
  dev: string,
): IpOp[] {
  const ops: IpOp[] = [];
  for (const [ip, nodes] of [...desired].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const before = applied.get(ip) ?? [];
    if (nodes.length === 0 || nodes.join() === before.join()) continue;
    const [only] = nodes;
    ops.push(
      nodes.length === 1 && only !== undefined
        ? routeReplace(`${ip}/32`, { via: only, dev })
        : routeReplace(`${ip}/32`, { nexthops: nodes.map((via) => ({ via, dev })) }),
    );
  }
  for (const [ip, nodes] of applied)
    if (nodes.length > 0 && (desired.get(ip) ?? []).length === 0)
      ops.push(routeDel(`${ip}/32`, { dev }));
  return ops;
}
