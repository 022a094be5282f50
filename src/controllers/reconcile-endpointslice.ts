// The EndpointSlice controller's decision for one Service: which pods back it, what each
// endpoint looks like (addresses per IP family, ready/serving/terminating, nodeName, zone,
// hostname, per-pod targetPort, hints) and how they are packed into slices of at most
// `maxEndpointsPerSlice` (reconcile-slices.ts). Behaviour follows upstream's
// k8s.io/endpointslice reconciler; the code is ours. Pure: returns operations and warnings.

import {
  LABEL_HEADLESS,
  LABEL_MANAGED_BY,
  LABEL_SERVICE_NAME,
  LABEL_TOPOLOGY_ZONE,
  MANAGED_BY_CONTROLLER,
  TRAFFIC_DISTRIBUTION_PREFER_CLOSE,
  TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE,
  TRAFFIC_DISTRIBUTION_PREFER_SAME_ZONE,
} from '../kube/names.js';
import { matchesSelectorMap } from '../kube/selectors.js';
import { MAX_SLICE_PORTS } from '../kube/validate.js';
import type {
  Endpoint,
  EndpointPort,
  EndpointSlice,
  IPFamilyName,
  Node,
  Pod,
  Service,
} from '../kube/types.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import type { SliceGroup } from './reconcile-slices.js';
import { packSlices, portsKey, sliceOperations } from './reconcile-slices.js';
import {
  ipFamilyOfAddress,
  isPodReady,
  isPodTerminal,
  isPodTerminating,
  nameOf,
  namespaceOf,
  ownerRefTo,
  podHostname,
  podIPs,
  podRef,
  resolveTargetPort,
} from './reconcile-util.js';

export const DEFAULT_MAX_ENDPOINTS_PER_SLICE = 100;

export interface EndpointSliceInput {
  readonly service: Service;
  /** Pods of the service's namespace (the reconciler applies the selector). */
  readonly pods: readonly Pod[];
  readonly nodes: ReadonlyMap<string, Node>;
  /** Slices labelled with this service's name; only ours (managed-by) are touched. */
  readonly existing: readonly EndpointSlice[];
  readonly maxEndpointsPerSlice?: number;
  /** RFC 3339 time of the change that triggered this sync. */
  readonly triggerTime?: string;
}

export interface ReconcileResult {
  readonly operations: Operation[];
  /** Things worth a log line (skipped pods and why). */
  readonly warnings: string[];
}

/** Is this Service one the EndpointSlice and Endpoints controllers manage? */
export function isSelectorService(svc: Service): boolean {
  return svc.spec?.selector !== undefined && svc.spec.type !== 'ExternalName';
}

/** The pods of `pods` that `svc` selects (same namespace, labels match), sorted by name. */
export function selectedPods(svc: Service, pods: readonly Pod[]): Pod[] {
  const ns = namespaceOf(svc);
  const selector = svc.spec?.selector ?? {};
  return pods
    .filter((p) => namespaceOf(p) === ns && matchesSelectorMap(selector, p.metadata?.labels))
    .sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0));
}

/** Address families the service's slices are kept for. */
export function serviceFamilies(svc: Service): IPFamilyName[] {
  const fams = svc.spec?.ipFamilies;
  if (fams !== undefined && fams.length > 0) return [...fams];
  const ip = svc.spec?.clusterIP;
  const fam = ip !== undefined && ip !== 'None' ? ipFamilyOfAddress(ip) : undefined;
  return [fam ?? 'IPv4'];
}

/** Labels every managed slice of `svc` carries. */
export function sliceLabels(svc: Service, managedBy: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(svc.metadata?.labels ?? {}))
    if (k !== LABEL_SERVICE_NAME && k !== LABEL_MANAGED_BY && k !== LABEL_HEADLESS) labels[k] = v;
  labels[LABEL_SERVICE_NAME] = nameOf(svc);
  labels[LABEL_MANAGED_BY] = managedBy;
  if (svc.spec?.clusterIP === 'None') labels[LABEL_HEADLESS] = '';
  return labels;
}

/** The ports of one pod's endpoint: one per service port whose targetPort resolves. */
export function endpointPortsFor(svc: Service, pod: Pod): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of svc.spec?.ports ?? []) {
    const port = resolveTargetPort(sp, pod);
    if (port === undefined) continue;
    out.push({
      name: sp.name ?? '',
      protocol: sp.protocol ?? 'TCP',
      port,
      ...(sp.appProtocol !== undefined ? { appProtocol: sp.appProtocol } : {}),
    });
  }
  return out;
}

