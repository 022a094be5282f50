// The node-to-node hop after the walked node's rules, attached to each outcome that sends the
// packet on to an endpoint, and the source it was worked out from: the sending node's
// routing state (`routes`: its `ip route`, neighbours, FDB and links — routes/hop.ts) or,
// when no routes were given, the cluster objects (`objects`: the endpoint Pod's node, that
// node's first address and the podCIDR holding the Pod IP — what a host-gw or VXLAN route to
// it would name, not read from any node). Pure.

import { cidrContains, parseCIDR, parseIP } from '../util/ip.js';
import type { RoutingState } from './routes/dump.js';
import { routeHopOf, type RouteHop } from './routes/hop.js';
import type { Outcome, TraceResult } from './result.js';

/** The hop as the cluster objects place the endpoint. */
export interface ObjectHop {
  readonly fromNode: string;
  readonly toNode: string;
  readonly podIP: string;
  /** `toNode`'s first address, '' when it has none. */
  readonly toNodeIP: string;
  /** The podCIDR of `toNode` that holds `podIP`, when one does. */
  readonly podCIDR?: string;
  readonly summary: string;
}

export type OutcomeHop =
  | ({ readonly source: 'routes'; readonly node: string } & RouteHop)
  | ({ readonly source: 'objects' } & ObjectHop);

/** A node as the object hop needs it. */
export interface HopNode {
  readonly name: string;
  readonly addresses: readonly string[];
  readonly podCIDRs: readonly string[];
}

/** The hop from node `from` to `podNode`, where the Pod at `podIP` runs (see ObjectHop). */
export function objectHop(
  nodes: readonly HopNode[],
  from: string,
  podIP: string,
  podNode: string,
): ObjectHop {
  const to = nodes.find((n) => n.name === podNode);
  const ip = parseIP(podIP);
  const podCIDR =
    ip === undefined
      ? undefined
      : to?.podCIDRs.find((c) => {
          const parsed = parseCIDR(c);
          return parsed !== undefined && cidrContains(parsed, ip);
        });
  const toNodeIP = to?.addresses[0] ?? '';
  const summary =
    from === podNode
      ? `no node-to-node hop: ${podIP} is on ${from} itself`
      : `${from} sends it to node ${podNode}${toNodeIP !== '' ? ` (${toNodeIP})` : ''}${podCIDR !== undefined ? `, whose podCIDR ${podCIDR} holds ${podIP}` : ''}`;
  return {
    fromNode: from,
    toNode: podNode,
    podIP,
    toNodeIP,
    ...(podCIDR !== undefined ? { podCIDR } : {}),
    summary,
  };
}

/** The hop from `node`'s routing state to `address`, or undefined when it is no address. */
export function routesHop(
  state: RoutingState,
  node: string,
  address: string,
): OutcomeHop | undefined {
  const h = routeHopOf(state, address);
  return h === undefined ? undefined : { source: 'routes', node, ...h };
}

/** The address an accepted outcome sends the packet on to (its DNAT host), if any. */
export function endpointAddressOf(o: Outcome): string | undefined {
  if (o.verdict !== 'accept' || o.delivery === 'local') return undefined;
  return o.dnat?.replace(/^\[?([^\]]*?)\]?:\d+$/, '$1');
}

/** `r` with each outcome's hop from `hopFor(endpoint address)`, where it gives one. */
export function withHops(
  r: TraceResult,
  hopFor: (address: string) => OutcomeHop | undefined,
): TraceResult {
  return {
    ...r,
    outcomes: r.outcomes.map((o) => {
      const address = endpointAddressOf(o);
      const hop = address === undefined ? undefined : hopFor(address);
      return hop === undefined ? o : { ...o, hop };
    }),
  };
}

/** The hop in the text tree: the source, the summary, the route and the notes. */
export function formatHopLines(h: OutcomeHop): string[] {
  if (h.source === 'objects')
    return [`hop (from the cluster objects, not a node's routes): ${h.summary}`];
  const lines = [`hop (from ${h.node}'s routes): ${h.summary}`];
  if (h.route !== undefined)
    lines.push(
      `  route: ${h.route}${h.routeLine !== undefined ? ` (line ${String(h.routeLine)})` : ''}`,
    );
  for (const n of h.notes) lines.push(`  note: ${n}`);
  return lines;
}
