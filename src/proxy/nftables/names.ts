// Every kernel object name kube-proxy's nftables mode uses (reference §2.2): the table, the
// base chains and their hooks, the fixed chains, sets and maps with their comments, and the
// hashed per-service-port names (`service-` + hash8 + `-ns/svc/proto/port`, capped at 240
// characters). Also the 128-byte cap on element comments. Never inline these strings
// elsewhere. Pure.

import type { ChainHook, ChainType } from '../../netfilter/nftables/model.js';
import { hash16 } from '../name-hash.js';

export const TABLE_NAME = 'kube-proxy';
export const TABLE_COMMENT = 'rules for kube-proxy';

export const FILTER_PREROUTING_PRE_DNAT = 'filter-prerouting-pre-dnat';
export const FILTER_OUTPUT_PRE_DNAT = 'filter-output-pre-dnat';
export const FILTER_INPUT = 'filter-input';
export const FILTER_FORWARD = 'filter-forward';
export const FILTER_OUTPUT = 'filter-output';
export const NAT_PREROUTING = 'nat-prerouting';
export const NAT_OUTPUT = 'nat-output';
export const NAT_POSTROUTING = 'nat-postrouting';

export const SERVICES_CHAIN = 'services';
export const MASQUERADING_CHAIN = 'masquerading';
export const CLUSTER_IPS_CHECK_CHAIN = 'cluster-ips-check';
export const SERVICE_ENDPOINTS_CHECK_CHAIN = 'service-endpoints-check';
export const NODEPORT_ENDPOINTS_CHECK_CHAIN = 'nodeport-endpoints-check';
export const FIREWALL_CHECK_CHAIN = 'firewall-check';
export const REJECT_CHAIN = 'reject-chain';
export const REJECT_CHAIN_COMMENT = 'helper for @no-endpoint-services / @no-endpoint-nodeports';

export const CLUSTER_IPS_SET = 'cluster-ips';
export const NODEPORT_IPS_SET = 'nodeport-ips';
export const HAIRPIN_CONNECTIONS_SET = 'hairpin-connections';
export const SERVICE_IPS_MAP = 'service-ips';
export const SERVICE_NODEPORTS_MAP = 'service-nodeports';
export const FIREWALL_IPS_MAP = 'firewall-ips';
export const NO_ENDPOINT_SERVICES_MAP = 'no-endpoint-services';
export const NO_ENDPOINT_NODEPORTS_MAP = 'no-endpoint-nodeports';

export const COMMENT_CLUSTER_IPS = 'Active ClusterIPs';
export const COMMENT_NODEPORT_IPS = 'IPs that accept NodePort traffic';
export const COMMENT_HAIRPIN = 'service hairpin connections';
export const COMMENT_SERVICE_IPS = 'ClusterIP, ExternalIP and LoadBalancer IP traffic';
export const COMMENT_SERVICE_NODEPORTS = 'NodePort traffic';
export const COMMENT_FIREWALL_IPS = 'destinations that are subject to LoadBalancerSourceRanges';
export const COMMENT_NO_ENDPOINT_SERVICES =
  'vmap to drop or reject packets to services with no endpoints';
export const COMMENT_NO_ENDPOINT_NODEPORTS =
  'vmap to drop or reject packets to service nodeports with no endpoints';
export const COMMENT_REJECT_INVALID_PORTS = 'Reject traffic to invalid ports of ClusterIPs';
export const COMMENT_DROP_UNALLOCATED = 'Drop traffic to unallocated ClusterIPs';
export const COMMENT_MASQ_OUTSIDE = 'masquerade clusterIP traffic from outside cluster';
export const COMMENT_MASQ_ALL = 'masquerade all clusterIP traffic';
export const COMMENT_MASQUERADE = 'masquerade';
export const COMMENT_SHORT_CIRCUIT_POD = 'short-circuit pod traffic';
export const COMMENT_MASQ_LOCAL = 'masquerade local traffic';
export const COMMENT_SHORT_CIRCUIT_LOCAL = 'short-circuit local traffic';

/** A base chain: name = type-hook, with kube-proxy's numeric priority (knftables writes numbers). */
export interface BaseChainSpec {
  readonly name: string;
  readonly type: ChainType;
  readonly hook: ChainHook;
  readonly priority: number;
}

/** Base chains in kube-proxy's order (dstnat = -100, filter = 0, srcnat = 100). */
export const BASE_CHAINS: readonly BaseChainSpec[] = [
  { name: FILTER_PREROUTING_PRE_DNAT, type: 'filter', hook: 'prerouting', priority: -110 },
  { name: FILTER_OUTPUT_PRE_DNAT, type: 'filter', hook: 'output', priority: -110 },
  { name: FILTER_INPUT, type: 'filter', hook: 'input', priority: 0 },
  { name: FILTER_FORWARD, type: 'filter', hook: 'forward', priority: 0 },
  { name: FILTER_OUTPUT, type: 'filter', hook: 'output', priority: 0 },
  { name: NAT_PREROUTING, type: 'nat', hook: 'prerouting', priority: -100 },
  { name: NAT_OUTPUT, type: 'nat', hook: 'output', priority: -100 },
  { name: NAT_POSTROUTING, type: 'nat', hook: 'postrouting', priority: 100 },
];

