// The trace view's model: a TraceQuery in the cluster's own words (a Pod, a node or an outside
// address; a Service port, a NodePort or an address:port) resolved against the snapshot to the
// packet `svcnet trace` would walk, and the tracer's result (src/trace, the same walkers as the
// CLI) turned into the API's TraceResponse with the Pod and next node behind each outcome.
// Two pure steps with the rules read in between by the caller: resolveTraceQuery (throws a
// ValidationError whose field is the query parameter at fault: `src`, `dst`, `proto`, `node`)
// and traceResolved.

import { ValidationError, type FieldError } from '../errors.js';
import { parseDocument } from '../netfilter/iptables/parse.js';
import { formatIP } from '../util/ip.js';
import { describeOutcome } from '../trace/format.js';
import { objectHop } from '../trace/hop.js';
import type { RoutingState } from '../trace/routes/dump.js';
import { routeHopOf } from '../trace/routes/hop.js';
import { selectFamily } from '../trace/hooks.js';
import { loadNftRules, detectRulesFormat } from '../trace/nft/input.js';
import { traceNftPacket } from '../trace/nft/trace.js';
import {
  defaultContext,
  parseAddressList,
  parsePacketSpec,
  type Origin,
  type Packet,
} from '../trace/packet.js';
import { nameEndpoints, type TraceResult } from '../trace/result.js';
import { tracePacket } from '../trace/walk.js';
import type {
  ClusterSnapshot,
  NodeInfo,
  RulesOrigin,
  TraceHopInfo,
  TraceQuery,
  TraceResponse,
} from './api-types.js';

export interface ResolvedTrace {
  readonly query: Required<TraceQuery>;
  readonly packet: Packet;
  readonly origin: Origin;
  /** The node whose rules are walked. */
  readonly node: NodeInfo;
}

function fail(field: string, message: string): never {
  throw new ValidationError([{ object: 'trace', field, message }]);
}

function findNode(snap: ClusterSnapshot, name: string, field: string): NodeInfo {
  const n = snap.nodes.find((x) => x.name === name);
  if (n === undefined)
    fail(
      field,
      `Node ${JSON.stringify(name)} not found (nodes: ${snap.nodes.map((x) => x.name).join(', ') || 'none'})`,
    );
  return n;
}

interface Source {
  readonly ip: string;
  readonly origin: Origin;
  readonly node?: string;
}

function resolveSource(snap: ClusterSnapshot, src: string): Source {
  const [kind, ...rest] = src.split('/');
  if (kind === 'pod' && rest.length === 2) {
    const [ns = '', name = ''] = rest;
    const pod = snap.pods.find((p) => p.namespace === ns && p.name === name);
    if (pod === undefined) fail('src', `Pod ${ns}/${name} not found`);
    const ip = pod.ips[0];
    if (ip === undefined) fail('src', `Pod ${ns}/${name} has no IP yet (phase ${pod.phase})`);
    return { ip, origin: 'pod', node: pod.node };
  }
  if (kind === 'node' && rest.length === 1) {
    const node = findNode(snap, rest[0] ?? '', 'src');
    const ip = node.addresses[0];
    if (ip === undefined) fail('src', `Node ${node.name} has no address`);
    return { ip, origin: 'node', node: node.name };
  }
  if (kind === 'ip' && rest.length === 1) return { ip: rest[0] ?? '', origin: 'external' };
  return fail(
    'src',
    `expected pod/NAMESPACE/NAME, node/NAME or ip/ADDRESS, got ${JSON.stringify(src)}`,
  );
}

interface Destination {
  readonly hostPort: string;
  readonly node?: string;
}

function serviceOf(snap: ClusterSnapshot, ns: string, name: string) {
  const svc = snap.services.find((s) => s.namespace === ns && s.name === name);
  if (svc === undefined) fail('dst', `Service ${ns}/${name} not found`);
  return svc;
}

