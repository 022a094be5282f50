// The iproute2 vocabulary svcnet speaks, as typed data: a closed `IpOp` union (links, addresses,
// routes, neighbours) with small named builders in the spirit of the CNI plugins' `ip.SetupVeth`, and
// `renderIpOp`/`renderIpBatch` to the `ip -batch` text RealIp feeds the kernel. Planners
// (cni/plan-link.ts, lab/topology.ts) build ops; the `Ip` seam (os/ip.ts) runs them — RealIp as
// text, FakeIp by applying the typed ops directly. Pure: no I/O, and not a parser of `ip`
// text. Names never contain whitespace (iproute2's own rule for interface names). The FDB
// entries of a VXLAN device are `bridge fdb` commands, not `ip` ones: `FdbOp` and
// `renderFdbBatch` give the `bridge -batch -` text the same way.

/** Where `ip netns add NAME` puts a named namespace (iproute2's NETNS_RUN_DIR). */
export function netnsPath(name: string): string {
  return `/run/netns/${name}`;
}

/** Extra options of the device being created (the `ip link add NAME …` part). */
export interface LinkOptions {
  readonly mtu?: number | undefined;
  /** MAC address. */
  readonly address?: string | undefined;
}

/** The peer end of a veth pair; `netns` is a namespace path or /run/netns name. */
export interface VethPeer extends LinkOptions {
  readonly name: string;
  readonly netns?: string | undefined;
}

/** A VXLAN device's parameters (`ip link add NAME type vxlan id VNI …`). */
export interface VxlanOptions {
  /** VNI. */
  readonly id: number;
  /** UDP destination port (`dstport`); the kernel's default is 0 = 8472 on Linux. */
  readonly dstport: number;
  /** Source address of the encapsulated packets. */
  readonly local?: string | undefined;
  /** Underlay device. */
  readonly dev?: string | undefined;
  /** MAC learning from received packets (`nolearning` when false). */
  readonly learning: boolean;
}

export type IpOp =
  | ({ readonly op: 'linkAdd'; readonly name: string } & LinkOptions &
      (
        | { readonly kind: 'bridge' | 'dummy' }
        | { readonly kind: 'veth'; readonly peer: VethPeer }
        | { readonly kind: 'vxlan'; readonly vxlan: VxlanOptions }
      ))
  | {
      readonly op: 'linkSet';
      readonly dev: string;
      readonly mtu?: number | undefined;
      /** A bridge to enslave to, or null for `nomaster`. */
      readonly master?: string | null | undefined;
      readonly up?: boolean | undefined;
      /** Bridge-port hairpin mode (`type bridge_slave hairpin on|off`). */
      readonly hairpin?: boolean | undefined;
      /** Bridge-port isolation (`type bridge_slave isolated on|off`): isolated ports exchange no frames. */
      readonly isolated?: boolean | undefined;
      /** Promiscuous mode (`promisc on|off`). */
      readonly promisc?: boolean | undefined;
    }
  | { readonly op: 'linkDel'; readonly dev: string }
  | {
      readonly op: 'addrAdd' | 'addrReplace' | 'addrDel';
      /** `ip/prefix` (or a bare ip for a host address). */
      readonly cidr: string;
      readonly dev: string;
      /** No kernel prefix route for the address. */
      readonly noprefixroute?: boolean | undefined;
      /** IPv6: skip duplicate address detection. */
      readonly nodad?: boolean | undefined;
    }
  | {
      readonly op: 'routeAdd' | 'routeReplace' | 'routeDel';
      /** CIDR, bare address, or `default`. */
      readonly dst: string;
      readonly via?: string | undefined;
      readonly dev?: string | undefined;
      readonly scope?: 'link' | 'host' | undefined;
      readonly src?: string | undefined;
      /** Use the gateway even if no route makes it reachable. */
      readonly onlink?: boolean | undefined;
      /** A multipath (ECMP) route: one `nexthop via … dev …` each, instead of via/dev. */
      readonly nexthops?: readonly { readonly via: string; readonly dev?: string }[] | undefined;
    }
  | {
      /** `ip neigh replace ADDR lladdr MAC dev DEV nud permanent` (a static ARP entry). */
      readonly op: 'neighReplace';
      readonly dst: string;
      readonly lladdr: string;
      readonly dev: string;
    }
  | { readonly op: 'neighDel'; readonly dst: string; readonly dev: string };