/** A jump from a base chain to a regular chain; `ctStateNew` adds `ct state new`. */
export interface JumpSpec {
  readonly target: string;
  readonly source: string;
  readonly ctStateNew: boolean;
}

/** The jump rules, in the order kube-proxy adds them (reference §2.2). */
export const JUMP_CHAINS: readonly JumpSpec[] = [
  { target: NODEPORT_ENDPOINTS_CHECK_CHAIN, source: FILTER_INPUT, ctStateNew: true },
  { target: SERVICE_ENDPOINTS_CHECK_CHAIN, source: FILTER_INPUT, ctStateNew: true },
  { target: SERVICE_ENDPOINTS_CHECK_CHAIN, source: FILTER_FORWARD, ctStateNew: true },
  { target: SERVICE_ENDPOINTS_CHECK_CHAIN, source: FILTER_OUTPUT, ctStateNew: true },
  { target: FIREWALL_CHECK_CHAIN, source: FILTER_PREROUTING_PRE_DNAT, ctStateNew: true },
  { target: FIREWALL_CHECK_CHAIN, source: FILTER_OUTPUT_PRE_DNAT, ctStateNew: true },
  { target: SERVICES_CHAIN, source: NAT_OUTPUT, ctStateNew: false },
  { target: SERVICES_CHAIN, source: NAT_PREROUTING, ctStateNew: false },
  { target: MASQUERADING_CHAIN, source: NAT_POSTROUTING, ctStateNew: false },
  { target: CLUSTER_IPS_CHECK_CHAIN, source: FILTER_FORWARD, ctStateNew: true },
  { target: CLUSTER_IPS_CHECK_CHAIN, source: FILTER_OUTPUT, ctStateNew: true },
];

export const PREFIX_SERVICE = 'service-';
export const PREFIX_LOCAL = 'local-';
export const PREFIX_EXTERNAL = 'external-';
export const PREFIX_FIREWALL = 'firewall-';
export const PREFIX_ENDPOINT = 'endpoint-';
export const PREFIX_AFFINITY = 'affinity-';

/** 256 minus a 16-character budget for the prefix. */
export const CHAIN_NAME_BASE_MAX = 240;
/** Element comments longer than this many bytes are cut (kube-proxy's knftables limit). */
export const COMMENT_MAX_BYTES = 128;

/** First 8 RFC 4648 base32 characters of SHA-256(s). */
export function hash8(s: string): string {
  return hash16(s).slice(0, 8);
}

function capBase(base: string): string {
  return base.length > CHAIN_NAME_BASE_MAX ? `${base.slice(0, CHAIN_NAME_BASE_MAX - 3)}...` : base;
}

/** `ns/svc/proto/portName` (protocol lower case; an unnamed port leaves the last part empty). */
export function servicePortName(
  namespace: string,
  name: string,
  protocol: string,
  portName: string,
): string {
  return `${namespace}/${name}/${protocol.toLowerCase()}/${portName}`;
}

/** hash8(name) + `-` + name, capped at 240 characters (237 + `...`). */
export function servicePortChainNameBase(spn: string): string {
  return capBase(`${hash8(spn)}-${spn}`);
}

/** `ip/port` of an endpoint with `:` in IPv6 written `.` (chain names cannot hold `:`). */
function endpointNamePart(ip: string, port: number): string {
  return `${ip.replaceAll(':', '.')}/${port}`;
}

/** Base name of an endpoint's chain and affinity set: hash of `spn__ip/port`, capped. */
export function endpointChainNameBase(spn: string, ip: string, port: number): string {
  const name = `${spn}__${endpointNamePart(ip, port)}`;
  return capBase(`${hash8(name)}-${name}`);
}

/** The chain names one Service port may use. */
export interface ServicePortChainNames {
  readonly service: string;
  readonly local: string;
  readonly external: string;
  readonly firewall: string;
}

export function servicePortChainNames(spn: string): ServicePortChainNames {
  const base = servicePortChainNameBase(spn);
  return {
    service: PREFIX_SERVICE + base,
    local: PREFIX_LOCAL + base,
    external: PREFIX_EXTERNAL + base,
    firewall: PREFIX_FIREWALL + base,
  };
}

/** The chain and affinity set of one endpoint (used only with ClientIP affinity). */
export function endpointNames(
  spn: string,
  ip: string,
  port: number,
): { readonly chain: string; readonly affinitySet: string } {
  const base = endpointChainNameBase(spn, ip, port);
  return { chain: PREFIX_ENDPOINT + base, affinitySet: PREFIX_AFFINITY + base };
}

/** Service and endpoint chains are the ones whose names hold a `/` (kube-proxy's test). */
export function isServiceChainName(name: string): boolean {
  return name.includes('/');
}

export function isAffinitySetName(name: string): boolean {
  return name.startsWith(PREFIX_AFFINITY);
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * Cuts a comment to at most 128 bytes of UTF-8, as kube-proxy does for element comments
 * (nft refuses longer ones). A multi-byte character is never split.
 */
export function truncateComment(comment: string): string {
  const bytes = utf8.encode(comment);
  if (bytes.length <= COMMENT_MAX_BYTES) return comment;
  let end = COMMENT_MAX_BYTES;
  // Back off over continuation bytes (10xxxxxx) so no character is cut in half.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return utf8Decoder.decode(bytes.subarray(0, end));
}