function portOf(svc: ReturnType<typeof serviceOf>, port: string, proto: string) {
  const p = svc.ports.find(
    (x) => (String(x.port) === port || x.name === port) && x.protocol.toLowerCase() === proto,
  );
  if (p === undefined)
    fail(
      'dst',
      `Service ${svc.namespace}/${svc.name} has no ${proto.toUpperCase()} port ${port} (ports: ${
        svc.ports.map((x) => `${x.port}/${x.protocol}`).join(', ') || 'none'
      })`,
    );
  return p;
}

const hostPort = (ip: string, port: number): string =>
  ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;

function resolveDestination(snap: ClusterSnapshot, dst: string, proto: string): Destination {
  const [kind, ...rest] = dst.split('/');
  if (kind === 'service' && rest.length === 3) {
    const [ns = '', name = '', port = ''] = rest;
    const svc = serviceOf(snap, ns, name);
    const p = portOf(svc, port, proto);
    const ip = svc.clusterIPs[0];
    if (ip === undefined)
      fail('dst', `Service ${ns}/${name} has no cluster IP (headless or ExternalName)`);
    return { hostPort: hostPort(ip, p.port) };
  }
  if (kind === 'nodeport' && rest.length === 4) {
    const [nodeName = '', ns = '', name = '', port = ''] = rest;
    const node = findNode(snap, nodeName, 'dst');
    const svc = serviceOf(snap, ns, name);
    const p = portOf(svc, port, proto);
    if (p.nodePort === undefined) fail('dst', `Service ${ns}/${name} port ${port} has no NodePort`);
    const ip = node.addresses[0];
    if (ip === undefined) fail('dst', `Node ${node.name} has no address`);
    return { hostPort: hostPort(ip, p.nodePort), node: node.name };
  }
  if (kind === 'addr' && rest.length === 1) return { hostPort: rest[0] ?? '' };
  return fail(
    'dst',
    `expected service/NAMESPACE/NAME/PORT, nodeport/NODE/NAMESPACE/NAME/PORT or addr/ADDRESS:PORT, got ${JSON.stringify(dst)}`,
  );
}

/** The packet, origin and node a query means in this cluster; throws naming the field. */
export function resolveTraceQuery(snap: ClusterSnapshot, q: TraceQuery): ResolvedTrace {
  const proto = (q.proto ?? 'tcp').toLowerCase();
  if (!['tcp', 'udp', 'sctp'].includes(proto))
    fail('proto', `expected tcp, udp or sctp, got ${JSON.stringify(q.proto)}`);
  const errors: FieldError[] = [];
  const attempt = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (e) {
      if (e instanceof ValidationError) errors.push(...e.errors);
      else throw e;
      return undefined;
    }
  };
  const src = attempt(() => resolveSource(snap, q.src));
  const dst = attempt(() => resolveDestination(snap, q.dst, proto));
  if (errors.length > 0 || src === undefined || dst === undefined)
    throw new ValidationError(errors);
  const nodeName = q.node ?? src.node ?? dst.node ?? snap.nodes[0]?.name;
  if (nodeName === undefined || nodeName === '')
    fail('node', 'the cluster has no nodes: give node=NAME for the rules to walk');
  const node = findNode(snap, nodeName, 'node');
  let packet: Packet;
  try {
    packet = parsePacketSpec({ src: src.ip, dst: `${dst.hostPort}/${proto}` });
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    const first = e.errors[0];
    return fail(first?.field === '--src' ? 'src' : 'dst', first?.message ?? e.message);
  }
  return {
    query: { src: q.src, dst: q.dst, proto, node: node.name },
    packet,
    origin: src.origin,
    node,
  };
}

