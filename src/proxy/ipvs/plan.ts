// planIpvs: a pure plan of what kube-proxy's IPVS mode programs for one IP family — the
// IPVS virtual servers (ClusterIP, each externalIP, each LoadBalancer IP, each NodePort
// address) with their real servers, the addresses bound on the kube-ipvs0 dummy, the ipsets
// with their entries, and the iptables rules that use them, in kube-proxy's order and text.
// Reads a snapshot's Service ports and endpoints; names kernel objects; performs no I/O.
// Graceful termination (weight 0 while connections drain) depends on kernel state and is the
// applier's job: the plan lists the real servers wanted now, each at weight 1.

import type { IPFamily } from '../../util/ip.js';
import { ipFamilyOf } from '../../util/ip.js';
import type { EndpointInfo } from '../model/endpoint.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import type { ServicePortInfo } from '../model/service-port.js';
import { decideTrafficPolicy, sourceRangesAllowNode } from '../model/traffic-policy.js';
import { IPSET_DEFS, ipsetName } from './names.js';
import { defaultIpsetOptions } from '../../netfilter/ipset/model.js';
import type { IpsetSet } from '../../netfilter/ipset/model.js';
import { joinHostPort, toIpvsProtocol, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type { IpvsService, RealServer, VirtualServerFlag } from '../../netfilter/ipvs/model.js';
import { portOf } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import { planIptablesRules } from './rules.js';
import type { IpvsIptablesRule } from './rules.js';

/** A virtual server with its wanted real servers, and the Service port it serves. */
export interface PlannedIpvsService extends IpvsService {
  /** `ns/name:port`. */
  readonly servicePort: string;
}

/** One ipset kube-proxy manages, with the comment of the rules that match it. */
export interface IpsetPlan extends IpsetSet {
  /** The IPv4 name: the key of kube-proxy's ipsetList (IPSET_DEFS). */
  readonly base: string;
  readonly comment: string;
}

export interface IpvsPlan {
  readonly family: IPFamily;
  readonly virtualServers: readonly PlannedIpvsService[];
  /** Addresses on kube-ipvs0, sorted. */
  readonly boundAddresses: readonly string[];
  /** Every set of IPSET_DEFS, in that order (empty ones included: kube-proxy creates them all). */
  readonly ipsets: readonly IpsetPlan[];
  readonly iptables: readonly IpvsIptablesRule[];
  /** Services with endpoints but none local for a Local traffic policy (the sync gauges). */
  readonly noLocalEndpoints: { readonly internal: number; readonly external: number };
}

export interface IpvsPlanInput {
  readonly family: IPFamily;
  readonly services: ServicePortMap;
  readonly endpoints: EndpointsMap;
  readonly options: IpvsProxierOptions;
}

function realServersOf(endpoints: readonly EndpointInfo[]): RealServer[] {
  const byKey = new Map<string, RealServer>();
  for (const ep of endpoints) {
    const key = joinHostPort(ep.ip, ep.port);
    if (!byKey.has(key))
      byKey.set(key, { address: ep.ip, port: ep.port, weight: 1, forward: 'Masq' });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, rs]) => rs);
}

class Builder {
  readonly vs: PlannedIpvsService[] = [];
  readonly bound = new Set<string>();
  readonly noLocalInternal = new Set<string>();
  readonly noLocalExternal = new Set<string>();
  readonly sets = new Map<string, Set<string>>(IPSET_DEFS.map((d) => [d.name, new Set<string>()]));

  add(set: string, entry: string): void {
    this.sets.get(set)?.add(entry);
  }
}

/**
 * The endpoints syncEndpoint gives a virtual server: local ones when `onlyLocal`, else the
 * cluster-policy ones; a local-only VS with no local endpoints falls back to the cluster
 * ones when the port still uses them (internalTrafficPolicy Cluster).
 */
function endpointsFor(
  decision: ReturnType<typeof decideTrafficPolicy>,
  onlyLocal: boolean,
): readonly EndpointInfo[] {
  const { cat } = decision;
  if (!cat.hasAnyEndpoints) return [];
  if (!onlyLocal) return cat.clusterEndpoints;
  return cat.localEndpoints.length > 0 ? cat.localEndpoints : cat.clusterEndpoints;
}

