// From the proxy's configuration, the Node it runs on and facts about the host to the options
// one IP family's rules are planned with: the one path `svcnet proxy`, `svcnet render` and
// `svcnet trace -f` share, so the three cannot drift apart. `proxyNodeOf` reads what the
// rules depend on from a Node object (the daemon); render and trace resolve their node from
// manifests and flags. Pure.

import { LABEL_TOPOLOGY_ZONE } from '../kube/names.js';
import { nodeHostIPs } from '../kube/node-model.js';
import type { Node } from '../kube/types.js';
import { cidrContains, formatCIDR, formatIP, parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import type { ProxyDaemonConfig } from './config.js';
import {
  DEFAULT_OPTIONS,
  masqueradeMarkFromBit,
  nodePortCandidateAddresses,
} from './iptables/options.js';
import type { IptablesProxierOptions, LocalDetector, NfacctCounters } from './iptables/options.js';
import { DEFAULT_NFTABLES_OPTIONS } from './nftables/options.js';
import type { NftablesProxierOptions } from './nftables/options.js';
import { DEFAULT_IPVS_OPTIONS } from './ipvs/options.js';
import type { IpvsProxierOptions } from './ipvs/options.js';
import { filterCIDRs, localAddressForSet, nodeIPsOf } from './ipvs/host.js';
import { IPVS_DUMMY_DEVICE } from './ipvs/names.js';

/** The parts of the proxy's Node the rules depend on. */
export interface ProxyNode {
  readonly name: string;
  /** The node's IPs, any family, preferred first (the first of a family is its node IP). */
  readonly ips: readonly string[];
  /** `topology.kubernetes.io/zone` ('' when unknown). */
  readonly zone: string;
  /** spec.podCIDRs (detectLocalMode NodeCIDR). */
  readonly podCIDRs: readonly string[];
}

/** Facts about the host the options depend on. */
export interface ProxyHost {
  /** The node's interface addresses (any family, with or without /prefix), incl. loopback. */
  readonly localAddresses: readonly string[];
  /** nf_conntrack_tcp_be_liberal is on: no INVALID drop rule. */
  readonly conntrackTCPLiberal: boolean;
  /** Which nfacct objects exist (a rule matching a missing one fails the whole restore). */
  readonly nfacct: NfacctCounters;
}

/** The config fields the options depend on. */
export type ProxierOptionsConfig = Pick<
  ProxyDaemonConfig,
  | 'clusterCIDRs'
  | 'detectLocalMode'
  | 'bridgeInterface'
  | 'interfaceNamePrefix'
  | 'masqueradeBit'
  | 'masqueradeAll'
  | 'nodePortAddresses'
  | 'localhostNodePorts'
  | 'syncPeriodMs'
>;

/** nfacct counters when none exist. */
export const NO_NFACCT: NfacctCounters = {
  ctStateInvalidDropped: false,
  localhostNodePortsAccepted: false,
};

/**
 * A Node object as the rules see it: its host IPs as kubelet picks them (`nodeHostIPs`: the
 * InternalIPs, an ExternalIP only for a family without one) and podCIDRs, in canonical form. A missing Node (not seen yet) has no IPs, zone or podCIDRs.
 */
export function proxyNodeOf(name: string, node: Node | undefined): ProxyNode {
  const ips = nodeHostIPs(node).flatMap((a) => {
    const ip = parseIPSloppy(a);
    return ip === undefined ? [] : [formatIP(ip)];
  });
  const podCIDRs =
    node?.spec?.podCIDRs ?? (node?.spec?.podCIDR !== undefined ? [node.spec.podCIDR] : []);
  return {
    name,
    ips,
    zone: node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] ?? '',
    podCIDRs: podCIDRs.map((c) => {
      const p = parseCIDRSloppy(c);
      return p === undefined ? c : formatCIDR(p);
    }),
  };
}

function ofFamily(cidrs: readonly string[], family: IPFamily): string | undefined {
  return cidrs.find((c) => parseCIDRSloppy(c)?.family === family);
}

/** The local-traffic detector for one family (`None` when the mode has no data for it). */
export function localDetectorFor(
  config: ProxierOptionsConfig,
  node: ProxyNode,
  family: IPFamily,
): LocalDetector {
  switch (config.detectLocalMode) {
    case 'ClusterCIDR': {
      const cidr = ofFamily(config.clusterCIDRs, family);
      return cidr === undefined ? { mode: 'None' } : { mode: 'ClusterCIDR', cidr };
    }
    case 'NodeCIDR': {
      const cidr = ofFamily(node.podCIDRs, family);
      return cidr === undefined ? { mode: 'None' } : { mode: 'NodeCIDR', cidr };
    }
    case 'BridgeInterface':
      return config.bridgeInterface === ''
        ? { mode: 'None' }
        : { mode: 'BridgeInterface', interfaceName: config.bridgeInterface };
    case 'InterfaceNamePrefix':
      return config.interfaceNamePrefix === ''
        ? { mode: 'None' }
        : { mode: 'InterfaceNamePrefix', prefix: config.interfaceNamePrefix };
  }
}

/** What every mode's options take from the Node for one family: name, node IP, zone, detector. */
function familyNode(config: ProxierOptionsConfig, node: ProxyNode, family: IPFamily) {
  return {
    nodeName: node.name,
    nodeIP: node.ips.find((ip) => parseIPSloppy(ip)?.family === family) ?? '',
    nodeZone: node.zone,
    localDetector: localDetectorFor(config, node, family),
  };
}