/** FNV-1a of the rules text: the page compares it between re-runs. */
export function hashText(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/**
 * The hop from `from` to the node of the Pod at `podIP` (see TraceHopInfo): from the objects,
 * and with `routes` (the walked node's routing state) also the route it takes.
 */
export function hopTo(
  snap: ClusterSnapshot,
  from: string,
  podIP: string,
  podNode: string,
  routes?: RoutingState,
): TraceHopInfo {
  const { fromNode, toNode, toNodeIP, podCIDR } = objectHop(snap.nodes, from, podIP, podNode);
  const objects = {
    fromNode,
    toNode,
    podIP,
    toNodeIP,
    ...(podCIDR !== undefined ? { podCIDR } : {}),
  };
  const r = routes === undefined ? undefined : routeHopOf(routes, podIP);
  if (r === undefined) return { source: 'objects', ...objects };
  return {
    source: 'routes',
    ...objects,
    route: {
      kind: r.kind,
      summary: r.summary,
      ...(r.route !== undefined ? { route: r.route } : {}),
      notes: r.notes,
    },
  };
}

/**
 * Walks the resolved packet through `rules` (iptables or nft text, detected); with `routes`
 * (the node's routing state) each hop also says the route taken.
 */
export function traceResolved(
  snap: ClusterSnapshot,
  r: ResolvedTrace,
  rules: { readonly text: string; readonly origin: RulesOrigin },
  routes?: RoutingState,
): TraceResponse {
  const local = parseAddressList('node', r.node.addresses);
  const ctx = defaultContext(r.origin, local);
  const result: TraceResult =
    detectRulesFormat(rules.text) === 'nft'
      ? traceNftPacket(loadNftRules(rules.text), r.packet, ctx)
      : tracePacket(selectFamily(parseDocument(rules.text), r.packet.src.family), r.packet, ctx, {
          assumeKubeProxyHooks: true,
        });
  const podByIP = new Map<string, { name: string; node: string; ip: string }>();
  for (const p of snap.pods)
    for (const ip of p.ips) podByIP.set(ip, { name: `${p.namespace}/${p.name}`, node: p.node, ip });
  const names = new Map([...podByIP].map(([ip, p]) => [ip, `Pod ${p.name}`]));
  const named = nameEndpoints(result, names);
  return {
    query: r.query,
    packet: {
      src: hostPort(formatIP(r.packet.src), r.packet.srcPort),
      dst: hostPort(formatIP(r.packet.dst), r.packet.dstPort),
      protocol: r.packet.protocol,
      origin: r.origin,
    },
    node: r.node.name,
    rulesOrigin: rules.origin,
    outcomes: named.outcomes.map((o) => {
      const host = o.dnat?.replace(/^\[?([^\]]*?)\]?:\d+$/, '$1');
      const pod = host === undefined ? undefined : podByIP.get(host);
      return {
        probability: o.probability,
        verdict: o.verdict,
        summary: describeOutcome(o),
        ...(o.dnat !== undefined ? { dnat: o.dnat } : {}),
        ...(o.snat !== undefined ? { snat: o.snat } : {}),
        masquerade: o.masquerade,
        ...(o.delivery !== undefined ? { delivery: o.delivery } : {}),
        ...(o.servicePort !== undefined ? { servicePort: o.servicePort } : {}),
        ...(o.endpoint !== undefined ? { endpoint: o.endpoint } : {}),
        ...(o.endpointObject !== undefined ? { endpointObject: o.endpointObject } : {}),
        ...(pod !== undefined && pod.node !== '' && pod.node !== r.node.name
          ? { nextNode: pod.node }
          : {}),
        ...(pod !== undefined && pod.node !== ''
          ? { hop: hopTo(snap, r.node.name, pod.ip, pod.node, routes) }
          : {}),
        path: o.path.map((s) => ({
          hook: s.hook,
          table: s.table,
          chain: s.chain,
          ...(s.rule !== undefined ? { rule: s.rule } : {}),
          ...(s.text !== undefined ? { text: s.text } : {}),
          depth: s.depth,
          effect: s.effect,
          detail: s.detail,
          ...(s.servicePort !== undefined ? { servicePort: s.servicePort } : {}),
          ...(s.endpoint !== undefined ? { endpoint: s.endpoint } : {}),
          ...(s.role !== undefined ? { role: s.role } : {}),
        })),
      };
    }),
    notes: [...named.notes, ...result.unsupported.map((u) => `unsupported rule: ${u.text}`)],
    rulesHash: hashText(rules.text),
  };
}
