// The lab's topology as plain data: which network namespaces exist, their addresses, pod
// CIDRs and the iproute2 ops (util/ip-ops.ts) that build them. Like kind, but each node is a network
// namespace: a hub namespace with a bridge plays kind's docker network (172.18.0.0/16), node
// N gets 172.18.0.(N+2) and podCIDR 10.244.N.0/24, and every node routes the other nodes'
// podCIDRs via their node IPs (kindnet's job). An `outside` namespace on the same bridge plays a
// client that is not a node (the Internet, the office LAN): it reaches the nodes directly and
// the LoadBalancer pool (lb-pool.ts) via the hub, where the lab's load balancer routes each LB
// IP to the nodes that should receive it (lb-controller.ts). The pod network (`--pod-network`)
// decides who carries pod traffic between nodes: kindnet (the default) the node routes above;
// kubenet the hub, as a cloud router holding one route per podCIDR; flannel (VXLAN) only the
// overlay `svcnet flannel` builds; flannel-host-gw the routes that agent programs. With kubenet
// and flannel the nodes' hub ports are isolated (a private VLAN: no frame passes between two
// nodes; the hub answers their ARP, RFC 3069, and routes between them), so nothing but the hub's
// routes or the overlay carries pod traffic; host-gw needs one L2 segment, flannel's own
// requirement, so its nodes share br0 as kindnet's do. Pure: network.ts applies the
// script through the Ip seam (RealIp in the lab, FakeIp in unit tests).

import { SvcnetError } from '../errors.js';
import { canonicalIP } from '../util/ip.js';
import { addrAdd, bridge, linkSet, linkUp, routeAdd, vethPair, type IpOp } from '../util/ip-ops.js';
import { DEFAULT_LB_POOL, inLbPool, lbPoolCIDRs, parseLbPool } from './lb-pool.js';

export interface LabNodePlan {
  /** Kubernetes Node name, kind-style: `<lab>-control-plane`, `<lab>-worker`, `<lab>-worker2`. */
  readonly name: string;
  readonly role: 'control-plane' | 'worker';
  /** Network namespace name (inside the lab's private /run/netns). */
  readonly netns: string;
  readonly ip: string;
  readonly podCIDR: string;
  /** Dual-stack: the node's IPv6 address on the lab network and its IPv6 pod range. */
  readonly ip6?: string;
  readonly podCIDR6?: string;
  /** The node's bridge port in the hub namespace (≤ 15 chars). */
  readonly hubInterface: string;
}

/** The lab's host that is not a node (`svcnet lab exec outside -- CMD`). */
export interface LabOutsidePlan {
  readonly netns: string;
  readonly ip: string;
  readonly ip6?: string;
  /** Its bridge port in the hub namespace. */
  readonly hubInterface: string;
}

/** The outside host's address: on the lab bridge, above every node's (nodes end at 172.18.0.201). */
export const OUTSIDE_IP = '172.18.254.1';
export const OUTSIDE_NETNS = 'outside';

/** `lab up --ip-family`: IPv4 only (the default) or dual-stack with IPv4 first, as kind's. */
export const IP_FAMILIES = ['ipv4', 'dual'] as const;
export type LabIpFamily = (typeof IP_FAMILIES)[number];

/** kind's dual-stack ranges: the docker network's IPv6 half, pods, Services. */
const NODE_NET6 = 'fc00:f853:ccd:e793::';
const NODE_PREFIX6 = 64;
const CLUSTER_CIDR6 = 'fd00:10:244::/56';
const SERVICE_CIDR6 = 'fd00:10:96::/112';

