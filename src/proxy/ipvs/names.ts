// The names kube-proxy's IPVS mode gives its kernel objects: the kube-ipvs0 dummy device,
// the ipsets (with their types and the comments the iptables rules carry) and the iptables
// chains, per table, in the order kube-proxy declares them. IPv6 sets are `KUBE-6-…`, cut
// to 31 characters (the kernel's ipset name limit). Pure data.

import type { IpsetType } from '../../netfilter/ipset/model.js';
import { IPSET_MAX_NAME_LENGTH } from '../../netfilter/ipset/model.js';
import type { IPFamily } from '../../util/ip.js';

export const IPVS_DUMMY_DEVICE = 'kube-ipvs0';

/** One ipset kube-proxy creates: its IPv4 name, type, and the comment of the rules using it. */
export interface IpsetDef {
  readonly name: string;
  readonly type: IpsetType;
  readonly comment: string;
}

/** The sets in kube-proxy's ipsetInfo order. */
export const IPSET_DEFS: readonly IpsetDef[] = [
  {
    name: 'KUBE-LOOP-BACK',
    type: 'hash:ip,port,ip',
    comment: 'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose',
  },
  {
    name: 'KUBE-CLUSTER-IP',
    type: 'hash:ip,port',
    comment: 'Kubernetes service cluster ip + port for masquerade purpose',
  },
  {
    name: 'KUBE-EXTERNAL-IP',
    type: 'hash:ip,port',
    comment: 'Kubernetes service external ip + port for masquerade and filter purpose',
  },
  {
    name: 'KUBE-EXTERNAL-IP-LOCAL',
    type: 'hash:ip,port',
    comment: 'Kubernetes service external ip + port with externalTrafficPolicy=local',
  },
  { name: 'KUBE-LOAD-BALANCER', type: 'hash:ip,port', comment: 'Kubernetes service lb portal' },
  {
    name: 'KUBE-LOAD-BALANCER-FW',
    type: 'hash:ip,port',
    comment: 'Kubernetes service load balancer ip + port for load balancer with sourceRange',
  },
  {
    name: 'KUBE-LOAD-BALANCER-LOCAL',
    type: 'hash:ip,port',
    comment: 'Kubernetes service load balancer ip + port with externalTrafficPolicy=local',
  },
  {
    name: 'KUBE-LOAD-BALANCER-SOURCE-IP',
    type: 'hash:ip,port,ip',
    comment: 'Kubernetes service load balancer ip + port + source IP for packet filter purpose',
  },
  {
    name: 'KUBE-LOAD-BALANCER-SOURCE-CIDR',
    type: 'hash:ip,port,net',
    comment: 'Kubernetes service load balancer ip + port + source cidr for packet filter purpose',
  },
  {
    name: 'KUBE-NODE-PORT-TCP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport TCP port for masquerade purpose',
  },
  {
    name: 'KUBE-NODE-PORT-LOCAL-TCP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport TCP port with externalTrafficPolicy=local',
  },
  {
    name: 'KUBE-NODE-PORT-UDP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport UDP port for masquerade purpose',
  },
  {
    name: 'KUBE-NODE-PORT-LOCAL-UDP',
    type: 'bitmap:port',
    comment: 'Kubernetes nodeport UDP port with externalTrafficPolicy=local',
  },
  {
    name: 'KUBE-NODE-PORT-SCTP-HASH',
    type: 'hash:ip,port',
    comment: "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
  },
  {
    name: 'KUBE-NODE-PORT-LOCAL-SCTP-HASH',
    type: 'hash:ip,port',
    comment:
      "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
  },
  {
    name: 'KUBE-HEALTH-CHECK-NODE-PORT',
    type: 'bitmap:port',
    comment: 'Kubernetes health check node port',
  },
  { name: 'KUBE-IPVS-IPS', type: 'hash:ip', comment: 'IPVS service ip for filtering purpose' },
];