/** Decides the slice writes for one Service. */
export function reconcileEndpointSlices(input: EndpointSliceInput): ReconcileResult {
  const { service } = input;
  const warnings: string[] = [];
  const ours = input.existing.filter(
    (s) => s.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_CONTROLLER,
  );
  const operations: Operation[] = [];
  if (!isSelectorService(service)) {
    for (const s of ours) operations.push(deleteSlice(s));
    return { operations, warnings };
  }
  const numPorts = service.spec?.ports?.length ?? 0;
  if (numPorts > MAX_SLICE_PORTS) {
    // The API server refuses a slice with more ports: leave the Service's slices as they are.
    warnings.push(
      `Service ${namespaceOf(service)}/${nameOf(service)}: ${String(numPorts)} ports, but an EndpointSlice holds at most ${String(MAX_SLICE_PORTS)}; its slices are not updated`,
    );
    return { operations, warnings };
  }
  const families = serviceFamilies(service);
  const publishNotReady = service.spec?.publishNotReadyAddresses === true;
  const ns = namespaceOf(service);
  const labels = sliceLabels(service, MANAGED_BY_CONTROLLER);
  const ownerReferences = [ownerRefTo(service, 'v1', 'Service')];

  const byFamily = new Map<IPFamilyName, Map<string, { ports: EndpointPort[]; eps: Endpoint[] }>>();
  for (const f of families) byFamily.set(f, new Map());
  for (const pod of selectedPods(service, input.pods)) {
    if (isPodTerminal(pod)) continue;
    const ips = podIPs(pod);
    if (ips.length === 0) continue;
    const nodeName = pod.spec?.nodeName ?? '';
    const node = input.nodes.get(nodeName);
    if (node === undefined && !publishNotReady) {
      warnings.push(`Pod ${ns}/${nameOf(pod)}: node "${nodeName}" not found; skipped`);
      continue;
    }
    const ports = endpointPortsFor(service, pod);
    const key = portsKey(ports);
    for (const [family, groups] of byFamily) {
      const ip = ips.find((a) => ipFamilyOfAddress(a) === family);
      if (ip === undefined) continue;
      const ep = podEndpoint(service, pod, node, ip, publishNotReady);
      let g = groups.get(key);
      if (g === undefined) {
        g = { ports, eps: [] };
        groups.set(key, g);
      }
      g.eps.push(ep);
    }
  }

  for (const [family, groups] of byFamily) {
    const all = [...groups.values()].flatMap((g) => g.eps);
    applyHints(service, all);
    const sliceGroups: SliceGroup[] = [...groups.values()].map((g) => ({
      ports: g.ports,
      endpoints: g.eps,
    }));
    const changes = packSlices({
      namespace: ns,
      addressType: family,
      groups: sliceGroups,
      existing: ours.filter((s) => s.addressType === family),
      labels,
      ownerReferences,
      generateName: `${nameOf(service)}-`,
      maxEndpointsPerSlice: input.maxEndpointsPerSlice ?? DEFAULT_MAX_ENDPOINTS_PER_SLICE,
      placeholder: true,
      ...(input.triggerTime !== undefined ? { triggerTime: input.triggerTime } : {}),
    });
    operations.push(...sliceOperations(changes, deleteSlice));
  }
  // Slices of a family the service no longer has.
  for (const s of ours)
    if (!families.includes(s.addressType as IPFamilyName)) operations.push(deleteSlice(s));
  return { operations, warnings };
}

function deleteSlice(s: EndpointSlice): Operation {
  return deleteObject('EndpointSlice', s);
}

function podEndpoint(
  svc: Service,
  pod: Pod,
  node: Node | undefined,
  ip: string,
  publishNotReady: boolean,
): Endpoint {
  const serving = isPodReady(pod);
  const terminating = isPodTerminating(pod);
  const ep: Endpoint = {
    addresses: [ip],
    conditions: { ready: publishNotReady || (serving && !terminating), serving, terminating },
  };
  const hostname = podHostname(svc, pod);
  if (hostname !== undefined) ep.hostname = hostname;
  ep.targetRef = podRef(pod);
  const nodeName = pod.spec?.nodeName;
  if (nodeName !== undefined && nodeName !== '') ep.nodeName = nodeName;
  const zone = node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE];
  if (zone !== undefined && zone !== '') ep.zone = zone;
  return ep;
}

/**
 * trafficDistribution hints: PreferClose/PreferSameZone give each endpoint a hint for its own
 * zone, PreferSameNode also one for its own node. Zone hints are all-or-nothing: one endpoint
 * without a zone means no zone hints at all (a consumer must not see partial hints).
 */
function applyHints(svc: Service, eps: Endpoint[]): void {
  const td = svc.spec?.trafficDistribution;
  const zonal =
    td === TRAFFIC_DISTRIBUTION_PREFER_CLOSE ||
    td === TRAFFIC_DISTRIBUTION_PREFER_SAME_ZONE ||
    td === TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE;
  if (!zonal) return;
  const allZoned = eps.every((e) => e.zone !== undefined);
  for (const ep of eps) {
    const hints: NonNullable<Endpoint['hints']> = {};
    if (allZoned && ep.zone !== undefined) hints.forZones = [{ name: ep.zone }];
    if (td === TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE && ep.nodeName !== undefined)
      hints.forNodes = [{ name: ep.nodeName }];
    if (hints.forZones !== undefined || hints.forNodes !== undefined) ep.hints = hints;
  }
}