function planServicePort(
  b: Builder,
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  input: IpvsPlanInput,
): void {
  const { options } = input;
  const proto = sp.protocol.toLowerCase();
  // A Service port without `port` (upstream's E2E tests) plans as port 0, as kube-proxy does.
  const port = portOf(sp.port);
  const decision = decideTrafficPolicy(sp, endpoints, {
    nodeName: options.nodeName,
    nodeZone: options.nodeZone ?? '',
  });
  if (decision.noLocalEndpointsInternal) b.noLocalInternal.add(sp.serviceKey);
  if (decision.noLocalEndpointsExternal) b.noLocalExternal.add(sp.serviceKey);
  for (const ep of endpoints) {
    if (ep.isLocal) b.add('KUBE-LOOP-BACK', `${ep.ip},${proto}:${ep.port},${ep.ip}`);
  }
  const affinity = sp.sessionAffinity;
  const flags: VirtualServerFlag[] = affinity.type === 'ClientIP' ? ['persistent'] : [];
  // kube-proxy's sourceHash (IP_VS_SVC_F_SCHED2) for the mh scheduler.
  if (options.scheduler === 'mh') flags.push('schedFlag2');
  const protocol = toIpvsProtocol(sp.protocol) ?? 'tcp';
  const vs = (address: string, port: number, onlyLocal: boolean): void => {
    b.vs.push({
      virtualServer: {
        protocol,
        address,
        port,
        scheduler: options.scheduler,
        flags,
        ...(affinity.type === 'ClientIP' ? { timeoutSeconds: affinity.timeoutSeconds } : {}),
        netmask: address.includes(':') ? 128 : 32,
      },
      realServers: realServersOf(endpointsFor(decision, onlyLocal)),
      servicePort: sp.nameString,
    });
  };
  const local = new Set(options.localAddresses);
  // ClusterIP.
  b.add('KUBE-CLUSTER-IP', `${sp.clusterIP},${proto}:${port}`);
  vs(sp.clusterIP, port, sp.internalPolicyLocal);
  b.bound.add(sp.clusterIP);
  // externalIPs.
  for (const ip of sp.externalIPs) {
    b.add(
      sp.externalPolicyLocal ? 'KUBE-EXTERNAL-IP-LOCAL' : 'KUBE-EXTERNAL-IP',
      `${ip},${proto}:${port}`,
    );
    vs(ip, port, sp.externalPolicyLocal);
    if (!local.has(ip)) b.bound.add(ip);
  }
  // LoadBalancer ingress IPs.
  const allowNode =
    sp.loadBalancerSourceRanges.length > 0 && sourceRangesAllowNode(sp, options.nodeIP);
  for (const ip of sp.loadBalancerVIPs) {
    const entry = `${ip},${proto}:${port}`;
    b.add('KUBE-LOAD-BALANCER', entry);
    if (sp.externalPolicyLocal) b.add('KUBE-LOAD-BALANCER-LOCAL', entry);
    if (sp.loadBalancerSourceRanges.length > 0) {
      b.add('KUBE-LOAD-BALANCER-FW', entry);
      for (const cidr of sp.loadBalancerSourceRanges)
        b.add('KUBE-LOAD-BALANCER-SOURCE-CIDR', `${entry},${cidr}`);
      if (allowNode) b.add('KUBE-LOAD-BALANCER-SOURCE-IP', `${entry},${ip}`);
    }
    vs(ip, port, sp.externalPolicyLocal);
    if (!local.has(ip)) b.bound.add(ip);
  }
  // NodePorts: one VS per node address.
  if (sp.nodePort !== 0 && options.nodePortIPs.length > 0) {
    const suffix = sp.externalPolicyLocal ? ['', 'LOCAL-'] : [''];
    for (const s of suffix) {
      if (sp.protocol === 'SCTP') {
        for (const ip of options.nodePortIPs)
          b.add(`KUBE-NODE-PORT-${s}SCTP-HASH`, `${ip},sctp:${sp.nodePort}`);
      } else {
        b.add(`KUBE-NODE-PORT-${s}${sp.protocol}`, String(sp.nodePort));
      }
    }
    for (const ip of options.nodePortIPs) vs(ip, sp.nodePort, sp.externalPolicyLocal);
  }
  if (sp.healthCheckNodePort !== 0)
    b.add('KUBE-HEALTH-CHECK-NODE-PORT', String(sp.healthCheckNodePort));
}

/** The whole IPVS-mode state for one family. */
export function planIpvs(input: IpvsPlanInput): IpvsPlan {
  const b = new Builder();
  const keys = [...input.services.keys()].sort();
  for (const key of keys) {
    const sp = input.services.get(key);
    if (!sp || ipFamilyOf(sp.clusterIP) !== input.family) continue;
    planServicePort(b, sp, input.endpoints.get(key) ?? [], input);
  }
  for (const ip of b.bound) b.add('KUBE-IPVS-IPS', ip);
  const ipsets: IpsetPlan[] = IPSET_DEFS.map((d) => ({
    name: ipsetName(d.name, input.family, input.options.ipsetNamesIPv6Prefixed),
    base: d.name,
    type: d.type,
    ...(d.type === 'bitmap:port' ? {} : { family: input.family === 'IPv6' ? 'inet6' : 'inet' }),
    options: defaultIpsetOptions(d.type),
    comment: d.comment,
    entries: [...(b.sets.get(d.name) ?? [])].sort().map((value) => ({ value })),
  }));
  const virtualServers = dedupeVirtualServers(b.vs);
  return {
    family: input.family,
    virtualServers,
    boundAddresses: [...b.bound].sort(),
    ipsets,
    iptables: planIptablesRules(input, ipsets),
    noLocalEndpoints: { internal: b.noLocalInternal.size, external: b.noLocalExternal.size },
  };
}

/** One VS per protocol/address/port: the first Service port to claim it wins, as in the kernel. */
function dedupeVirtualServers(list: readonly PlannedIpvsService[]): PlannedIpvsService[] {
  const seen = new Map<string, PlannedIpvsService>();
  for (const v of list) {
    const key = virtualServerKey(v.virtualServer);
    if (!seen.has(key)) seen.set(key, v);
  }
  return [...seen.values()];
}