/** The set's name for `family`: `KUBE-6-…` (cut to 31 characters) on IPv6 when prefixed. */
export function ipsetName(base: string, family: IPFamily, prefixIPv6: boolean): string {
  if (family !== 'IPv6' || !prefixIPv6) return base;
  return base.replace(/^KUBE-/, 'KUBE-6-').slice(0, IPSET_MAX_NAME_LENGTH);
}

export const NAT_CHAINS = [
  'KUBE-SERVICES',
  'KUBE-POSTROUTING',
  'KUBE-NODE-PORT',
  'KUBE-LOAD-BALANCER',
  'KUBE-MARK-MASQ',
] as const;

export const FILTER_CHAINS = [
  'KUBE-FORWARD',
  'KUBE-NODE-PORT',
  'KUBE-PROXY-FIREWALL',
  'KUBE-SOURCE-RANGES-FIREWALL',
  'KUBE-IPVS-FILTER',
  'KUBE-IPVS-OUT-FILTER',
] as const;

/** An ipset-matching rule kube-proxy writes when its set is non-empty (ipsetWithIptablesChain). */
export interface IpsetRuleRow {
  readonly set: string;
  readonly table: 'nat' | 'filter';
  readonly chain: string;
  readonly protocol?: 'tcp' | 'udp' | 'sctp';
  readonly match: string;
  readonly jump: string;
}

export const IPSET_RULE_ROWS: readonly IpsetRuleRow[] = [
  {
    set: 'KUBE-LOOP-BACK',
    table: 'nat',
    chain: 'KUBE-POSTROUTING',
    match: 'dst,dst,src',
    jump: 'MASQUERADE',
  },
  {
    set: 'KUBE-LOAD-BALANCER',
    table: 'nat',
    chain: 'KUBE-SERVICES',
    match: 'dst,dst',
    jump: 'KUBE-LOAD-BALANCER',
  },
  {
    set: 'KUBE-LOAD-BALANCER-LOCAL',
    table: 'nat',
    chain: 'KUBE-LOAD-BALANCER',
    match: 'dst,dst',
    jump: 'RETURN',
  },
  {
    set: 'KUBE-NODE-PORT-LOCAL-TCP',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'tcp',
    match: 'dst',
    jump: 'RETURN',
  },
  {
    set: 'KUBE-NODE-PORT-TCP',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'tcp',
    match: 'dst',
    jump: 'KUBE-MARK-MASQ',
  },
  {
    set: 'KUBE-NODE-PORT-LOCAL-UDP',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'udp',
    match: 'dst',
    jump: 'RETURN',
  },
  {
    set: 'KUBE-NODE-PORT-UDP',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'udp',
    match: 'dst',
    jump: 'KUBE-MARK-MASQ',
  },
  {
    set: 'KUBE-NODE-PORT-LOCAL-SCTP-HASH',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'sctp',
    match: 'dst,dst',
    jump: 'RETURN',
  },
  {
    set: 'KUBE-NODE-PORT-SCTP-HASH',
    table: 'nat',
    chain: 'KUBE-NODE-PORT',
    protocol: 'sctp',
    match: 'dst,dst',
    jump: 'KUBE-MARK-MASQ',
  },
  {
    set: 'KUBE-LOAD-BALANCER-FW',
    table: 'filter',
    chain: 'KUBE-PROXY-FIREWALL',
    match: 'dst,dst',
    jump: 'KUBE-SOURCE-RANGES-FIREWALL',
  },
  {
    set: 'KUBE-LOAD-BALANCER-SOURCE-CIDR',
    table: 'filter',
    chain: 'KUBE-SOURCE-RANGES-FIREWALL',
    match: 'dst,dst,src',
    jump: 'RETURN',
  },
  {
    set: 'KUBE-LOAD-BALANCER-SOURCE-IP',
    table: 'filter',
    chain: 'KUBE-SOURCE-RANGES-FIREWALL',
    match: 'dst,dst,src',
    jump: 'RETURN',
  },
];
