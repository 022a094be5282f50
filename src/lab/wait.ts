// When is the lab "up"? Like `kind create cluster --wait`, plus what a Service walkthrough
// needs right after: every node registered and Ready, every live Pod Running and Ready, every
// Deployment and StatefulSet at its replica count, every DaemonSet (kube-proxy's among them)
// with a Ready Pod on each node it wants one on, every selector Service's EndpointSlices
// listing exactly its ready Pods, and (checked by the caller on each node) every proxy with no
// change left to program and every endpoint it should use programmed. `clusterProblems` and
// `unprogrammedEndpoints` are the pure parts: what is still missing.
//
// Why the kernel's rules and not only the proxy's metrics: a proxy's metrics say it has
// nothing pending of what its informers delivered, not that they delivered the API server's
// latest EndpointSlices. A proxy a moment behind reports "settled" with only some endpoints
// programmed, and curls right after `lab up` all land on the same Pod. So each node's nat
// table must hold a DNAT to every endpoint the proxy would use for that node, computed by
// the proxy's own model from what the API server lists. In nftables mode the same holds of
// its `ip kube-proxy` table: each service chain (or its endpoint chains) must DNAT to every
// endpoint the proxy would use (`expectedNftEndpoints`, `programmedNftEndpoints`).

import type {
  DaemonSet,
  Deployment,
  EndpointSlice,
  Node,
  Pod,
  Service,
  StatefulSet,
} from '../kube/types.js';
import { isPodReady, isPodTerminating, podIPs } from '../controllers/reconcile-util.js';
import { LABEL_TOPOLOGY_ZONE } from '../kube/names.js';
import { endpointChainName } from '../proxy/iptables/names.js';
import { categorizeEndpoints } from '../proxy/model/categorize.js';
import { trackObjects } from '../proxy/iptables/plan-objects.js';
import type { ServicePortInfo } from '../proxy/model/service-port.js';
import type { IPFamily } from '../util/ip.js';

export interface ClusterView {
  readonly nodes: readonly Node[];
  readonly pods: readonly Pod[];
  readonly deployments: readonly Deployment[];
  readonly statefulSets: readonly StatefulSet[];
  /** Absent: not checked (callers that list no DaemonSets). */
  readonly daemonSets?: readonly DaemonSet[];
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
}

const ref = (o: { metadata?: { name?: string; namespace?: string } }): string =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

function selects(selector: Readonly<Record<string, string>>, pod: Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Everything that keeps the cluster from being ready; empty when it is. */
export function clusterProblems(view: ClusterView, nodeNames: readonly string[]): string[] {
  const problems: string[] = [];
  for (const name of nodeNames) {
    const node = view.nodes.find((n) => n.metadata?.name === name);
    const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    if (!ready) problems.push(`node ${name} not Ready`);
  }
  const live = view.pods.filter((p) => !isPodTerminating(p));
  for (const p of live)
    if (p.status?.phase !== 'Succeeded' && !(p.status?.phase === 'Running' && isPodReady(p)))
      problems.push(`pod ${ref(p)} ${p.spec?.nodeName ? 'not Ready' : 'not scheduled'}`);
  for (const w of [...view.deployments, ...view.statefulSets]) {
    const want = w.spec?.replicas ?? 1;
    const st = w.status as { readyReplicas?: number; replicas?: number } | undefined;
    if ((st?.readyReplicas ?? 0) !== want || (st?.replicas ?? 0) !== want)
      problems.push(
        `${w.kind === 'StatefulSet' ? 'statefulset' : 'deployment'} ${ref(w)} has ${String(st?.readyReplicas ?? 0)}/${String(want)} ready`,
      );
  }
  for (const ds of view.daemonSets ?? []) {
    const st = ds.status;
    const want = st?.desiredNumberScheduled ?? 0;
    // Not yet reconciled (no status for this generation) counts as not ready.
    const seen =
      (st?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 0) && st !== undefined;
    if (
      !seen ||
      want === 0 ||
      (st.numberReady ?? 0) !== want ||
      (st.updatedNumberScheduled ?? want) !== want
    )
      problems.push(
        `daemonset ${ref(ds)} has ${String(st?.numberReady ?? 0)}/${String(want)} ready`,
      );
  }
  for (const svc of view.services) {
    const selector = svc.spec?.selector;
    if (!selector || Object.keys(selector).length === 0 || svc.spec?.type === 'ExternalName')
      continue;
    const ns = svc.metadata?.namespace ?? 'default';
    // A single-stack Service of a dual-stack cluster has slices of its own family only.
    const families = svc.spec?.ipFamilies ?? [
      (svc.spec?.clusterIP ?? '').includes(':') ? 'IPv6' : 'IPv4',
    ];
    const want = new Set(
      live
        .filter((p) => (p.metadata?.namespace ?? 'default') === ns && selects(selector, p))
        .filter((p) => isPodReady(p))
        .flatMap(podIPs)
        .filter((ip) => families.includes(ip.includes(':') ? 'IPv6' : 'IPv4')),
    );
    const have = new Set(
      view.endpointSlices
        .filter(
          (s) =>
            (s.metadata?.namespace ?? 'default') === ns &&
            s.metadata?.labels?.['kubernetes.io/service-name'] === svc.metadata?.name,
        )
        .flatMap((s) => s.endpoints ?? [])
        .filter((e) => e.conditions?.ready !== false)
        .flatMap((e) => e.addresses),
    );
    if (want.size !== have.size || [...want].some((ip) => !have.has(ip)))
      problems.push(`service ${ref(svc)} endpoints not current`);
  }
  return problems;
}

/** Reads one proxy's /metrics text: nothing queued that is not programmed yet. */
export function proxySettled(metrics: string): boolean {
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics);
    return m ? Number(m[1]) : undefined;
  };
  const last = value('kubeproxy_sync_proxy_rules_last_timestamp_seconds');
  const queued = value('kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds') ?? 0;
  return (
    last !== undefined &&
    last > 0 &&
    last >= queued &&
    (value('kubeproxy_sync_proxy_rules_endpoint_changes_pending') ?? 0) === 0 &&
    (value('kubeproxy_sync_proxy_rules_service_changes_pending') ?? 0) === 0
  );
}

