// The flannel agent's decisions, as pure functions over plain data: which Nodes are peers (a
// podCIDR inside the Network and flannel's annotations; the others are skipped with a reason
// the agent logs), the state this node should have (for vxlan: the flannel.VNI device with
// its /32 address, and per peer a route `PODCIDR via <peer's subnet address> dev flannel.1
// onlink`, a permanent neighbour entry for that address with the peer's VTEP MAC, and an FDB
// entry sending that MAC to the peer's public IP; for host-gw: `PODCIDR via <public IP>`
// on the uplink), and the diff from what the kernel has to the `ip`/`bridge` operations that
// close it, removals included. The same model as flanneld's vxlan and host-gw backends; the
// agent (flannel-agent.ts) reads the kernel and applies the result. No I/O here.

import type { Node } from '../kube/types.js';
import { cidrContains, formatCIDR, formatIP, parseCIDR, parseIP } from '../util/ip.js';
import {
  addrAdd,
  linkDel,
  linkSet,
  linkUp,
  neighDel,
  neighReplace,
  routeDel,
  routeReplace,
  vxlan,
  type FdbOp,
  type IpOp,
} from '../util/ip-ops.js';
import type { FlannelNetConf } from './parse-net-conf.js';
import {
  ANNOTATION_BACKEND_DATA,
  ANNOTATION_BACKEND_TYPE,
  ANNOTATION_PUBLIC_IP,
  VXLAN_OVERHEAD,
  vxlanDeviceName,
} from './names.js';

// What the plan reads of the kernel: the shapes of os/ip.ts's IpLink, IpRoute, IpNeighbour and
// FdbEntry (structurally; a pure core imports nothing from src/os).
export interface ObservedLink {
  readonly name: string;
  readonly mac: string;
  readonly mtu: number;
  readonly up: boolean;
  readonly kind: string | undefined;
  readonly addrs: readonly { readonly local: string; readonly prefixlen: number }[];
  readonly vxlan?: {
    readonly id: number;
    readonly port: number;
    readonly local: string | undefined;
    readonly learning: boolean;
  };
}

export interface ObservedRoute {
  readonly dst: string;
  readonly gateway: string | undefined;
  readonly dev: string;
}

export interface FdbEntry {
  readonly mac: string;
  readonly dst: string;
}

/** The uplink: the device carrying node-to-node traffic, and its IPv4 address. */
export interface Uplink {
  readonly name: string;
  readonly mtu: number;
  readonly ip: string;
  readonly prefixlen: number;
}

/** A remote node this node programs entries for. */
export interface Peer {
  readonly name: string;
  /** Canonical CIDR. */
  readonly podCIDR: string;
  readonly publicIP: string;
  /** vxlan only. */
  readonly vtepMAC: string | undefined;
}

