// One node model for every command that renders or explains one node's rules (`svcnet
// render`, `svcnet trace -f`): which node (`--node NAME`, else the only Node in the
// manifests, else a default), its addresses (`--node-ip` overrides, else the Node's
// InternalIPs with an ExternalIP standing in for a family without one, as kubelet's
// GetNodeHostIPs does, else a default), its podCIDRs, labels and zone, and one line that
// says where each came from. Both commands print that same line, so they can never
// disagree about the node silently. Pure: the caller parses the manifests.

import { ValidationError, type FieldError } from '../errors.js';
import { parseIPSloppy } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import { LABEL_TOPOLOGY_ZONE } from './names.js';
import type { Node } from './types.js';

/** Node name used when neither --node nor a single Node manifest names one. */
export const DEFAULT_NODE_NAME = 'node-1';
/** Node IP used when neither --node-ip nor the Node manifest gives one (the lab's first node). */
export const DEFAULT_NODE_IP = '172.18.0.2';

export interface NodeRequest {
  /** `--node` (or `--hostname-override`). */
  readonly name?: string | undefined;
  /** `--node-ip`, repeatable (one per family). */
  readonly nodeIPs?: readonly string[] | undefined;
}

export interface ResolvedNode {
  readonly name: string;
  readonly nameFrom: 'flag' | 'only-node' | 'default';
  /** The Node object of that name in the manifests, when there is one. */
  readonly node: Node | undefined;
  /** The node's IPs (at most one per family first, primary first): what kube-proxy calls node IPs. */
  readonly nodeIPs: readonly string[];
  readonly ipsFrom: 'flag' | 'node' | 'default';
  readonly internalIPs: readonly string[];
  readonly externalIPs: readonly string[];
  readonly podCIDRs: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly zone: string;
}

function familyOf(ip: string): IPFamily | undefined {
  return parseIPSloppy(ip)?.family;
}

/**
 * The node's host IPs as kubelet's GetNodeHostIPs picks them: every InternalIP, and for a
 * family with no InternalIP, that family's ExternalIPs; the first address's family first.
 */
export function nodeHostIPs(node: Node | undefined): string[] {
  const addrs = node?.status?.addresses ?? [];
  const internal = addrs.filter((a) => a.type === 'InternalIP').map((a) => a.address);
  const external = addrs.filter((a) => a.type === 'ExternalIP').map((a) => a.address);
  const out = [...internal];
  for (const fam of ['IPv4', 'IPv6'] as const)
    if (!internal.some((ip) => familyOf(ip) === fam))
      out.push(...external.filter((ip) => familyOf(ip) === fam));
  return out.filter((ip) => familyOf(ip) !== undefined);
}

/**
 * Resolves the node from the manifests' Nodes and the flags. Throws ValidationError naming
 * the flag: a bad `--node-ip`, or `--node NAME` when the manifests have Nodes but none of
 * that name (a typo would otherwise render another node's rules without a word).
 */
export function resolveNode(nodes: readonly Node[], req: NodeRequest): ResolvedNode {
  const errors: FieldError[] = [];
  const only = nodes.length === 1 ? nodes[0]?.metadata?.name : undefined;
  const name = req.name ?? only ?? DEFAULT_NODE_NAME;
  const nameFrom = req.name !== undefined ? 'flag' : only !== undefined ? 'only-node' : 'default';
  const node = nodes.find((n) => n.metadata?.name === name);
  if (req.name !== undefined && node === undefined && nodes.length > 0)
    errors.push({
      object: 'node',
      field: '--node',
      message: `no Node ${JSON.stringify(req.name)} in the manifests (they have ${nodes
        .map((n) => n.metadata?.name ?? '?')
        .join(', ')})`,
    });
  (req.nodeIPs ?? []).forEach((ip, i) => {
    if (familyOf(ip) === undefined)
      errors.push({
        object: 'node',
        field: `--node-ip[${i}]`,
        message: `must be an IP address, got ${JSON.stringify(ip)}`,
      });
  });
  if (errors.length > 0) throw new ValidationError(errors);
  const fromNode = nodeHostIPs(node);
  let nodeIPs: string[];
  let ipsFrom: ResolvedNode['ipsFrom'];
  if (req.nodeIPs !== undefined && req.nodeIPs.length > 0) {
    nodeIPs = [...req.nodeIPs];
    ipsFrom = 'flag';
  } else if (fromNode.length > 0) {
    nodeIPs = fromNode;
    ipsFrom = 'node';
  } else {
    nodeIPs = [DEFAULT_NODE_IP];
    ipsFrom = 'default';
  }
  const addrs = node?.status?.addresses ?? [];
  const labels = node?.metadata?.labels ?? {};
  return {
    name,
    nameFrom,
    node,
    nodeIPs,
    ipsFrom,
    internalIPs: addrs.filter((a) => a.type === 'InternalIP').map((a) => a.address),
    externalIPs: addrs.filter((a) => a.type === 'ExternalIP').map((a) => a.address),
    podCIDRs:
      node?.spec?.podCIDRs ?? (node?.spec?.podCIDR !== undefined ? [node.spec.podCIDR] : []),
    labels,
    zone: labels[LABEL_TOPOLOGY_ZONE] ?? '',
  };
}

/** The node's primary IP of a family, '' when it has none. */
export function nodeIPOf(n: ResolvedNode, family: IPFamily): string {
  return n.nodeIPs.find((ip) => familyOf(ip) === family) ?? '';
}

/**
 * The one line both render and trace print, e.g. `node svcnet-worker (Node from the
 * manifests): IP 172.18.0.3 (InternalIP of the Node), podCIDR 10.244.1.0/24, zone zone-b`.
 */
export function describeNode(n: ResolvedNode): string {
  const nameNote =
    n.nameFrom === 'default'
      ? 'default; set with --node'
      : n.nameFrom === 'only-node'
        ? 'the only Node in the manifests'
        : n.node !== undefined
          ? 'Node from the manifests'
          : 'no Node in the manifests';
  const kinds = (ip: string): string =>
    n.internalIPs.includes(ip) ? 'InternalIP' : n.externalIPs.includes(ip) ? 'ExternalIP' : '';
  const ipNote =
    n.ipsFrom === 'flag'
      ? 'from --node-ip'
      : n.ipsFrom === 'node'
        ? `${[...new Set(n.nodeIPs.map(kinds))].join('/')} of the Node`
        : 'default; set with --node-ip';
  const parts = [
    `${n.nodeIPs.length > 1 ? 'IPs' : 'IP'} ${n.nodeIPs.join(', ')} (${ipNote})`,
    ...(n.podCIDRs.length > 0
      ? [`${n.podCIDRs.length > 1 ? 'podCIDRs' : 'podCIDR'} ${n.podCIDRs.join(', ')}`]
      : []),
    ...(n.zone !== '' ? [`zone ${n.zone}`] : []),
  ];
  return `node ${n.name} (${nameNote}): ${parts.join(', ')}`;
}
