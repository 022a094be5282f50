// The node-to-node hop read from the sending node's routing state: the route the kernel
// picks for the endpoint's address (the local table first, then main, then default; in a
// table the longest prefix, then the lowest metric; `throw` goes on to the next table), and
// what that route does with the packet — over a VXLAN device (flannel.1): the next hop, its
// neighbour entry's MAC, the FDB entry sending that MAC to the peer's public IP and the
// device's VNI and UDP port; through a gateway on the uplink (kindnet, flannel host-gw,
// kubenet); straight onto a local bridge or veth (the Pod is on this node); or dropped
// (blackhole, unreachable, prohibit, no route). What the dumps lacked is said in `notes`,
// never guessed. Pure.

import { cidrContains, formatCIDR, formatIP, parseIP, type ParsedIP } from '../../util/ip.js';
import type { RoutingState } from './dump.js';
import type { FdbEntry } from './parse-fdb.js';
import type { Link } from './parse-link.js';
import type { NextHop, Route } from './parse-route.js';

export type RouteHopKind = 'vxlan' | 'gateway' | 'local-link' | 'local' | 'dropped' | 'no-route';

/** What the sending node's routes do with a packet to `dst`. */
export interface RouteHop {
  readonly kind: RouteHopKind;
  /** The endpoint address looked up. */
  readonly dst: string;
  /** The chosen route as printed, and its line in the dump. */
  readonly route?: string;
  readonly routeLine?: number;
  readonly dev?: string;
  readonly via?: string;
  /** local-link: `dev` is a bridge (cni0, cbr0). */
  readonly bridge?: boolean;
  /** The next hop's MAC from the neighbour table (vxlan). */
  readonly neighbourMAC?: string;
  /** vxlan: the device's VNI and UDP port, and the peer VTEP(s) the FDB sends the MAC to. */
  readonly vni?: number;
  readonly port?: number;
  readonly local?: string;
  readonly remotes?: readonly string[];
  /** One line for people: `via flannel.1 … encapsulated in VXLAN id 1 to 172.18.0.4 UDP 8472`. */
  readonly summary: string;
  /** What the dumps lacked or what is worth knowing (multipath, flooding). */
  readonly notes: readonly string[];
}

const TABLE_ORDER = ['local', 'main', 'default'] as const;

const LOCAL_TYPES = new Set(['local', 'broadcast', 'anycast', 'multicast']);

/** Bridge names of the pod networks (cni0: bridge/flannel CNI; cbr0: kubenet) when no link dump says. */
const BRIDGE_NAMES = new Set(['cni0', 'cbr0', 'docker0']);

/** The route the kernel picks for `ip` in one table, or undefined. */
function bestIn(routes: readonly Route[], table: string, ip: ParsedIP): Route | undefined {
  let best: Route | undefined;
  for (const r of routes) {
    if ((r.table ?? 'main') !== table || !cidrContains(r.dst, ip)) continue;
    if (
      best === undefined ||
      r.dst.prefix > best.dst.prefix ||
      (r.dst.prefix === best.dst.prefix && r.metric < best.metric)
    )
      best = r;
  }
  return best;
}

/** The route for `ip` (policy rules are not read: the local, main and default tables). */
export function lookupRoute(state: RoutingState, ip: ParsedIP): Route | undefined {
  for (const table of TABLE_ORDER) {
    const r = bestIn(state.routes, table, ip);
    if (r !== undefined && r.type !== 'throw') return r;
  }
  return undefined;
}

function isVxlan(state: RoutingState, dev: string, link: Link | undefined): boolean {
  if (link !== undefined) return link.kind === 'vxlan';
  // Without a link dump: FDB entries with a remote `dst` exist only on VXLAN devices.
  return state.fdb.some((e) => e.dev === dev && e.dst !== undefined);
}

const DROPS: Readonly<Record<string, string>> = {
  blackhole: 'silently discarded',
  unreachable: 'the sender gets ICMP host unreachable',
  prohibit: 'the sender gets ICMP administratively prohibited',
};

