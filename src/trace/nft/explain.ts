// Names the Kubernetes objects behind an nftables step, the way explain.ts does for
// iptables comments: kube-proxy's per-service chain names carry `ns/svc/proto/portName`
// (`service-ULMVA6XW-ns1/svc1/tcp/p80`, `external-…`, `local-…`, `firewall-…`) and endpoint
// chain and affinity-set names add `__IP/port` (`endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80`,
// `:` of IPv6 written `.`); map elements carry `ns/svc:port` comments; and the dispatch maps
// say what a lookup is for. Pure.

import { parseIP } from '../../util/ip.js';
import { objectsFromComment, type CommentObjects } from '../explain.js';
import { formatHostPort } from '../packet.js';

const PREFIXES = ['service-', 'local-', 'external-', 'firewall-', 'endpoint-', 'affinity-'];

/** `IP` as written in an endpoint chain name (IPv6 `:` as `.`). */
function endpointAddress(text: string): string | undefined {
  const ip = parseIP(text) ?? parseIP(text.replaceAll('.', ':'));
  return ip ? formatHostPort(ip, 0).replace(/:0$/, '') : undefined;
}

/**
 * The Service port (`ns/svc:portName`, or `ns/svc` for an unnamed port) and endpoint
 * (`ip:port`) a kube-proxy chain or affinity-set name stands for; {} for other names and for
 * names kube-proxy truncated.
 */
export function objectsFromChainName(name: string): CommentObjects {
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  if (prefix === undefined || name.endsWith('...')) return {};
  const m = /^[A-Z2-7]{8}-([^/]+)\/([^/]+)\/([a-z]+)\/([^/_]*)(?:__([^/]+)\/(\d+))?$/.exec(
    name.slice(prefix.length),
  );
  if (!m) return {};
  const [, ns, svc, , port, epIP, epPort] = m;
  const servicePort = `${ns ?? ''}/${svc ?? ''}${port ? `:${port}` : ''}`;
  if (epIP === undefined || epPort === undefined) return { servicePort };
  const addr = endpointAddress(epIP);
  return addr === undefined ? { servicePort } : { servicePort, endpoint: `${addr}:${epPort}` };
}

const MAP_ROLES: Readonly<Record<string, string>> = {
  'service-ips': 'ClusterIP, external IP or load balancer IP',
  'service-nodeports': 'NodePort',
  'firewall-ips': 'subject to loadBalancerSourceRanges',
  'no-endpoint-services': 'no endpoints',
  'no-endpoint-nodeports': 'no endpoints (NodePort)',
  'localhost-nodeport-reject-ports': 'localhost NodePort rejected',
  'cluster-ips': 'a ClusterIP',
  'nodeport-ips': 'an address that accepts NodePorts',
  'hairpin-connections': 'hairpin: an endpoint connecting to itself through its Service',
};

/** What a lookup in one of kube-proxy's sets or maps means. */
export function roleOfSet(name: string): string | undefined {
  return MAP_ROLES[name];
}

/**
 * The objects behind a step: the rule comment first (explain.ts), then a map element's
 * comment, then the chain jumped to, then the chain the rule is in.
 */
export function objectsOfStep(
  ruleComment: string | undefined,
  elementComment: string | undefined,
  target: string | undefined,
  chain: string,
): CommentObjects {
  const sources = [
    objectsFromComment(ruleComment),
    objectsFromComment(elementComment),
    target !== undefined ? objectsFromChainName(target) : {},
    objectsFromChainName(chain),
  ];
  const servicePort = sources.find((o) => o.servicePort !== undefined)?.servicePort;
  const endpoint = sources.find((o) => o.endpoint !== undefined)?.endpoint;
  const role = sources.find((o) => o.role !== undefined)?.role;
  return {
    ...(servicePort !== undefined ? { servicePort } : {}),
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(role !== undefined ? { role } : {}),
  };
}
