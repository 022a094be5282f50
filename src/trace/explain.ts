// Names the Kubernetes objects behind a rule and says in plain words what kube-proxy's chains
// are for (iptables and nftables modes), so a trace reads without knowing kube-proxy's
// internals. The Service and endpoint come from the rule comment kube-proxy writes
// (`ns/svc:port cluster IP`, `ns/svc:port -> 10.180.0.1:80`, `masquerade traffic for
// ns/svc:port external destinations`, ...); nft/explain.ts adds nft chain names. Pure.

/** The Service port (and endpoint) a kube-proxy comment names. */
export interface CommentObjects {
  /** `namespace/name:port` (or `namespace/name` when the port is unnamed). */
  readonly servicePort?: string;
  /** `ip:port` of an endpoint (`[ip]:port` for IPv6). */
  readonly endpoint?: string;
  /** What the rule is for, when the comment says (`cluster IP`, `external IP`, ...). */
  readonly role?: string;
}

const SERVICE_PORT_RE =
  /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[-a-z0-9]+)?$/;

const ROLES: readonly (readonly [RegExp, string])[] = [
  [/ cluster IP$/, 'cluster IP'],
  [/ external IP$/, 'external IP'],
  [/ loadbalancer IP$/, 'load balancer IP'],
  [/ has no endpoints$/, 'no endpoints'],
  [/ has no local endpoints$/, 'no local endpoints'],
  [/ health check node port$/, 'health check node port'],
  [/^masquerade traffic for /, 'masquerade external traffic'],
  [/^masquerade LOCAL traffic for /, 'masquerade traffic from the node'],
  [/^route LOCAL traffic for /, 'traffic from the node uses all endpoints'],
  [/^pod traffic for /, 'pod traffic uses all endpoints'],
  [/^other traffic to .* will be dropped/, 'source not in loadBalancerSourceRanges'],
  [/ traffic not accepted by KUBE-FW-/, 'source not in loadBalancerSourceRanges'],
];

/** Reads the Service port / endpoint / role out of a kube-proxy rule comment. */
export function objectsFromComment(comment: string | undefined): CommentObjects {
  if (comment === undefined) return {};
  const words = comment.split(' ');
  const servicePort = words.find((w) => SERVICE_PORT_RE.test(w));
  const arrow = words.indexOf('->');
  const endpoint = arrow >= 0 ? words[arrow + 1] : undefined;
  const role = ROLES.find(([re]) => re.test(comment))?.[1];
  return {
    ...(servicePort !== undefined ? { servicePort } : {}),
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(role !== undefined ? { role } : {}),
  };
}

const CHAIN_PURPOSES: readonly (readonly [RegExp, string])[] = [
  [/^KUBE-SERVICES$/, 'kube-proxy: match the destination against every Service IP and port'],
  [/^KUBE-NODEPORTS$/, 'kube-proxy: match the destination port against every NodePort'],
  [/^KUBE-SVC-/, 'kube-proxy: pick one endpoint of a Service port at random'],
  [
    /^KUBE-SVL-/,
    "kube-proxy: pick one of this node's endpoints of a Service port (traffic policy Local)",
  ],
  [
    /^KUBE-EXT-/,
    'kube-proxy: traffic to a Service from outside the cluster (externalTrafficPolicy)',
  ],
  [/^KUBE-FW-/, 'kube-proxy: loadBalancerSourceRanges check'],
  [/^KUBE-SEP-/, 'kube-proxy: one endpoint — rewrite the destination to it (DNAT)'],
  [/^KUBE-MARK-MASQ$/, 'kube-proxy: mark the packet so its source is rewritten on the way out'],
  [/^KUBE-POSTROUTING$/, 'kube-proxy: masquerade (SNAT) marked packets'],
  [
    /^KUBE-EXTERNAL-SERVICES$/,
    'kube-proxy: drop or reject external traffic to Services without usable endpoints',
  ],
  [
    /^KUBE-PROXY-FIREWALL$/,
    'kube-proxy: drop load-balancer traffic from sources outside loadBalancerSourceRanges',
  ],
  [/^KUBE-FORWARD$/, 'kube-proxy: accept forwarded Service traffic'],
  [/^KUBE-FIREWALL$/, 'kube-proxy: block outside connections to 127.0.0.0/8'],
  [/^KUBE-PROXY-CANARY$/, 'kube-proxy: canary chain (never has rules)'],
  // nftables mode (table ip/ip6 kube-proxy, kube-proxy.md §2.2)
  [/^services$/, 'kube-proxy: look the destination up in the Service IP and NodePort maps'],
  [/^service-[A-Z2-7]{8}-/, 'kube-proxy: pick one endpoint of a Service port at random'],
  [
    /^local-[A-Z2-7]{8}-/,
    "kube-proxy: pick one of this node's endpoints of a Service port (traffic policy Local)",
  ],
  [
    /^external-[A-Z2-7]{8}-/,
    'kube-proxy: traffic to a Service from outside the cluster (externalTrafficPolicy)',
  ],
  [/^firewall-[A-Z2-7]{8}-/, 'kube-proxy: loadBalancerSourceRanges check'],
  [/^endpoint-[A-Z2-7]{8}-/, 'kube-proxy: one endpoint — rewrite the destination to it (DNAT)'],
  [/^masquerading$/, 'kube-proxy: masquerade (SNAT) marked and hairpin connections'],
  [/^firewall-check$/, 'kube-proxy: look the destination up in the loadBalancerSourceRanges map'],
  [
    /^service-endpoints-check$/,
    'kube-proxy: drop or reject traffic to Services without usable endpoints',
  ],
  [
    /^nodeport-endpoints-check$/,
    'kube-proxy: drop or reject traffic to NodePorts without usable endpoints',
  ],
  [
    /^cluster-ips-check$/,
    'kube-proxy: reject unknown ports of ClusterIPs, drop unallocated ClusterIPs',
  ],
  [/^reject-chain$/, 'kube-proxy: reject (the Service has no endpoints)'],
  [/^localhost-nodeport-reject-/, 'kube-proxy: reject NodePort traffic to localhost'],
];

/** A one-line description of a chain kube-proxy owns, or undefined for other chains. */
export function chainPurpose(chain: string): string | undefined {
  return CHAIN_PURPOSES.find(([re]) => re.test(chain))?.[1];
}