function vxlanHop(
  state: RoutingState,
  base: Pick<RouteHop, 'dst' | 'route' | 'routeLine'>,
  nh: NextHop & { dev: string },
  link: Link | undefined,
  notes: string[],
): RouteHop {
  const nextHop = nh.via ?? base.dst;
  const neigh = state.neighbours.find((n) => n.ip === nextHop && n.dev === nh.dev && n.lladdr);
  const mac = neigh?.lladdr;
  if (mac === undefined)
    notes.push(
      state.given.has('neigh')
        ? `no neighbour entry for ${nextHop} on ${nh.dev}: the kernel would have to resolve it over the overlay (flannel programs a permanent one per peer)`
        : `no \`ip neigh\` dump: the next hop's MAC and so its FDB entry are unknown`,
    );
  const onDev = state.fdb.filter((e) => e.dev === nh.dev && e.dst !== undefined);
  let entries: FdbEntry[] = mac === undefined ? [] : onDev.filter((e) => e.mac === mac);
  if (entries.length === 0 && mac !== undefined) {
    entries = onDev.filter((e) => e.mac === '00:00:00:00:00:00');
    if (entries.length > 0)
      notes.push(`no FDB entry for ${mac} on ${nh.dev}: flooded to the all-zeros entries`);
    else if (state.given.has('fdb'))
      notes.push(
        `no FDB entry for ${mac} on ${nh.dev}: the VXLAN device has no VTEP to send it to, so the packet is dropped`,
      );
  }
  if (!state.given.has('fdb')) notes.push('no `bridge fdb show` dump: the peer VTEP is unknown');
  const vx = link?.vxlan;
  if (vx === undefined)
    notes.push(`no \`ip -d link show\` dump of ${nh.dev}: its VXLAN id and UDP port are unknown`);
  const remotes = [...new Set(entries.map((e) => e.dst ?? ''))];
  const port = entries.find((e) => e.port !== undefined)?.port ?? vx?.dstport;
  const vni = entries.find((e) => e.vni !== undefined)?.vni ?? vx?.id;
  const to = remotes.length > 0 ? ` to ${remotes.join(', ')}` : ' to an unknown VTEP';
  const summary =
    `via ${nh.dev}, next hop ${nextHop}${mac !== undefined ? ` (${mac})` : ''}: encapsulated in VXLAN` +
    `${vni !== undefined ? ` id ${String(vni)}` : ''}${to}` +
    (port !== undefined ? ` UDP ${String(port)}` : '');
  return {
    ...base,
    kind: 'vxlan',
    dev: nh.dev,
    ...(nh.via !== undefined ? { via: nh.via } : {}),
    ...(mac !== undefined ? { neighbourMAC: mac } : {}),
    ...(vni !== undefined ? { vni } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(vx?.local !== undefined ? { local: vx.local } : {}),
    remotes,
    summary,
    notes,
  };
}

function viaRoute(state: RoutingState, r: Route, dst: string, notes: string[]): RouteHop {
  const base = { dst, route: r.text, routeLine: r.line };
  let nh: NextHop = r;
  if (r.nexthops.length > 0) {
    const [first] = r.nexthops;
    nh = first ?? r;
    notes.push(
      `multipath route: the kernel hashes each flow onto one of ${r.nexthops.map((n) => `${n.via ?? ''} dev ${n.dev ?? ''}`.trim()).join(', ')}; the first is shown`,
    );
  }
  const dev = nh.dev;
  if (dev === undefined)
    return { ...base, kind: 'no-route', summary: `route "${r.text}" names no device`, notes };
  const link = state.links.find((l) => l.name === dev);
  if (isVxlan(state, dev, link)) return vxlanHop(state, base, { ...nh, dev }, link, notes);
  if (nh.via !== undefined)
    return {
      ...base,
      kind: 'gateway',
      dev,
      via: nh.via,
      summary: `via ${nh.via} dev ${dev}${r.dst.prefix === 0 ? ' (the default route)' : ''}`,
      notes,
    };
  const bridge = link !== undefined ? link.kind === 'bridge' : BRIDGE_NAMES.has(dev);
  const podHere = bridge || link?.kind === 'veth' || (link === undefined && dev.startsWith('veth'));
  return {
    ...base,
    kind: 'local-link',
    dev,
    bridge,
    summary: `dev ${dev}${bridge ? ': the local bridge' : ': directly attached'}${podHere ? ', the Pod is on this node' : ''}`,
    notes,
  };
}

/** The hop for `ip` (an endpoint address) through `state`'s routes. */
export function routeHop(state: RoutingState, ip: ParsedIP): RouteHop {
  const dst = formatIP(ip);
  const notes: string[] = [];
  if (!state.given.has('route'))
    notes.push('no `ip route` dump given: every destination has no route');
  const r = lookupRoute(state, ip);
  if (r === undefined)
    return {
      kind: 'no-route',
      dst,
      summary: `dropped: no route to ${dst} (the sender gets ICMP network unreachable)`,
      notes,
    };
  const base = { dst, route: r.text, routeLine: r.line };
  const drop = DROPS[r.type];
  if (drop !== undefined)
    return {
      ...base,
      kind: 'dropped',
      summary: `dropped by the ${r.type} route ${formatCIDR(r.dst)} ("${r.text}"): ${drop}`,
      notes,
    };
  if (LOCAL_TYPES.has(r.type))
    return {
      ...base,
      kind: 'local',
      ...(r.dev !== undefined ? { dev: r.dev } : {}),
      summary: `${r.type} route: ${dst} is an address of this node`,
      notes,
    };
  return viaRoute(state, r, dst, notes);
}

/** The hop for an address in text (`10.244.2.5`), or undefined when it is not one. */
export function routeHopOf(state: RoutingState, address: string): RouteHop | undefined {
  const ip = parseIP(address);
  return ip === undefined ? undefined : routeHop(state, ip);
}