/** The plan options of one family from the config, the Node and the host. */
export function proxierOptionsFor(
  config: ProxierOptionsConfig,
  node: ProxyNode,
  host: ProxyHost,
  family: IPFamily,
): IptablesProxierOptions {
  const fam = familyNode(config, node, family);
  return {
    ...DEFAULT_OPTIONS,
    ...fam,
    masqueradeMark: masqueradeMarkFromBit(config.masqueradeBit),
    masqueradeAll: config.masqueradeAll,
    nodePortAddresses: config.nodePortAddresses,
    localAddresses: nodePortCandidateAddresses(
      config.nodePortAddresses,
      fam.nodeIP,
      host.localAddresses,
      family,
    ),
    localhostNodePorts: config.localhostNodePorts,
    nfacct: host.nfacct,
    conntrackTCPLiberal: host.conntrackTCPLiberal,
    syncPeriodMs: config.syncPeriodMs,
  };
}

/**
 * The nftables plan options of one family (the iptables ones above stay as they are).
 * `config` carries the `nftables:` section's masqueradeBit/masqueradeAll when the mode is
 * nftables; an empty nodePortAddresses means `primary`, this mode's default. `serviceCIDRs`
 * are the cluster's ServiceCIDRs (any family), when known.
 */
export function nftablesProxierOptionsFor(
  config: ProxierOptionsConfig,
  node: ProxyNode,
  host: Pick<ProxyHost, 'localAddresses'>,
  family: IPFamily,
  serviceCIDRs: readonly string[] = [],
): NftablesProxierOptions {
  const fam = familyNode(config, node, family);
  const nodePortAddresses =
    config.nodePortAddresses.length === 0
      ? DEFAULT_NFTABLES_OPTIONS.nodePortAddresses
      : config.nodePortAddresses;
  return {
    ...DEFAULT_NFTABLES_OPTIONS,
    ...fam,
    masqueradeMark: masqueradeMarkFromBit(config.masqueradeBit),
    masqueradeAll: config.masqueradeAll,
    nodePortAddresses,
    localAddresses: nodePortCandidateAddresses(
      nodePortAddresses,
      fam.nodeIP,
      host.localAddresses,
      family,
    ),
    serviceCIDRs,
  };
}

/**
 * The addresses IPVS-mode NodePort virtual servers listen on. With `nodePortAddresses` empty
 * or holding 0.0.0.0/0 / ::/0: kube-proxy's node IPs of `family` (ipvs/host.ts nodeIPsOf: the
 * local addresses, loopback and IPv6 link-local dropped, minus `ipvsBound`, the Service IPs
 * on kube-ipvs0). Otherwise the local addresses of `family` inside those CIDRs.
 */
export function ipvsNodePortIPs(
  nodePortAddresses: readonly string[],
  localAddresses: readonly string[],
  family: IPFamily,
  ipvsBound: readonly string[] = [],
): string[] {
  const cidrs = nodePortAddresses
    .map((c) => parseCIDRSloppy(c))
    .filter((c) => c !== undefined && c.family === family);
  const all = nodePortAddresses.length === 0 || cidrs.some((c) => c?.prefix === 0);
  if (all) return nodeIPsOf({ host: localAddresses, [IPVS_DUMMY_DEVICE]: ipvsBound }, family);
  const out: string[] = [];
  for (const a of localAddresses) {
    const text = localAddressForSet(a, family);
    const ip = text === undefined ? undefined : parseIPSloppy(text);
    if (ip === undefined || text === undefined) continue;
    if (!cidrs.some((c) => c !== undefined && cidrContains(c, ip))) continue;
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/** The addresses of `family`, canonical, without prefix, deduplicated, in input order. */
function familyAddresses(addresses: readonly string[], family: IPFamily): string[] {
  const out: string[] = [];
  for (const a of addresses) {
    const ip = parseIPSloppy(a.split('/')[0] ?? '');
    if (ip?.family !== family) continue;
    const text = formatIP(ip);
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/**
 * IPVS-mode options of one family (masquerading as iptables.* configures it, as upstream).
 * `host.ipvsBoundAddresses` are the addresses on kube-ipvs0 (not node IPs); `excludeCIDRs`
 * is `ipvs.excludeCIDRs`, any family (only this family's are kept).
 */
export function ipvsProxierOptionsFor(
  config: ProxierOptionsConfig,
  node: ProxyNode,
  host: Pick<ProxyHost, 'localAddresses'> & { readonly ipvsBoundAddresses?: readonly string[] },
  family: IPFamily,
  scheduler: string,
  excludeCIDRs: readonly string[] = [],
): IpvsProxierOptions {
  return {
    ...DEFAULT_IPVS_OPTIONS,
    ...familyNode(config, node, family),
    scheduler: scheduler === '' ? DEFAULT_IPVS_OPTIONS.scheduler : scheduler,
    // The IPVS proxier prints the mark with Go's %#08x: 0x00004000 for bit 14.
    masqueradeMark: `0x${(1 << config.masqueradeBit).toString(16).padStart(8, '0')}`,
    masqueradeAll: config.masqueradeAll,
    nodePortIPs: ipvsNodePortIPs(
      config.nodePortAddresses,
      host.localAddresses,
      family,
      host.ipvsBoundAddresses,
    ),
    localAddresses: familyAddresses(host.localAddresses, family),
    excludeCIDRs: filterCIDRs(excludeCIDRs, family),
  };
}