export interface SkippedNode {
  readonly node: string;
  readonly reason: string;
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** The podCIDR's network address: flannel's VTEP address for that subnet (10.244.3.0). */
export function subnetAddress(podCIDR: string): string {
  const c = parseCIDR(podCIDR);
  return c ? formatIP({ family: c.family, value: c.base }) : podCIDR;
}

/** A Node's podCIDR, canonical, if it has one inside the Network; else why not. */
export function nodePodCIDR(node: Node, conf: FlannelNetConf): string | { reason: string } {
  const text = node.spec?.podCIDR ?? node.spec?.podCIDRs?.[0];
  if (text === undefined || text === '') return { reason: 'spec.podCIDR is not set' };
  const c = parseCIDR(text);
  const net = parseCIDR(conf.network);
  if (!c || !net || c.family !== 'IPv4')
    return { reason: `spec.podCIDR ${JSON.stringify(text)} is not an IPv4 CIDR` };
  if (c.prefix < net.prefix || !cidrContains(net, { family: c.family, value: c.base }))
    return { reason: `spec.podCIDR ${text} is outside the Network ${conf.network}` };
  return formatCIDR(c);
}

function nodeName(node: Node): string {
  return node.metadata?.name ?? '';
}

function peerOf(node: Node, conf: FlannelNetConf): Peer | { reason: string } {
  const podCIDR = nodePodCIDR(node, conf);
  if (typeof podCIDR !== 'string') return podCIDR;
  const ann = node.metadata?.annotations ?? {};
  const type = ann[ANNOTATION_BACKEND_TYPE];
  if (type === undefined) return { reason: `no ${ANNOTATION_BACKEND_TYPE} annotation yet` };
  if (type !== conf.backend.type)
    return { reason: `${ANNOTATION_BACKEND_TYPE} is ${type}, this node runs ${conf.backend.type}` };
  const publicIP = ann[ANNOTATION_PUBLIC_IP] ?? '';
  if (parseIP(publicIP)?.family !== 'IPv4')
    return { reason: `${ANNOTATION_PUBLIC_IP} ${JSON.stringify(publicIP)} is not an IPv4 address` };
  if (conf.backend.type === 'host-gw')
    return { name: nodeName(node), podCIDR, publicIP, vtepMAC: undefined };
  let mac: unknown;
  try {
    mac = (JSON.parse(ann[ANNOTATION_BACKEND_DATA] ?? 'null') as { VtepMAC?: unknown } | null)
      ?.VtepMAC;
  } catch {
    mac = undefined;
  }
  if (typeof mac !== 'string' || !MAC_RE.test(mac.toLowerCase()))
    return { reason: `${ANNOTATION_BACKEND_DATA} has no valid VtepMAC` };
  return { name: nodeName(node), podCIDR, publicIP, vtepMAC: mac.toLowerCase() };
}

/**
 * The Nodes other than `self` that this node programs, sorted by name, and the ones skipped
 * with the reason (no podCIDR, not annotated yet, another backend, a podCIDR clash, ...).
 */
export function peersFromNodes(
  nodes: readonly Node[],
  self: string,
  selfPodCIDR: string,
  conf: FlannelNetConf,
  uplink: Uplink,
): { peers: Peer[]; skipped: SkippedNode[] } {
  const peers: Peer[] = [];
  const skipped: SkippedNode[] = [];
  const seen = new Map<string, string>([[selfPodCIDR, self]]);
  const onLink = parseCIDR(`${uplink.ip}/${uplink.prefixlen}`);
  for (const node of [...nodes].sort((a, b) => nodeName(a).localeCompare(nodeName(b)))) {
    const name = nodeName(node);
    if (name === self) continue;
    const p = peerOf(node, conf);
    if (!('podCIDR' in p)) {
      skipped.push({ node: name, reason: p.reason });
      continue;
    }
    const owner = seen.get(p.podCIDR);
    if (owner !== undefined) {
      skipped.push({ node: name, reason: `spec.podCIDR ${p.podCIDR} is also Node ${owner}'s` });
      continue;
    }
    const gw = parseIP(p.publicIP);
    if (conf.backend.type === 'host-gw' && onLink && gw && !cidrContains(onLink, gw)) {
      skipped.push({
        node: name,
        reason: `public IP ${p.publicIP} is not on ${uplink.name}'s subnet (host-gw needs one L2 segment)`,
      });
      continue;
    }
    seen.set(p.podCIDR, name);
    peers.push(p);
  }
  return { peers, skipped };
}

export interface DesiredDevice {
  readonly name: string;
  readonly vni: number;
  readonly port: number;
  readonly local: string;
  readonly mtu: number;
  /** `10.244.1.0/32`. */
  readonly address: string;
  /** The MAC to create it with (kept across re-creation), or undefined for the kernel's. */
  readonly mac: string | undefined;
}

export interface DesiredRoute {
  readonly dst: string;
  readonly via: string;
  readonly dev: string;
  readonly onlink: boolean;
}

export interface FlannelDesired {
  readonly device: DesiredDevice | undefined;
  readonly routes: readonly DesiredRoute[];
  readonly neighbours: readonly { dst: string; lladdr: string }[];
  readonly fdb: readonly FdbEntry[];
}

/** The MTU of the pod network: the backend's MTU, or the uplink's less VXLAN's 50 bytes. */
export function podMTU(conf: FlannelNetConf, uplink: Uplink): number {
  if (conf.backend.type === 'host-gw') return uplink.mtu;
  return conf.backend.mtu > 0 ? conf.backend.mtu : uplink.mtu - VXLAN_OVERHEAD;
}

/** What this node's kernel should hold for `peers`. */
export function desiredState(
  conf: FlannelNetConf,
  selfPodCIDR: string,
  uplink: Uplink,
  peers: readonly Peer[],
  vtepMAC: string | undefined,
): FlannelDesired {
  if (conf.backend.type === 'host-gw')
    return {
      device: undefined,
      routes: peers.map((p) => ({
        dst: p.podCIDR,
        via: p.publicIP,
        dev: uplink.name,
        onlink: false,
      })),
      neighbours: [],
      fdb: [],
    };
  const dev = vxlanDeviceName(conf.backend.vni);
  return {
    device: {
      name: dev,
      vni: conf.backend.vni,
      port: conf.backend.port,
      local: uplink.ip,
      mtu: podMTU(conf, uplink),
      address: `${subnetAddress(selfPodCIDR)}/32`,
      mac: vtepMAC,
    },
    routes: peers.map((p) => ({
      dst: p.podCIDR,
      via: subnetAddress(p.podCIDR),
      dev,
      onlink: true,
    })),
    neighbours: peers.map((p) => ({ dst: subnetAddress(p.podCIDR), lladdr: p.vtepMAC ?? '' })),
    fdb: peers.map((p) => ({ mac: p.vtepMAC ?? '', dst: p.publicIP })),
  };
}

/** What the agent read from the kernel (device-scoped lists are empty without the device). */
export interface FlannelObserved {
  readonly device: ObservedLink | undefined;
  /** IPv4 routes of the namespace. */
  readonly routes: readonly ObservedRoute[];
  readonly neighbours: readonly {
    readonly dst: string;
    readonly lladdr: string | undefined;
    readonly permanent: boolean;
  }[];
  readonly fdb: readonly FdbEntry[];
}

export interface FlannelOps {
  /** True when the device is (re)created by `ip`. */
  readonly createsDevice: boolean;
  /** One `ip -batch`, run first. */
  readonly ip: readonly IpOp[];
  /** One `bridge -batch`, run after `ip`. */
  readonly fdb: readonly FdbOp[];
}

function deviceMatches(want: DesiredDevice, l: ObservedLink): boolean {
  const v = l.vxlan;
  return (
    l.kind === 'vxlan' &&
    v !== undefined &&
    v.id === want.vni &&
    v.port === want.port &&
    v.local === want.local &&
    !v.learning
  );
}

function deviceOps(want: DesiredDevice, have: ObservedLink | undefined): IpOp[] {
  const ops: IpOp[] = [];
  if (have === undefined || !deviceMatches(want, have)) {
    if (have !== undefined) ops.push(linkDel(want.name));
    ops.push(
      vxlan(
        want.name,
        { id: want.vni, dstport: want.port, local: want.local, learning: false },
        { mtu: want.mtu, address: want.mac },
      ),
      addrAdd(want.address, want.name),
      linkUp(want.name),
    );
    return ops;
  }
  if (have.mtu !== want.mtu) ops.push(linkSet(want.name, { mtu: want.mtu }));
  const [ip] = want.address.split('/');
  if (!have.addrs.some((a) => a.local === ip && a.prefixlen === 32))
    ops.push(addrAdd(want.address, want.name));
  if (!have.up) ops.push(linkUp(want.name));
  return ops;
}

/**
 * The ops from `observed` to `desired`. Routes are managed when their destination lies in the
 * Network and is not this node's own podCIDR, and they go through the flannel device (vxlan)
 * or a gateway on the uplink (host-gw); neighbours and FDB entries of the device are all
 * flannel's. A device with other VXLAN parameters is deleted and created again, which drops
 * its entries: they are then all re-added.
 */
export function planOps(
  conf: FlannelNetConf,
  selfPodCIDR: string,
  uplink: Uplink,
  desired: FlannelDesired,
  observed: FlannelObserved,
): FlannelOps {
  const ip: IpOp[] = [];
  let fresh = false;
  if (desired.device) {
    const dOps = deviceOps(desired.device, observed.device);
    fresh = dOps.some((o) => o.op === 'linkAdd');
    ip.push(...dOps);
  }
  const dev = desired.device?.name;
  const net = parseCIDR(conf.network);
  const managed = (r: ObservedRoute): boolean => {
    const c = parseCIDR(r.dst);
    if (!c || !net || r.dst === selfPodCIDR || c.prefix < net.prefix) return false;
    if (!cidrContains(net, { family: c.family, value: c.base })) return false;
    return dev !== undefined ? r.dev === dev : r.gateway !== undefined && r.dev === uplink.name;
  };
  const haveRoutes = fresh ? [] : observed.routes.filter(managed);
  const wantRoutes = new Map(desired.routes.map((r) => [r.dst, r]));
  for (const r of haveRoutes) if (!wantRoutes.has(r.dst)) ip.push(routeDel(r.dst, { dev: r.dev }));
  for (const r of desired.routes) {
    const h = haveRoutes.find((x) => x.dst === r.dst);
    if (h?.gateway !== r.via || h.dev !== r.dev)
      ip.push(routeReplace(r.dst, { via: r.via, dev: r.dev, onlink: r.onlink || undefined }));
  }
  if (dev === undefined) return { createsDevice: false, ip, fdb: [] };
  const haveNeigh = fresh ? [] : observed.neighbours.filter((n) => n.permanent);
  const wantNeigh = new Map(desired.neighbours.map((n) => [n.dst, n.lladdr]));
  for (const n of haveNeigh) if (!wantNeigh.has(n.dst)) ip.push(neighDel(n.dst, dev));
  for (const [dst, lladdr] of wantNeigh)
    if (haveNeigh.find((n) => n.dst === dst)?.lladdr !== lladdr)
      ip.push(neighReplace(dst, lladdr, dev));
  const haveFdb = fresh ? [] : observed.fdb.filter((e) => e.mac !== '00:00:00:00:00:00');
  const wantFdb = new Map(desired.fdb.map((e) => [e.mac, e.dst]));
  const fdb: FdbOp[] = [];
  for (const e of haveFdb)
    if (wantFdb.get(e.mac) !== e.dst) fdb.push({ op: 'fdbDel', mac: e.mac, dev, dst: e.dst });
  for (const [mac, dst] of wantFdb)
    if (!haveFdb.some((e) => e.mac === mac && e.dst === dst))
      fdb.push({ op: 'fdbReplace', mac, dev, dst });
  return { createsDevice: fresh, ip, fdb };
}
