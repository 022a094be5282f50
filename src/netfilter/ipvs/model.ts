// A closed, typed model of the IPVS kernel objects kube-proxy's IPVS mode manages: virtual
// servers (protocol, address, port, scheduler, flags, persistence timeout and netmask) and
// their real servers (address, port, weight, forwarding method), plus `IpvsState`, the
// whole table keyed canonically. It is the common currency of the planner (proxy/ipvs), the
// ipvsadm text forms (render.ts, parse.ts), the Fake (fake.ts) and the tracer. It is not a
// netlink binding: connection counters are carried only for listing. Pure types and helpers.

/** Lower case, as ipset entries and the netlink library name them. */
export type IpvsProtocol = 'tcp' | 'udp' | 'sctp';

export const IPVS_PROTOCOLS: readonly IpvsProtocol[] = ['tcp', 'udp', 'sctp'];

/**
 * Service flags by name. `persistent` = IP_VS_SVC_F_PERSISTENT (0x1), `hashed` (0x2, set by
 * the kernel, never listed), `onePacket` (0x4, `-o`), and the scheduler flags 0x8/0x10/0x20
 * (`schedFlag1..3`; for sh/mh ipvsadm calls 0x8 fallback and 0x10 port — kube-proxy's
 * `sourceHash` is 0x10).
 */
export type VirtualServerFlag =
  'persistent' | 'hashed' | 'onePacket' | 'schedFlag1' | 'schedFlag2' | 'schedFlag3';

export const FLAG_BITS: Readonly<Record<VirtualServerFlag, number>> = {
  persistent: 0x1,
  hashed: 0x2,
  onePacket: 0x4,
  schedFlag1: 0x8,
  schedFlag2: 0x10,
  schedFlag3: 0x20,
};

/** Forwarding method of a real server, as `ipvsadm -L` names it. kube-proxy uses Masq. */
export type IpvsForward = 'Masq' | 'Route' | 'Tunnel' | 'Local';

export interface VirtualServer {
  readonly protocol: IpvsProtocol;
  /** Canonical text form (IPv6 without brackets). */
  readonly address: string;
  readonly port: number;
  /** `rr`, `wrr`, `lc`, `sh`, `mh`, ... */
  readonly scheduler: string;
  /** Sorted, without duplicates, never `hashed` in planned state. */
  readonly flags: readonly VirtualServerFlag[];
  /** Persistence timeout in seconds; only meaningful with the `persistent` flag. */
  readonly timeoutSeconds?: number;
  /** Persistence netmask: prefix length (32/128 = full, the kube-proxy value) when set. */
  readonly netmask?: number;
}

export interface RealServer {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  readonly forward: IpvsForward;
  /** Connection counters, only for listing (the Fake reports 0). */
  readonly activeConn?: number;
  readonly inactConn?: number;
}

/** A virtual server with its real servers (sorted by `realServerKey`). */
export interface IpvsService {
  readonly virtualServer: VirtualServer;
  readonly realServers: readonly RealServer[];
}

/** All virtual servers by `virtualServerKey`. */
export type IpvsState = ReadonlyMap<string, IpvsService>;

/** What identifies a virtual server in the kernel. */
export interface VirtualServerId {
  readonly protocol: IpvsProtocol;
  readonly address: string;
  readonly port: number;
}

export function isIPv6Address(address: string): boolean {
  return address.includes(':');
}

/** `[fd00::1]:80` for IPv6, `10.0.0.1:80` for IPv4. */
export function joinHostPort(address: string, port: number): string {
  return isIPv6Address(address) ? `[${address}]:${String(port)}` : `${address}:${String(port)}`;
}

/** Canonical key: `tcp/10.0.0.1:80`, `udp/[fd00::1]:53`. */
export function virtualServerKey(vs: VirtualServerId): string {
  return `${vs.protocol}/${joinHostPort(vs.address, vs.port)}`;
}