/** A static forwarding entry of a VXLAN device: frames for `mac` go to the VTEP at `dst`. */
export interface FdbOp {
  readonly op: 'fdbReplace' | 'fdbDel';
  readonly mac: string;
  readonly dev: string;
  readonly dst: string;
}

export type LinkAddOp = Extract<IpOp, { op: 'linkAdd' }>;
export type LinkSetOp = Extract<IpOp, { op: 'linkSet' }>;
export type AddrOp = Extract<IpOp, { op: 'addrAdd' | 'addrReplace' | 'addrDel' }>;
export type RouteOp = Extract<IpOp, { op: 'routeAdd' | 'routeReplace' | 'routeDel' }>;
export type NeighOp = Extract<IpOp, { op: 'neighReplace' | 'neighDel' }>;

type Fields<T extends IpOp> = Omit<T, 'op'>;

/** `ip link add HOST type veth peer name PEER [netns NS]`, both ends with the same mtu. */
export function vethPair(o: {
  host: string;
  peer: string;
  mtu?: number | undefined;
  hostMac?: string | undefined;
  peerMac?: string | undefined;
  netns?: string | undefined;
}): IpOp {
  return {
    op: 'linkAdd',
    name: o.host,
    kind: 'veth',
    mtu: o.mtu,
    address: o.hostMac,
    peer: { name: o.peer, mtu: o.mtu, address: o.peerMac, netns: o.netns },
  };
}

export function bridge(name: string, opts: LinkOptions = {}): IpOp {
  return { op: 'linkAdd', name, kind: 'bridge', ...opts };
}

export function dummy(name: string, opts: LinkOptions = {}): IpOp {
  return { op: 'linkAdd', name, kind: 'dummy', ...opts };
}

export function linkSet(dev: string, set: Omit<Fields<LinkSetOp>, 'dev'>): IpOp {
  return { op: 'linkSet', dev, ...set };
}

export function linkUp(dev: string): IpOp {
  return { op: 'linkSet', dev, up: true };
}

export function linkDel(dev: string): IpOp {
  return { op: 'linkDel', dev };
}

type AddrOpts = Omit<Fields<AddrOp>, 'cidr' | 'dev'>;

export function addrAdd(cidr: string, dev: string, opts: AddrOpts = {}): IpOp {
  return { op: 'addrAdd', cidr, dev, ...opts };
}

export function addrDel(cidr: string, dev: string): IpOp {
  return { op: 'addrDel', cidr, dev };
}

export function addrReplace(cidr: string, dev: string, opts: AddrOpts = {}): IpOp {
  return { op: 'addrReplace', cidr, dev, ...opts };
}

type RouteOpts = Omit<Fields<RouteOp>, 'dst'>;

export function routeAdd(dst: string, opts: RouteOpts): IpOp {
  return { op: 'routeAdd', dst, ...opts };
}

export function routeReplace(dst: string, opts: RouteOpts): IpOp {
  return { op: 'routeReplace', dst, ...opts };
}

export function routeDel(dst: string, opts: RouteOpts = {}): IpOp {
  return { op: 'routeDel', dst, ...opts };
}

/** `ip link add NAME type vxlan id VNI dstport PORT [local IP] [dev DEV] [nolearning]`. */
export function vxlan(name: string, o: VxlanOptions, opts: LinkOptions = {}): IpOp {
  return { op: 'linkAdd', name, kind: 'vxlan', vxlan: o, ...opts };
}

export function neighReplace(dst: string, lladdr: string, dev: string): IpOp {
  return { op: 'neighReplace', dst, lladdr, dev };
}

export function neighDel(dst: string, dev: string): IpOp {
  return { op: 'neighDel', dst, dev };
}

function vxlanWords(o: VxlanOptions): string[] {
  return [
    'id',
    String(o.id),
    'dstport',
    String(o.dstport),
    ...(o.local === undefined ? [] : ['local', o.local]),
    ...(o.dev === undefined ? [] : ['dev', o.dev]),
    ...(o.learning ? [] : ['nolearning']),
  ];
}

