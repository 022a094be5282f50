// The settings an iptables plan depends on (kube-proxy's proxier fields), the local-traffic
// detector (ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix, or none) rendered
// as iptables matches, and nodePortAddresses resolved against the node's addresses. Pure.

import type { IPFamily, ParsedCIDR } from '../../util/ip.js';
import {
  cidrContains,
  formatIP,
  isLoopback,
  parseCIDRSloppy,
  parseIPSloppy,
} from '../../util/ip.js';

/** How kube-proxy tells pod traffic from other traffic, already narrowed to one family. */
export type LocalDetector =
  | { readonly mode: 'None' }
  | { readonly mode: 'ClusterCIDR' | 'NodeCIDR'; readonly cidr: string }
  | { readonly mode: 'BridgeInterface'; readonly interfaceName: string }
  | { readonly mode: 'InterfaceNamePrefix'; readonly prefix: string };

/** Matches for "comes from a local pod". Empty for the no-op detector. */
export function ifLocal(d: LocalDetector): string[] {
  switch (d.mode) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return ['-s', d.cidr];
    case 'BridgeInterface':
      return ['-i', d.interfaceName];
    case 'InterfaceNamePrefix':
      return ['-i', `${d.prefix}+`];
    case 'None':
      return [];
  }
}

/** Matches for "does not come from a local pod". Empty for the no-op detector. */
export function ifNotLocal(d: LocalDetector): string[] {
  const m = ifLocal(d);
  return m.length === 0 ? m : ['!', ...m];
}

export function isDetectorImplemented(d: LocalDetector): boolean {
  return d.mode !== 'None';
}

/** nfacct counters that exist on the host (rules match them only then). */
export interface NfacctCounters {
  readonly ctStateInvalidDropped: boolean;
  readonly localhostNodePortsAccepted: boolean;
}

/** Everything besides Services and endpoints that decides the rules of one family. */
export interface IptablesProxierOptions {
  readonly nodeName: string;
  /** The node's primary IP of this family ('' when unknown): used by loadBalancerSourceRanges. */
  readonly nodeIP: string;
  /** The node's `topology.kubernetes.io/zone` ('' when unknown). */
  readonly nodeZone: string;
  readonly localDetector: LocalDetector;
  /** e.g. `0x4000` (masqueradeBit 14). */
  readonly masqueradeMark: string;
  readonly masqueradeAll: boolean;
  /** CIDRs and keywords (`primary`, `localhost`, `all`); empty means every local address. */
  readonly nodePortAddresses: readonly string[];
  /**
   * The node's interface addresses nodePortAddresses resolves against (any family, with or
   * without /prefix). proxierOptionsFor passes only those it can select
   * (`nodePortCandidateAddresses`); they reach only the KUBE-SERVICES NodePort jumps, which
   * every sync rewrites, so they never force a full sync.
   */
  readonly localAddresses: readonly string[];
  readonly localhostNodePorts: boolean;
  readonly hasRandomFully: boolean;
  readonly nfacct: NfacctCounters;
  /** Host runs with nf_conntrack_tcp_be_liberal=1: no INVALID drop rule. */
  readonly conntrackTCPLiberal: boolean;
  /** Above this many endpoints, comments are dropped (kube-proxy: 1000). */
  readonly largeClusterEndpointsThreshold: number;
  /** In large-cluster mode stale chains are deleted at most once per syncPeriod. */
  readonly syncPeriodMs: number;
}

/** kube-proxy's defaults for the options that have one. */
export const DEFAULT_OPTIONS: Omit<IptablesProxierOptions, 'nodeName' | 'nodeIP'> = {
  nodeZone: '',
  localDetector: { mode: 'None' },
  masqueradeMark: '0x4000',
  masqueradeAll: false,
  nodePortAddresses: [],
  localAddresses: [],
  localhostNodePorts: true,
  hasRandomFully: true,
  nfacct: { ctStateInvalidDropped: true, localhostNodePortsAccepted: true },
  conntrackTCPLiberal: false,
  largeClusterEndpointsThreshold: 1000,
  syncPeriodMs: 30_000,
};