/** `10.0.0.1:80` / `[fd00::1]:80`; the fake keeps real servers sorted by this string. */
export function realServerKey(rs: Pick<RealServer, 'address' | 'port'>): string {
  return joinHostPort(rs.address, rs.port);
}

/** Flags in FLAG_BITS order, deduplicated. */
export function normalizeFlags(flags: readonly VirtualServerFlag[]): VirtualServerFlag[] {
  const set = new Set(flags);
  return (Object.keys(FLAG_BITS) as VirtualServerFlag[]).filter((f) => set.has(f));
}

export function flagsToBits(flags: readonly VirtualServerFlag[]): number {
  return flags.reduce((bits, f) => bits | FLAG_BITS[f], 0);
}

export function bitsToFlags(bits: number): VirtualServerFlag[] {
  return (Object.keys(FLAG_BITS) as VirtualServerFlag[]).filter((f) => (bits & FLAG_BITS[f]) !== 0);
}

/** `TCP` / `tcp` → `tcp`; undefined for anything else. */
export function toIpvsProtocol(name: string): IpvsProtocol | undefined {
  const p = name.toLowerCase();
  return (IPVS_PROTOCOLS as readonly string[]).includes(p) ? (p as IpvsProtocol) : undefined;
}

/** Builds a state map from services, sorting each service's real servers. */
export function makeIpvsState(services: readonly IpvsService[]): Map<string, IpvsService> {
  const state = new Map<string, IpvsService>();
  for (const s of services) {
    state.set(virtualServerKey(s.virtualServer), {
      virtualServer: s.virtualServer,
      realServers: sortRealServers(s.realServers),
    });
  }
  return state;
}

export function sortRealServers(list: readonly RealServer[]): RealServer[] {
  return [...list].sort((a, b) => cmpString(realServerKey(a), realServerKey(b)));
}

function cmpString(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One `ipvsadm` command, as `ipvsadm -R` reads them (`-A -E -D -a -e -d -C`). */
export type IpvsOperation =
  | { readonly verb: 'addService' | 'editService'; readonly virtualServer: VirtualServer }
  | { readonly verb: 'deleteService'; readonly id: VirtualServerId }
  | {
      readonly verb: 'addReal' | 'editReal';
      readonly id: VirtualServerId;
      readonly realServer: RealServer;
    }
  | {
      readonly verb: 'deleteReal';
      readonly id: VirtualServerId;
      readonly realServer: Pick<RealServer, 'address' | 'port'>;
    }
  | { readonly verb: 'clear' };

/** IP protocol numbers, for ipvsadm's listing order (TCP 6 < UDP 17 < SCTP 132). */
export const PROTOCOL_NUMBERS: Readonly<Record<IpvsProtocol, number>> = {
  tcp: 6,
  udp: 17,
  sctp: 132,
};

/**
 * kube-proxy's names of the flags it sets (utilipvs FlagPersistent, FlagHashed,
 * FlagSourceHash), as the fixtures list them, mapped to the model's names.
 */
export const KUBE_PROXY_FLAG_NAMES: Readonly<Record<string, VirtualServerFlag>> = {
  persistent: 'persistent',
  hashed: 'hashed',
  sourceHash: 'schedFlag2',
};

/** `['persistent', 'sourceHash']` → model flags; unknown names throw. */
export function fromKubeProxyFlagNames(names: readonly string[]): VirtualServerFlag[] {
  return normalizeFlags(
    names.map((n) => {
      const f = KUBE_PROXY_FLAG_NAMES[n];
      if (f === undefined) throw new Error(`unknown kube-proxy IPVS flag ${n}`);
      return f;
    }),
  );
}

/** Model flags → kube-proxy's names, without `hashed` (the fixtures' form). */
export function toKubeProxyFlagNames(flags: readonly VirtualServerFlag[]): string[] {
  return Object.entries(KUBE_PROXY_FLAG_NAMES)
    .filter(([name, f]) => name !== 'hashed' && flags.includes(f))
    .map(([name]) => name);
}