export interface LabPlan {
  readonly name: string;
  readonly hubNetns: string;
  readonly hubIP: string;
  /** Dual-stack: the hub's IPv6 address on the lab bridge (the nodes' IPv6 gateway). */
  readonly hubIP6?: string;
  readonly ipFamily: LabIpFamily;
  /** How pod traffic crosses nodes (absent in plans written before it existed: kindnet). */
  readonly podNetwork?: LabPodNetwork;
  readonly outside: LabOutsidePlan;
  /** The LoadBalancer address pool, CIDR or START-END (lb-pool.ts). */
  readonly lbPool: string;
  readonly nodeNetworkPrefix: number;
  readonly serviceCIDR: string;
  readonly clusterCIDR: string;
  readonly dnsServiceIP: string;
  readonly apiServerPort: number;
  readonly nodes: readonly LabNodePlan[];
}

export interface LabPlanOptions {
  readonly name?: string;
  /** Total nodes including the control plane (default 3: 1 control plane + 2 workers). */
  readonly nodes?: number;
  /** `--lb-pool` (default DEFAULT_LB_POOL). */
  readonly lbPool?: string;
  /** `--ip-family` (default ipv4). */
  readonly ipFamily?: LabIpFamily;
  /** `--pod-network` (default kindnet). */
  readonly podNetwork?: LabPodNetwork;
}

/** `lab up --pod-network`: how pods on different nodes reach each other. */
export const POD_NETWORKS = ['kindnet', 'flannel', 'flannel-host-gw', 'kubenet'] as const;
export type LabPodNetwork = (typeof POD_NETWORKS)[number];

/** Pod networks whose node agents run `svcnet flannel`. */
export function isFlannel(net: LabPodNetwork | undefined): boolean {
  return net === 'flannel' || net === 'flannel-host-gw';
}

/** The pod network of a plan (plans of labs started before it existed: kindnet). */
export function podNetworkOf(plan: Pick<LabPlan, 'podNetwork'>): LabPodNetwork {
  return plan.podNetwork ?? 'kindnet';
}

/** Nodes on their own L2 segments behind the hub (isolated hub ports). */
function segmented(net: LabPodNetwork): boolean {
  return net === 'flannel' || net === 'kubenet';
}

const NAME_RE = /^[a-z]([-a-z0-9]{0,18}[a-z0-9])?$/;
export const MAX_NODES = 200;