function linkOptions(o: LinkOptions): string[] {
  return [
    ...(o.mtu === undefined ? [] : ['mtu', String(o.mtu)]),
    ...(o.address === undefined ? [] : ['address', o.address]),
  ];
}

function renderLinkSet(o: LinkSetOp): string[] {
  const w = ['link', 'set', o.dev];
  if (o.mtu !== undefined) w.push('mtu', String(o.mtu));
  if (o.master === null) w.push('nomaster');
  else if (o.master !== undefined) w.push('master', o.master);
  if (o.up !== undefined) w.push(o.up ? 'up' : 'down');
  if (o.promisc !== undefined) w.push('promisc', o.promisc ? 'on' : 'off');
  const port: string[] = [];
  if (o.hairpin !== undefined) port.push('hairpin', o.hairpin ? 'on' : 'off');
  if (o.isolated !== undefined) port.push('isolated', o.isolated ? 'on' : 'off');
  if (port.length > 0) w.push('type', 'bridge_slave', ...port);
  return w;
}

const VERB = {
  addrAdd: 'add',
  addrReplace: 'replace',
  addrDel: 'del',
  routeAdd: 'add',
  routeReplace: 'replace',
  routeDel: 'del',
} as const;

/** One op as `ip` argv words (after `ip`), the order iproute2's own usage text shows. */
export function ipOpWords(o: IpOp): string[] {
  switch (o.op) {
    case 'linkAdd': {
      const w = ['link', 'add', o.name, ...linkOptions(o), 'type', o.kind];
      if (o.kind === 'veth') {
        w.push('peer', 'name', o.peer.name, ...linkOptions(o.peer));
        if (o.peer.netns !== undefined) w.push('netns', o.peer.netns);
      }
      if (o.kind === 'vxlan') w.push(...vxlanWords(o.vxlan));
      return w;
    }
    case 'linkSet':
      return renderLinkSet(o);
    case 'linkDel':
      return ['link', 'del', o.dev];
    case 'addrAdd':
    case 'addrReplace':
    case 'addrDel':
      return [
        'addr',
        VERB[o.op],
        o.cidr,
        'dev',
        o.dev,
        ...(o.noprefixroute === true ? ['noprefixroute'] : []),
        ...(o.nodad === true ? ['nodad'] : []),
      ];
    case 'routeAdd':
    case 'routeReplace':
    case 'routeDel':
      return [
        'route',
        VERB[o.op],
        o.dst,
        ...(o.via === undefined ? [] : ['via', o.via]),
        ...(o.dev === undefined ? [] : ['dev', o.dev]),
        ...(o.scope === undefined ? [] : ['scope', o.scope]),
        ...(o.src === undefined ? [] : ['src', o.src]),
        ...(o.onlink === true ? ['onlink'] : []),
        ...(o.nexthops ?? []).flatMap((h) => [
          'nexthop',
          'via',
          h.via,
          ...(h.dev === undefined ? [] : ['dev', h.dev]),
        ]),
      ];
    case 'neighReplace':
      return ['neigh', 'replace', o.dst, 'lladdr', o.lladdr, 'dev', o.dev, 'nud', 'permanent'];
    case 'neighDel':
      return ['neigh', 'del', o.dst, 'dev', o.dev];
  }
}

/** One `ip -batch` line. */
export function renderIpOp(o: IpOp): string {
  return ipOpWords(o).join(' ');
}

/** The `ip -batch -` input for ops, one line each, newline-terminated ('' for none). */
export function renderIpBatch(ops: readonly IpOp[]): string {
  return ops.map((o) => `${renderIpOp(o)}\n`).join('');
}

/** One FDB op as `bridge` argv words (after `bridge`). */
export function fdbOpWords(o: FdbOp): string[] {
  return o.op === 'fdbReplace'
    ? ['fdb', 'replace', o.mac, 'dev', o.dev, 'dst', o.dst, 'self', 'permanent']
    : ['fdb', 'del', o.mac, 'dev', o.dev, 'dst', o.dst, 'self'];
}

/** The `bridge -batch -` input for FDB ops, one line each ('' for none). */
export function renderFdbBatch(ops: readonly FdbOp[]): string {
  return ops.map((o) => `${fdbOpWords(o).join(' ')}\n`).join('');
}
