// Every kernel object name kube-proxy's iptables mode uses: the fixed chains, the hashed
// per-service-port and per-endpoint chain names (`KUBE-SVC-` + base32(sha256(...))[:16]),
// comments and nfacct counter names. Never inline these strings elsewhere. Pure.

import type { IptablesTableName } from '../../netfilter/iptables/model.js';
import { hash16 } from '../name-hash.js';

export const KUBE_SERVICES = 'KUBE-SERVICES';
export const KUBE_EXTERNAL_SERVICES = 'KUBE-EXTERNAL-SERVICES';
export const KUBE_NODEPORTS = 'KUBE-NODEPORTS';
export const KUBE_FORWARD = 'KUBE-FORWARD';
export const KUBE_PROXY_FIREWALL = 'KUBE-PROXY-FIREWALL';
/** Shared with kubelet: blocks martian localhost traffic when localhost NodePorts are on. */
export const KUBE_FIREWALL = 'KUBE-FIREWALL';
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
/** Empty chain in mangle, nat and filter whose disappearance means "tables were flushed". */
export const KUBE_PROXY_CANARY = 'KUBE-PROXY-CANARY';
export const CANARY_TABLES: readonly IptablesTableName[] = ['mangle', 'nat', 'filter'];

export const PREFIX_SVC = 'KUBE-SVC-';
export const PREFIX_SVL = 'KUBE-SVL-';
export const PREFIX_EXT = 'KUBE-EXT-';
export const PREFIX_FW = 'KUBE-FW-';
export const PREFIX_SEP = 'KUBE-SEP-';
const SERVICE_CHAIN_PREFIXES = [PREFIX_SVC, PREFIX_SVL, PREFIX_EXT, PREFIX_FW, PREFIX_SEP];

/** Filter chains written (declared, hence flushed) by every restore, in kube-proxy's order. */
export const FILTER_FIXED_CHAINS = [
  KUBE_SERVICES,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
] as const;
/** Nat chains written by every restore, in kube-proxy's order. */
export const NAT_FIXED_CHAINS = [
  KUBE_SERVICES,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_MARK_MASQ,
] as const;

export const NFACCT_CT_STATE_INVALID_DROPPED = 'ct_state_invalid_dropped_pkts';
export const NFACCT_LOCALHOST_NODEPORTS_ACCEPTED = 'localhost_nps_accepted_pkts';

export const COMMENT_NODEPORTS_LAST =
  'kubernetes service nodeports; NOTE: this must be the last rule in this chain';
export const COMMENT_SNAT = 'kubernetes service traffic requiring SNAT';
export const COMMENT_FORWARD = 'kubernetes forwarding rules';
export const COMMENT_FORWARD_CONNTRACK = 'kubernetes forwarding conntrack rule';
export const COMMENT_LOCALNET = 'block incoming localnet connections';

/** The 16-char hash every per-service-port chain shares: hash16(spn + lowercase proto). */
export function portProtoHash(servicePortName: string, protocol: string): string {
  return hash16(servicePortName + protocol.toLowerCase());
}

/** Chain names of one Service port. */
export interface ServicePortChains {
  readonly svc: string;
  readonly svl: string;
  readonly ext: string;
  readonly fw: string;
}

export function servicePortChains(servicePortName: string, protocol: string): ServicePortChains {
  const h = portProtoHash(servicePortName, protocol);
  return { svc: PREFIX_SVC + h, svl: PREFIX_SVL + h, ext: PREFIX_EXT + h, fw: PREFIX_FW + h };
}

/** `KUBE-SEP-` + hash16(spn + lowercase proto + endpoint), endpoint being `ip:port`/`[ip]:port`. */
export function endpointChainName(
  servicePortName: string,
  protocol: string,
  endpoint: string,
): string {
  return PREFIX_SEP + hash16(servicePortName + protocol.toLowerCase() + endpoint);
}

/** Whether a chain is one of the per-service chains kube-proxy may delete when stale. */
export function isServiceChainName(chain: string): boolean {
  return SERVICE_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}