export function planLab(opts: LabPlanOptions = {}): LabPlan {
  const name = opts.name ?? 'svcnet';
  const count = opts.nodes ?? 3;
  if (!NAME_RE.test(name))
    throw new SvcnetError(
      'INVALID_INPUT',
      `lab name: must be a lowercase DNS label of at most 20 characters, got ${JSON.stringify(name)}`,
    );
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--nodes: must be 1-${MAX_NODES}, got ${JSON.stringify(count)}`,
    );
  const ipFamily = opts.ipFamily ?? 'ipv4';
  if (!(IP_FAMILIES as readonly string[]).includes(ipFamily))
    throw new SvcnetError(
      'INVALID_INPUT',
      `--ip-family: must be one of ${IP_FAMILIES.join(', ')}, got ${JSON.stringify(ipFamily)}`,
    );
  const podNetwork = opts.podNetwork ?? 'kindnet';
  if (!(POD_NETWORKS as readonly string[]).includes(podNetwork))
    throw new SvcnetError(
      'INVALID_INPUT',
      `--pod-network: must be one of ${POD_NETWORKS.join(', ')}, got ${JSON.stringify(podNetwork)}`,
    );
  const dual = ipFamily === 'dual';
  if (dual && podNetwork !== 'kindnet')
    throw new SvcnetError(
      'INVALID_INPUT',
      `--ip-family dual: not supported with --pod-network ${podNetwork} (the lab's flannel and kubenet networks are IPv4 only); use --pod-network kindnet`,
    );
  const nodes: LabNodePlan[] = [];
  for (let i = 0; i < count; i++) {
    const role = i === 0 ? 'control-plane' : 'worker';
    const nodeName =
      i === 0 ? `${name}-control-plane` : `${name}-worker${i === 1 ? '' : String(i)}`;
    nodes.push({
      name: nodeName,
      role,
      netns: `node-${i}`,
      ip: `172.18.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`,
      podCIDR: `10.244.${i}.0/24`,
      ...(dual
        ? {
            ip6: `${NODE_NET6}${(i + 2).toString(16)}`,
            podCIDR6: `${canonicalIP(`fd00:10:244:${i.toString(16)}::`) ?? ''}/64`,
          }
        : {}),
      hubInterface: `n${i}`,
    });
  }
  const lbPool = opts.lbPool ?? DEFAULT_LB_POOL;
  const pool = parseLbPool(lbPool);
  const taken = ['172.18.0.1', OUTSIDE_IP, ...nodes.map((n) => n.ip)].filter((ip) =>
    inLbPool(pool, ip),
  );
  if (taken.length > 0)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--lb-pool: ${lbPool} holds lab addresses (${taken.join(', ')}); pick a range above them, e.g. ${DEFAULT_LB_POOL}`,
    );
  return {
    name,
    hubNetns: 'hub',
    hubIP: '172.18.0.1',
    ...(dual ? { hubIP6: `${NODE_NET6}1` } : {}),
    ipFamily,
    podNetwork,
    outside: {
      netns: OUTSIDE_NETNS,
      ip: OUTSIDE_IP,
      ...(dual ? { ip6: `${NODE_NET6}fe:1` } : {}),
      hubInterface: 'out',
    },
    lbPool,
    nodeNetworkPrefix: 16,
    serviceCIDR: '10.96.0.0/12',
    clusterCIDR: '10.244.0.0/16',
    dnsServiceIP: '10.96.0.10',
    apiServerPort: 6443,
    nodes,
  };
}

/** The Service ranges, IPv4 first (the API server's --service-cluster-ip-range). */
export function serviceCIDRs(plan: LabPlan): string[] {
  return plan.ipFamily === 'dual' ? [plan.serviceCIDR, SERVICE_CIDR6] : [plan.serviceCIDR];
}

/** The pod ranges of the cluster, IPv4 first (the proxies' --cluster-cidr). */
export function clusterCIDRs(plan: LabPlan): string[] {
  return plan.ipFamily === 'dual' ? [plan.clusterCIDR, CLUSTER_CIDR6] : [plan.clusterCIDR];
}

/** A node's addresses on the lab network, IPv4 first. */
export function nodeIPs(n: LabNodePlan): string[] {
  return n.ip6 === undefined ? [n.ip] : [n.ip, n.ip6];
}

/** A node's pod ranges (its Node's spec.podCIDRs), IPv4 first. */
export function nodePodCIDRs(n: LabNodePlan): string[] {
  return n.podCIDR6 === undefined ? [n.podCIDR] : [n.podCIDR, n.podCIDR6];
}

/** The gateway of a node's pod network: the first address of its podCIDR. */
export function podGateway(node: LabNodePlan): string {
  return node.podCIDR.replace(/\.0\/24$/, '.1');
}

/**
 * The hub of isolated node ports: it answers a node's ARP for another node (proxy_arp_pvlan,
 * at once, without the proxy delay) and routes the packet back out of br0.
 */
const SEGMENTED_HUB_SYSCTLS = [
  'net.ipv4.conf.br0.proxy_arp_pvlan=1',
  'net.ipv4.neigh.br0.proxy_delay=0',
];

/** The hub's dead-end device where traffic leaving the lab is routed to be rejected. */
const NOWHERE = 'nowhere';

export interface NetworkScript {
  /** Namespaces to create, hub first. */
  readonly namespaces: readonly string[];
  /** iproute2 ops to run in each namespace (by name), in order (hub first). */
  readonly batches: readonly { readonly netns: string; readonly ops: readonly IpOp[] }[];
  /** sysctls per namespace, `key=value`. */
  readonly sysctls: readonly { readonly netns: string; readonly settings: readonly string[] }[];
  /** iptables-restore (ip6tables-restore for IPv6) input per namespace, applied with --noflush. */
  readonly firewall: readonly {
    readonly netns: string;
    readonly family?: 'IPv6';
    readonly restore: readonly string[];
  }[];
}

/**
 * The commands that build the lab network. Every namespace gets `lo` up; the hub forwards only
 * to a dead-end device whose traffic it rejects (so leaving the lab fails fast); nodes get ip_forward
 * and rp_filter=0 set explicitly (a new netns may inherit the host's IPv4 conf/all values), a
 * default route via the hub (node-local clients need one before nat OUTPUT can DNAT), and a
 * route to every other node's podCIDR.
 */
export function networkScript(plan: LabPlan): NetworkScript {
  const hub = plan.hubNetns;
  const hubOps: IpOp[] = [
    linkUp('lo'),
    bridge('br0'),
    linkUp('br0'),
    addrAdd(`${plan.hubIP}/${plan.nodeNetworkPrefix}`, 'br0'),
    // The lab has no way out: everything bound elsewhere goes to a dead-end veth (its peer
    // stays down; a dummy device would need a kernel module the host may lack), and the
    // hub's firewall (below) answers it at once, so a lookup the cluster DNS forwards upstream
    // fails in milliseconds instead of waiting out its timeout.
    vethPair({ host: NOWHERE, peer: `${NOWHERE}-end` }),
    linkUp(NOWHERE),
    routeAdd('default', { dev: NOWHERE }),
  ];
  const dual = plan.hubIP6 !== undefined;
  // IPv6 addresses without duplicate address detection: the lab assigns them, and a tentative
  // address would refuse traffic for a second or two after `lab up` returns.
  const v6 = (addr: string | undefined, dev: string): IpOp[] =>
    addr === undefined ? [] : [addrAdd(`${addr}/${NODE_PREFIX6}`, dev, { nodad: true })];
  if (dual) hubOps.push(...v6(plan.hubIP6, 'br0'), routeAdd('::/0', { dev: NOWHERE }));
  const batches: { netns: string; ops: IpOp[] }[] = [{ netns: hub, ops: hubOps }];
  const sysctls: { netns: string; settings: string[] }[] = [
    {
      netns: hub,
      settings: [
        'net.ipv4.ip_forward=1',
        // Every packet leaving the lab gets its answer: no ICMP rate limit in the hub.
        'net.ipv4.icmp_ratelimit=0',
        // The hub routes LB IPs back out of br0, to a node: a redirect would teach the sender
        // to skip the hub, and so its choice among the nodes (lb-controller.ts).
        'net.ipv4.conf.all.send_redirects=0',
        'net.ipv4.conf.br0.send_redirects=0',
        // Spread an LB IP's connections over its nodes by ports too, not by addresses only.
        'net.ipv4.fib_multipath_hash_policy=1',
        ...(dual ? ['net.ipv6.conf.all.forwarding=1'] : []),
      ],
    },
  ];
  const net = podNetworkOf(plan);
  for (const n of plan.nodes) {
    hubOps.push(
      vethPair({ host: n.hubInterface, peer: 'eth0', netns: n.netns }),
      linkSet(n.hubInterface, { master: 'br0', up: true }),
      ...(segmented(net) ? [linkSet(n.hubInterface, { isolated: true })] : []),
    );
  }
  if (segmented(net)) sysctls[0]?.settings.push(...SEGMENTED_HUB_SYSCTLS);
  const out = plan.outside;
  hubOps.push(
    vethPair({ host: out.hubInterface, peer: 'eth0', netns: out.netns }),
    linkSet(out.hubInterface, { master: 'br0', up: true }),
  );
  // Routes back to the Pods, so the hub's rejections find their way to them; with kubenet these
  // are the cloud routes that carry pod traffic between nodes. Flannel's nodes masquerade what
  // leaves the cluster network, and the hub must not carry their pod traffic.
  for (const n of isFlannel(net) ? [] : plan.nodes) {
    hubOps.push(routeAdd(n.podCIDR, { via: n.ip, dev: 'br0' }));
    if (n.podCIDR6 !== undefined && n.ip6 !== undefined)
      hubOps.push(routeAdd(n.podCIDR6, { via: n.ip6, dev: 'br0' }));
  }
  for (const n of plan.nodes) {
    const ops = [
      linkUp('lo'),
      addrAdd(`${n.ip}/${plan.nodeNetworkPrefix}`, 'eth0'),
      linkUp('eth0'),
      routeAdd('default', { via: plan.hubIP, dev: 'eth0' }),
      ...v6(n.ip6, 'eth0'),
      ...(plan.hubIP6 !== undefined ? [routeAdd('::/0', { via: plan.hubIP6, dev: 'eth0' })] : []),
    ];
    for (const other of net === 'kindnet' ? plan.nodes : []) {
      if (other === n) continue;
      ops.push(routeAdd(other.podCIDR, { via: other.ip, dev: 'eth0' }));
      if (other.podCIDR6 !== undefined && other.ip6 !== undefined)
        ops.push(routeAdd(other.podCIDR6, { via: other.ip6, dev: 'eth0' }));
    }
    batches.push({ netns: n.netns, ops });
    sysctls.push({
      netns: n.netns,
      settings: [
        'net.ipv4.ip_forward=1',
        'net.ipv4.conf.all.rp_filter=0',
        'net.ipv4.conf.default.rp_filter=0',
        'net.ipv4.conf.eth0.rp_filter=0',
        ...(dual ? ['net.ipv6.conf.all.forwarding=1'] : []),
        // Pods on a bridge (cbr0, cni0): Service replies between two of them must pass the
        // node's conntrack, as kube-proxy requires of bridge networks (br_netfilter).
        ...(net === 'kindnet' ? [] : ['net.bridge.bridge-nf-call-iptables=1']),
      ],
    });
  }
  // The outside host: the nodes are on its link; the LB pool (inside the same /16) is not, it is
  // routed via the hub like a cloud's load balancer in front of the nodes.
  batches.push({
    netns: out.netns,
    ops: [
      linkUp('lo'),
      addrAdd(`${out.ip}/${plan.nodeNetworkPrefix}`, 'eth0'),
      linkUp('eth0'),
      routeAdd('default', { via: plan.hubIP, dev: 'eth0' }),
      ...v6(out.ip6, 'eth0'),
      ...(plan.hubIP6 !== undefined ? [routeAdd('::/0', { via: plan.hubIP6, dev: 'eth0' })] : []),
      ...lbPoolCIDRs(parseLbPool(plan.lbPool)).map((c) =>
        routeAdd(c, { via: plan.hubIP, dev: 'eth0' }),
      ),
    ],
  });
  // REJECT rather than a prohibit route: the kernel rate-limits a route's ICMP errors with a
  // host-wide setting (net.ipv4.route.error_cost, 1/s after a burst of 5), while REJECT obeys
  // the hub's own icmp_ratelimit. "Administratively prohibited" is an error connected UDP
  // sockets report (EHOSTUNREACH), and TCP connects fail with it too.
  const noWayOut = (reject: string): string[] => [
    '*filter',
    `-A FORWARD -o ${NOWHERE} -m comment --comment "svcnet lab: no way out" -j REJECT --reject-with ${reject}`,
    'COMMIT',
  ];
  const firewall = [
    { netns: hub, restore: noWayOut('icmp-admin-prohibited') },
    ...(dual
      ? [{ netns: hub, family: 'IPv6' as const, restore: noWayOut('icmp6-adm-prohibited') }]
      : []),
  ];
  return {
    namespaces: [hub, ...plan.nodes.map((n) => n.netns), out.netns],
    batches,
    sysctls,
    firewall,
  };
}
