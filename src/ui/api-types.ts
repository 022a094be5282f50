// The JSON shapes of `svcnet ui`'s HTTP API (docs/ui.md), shared by the server (src/ui/) and
// the page (src/ui/page/, which includes this file in its own tsconfig). Types only: no
// imports, so the browser build pulls in nothing from the server side.

/** `GET /api/snapshot`: the cluster as the map shows it. */
export interface ClusterSnapshot {
  /** Highest resourceVersion seen, for telling snapshots apart. */
  readonly revision: number;
  readonly nodes: readonly NodeInfo[];
  readonly pods: readonly PodInfo[];
  readonly services: readonly ServiceInfo[];
  /** Nodes whose rules `GET /api/nodes/:node/rules` can show, with where they come from. */
  readonly rules: readonly RulesSourceInfo[];
}

export interface NodeInfo {
  readonly name: string;
  /** InternalIPs first, then ExternalIPs. */
  readonly addresses: readonly string[];
  readonly podCIDRs: readonly string[];
  readonly ready: boolean;
}

export interface PodInfo {
  readonly namespace: string;
  readonly name: string;
  /** `spec.nodeName`, '' when not scheduled. */
  readonly node: string;
  readonly ips: readonly string[];
  readonly phase: string;
  readonly ready: boolean;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ServicePortInfo {
  readonly name: string;
  readonly protocol: 'TCP' | 'UDP' | 'SCTP';
  readonly port: number;
  readonly targetPort: string;
  readonly nodePort?: number;
}

export interface EndpointInfo {
  readonly addresses: readonly string[];
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly node: string;
  /** `namespace/name` of the Pod behind the endpoint, from the slice's targetRef. */
  readonly pod?: string;
  /** The endpoint's hostname (headless Services: `hostname.svc.ns.svc.zone`). */
  readonly hostname?: string;
  /** The slice's ports, as `name/protocol/port`. */
  readonly ports: readonly string[];
}

export interface DnsName {
  readonly type: 'A' | 'AAAA' | 'SRV' | 'CNAME';
  readonly name: string;
  /** What it answers: an address, `priority weight port target`, or the CNAME target. */
  readonly value: string;
}

export interface ServiceInfo {
  readonly namespace: string;
  readonly name: string;
  readonly type: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  readonly headless: boolean;
  readonly clusterIPs: readonly string[];
  readonly externalIPs: readonly string[];
  readonly loadBalancerIPs: readonly string[];
  readonly ports: readonly ServicePortInfo[];
  readonly endpoints: readonly EndpointInfo[];
  readonly dns: readonly DnsName[];
}

export type RulesOrigin = 'file' | 'lab' | 'rendered';

export interface RulesSourceInfo {
  readonly node: string;
  /** file: --rules NODE=FILE; lab: the lab node's live ruleset; rendered: svcnet's planner over the objects. */
  readonly origin: RulesOrigin;
  readonly description: string;
}

/** `GET /api/nodes/:node/rules`. */
export interface RulesView {
  readonly node: string;
  readonly origin: RulesOrigin;
  readonly description: string;
  readonly format: 'iptables' | 'nft';
  readonly tables: readonly RulesTable[];
  /** The ruleset exactly as read (iptables-save / nft list ruleset / render output). */
  readonly raw: string;
}

export interface RulesTable {
  /** iptables: `nat`, `filter`, …; nft: `ip kube-proxy`, … */
  readonly name: string;
  readonly chains: readonly RulesChain[];
}

export interface RulesChain {
  readonly name: string;
  /** Built-in chain policy (`ACCEPT`), nft base-chain hook line, or '' for a user chain. */
  readonly policy: string;
  readonly rules: readonly RuleInfo[];
}

export interface RuleInfo {
  /** 1-based position in the chain. */
  readonly index: number;
  readonly text: string;
  /** The chain it jumps or goes to, when it does. */
  readonly target?: string;
  readonly comment?: string;
  /** `namespace/name:port` from the kube-proxy comment. */
  readonly servicePort?: string;
  /** `ip:port` of the endpoint the rule is for. */
  readonly endpoint?: string;
  readonly role?: string;
}

/**
 * `GET /api/trace` query (also the page's shareable URL): `src` is `pod/NS/NAME`,
 * `node/NAME` or `ip/ADDRESS`; `dst` is `service/NS/NAME/PORT`, `nodeport/NODE/NS/NAME/PORT`
 * or `addr/ADDRESS:PORT`; `proto` is `tcp|udp|sctp` (default tcp); `node` picks whose rules
 * to walk (default: the source's node, else the NodePort's, else the first node).
 */
export interface TraceQuery {
  readonly src: string;
  readonly dst: string;
  readonly proto?: string;
  readonly node?: string;
}

export interface TraceStepInfo {
  readonly hook: string;
  readonly table: string;
  readonly chain: string;
  readonly rule?: number;
  readonly text?: string;
  readonly depth: number;
  readonly effect: string;
  readonly detail: string;
  readonly servicePort?: string;
  readonly endpoint?: string;
  readonly role?: string;
}

export interface TraceOutcomeInfo {
  readonly probability: number;
  readonly verdict: 'accept' | 'drop' | 'reject';
  readonly summary: string;
  readonly dnat?: string;
  readonly snat?: string;
  readonly masquerade: boolean;
  readonly delivery?: 'local' | 'forward';
  readonly servicePort?: string;
  readonly endpoint?: string;
  readonly endpointObject?: string;
  /** The node the DNATed packet leaves for (when the endpoint is a Pod on another node). */
  readonly nextNode?: string;
  /** Where the endpoint Pod is, from the cluster objects (the tracer walks one node's rules). */
  readonly hop?: TraceHopInfo;
  readonly path: readonly TraceStepInfo[];
}

/**
 * The endpoint Pod's place as the cluster objects tell it: the node whose rules were walked,
 * the Pod's node (the same one: no hop), that node's first InternalIP (the next hop of a
 * host-gw or VXLAN route to its podCIDR) and the podCIDR holding the Pod IP. With `source`
 * `routes` (`svcnet lab ui`: the node's routing state read live) `route` also says what the
 * walked node's routes do with the packet.
 */
export interface TraceHopInfo {
  /** `objects`: from the cluster objects only; `routes`: `route` is from the node's routes. */
  readonly source: 'objects' | 'routes';
  readonly fromNode: string;
  readonly toNode: string;
  readonly podIP: string;
  /** `toNode`'s first address, '' when it has none. */
  readonly toNodeIP: string;
  /** The podCIDR of `toNode` that holds `podIP`, when one does. */
  readonly podCIDR?: string;
  /** source `routes`: the route the walked node picks for `podIP` (src/trace/routes/hop.ts). */
  readonly route?: TraceRouteInfo;
}

/** What a node's routes do with a packet to the endpoint. */
export interface TraceRouteInfo {
  /** vxlan, gateway, local-link, local, dropped or no-route. */
  readonly kind: string;
  /** `via flannel.1, next hop 10.244.2.0 (…): encapsulated in VXLAN id 1 to 172.18.0.4 UDP 8472`. */
  readonly summary: string;
  /** The route as `ip route` prints it. */
  readonly route?: string;
  readonly notes: readonly string[];
}

export interface TraceResponse {
  readonly query: Required<TraceQuery>;
  /** The packet as walked: `10.244.1.5:40000 -> 10.96.0.20:3000/tcp`, origin and node. */
  readonly packet: {
    readonly src: string;
    readonly dst: string;
    readonly protocol: string;
    readonly origin: 'pod' | 'node' | 'external';
  };
  readonly node: string;
  readonly rulesOrigin: RulesOrigin;
  readonly outcomes: readonly TraceOutcomeInfo[];
  readonly notes: readonly string[];
  /** A hash of the rules walked: the page marks a re-run trace whose rules changed. */
  readonly rulesHash: string;
}

/** Every 4xx/5xx body. */
export interface ApiError {
  readonly error: {
    readonly message: string;
    /** The query field at fault (400). */
    readonly field?: string;
  };
}

/** SSE `GET /api/events`: `event: change` with this data, after a short debounce. */
export interface ChangeEvent {
  readonly revision: number;
  /** Kinds that changed since the last event: `Service`, `EndpointSlice`, `Pod`, `Node`. */
  readonly kinds: readonly string[];
}