/** `0x4000` for bit 14. */
export function masqueradeMarkFromBit(bit: number): string {
  return `0x${(2 ** bit).toString(16)}`;
}

export type NodePortDestinations =
  | { readonly matchAll: true }
  | { readonly matchAll: false; readonly ips: readonly string[]; readonly warnings: string[] };

/**
 * The CIDRs nodePortAddresses names for one family (`primary` is the node IP, `localhost` the
 * loopback range), or `undefined` when it matches every local address: `all`, a /0, or no
 * entry of this family.
 */
function nodePortCIDRs(
  nodePortAddresses: readonly string[],
  nodeIP: string,
  family: IPFamily,
): ParsedCIDR[] | undefined {
  const cidrs: string[] = [];
  for (const entry of nodePortAddresses) {
    if (entry === 'all') return undefined;
    if (entry === 'primary') {
      const ip = parseIPSloppy(nodeIP);
      if (ip?.family === family) cidrs.push(`${formatIP(ip)}/${family === 'IPv4' ? 32 : 128}`);
    } else if (entry === 'localhost') cidrs.push(family === 'IPv4' ? '127.0.0.0/8' : '::1/128');
    else if (parseCIDRSloppy(entry)?.family === family) cidrs.push(entry);
  }
  const parsed = cidrs.map((c) => parseCIDRSloppy(c)).filter((c) => c !== undefined);
  if (parsed.length === 0 || parsed.some((c) => c.prefix === 0)) return undefined;
  return parsed;
}

/**
 * The local addresses of `family` that nodePortAddresses can select, canonical, without
 * prefix, deduplicated, in input order (loopback ones included: resolution warns about them);
 * `[]` when nodePortAddresses matches every local address. This is all of the node's
 * addresses the rules ever see, so the proxier options carry only these: a pod's veth
 * address or any other address outside nodePortAddresses cannot change the options (and so
 * cannot force a full sync).
 */
export function nodePortCandidateAddresses(
  nodePortAddresses: readonly string[],
  nodeIP: string,
  localAddresses: readonly string[],
  family: IPFamily,
): string[] {
  const cidrs = nodePortCIDRs(nodePortAddresses, nodeIP, family);
  if (cidrs === undefined) return [];
  const out: string[] = [];
  for (const a of localAddresses) {
    const ip = parseIPSloppy(a.split('/')[0] ?? '');
    if (ip?.family !== family || !cidrs.some((c) => cidrContains(c, ip))) continue;
    const text = formatIP(ip);
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/**
 * Resolves nodePortAddresses for one family: `all` (or no entry of this family) matches
 * every local address; otherwise the node's addresses inside the listed CIDRs, in list
 * order, without duplicates. `primary` is the node IP, `localhost` the loopback range.
 * Loopback addresses are dropped (with a warning) for IPv6 and when localhost NodePorts
 * are off.
 */
export function resolveNodePortAddresses(
  opts: IptablesProxierOptions,
  family: IPFamily,
): NodePortDestinations {
  const parsedCIDRs = nodePortCIDRs(opts.nodePortAddresses, opts.nodeIP, family);
  if (parsedCIDRs === undefined) return { matchAll: true };
  const warnings: string[] = [];
  const ips: string[] = [];
  const addrs = opts.localAddresses
    .map((a) => parseIPSloppy(a.split('/')[0] ?? ''))
    .filter((a) => a?.family === family);
  for (const c of parsedCIDRs)
    for (const a of addrs) {
      if (!a || !cidrContains(c, a)) continue;
      const text = formatIP(a);
      if (ips.includes(text)) continue;
      if (isLoopback(a) && (family === 'IPv6' || !opts.localhostNodePorts)) {
        warnings.push(
          family === 'IPv6'
            ? `nodePortAddresses includes localhost ${text}, but localhost NodePorts are not supported on IPv6`
            : `nodePortAddresses includes localhost ${text}, but localhostNodePorts is false`,
        );
        continue;
      }
      ips.push(text);
    }
  return { matchAll: false, ips, warnings };
}
