// Link decisions for svcnet-cni: the iproute2 ops (util/ip-ops.ts) that attach a Pod in ptp mode
// (kindnet style: the gateway as /32 on every host veth, a /32 host route per Pod, and in
// the Pod a link-scope route to the gateway with everything else via it) or bridge mode
// (veth port on a bridge holding the gateway, hairpin optional), the ADD result, and the
// CHECK comparison of observed state against prevResult. Pure; the plugin edge runs the
// ops through the Ip boundary.

import { createHash } from 'node:crypto';
import {
  cidrContains,
  formatCIDR,
  formatIP,
  parseCIDR,
  parseIP,
  type ParsedIP,
} from '../util/ip.js';
import {
  addrAdd,
  addrDel,
  addrReplace,
  linkSet,
  linkUp,
  routeAdd,
  routeReplace,
  vethPair,
  type IpOp,
} from '../util/ip-ops.js';
import type { PluginConfig } from './parse-config.js';
import {
  CniError,
  CniErrorCode,
  type CniInterface,
  type CniIPConfig,
  type CniResult,
  type CniRoute,
} from './types.js';

/** What CHECK needs of a link as the Ip boundary reports it. */
export interface ObservedLink {
  readonly name: string;
  readonly mac: string;
  readonly up: boolean;
  readonly master: string | undefined;
  readonly addrs: readonly { readonly local: string; readonly prefixlen: number }[];
}

/** What CHECK needs of a route (dst in CIDR form). */
export interface ObservedRoute {
  readonly dst: string;
  readonly dev: string;
}

/** Addresses from IPAM for this attachment, parsed. */
export interface PodAddress {
  readonly ip: ParsedIP;
  readonly prefix: number;
  readonly gateway: ParsedIP | undefined;
}

export interface AttachNames {
  readonly hostVeth: string;
  readonly hostMac: string;
  readonly podMac: string;
}