/**
 * Every endpoint the proxy of `nodeName` must DNAT to for these Services and EndpointSlices,
 * as the proxy's own model decides them (traffic policies, topology, terminating fallback):
 * `key(servicePort, endpoint)` → `ns/svc:port -> IP:PORT`.
 */
function expectedEndpoints(
  services: readonly Service[],
  endpointSlices: readonly EndpointSlice[],
  node: Node | undefined,
  nodeName: string,
  family: IPFamily,
  key: (sp: ServicePortInfo, endpoint: string) => string,
): Map<string, string> {
  // An object the proxy cannot handle is one it skips: skip it here too.
  const snap = trackObjects(services, endpointSlices, family, nodeName, true).snapshot;
  const topology = { nodeName, zone: node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] ?? '' };
  const want = new Map<string, string>();
  for (const [k, sp] of snap.services) {
    const cat = categorizeEndpoints(snap.endpoints.get(k) ?? [], sp, topology);
    for (const ep of cat.allReachableEndpoints)
      want.set(key(sp, ep.endpoint), `${sp.nameString} -> ${ep.endpoint}`);
  }
  return want;
}

/**
 * iptables mode: the endpoint chains (`KUBE-SEP-…` with their DNAT target) the proxy of
 * `nodeName` must have programmed, keyed `CHAIN IP:PORT`.
 */
export function expectedEndpointRules(
  services: readonly Service[],
  endpointSlices: readonly EndpointSlice[],
  node: Node | undefined,
  nodeName: string,
  family: IPFamily = 'IPv4',
): Map<string, string> {
  return expectedEndpoints(services, endpointSlices, node, nodeName, family, (sp, ep) => {
    const chain = endpointChainName(sp.nameString, sp.protocol.toLowerCase(), ep);
    return `${chain} ${ep}`;
  });
}

/** `CHAIN IP:PORT` of every `-A KUBE-SEP-… -j DNAT --to-destination IP:PORT` in a nat dump. */
export function programmedEndpointRules(iptablesSave: string): Set<string> {
  const have = new Set<string>();
  for (const m of iptablesSave.matchAll(/^-A (KUBE-SEP-\S+) .*-j DNAT --to-destination (\S+)/gm))
    have.add(`${m[1] ?? ''} ${m[2] ?? ''}`);
  return have;
}

/**
 * What a node's proxy has not programmed yet: `ns/svc:port -> IP:PORT` for each endpoint the
 * node should DNAT to and its nat table (an `iptables-save -t nat` dump) lacks. Empty when
 * every endpoint is in the kernel.
 */
export function unprogrammedEndpoints(
  expected: ReadonlyMap<string, string>,
  iptablesSave: string,
): string[] {
  return missingEndpoints(expected, programmedEndpointRules(iptablesSave));
}

/**
 * nftables mode: the endpoints each service port's chains must DNAT to on `nodeName`, keyed
 * `ns/svc/proto/portName IP:PORT` (the name kube-proxy's nftables chains end with).
 */
export function expectedNftEndpoints(
  services: readonly Service[],
  endpointSlices: readonly EndpointSlice[],
  node: Node | undefined,
  nodeName: string,
  family: IPFamily = 'IPv4',
): Map<string, string> {
  return expectedEndpoints(services, endpointSlices, node, nodeName, family, (sp, ep) => {
    const { namespace, name, port } = sp.name;
    return `${namespace}/${name}/${sp.protocol.toLowerCase()}/${port} ${ep}`;
  });
}

/** A service, local or endpoint chain of kube-proxy's nftables table: `service-HASH8-ns/svc/proto/port`. */
const NFT_CHAIN = /^\s*chain (?:service|local|endpoint)-[A-Z0-9]{8}-(\S+?)(?:__\S+)? \{$/;

/**
 * `ns/svc/proto/portName IP:PORT` of every DNAT in the service, local and endpoint chains of
 * a `nft list table ip kube-proxy` dump: the `numgen random mod N map { i : IP . PORT }`
 * entries and the direct `dnat to IP:PORT`.
 */
export function programmedNftEndpoints(nftList: string): Set<string> {
  const have = new Set<string>();
  let base: string | undefined;
  for (const line of nftList.split('\n')) {
    const chain = NFT_CHAIN.exec(line);
    if (chain) {
      base = chain[1];
      continue;
    }
    if (/^\s*}/.test(line)) base = undefined;
    if (base === undefined || !line.includes('dnat')) continue;
    for (const m of line.matchAll(/\d+ : ([0-9a-fA-F.:]+) \. (\d+)/g)) {
      const ip = m[1] ?? '';
      have.add(`${base} ${ip.includes(':') ? `[${ip}]` : ip}:${m[2] ?? ''}`);
    }
    const direct = /dnat (?:ip6? )?to (\S+:\d+)/.exec(line);
    if (direct) have.add(`${base} ${direct[1] ?? ''}`);
  }
  return have;
}

/** What of `expected` (key → `ns/svc:port -> IP:PORT`) is not in `have`, by description. */
export function missingEndpoints(
  expected: ReadonlyMap<string, string>,
  have: ReadonlySet<string>,
): string[] {
  return [...expected].filter(([key]) => !have.has(key)).map(([, what]) => what);
}
