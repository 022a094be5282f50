// decideTrafficPolicy: the dataplane-neutral decisions about one Service port that both
// planners (iptables/plan-service.ts, nftables/plan-service.ts) build on — which endpoints
// the traffic policies leave for internal and external traffic, which per-port chains are
// needed, what happens to traffic without (local) endpoints, and whether the port's
// loadBalancerSourceRanges let the node's own traffic in. Names no kernel object. Pure.

import { cidrContains, parseCIDRSloppy, parseIPSloppy } from '../../util/ip.js';
import { categorizeEndpoints } from './categorize.js';
import type { CategorizedEndpoints } from './categorize.js';
import type { EndpointInfo } from './endpoint.js';
import {
  isExternallyAccessible,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from './service-port.js';
import type { ServicePortInfo } from './service-port.js';

/** What one Service port needs on this node, before any chain or rule is named. */
export interface TrafficPolicyDecision {
  readonly cat: CategorizedEndpoints;
  /** A usable endpoint exists anywhere (ready, or serving and terminating). */
  readonly hasEndpoints: boolean;
  /** ClusterIP traffic has an endpoint: false under internalTrafficPolicy Local with none here. */
  readonly hasInternalEndpoints: boolean;
  /** External traffic has an endpoint: false under externalTrafficPolicy Local with none here. */
  readonly hasExternalEndpoints: boolean;
  /** Traffic without (local) endpoints: dropped when the Service has some elsewhere, else rejected. */
  readonly noEndpointsAction: 'drop' | 'reject';
  /** The port takes external traffic (NodePort, externalIPs, LB IPs) and has endpoints. */
  readonly usesExternalChain: boolean;
  /** The port has LB IPs and loadBalancerSourceRanges (a firewall applies, endpoints or not). */
  readonly hasSourceRanges: boolean;
  /** A cluster-policy load-balancing chain is needed (and has endpoints). */
  readonly usesClusterChain: boolean;
  /** A local-policy load-balancing chain is needed (and has endpoints). */
  readonly usesLocalChain: boolean;
  /** Counted by the sync_proxy_rules_no_local_endpoints_total gauges. */
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** This node, as both dataplanes' proxier options name it. */
export interface PolicyNode {
  readonly nodeName: string;
  /** `topology.kubernetes.io/zone` of the node ('' when unknown). */
  readonly nodeZone: string;
}

/** Decides `sp` on `node` from its merged endpoints (possibly empty). Never fails. */
export function decideTrafficPolicy(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  node: PolicyNode,
): TrafficPolicyDecision {
  const cat = categorizeEndpoints(endpoints, sp, { nodeName: node.nodeName, zone: node.nodeZone });
  const hasEndpoints = cat.hasAnyEndpoints;
  const noLocal = cat.localEndpoints.length === 0;
  const hasInternalEndpoints = hasEndpoints && !(sp.internalPolicyLocal && noLocal);
  const hasExternalEndpoints = hasEndpoints && !(sp.externalPolicyLocal && noLocal);
  return {
    cat,
    hasEndpoints,
    hasInternalEndpoints,
    hasExternalEndpoints,
    noEndpointsAction: hasEndpoints ? 'drop' : 'reject',
    usesExternalChain: hasEndpoints && isExternallyAccessible(sp),
    hasSourceRanges: sp.loadBalancerVIPs.length > 0 && sp.loadBalancerSourceRanges.length > 0,
    usesClusterChain: cat.clusterEndpoints.length > 0 && usesClusterEndpoints(sp),
    usesLocalChain: cat.localEndpoints.length > 0 && usesLocalEndpoints(sp),
    noLocalEndpointsInternal: hasEndpoints && !hasInternalEndpoints,
    noLocalEndpointsExternal: hasEndpoints && !hasExternalEndpoints,
  };
}

/**
 * Whether one of the port's loadBalancerSourceRanges holds the node IP: then a
 * node-originated request to a VIP-like LB IP, which loops back with the LB IP as source,
 * must pass the firewall too. False when the node IP or a range does not parse.
 */
export function sourceRangesAllowNode(sp: ServicePortInfo, nodeIP: string): boolean {
  const ip = parseIPSloppy(nodeIP);
  if (ip === undefined) return false;
  return sp.loadBalancerSourceRanges.some((c) => {
    const parsed = parseCIDRSloppy(c);
    return parsed !== undefined && cidrContains(parsed, ip);
  });
}

/**
 * Which of a port's two load-balancing chains (`cluster`: every endpoint; `local`: this
 * node's) internal and external traffic go to: the local one under a Local policy.
 */
export function policyChains(
  sp: ServicePortInfo,
  cluster: string,
  local: string,
): { readonly internalChain: string; readonly externalPolicyChain: string } {
  return {
    internalChain: sp.internalPolicyLocal ? local : cluster,
    externalPolicyChain: sp.externalPolicyLocal ? local : cluster,
  };
}