export interface AttachPlan {
  /** Run in the plugin's ("host") namespace, after ensuring the bridge in bridge mode. */
  readonly hostOps: IpOp[];
  /** Run inside the Pod namespace. */
  readonly podOps: IpOp[];
  /** IPv4/IPv6 forwarding sysctls to enable in the host namespace. */
  readonly forwarding: readonly ('IPv4' | 'IPv6')[];
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function macFrom(bytes: Buffer): string {
  const b = [...bytes.subarray(0, 6)];
  b[0] = ((b[0] ?? 0) & 0xfc) | 0x02; // locally administered, unicast
  return b.map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/**
 * Deterministic names for an attachment: host veth `veth` + 8 hex of sha256(network,
 * containerId, ifName) (≤ 15 bytes; DEL and GC find it without any state) and stable,
 * locally administered MACs.
 */
export function attachNames(network: string, containerId: string, ifName: string): AttachNames {
  const h = digest(`${network}\0${containerId}\0${ifName}`);
  return {
    hostVeth: `veth${h.subarray(0, 4).toString('hex')}`,
    hostMac: macFrom(h.subarray(4, 10)),
    podMac: macFrom(h.subarray(10, 16)),
  };
}

/** Parses IPAM `ips` into addresses; throws code 999 on an entry that is not a CIDR. */
export function podAddresses(ips: readonly CniIPConfig[]): PodAddress[] {
  return ips.map((c) => {
    const slash = c.address.indexOf('/');
    const ip = parseIP(c.address.slice(0, slash));
    const prefix = Number(c.address.slice(slash + 1));
    if (slash < 0 || !ip || !parseCIDR(c.address))
      throw new CniError(CniErrorCode.internal, `IPAM returned a bad address "${c.address}"`);
    const gateway = c.gateway === undefined ? undefined : parseIP(c.gateway);
    if (c.gateway !== undefined && !gateway)
      throw new CniError(CniErrorCode.internal, `IPAM returned a bad gateway "${c.gateway}"`);
    return { ip, prefix, gateway };
  });
}

function hostBits(a: PodAddress): number {
  return a.ip.family === 'IPv4' ? 32 : 128;
}

function subnetOf(a: PodAddress): string {
  return formatCIDR({
    family: a.ip.family,
    base: parseCIDR(`${formatIP(a.ip)}/${a.prefix}`)?.base ?? 0n,
    prefix: a.prefix,
  });
}

function defaultDst(a: PodAddress): string {
  return a.ip.family === 'IPv4' ? '0.0.0.0/0' : '::/0';
}

/** The IPAM routes plus, for isDefaultGateway, a default route per family. */
export function resultRoutes(
  cfg: PluginConfig,
  addrs: readonly PodAddress[],
  ipamRoutes: readonly CniRoute[],
): CniRoute[] {
  const routes = ipamRoutes.map((r) => ({ ...r }));
  if (cfg.mode === 'bridge' && cfg.isDefaultGateway)
    for (const a of addrs)
      if (a.gateway && !routes.some((r) => r.dst === defaultDst(a)))
        routes.push({ dst: defaultDst(a), gw: formatIP(a.gateway) });
  return routes;
}

function familyOfCidr(text: string): 'IPv4' | 'IPv6' | undefined {
  return parseCIDR(text)?.family;
}

/**
 * The ops that attach the Pod. Throws code 7 when ptp mode gets an address without a
 * gateway (ptp routes everything through it).
 */
export function planAttach(
  cfg: PluginConfig,
  names: AttachNames,
  ifName: string,
  netns: string,
  addrs: readonly PodAddress[],
  routes: readonly CniRoute[],
): AttachPlan {
  const host: IpOp[] = [];
  const pod: IpOp[] = [linkUp('lo'), linkUp(ifName)];
  if (cfg.mode === 'bridge') {
    host.push(linkUp(cfg.bridge));
    if (cfg.promiscMode) host.push(linkSet(cfg.bridge, { promisc: true }));
    if (cfg.isGateway)
      for (const a of addrs)
        if (a.gateway) host.push(addrReplace(`${formatIP(a.gateway)}/${a.prefix}`, cfg.bridge));
  }
  host.push(
    vethPair({
      host: names.hostVeth,
      peer: ifName,
      mtu: cfg.mtu,
      hostMac: names.hostMac,
      peerMac: names.podMac,
      netns,
    }),
  );
  if (cfg.mode === 'bridge') {
    host.push(linkSet(names.hostVeth, { master: cfg.bridge }));
    host.push(linkUp(names.hostVeth));
    if (cfg.hairpinMode) host.push(linkSet(names.hostVeth, { hairpin: true }));
  } else host.push(linkUp(names.hostVeth));

  for (const a of addrs) {
    const ip = formatIP(a.ip);
    const nodad = a.ip.family === 'IPv6';
    if (cfg.mode === 'ptp') {
      if (!a.gateway)
        throw new CniError(
          CniErrorCode.invalidNetworkConfig,
          `ptp mode needs a gateway for ${ip}/${a.prefix}; set ipam.ranges[].gateway`,
        );
      const gw = formatIP(a.gateway);
      host.push(addrReplace(`${gw}/${hostBits(a)}`, names.hostVeth, { nodad }));
      host.push(routeAdd(`${ip}/${hostBits(a)}`, { dev: names.hostVeth, scope: 'link' }));
      pod.push(addrAdd(`${ip}/${a.prefix}`, ifName, { noprefixroute: true, nodad }));
      pod.push(routeAdd(`${gw}/${hostBits(a)}`, { dev: ifName, scope: 'link', src: ip }));
      if (a.prefix < hostBits(a))
        pod.push(routeAdd(subnetOf(a), { via: gw, dev: ifName, src: ip }));
    } else {
      pod.push(addrAdd(`${ip}/${a.prefix}`, ifName, { nodad }));
    }
  }
  for (const r of routes) {
    const fam = familyOfCidr(r.dst);
    const a = addrs.find((x) => x.ip.family === fam);
    if (!a) continue;
    if (cfg.mode === 'ptp' && r.dst === subnetOf(a) && r.gw === undefined) continue;
    const gw = r.gw ?? (a.gateway ? formatIP(a.gateway) : undefined);
    pod.push(routeReplace(r.dst, { via: gw, dev: ifName }));
  }
  const families = [...new Set(addrs.map((a) => a.ip.family))];
  const forwarding = cfg.mode === 'ptp' || cfg.isGateway ? families : [];
  return { hostOps: host, podOps: pod, forwarding };
}

/**
 * Bridge mode with isGateway: the ops that make room for the gateway addresses on the bridge,
 * given the addresses it has now (planAttach then adds them). As the reference bridge
 * plugin: an IPv4 bridge holds one address, an IPv6 bridge one per non-overlapping subnet;
 * a different one is removed with `forceAddress`, otherwise ADD fails with code 999 naming
 * the bridge, both addresses and the `forceAddress` field.
 */
export function planBridgeGateway(
  cfg: PluginConfig,
  have: readonly { readonly local: string; readonly prefixlen: number }[],
  addrs: readonly PodAddress[],
): IpOp[] {
  if (cfg.mode !== 'bridge' || !cfg.isGateway) return [];
  const ops: IpOp[] = [];
  for (const a of addrs) {
    if (!a.gateway) continue;
    const want = `${formatIP(a.gateway)}/${a.prefix}`;
    const wantNet = parseCIDR(want);
    for (const h of have) {
      const hip = parseIP(h.local);
      if (!hip || hip.family !== a.gateway.family) continue;
      const haveText = `${formatIP(hip)}/${h.prefixlen}`;
      if (haveText === want) continue;
      const haveNet = parseCIDR(haveText);
      // IPv6 link-local (fe80::/10) addresses come with every up link; they never conflict.
      if (hip.family === 'IPv6' && hip.value >> 118n === 0x3fan) continue;
      const conflicts =
        hip.family === 'IPv4' ||
        (haveNet !== undefined &&
          wantNet !== undefined &&
          (cidrContains(haveNet, a.gateway) || cidrContains(wantNet, hip)));
      if (!conflicts) continue;
      if (!cfg.forceAddress)
        throw new CniError(
          CniErrorCode.internal,
          `bridge ${cfg.bridge} already has address ${haveText}, different from the gateway ${want}; set "forceAddress": true to replace it`,
        );
      ops.push(addrDel(haveText, cfg.bridge));
    }
  }
  return ops;
}

/**
 * The ADD result: interfaces (`[hostVeth, pod]` for ptp, `[bridge, hostVeth, pod]` for
 * bridge), ips pointing at the Pod interface, routes and dns, at the config's version
 * (pre-1.0.0 results carry `version` in each ip).
 */
export function attachResult(
  cfg: PluginConfig,
  names: AttachNames,
  ifName: string,
  netns: string,
  ipam: CniResult,
  routes: readonly CniRoute[],
  bridgeMac: string | undefined,
): CniResult {
  const interfaces: CniInterface[] = [];
  if (cfg.mode === 'bridge')
    interfaces.push({ name: cfg.bridge, ...(bridgeMac ? { mac: bridgeMac } : {}) });
  interfaces.push({
    name: names.hostVeth,
    mac: names.hostMac,
    ...(cfg.mtu ? { mtu: cfg.mtu } : {}),
  });
  interfaces.push({
    name: ifName,
    mac: names.podMac,
    ...(cfg.mtu ? { mtu: cfg.mtu } : {}),
    sandbox: netns,
  });
  const podIndex = interfaces.length - 1;
  const pre1 = cfg.cniVersion.startsWith('0.');
  const dns = ipam.dns && Object.keys(ipam.dns).length > 0 ? ipam.dns : (cfg.dns ?? {});
  return {
    cniVersion: cfg.cniVersion,
    interfaces,
    ips: (ipam.ips ?? []).map((ip) => {
      const fam = ip.address.includes(':') ? '6' : '4';
      return {
        ...(pre1 ? { version: fam } : {}),
        interface: podIndex,
        address: ip.address,
        ...(ip.gateway ? { gateway: ip.gateway } : {}),
      };
    }),
    routes: routes.map((r) => ({ ...r })),
    dns: { ...dns },
  };
}

export interface ObservedState {
  readonly hostLinks: readonly ObservedLink[];
  readonly hostRoutes: readonly ObservedRoute[];
  readonly podLinks: readonly ObservedLink[];
  readonly podRoutes: readonly ObservedRoute[];
}

function canonicalCidr(text: string): string {
  const c = parseCIDR(text);
  if (!c) return text;
  return `${formatIP({ family: c.family, value: parseIP(text.slice(0, text.indexOf('/')))?.value ?? c.base })}/${c.prefix}`;
}

/**
 * CHECK: compares what the kernel shows with what prevResult and the config promise.
 * Returns one message per discrepancy (empty = healthy); each names the namespace, device
 * and address or route.
 */
export function checkAttachment(
  cfg: PluginConfig,
  names: AttachNames,
  ifName: string,
  prev: CniResult,
  seen: ObservedState,
): string[] {
  const problems: string[] = [];
  const podIf = seen.podLinks.find((l) => l.name === ifName);
  if (!podIf) problems.push(`interface ${ifName} is missing in the Pod namespace`);
  else if (!podIf.up) problems.push(`interface ${ifName} is down in the Pod namespace`);
  if (
    podIf &&
    podIf.mac !== names.podMac &&
    prev.interfaces?.some((i) => i.name === ifName && i.mac && i.mac !== podIf.mac)
  )
    problems.push(`interface ${ifName} has MAC ${podIf.mac}, prevResult says otherwise`);
  const addrs = podAddresses(prev.ips ?? []);
  for (const a of addrs) {
    const want = `${formatIP(a.ip)}/${a.prefix}`;
    if (podIf && !podIf.addrs.some((x) => canonicalCidr(`${x.local}/${x.prefixlen}`) === want))
      problems.push(`address ${want} is missing on ${ifName} in the Pod namespace`);
  }
  const hasRoute = (routes: readonly ObservedRoute[], dst: string, dev?: string): boolean => {
    const c = parseCIDR(dst);
    const d = c ? formatCIDR(c) : dst;
    return routes.some((r) => {
      const rc = parseCIDR(r.dst);
      return (rc ? formatCIDR(rc) : r.dst) === d && (dev === undefined || r.dev === dev);
    });
  };
  for (const r of prev.routes ?? [])
    if (!hasRoute(seen.podRoutes, r.dst))
      problems.push(`route ${r.dst} is missing in the Pod namespace`);
  const veth = seen.hostLinks.find((l) => l.name === names.hostVeth);
  if (!veth) problems.push(`host veth ${names.hostVeth} is missing in the host namespace`);
  else if (!veth.up) problems.push(`host veth ${names.hostVeth} is down`);
  if (cfg.mode === 'ptp') {
    for (const a of addrs) {
      if (!a.gateway) continue;
      const gw = formatIP(a.gateway);
      if (!hasRoute(seen.podRoutes, `${gw}/${hostBits(a)}`, ifName))
        problems.push(`route ${gw}/${hostBits(a)} dev ${ifName} is missing in the Pod namespace`);
      if (veth && !veth.addrs.some((x) => x.local === gw))
        problems.push(`gateway ${gw}/${hostBits(a)} is missing on host veth ${names.hostVeth}`);
      const hostRoute = `${formatIP(a.ip)}/${hostBits(a)}`;
      if (!hasRoute(seen.hostRoutes, hostRoute, names.hostVeth))
        problems.push(`route ${hostRoute} dev ${names.hostVeth} is missing in the host namespace`);
    }
  } else {
    const br = seen.hostLinks.find((l) => l.name === cfg.bridge);
    if (!br) problems.push(`bridge ${cfg.bridge} is missing in the host namespace`);
    if (veth && veth.master !== cfg.bridge)
      problems.push(`host veth ${names.hostVeth} is not a port of bridge ${cfg.bridge}`);
    if (br && cfg.isGateway)
      for (const a of addrs)
        if (a.gateway && !br.addrs.some((x) => x.local === formatIP(a.gateway ?? a.ip)))
          problems.push(
            `gateway ${formatIP(a.gateway)}/${a.prefix} is missing on bridge ${cfg.bridge}`,
          );
  }
  return problems;
}
