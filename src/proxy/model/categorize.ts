// categorizeEndpoints: which endpoints of one Service port each traffic policy uses on this
// node — cluster-policy endpoints (ready, narrowed by topology hints / trafficDistribution
// when every ready endpoint carries hints and one matches this node or zone), local-policy
// endpoints (ready local ones), the serving-and-terminating fallback when a policy has no
// ready endpoint (KEP-1669), and the union this node can reach (one KUBE-SEP chain each).
// Pure; no I/O.

import type { EndpointInfo } from './endpoint.js';
import { usesClusterEndpoints, usesLocalEndpoints } from './service-port.js';
import type { ServicePortInfo } from './service-port.js';
import {
  TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE,
  TRAFFIC_DISTRIBUTION_PREFER_SAME_ZONE,
} from '../../kube/names.js';

export type TopologyMode = '' | 'PreferSameZone' | 'PreferSameNode';

export interface CategorizedEndpoints {
  /** Endpoints for Cluster policy (empty when the port does not use it). */
  readonly clusterEndpoints: readonly EndpointInfo[];
  /** Endpoints for Local policy (empty when the port does not use it, or none are local). */
  readonly localEndpoints: readonly EndpointInfo[];
  /** Union of the two: every endpoint this node may DNAT to. */
  readonly allReachableEndpoints: readonly EndpointInfo[];
  /** True if the Service has a usable (ready, or serving+terminating) endpoint anywhere. */
  readonly hasAnyEndpoints: boolean;
  readonly topologyMode: TopologyMode;
}

/** Where this node is, for topology: its name and its `topology.kubernetes.io/zone`. */
export interface NodeTopology {
  readonly nodeName: string;
  readonly zone: string;
}

/**
 * The topology mode the hints allow: PreferSameNode when every ready endpoint has node
 * hints and one names this node (only for trafficDistribution PreferSameNode), else
 * PreferSameZone when every ready endpoint has zone hints and one names this zone, else ''.
 */
export function topologyModeFromHints(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  node: NodeTopology,
): TopologyMode {
  let anyReady = false;
  let allNode = true;
  let forNode = false;
  let allZone = true;
  let forZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    anyReady = true;
    if (ep.nodeHints.length === 0) allNode = false;
    else if (ep.nodeHints.includes(node.nodeName)) forNode = true;
    if (ep.zoneHints.length === 0) allZone = false;
    else if (node.zone !== '' && ep.zoneHints.includes(node.zone)) forZone = true;
  }
  if (!anyReady) return '';
  if (sp.trafficDistribution === TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE && allNode && forNode)
    return TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE;
  if (allZone && forZone) return TRAFFIC_DISTRIBUTION_PREFER_SAME_ZONE;
  return '';
}

function availableForTopology(ep: EndpointInfo, mode: TopologyMode, node: NodeTopology) {
  if (mode === 'PreferSameNode') return ep.nodeHints.includes(node.nodeName);
  if (mode === 'PreferSameZone') return ep.zoneHints.includes(node.zone);
  return true;
}

function servingTerminating(ep: EndpointInfo): boolean {
  return ep.serving && ep.terminating;
}

function clusterPolicyEndpoints(
  endpoints: readonly EndpointInfo[],
  mode: TopologyMode,
  node: NodeTopology,
): EndpointInfo[] {
  const ready = endpoints.filter((ep) => ep.ready && availableForTopology(ep, mode, node));
  if (ready.length > 0) return ready;
  return endpoints.filter((ep) => servingTerminating(ep) && availableForTopology(ep, mode, node));
}

function localPolicyEndpoints(endpoints: readonly EndpointInfo[]) {
  let anyUsable = false;
  let localReady = false;
  let localTerminating = false;
  for (const ep of endpoints) {
    if (ep.ready) {
      anyUsable = true;
      if (ep.isLocal) localReady = true;
    } else if (servingTerminating(ep)) {
      anyUsable = true;
      if (ep.isLocal) localTerminating = true;
    }
  }
  let local: EndpointInfo[] = [];
  if (localReady) local = endpoints.filter((ep) => ep.isLocal && ep.ready);
  else if (localTerminating) local = endpoints.filter((ep) => ep.isLocal && servingTerminating(ep));
  return { local, anyUsable, usesTerminating: !localReady && localTerminating };
}

function union(a: readonly EndpointInfo[], b: readonly EndpointInfo[]): EndpointInfo[] {
  const seen = new Map<string, EndpointInfo>();
  for (const ep of a) seen.set(ep.endpoint, ep);
  for (const ep of b) if (!seen.has(ep.endpoint)) seen.set(ep.endpoint, ep);
  return [...seen.values()];
}

/**
 * Splits a Service port's endpoints (sorted, deduplicated) by traffic policy for this node.
 * Never fails; an empty result means the Service has no usable endpoint for that policy.
 */
export function categorizeEndpoints(
  endpoints: readonly EndpointInfo[],
  sp: ServicePortInfo,
  node: NodeTopology,
): CategorizedEndpoints {
  let cluster: EndpointInfo[] = [];
  let hasAny = false;
  let mode: TopologyMode = '';
  if (usesClusterEndpoints(sp)) {
    mode = topologyModeFromHints(sp, endpoints, node);
    cluster = clusterPolicyEndpoints(endpoints, mode, node);
    hasAny = cluster.length > 0;
  }
  if (!usesLocalEndpoints(sp))
    return {
      clusterEndpoints: cluster,
      localEndpoints: [],
      allReachableEndpoints: cluster,
      hasAnyEndpoints: hasAny,
      topologyMode: mode,
    };
  const loc = localPolicyEndpoints(endpoints);
  hasAny ||= loc.anyUsable;
  let all: readonly EndpointInfo[];
  if (!usesClusterEndpoints(sp)) all = loc.local;
  else if (mode === '' && !loc.usesTerminating) all = cluster;
  else all = union(cluster, loc.local);
  return {
    clusterEndpoints: cluster,
    localEndpoints: loc.local,
    allReachableEndpoints: all,
    hasAnyEndpoints: hasAny,
    topologyMode: mode,
  };
}
