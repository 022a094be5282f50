// EndpointSlice mirroring for one Service: a selector-less Service with a hand-written v1
// Endpoints object gets EndpointSlices (managed-by endpointslicemirroring-controller.k8s.io)
// carrying the same addresses and ports, so consumers that read only slices (kube-proxy,
// our proxy and DNS) see them. Endpoints the Endpoints controller wrote (skip-mirror label)
// and Services with a selector are not mirrored; their mirrored slices are removed. Pure.

import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY_MIRRORING } from '../kube/names.js';
import type {
  AddressType,
  Endpoint,
  EndpointAddress,
  EndpointPort,
  EndpointSlice,
  Endpoints,
  Service,
} from '../kube/types.js';
import { LABEL_SKIP_MIRROR } from './names.js';
import type { Operation } from './operations.js';
import type { ReconcileResult } from './reconcile-endpointslice.js';
import { DEFAULT_MAX_ENDPOINTS_PER_SLICE } from './reconcile-endpointslice.js';
import type { SliceGroup } from './reconcile-slices.js';
import { packSlices, portsKey, sliceOperations } from './reconcile-slices.js';
import { ipFamilyOfAddress, nameOf, namespaceOf, ownerRefTo } from './reconcile-util.js';

export interface MirroringInput {
  readonly service: Service | undefined;
  readonly endpoints: Endpoints | undefined;
  /** Slices labelled with the service name (only mirrored ones are touched). */
  readonly existing: readonly EndpointSlice[];
  readonly maxEndpointsPerSlice?: number;
  readonly triggerTime?: string;
}

/** Should these Endpoints be mirrored for this Service? */
export function shouldMirror(svc: Service | undefined, ep: Endpoints | undefined): boolean {
  return (
    svc !== undefined &&
    ep !== undefined &&
    svc.spec?.selector === undefined &&
    svc.spec?.type !== 'ExternalName' &&
    ep.metadata?.labels?.[LABEL_SKIP_MIRROR] !== 'true'
  );
}

/** Decides the mirrored-slice writes for one Service. */
export function reconcileMirroring(input: MirroringInput): ReconcileResult {
  const ours = input.existing.filter(
    (s) => s.metadata?.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_MIRRORING,
  );
  const warnings: string[] = [];
  const operations: Operation[] = [];
  const { service, endpoints } = input;
  if (!shouldMirror(service, endpoints) || service === undefined || endpoints === undefined) {
    for (const s of ours) operations.push(deleteOp(s));
    return { operations, warnings };
  }
  const byFamily = new Map<AddressType, Map<string, { ports: EndpointPort[]; eps: Endpoint[] }>>();
  for (const [i, subset] of (endpoints.subsets ?? []).entries()) {
    const ports: EndpointPort[] = (subset.ports ?? []).map((p) => ({
      name: p.name ?? '',
      protocol: p.protocol ?? 'TCP',
      port: p.port,
      ...(p.appProtocol !== undefined ? { appProtocol: p.appProtocol } : {}),
    }));
    const key = portsKey(ports);
    const add = (a: EndpointAddress, ready: boolean): void => {
      const fam = ipFamilyOfAddress(a.ip);
      if (fam === undefined) {
        warnings.push(
          `Endpoints ${namespaceOf(endpoints)}/${nameOf(endpoints)}: subsets[${i}]: invalid IP "${a.ip}"; skipped`,
        );
        return;
      }
      let groups = byFamily.get(fam);
      if (groups === undefined) {
        groups = new Map();
        byFamily.set(fam, groups);
      }
      let g = groups.get(key);
      if (g === undefined) {
        g = { ports, eps: [] };
        groups.set(key, g);
      }
      if (g.eps.some((e) => e.addresses[0] === a.ip)) return;
      const ep: Endpoint = { addresses: [a.ip], conditions: { ready } };
      if (a.hostname !== undefined && a.hostname !== '') ep.hostname = a.hostname;
      if (a.nodeName !== undefined && a.nodeName !== '') ep.nodeName = a.nodeName;
      if (a.targetRef !== undefined) ep.targetRef = a.targetRef;
      g.eps.push(ep);
    };
    for (const a of subset.addresses ?? []) add(a, true);
    for (const a of subset.notReadyAddresses ?? []) add(a, false);
  }
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(endpoints.metadata?.labels ?? {}))
    if (k !== LABEL_MANAGED_BY && k !== LABEL_SERVICE_NAME) labels[k] = v;
  labels[LABEL_SERVICE_NAME] = nameOf(service);
  labels[LABEL_MANAGED_BY] = MANAGED_BY_MIRRORING;
  for (const family of ['IPv4', 'IPv6'] as const) {
    const groups: SliceGroup[] = [...(byFamily.get(family)?.values() ?? [])].map((g) => ({
      ports: g.ports,
      endpoints: g.eps,
    }));
    const changes = packSlices({
      namespace: namespaceOf(service),
      addressType: family,
      groups,
      existing: ours.filter((s) => s.addressType === family),
      labels,
      ownerReferences: [ownerRefTo(endpoints, 'v1', 'Endpoints')],
      generateName: `${nameOf(service)}-`,
      maxEndpointsPerSlice: input.maxEndpointsPerSlice ?? DEFAULT_MAX_ENDPOINTS_PER_SLICE,
      placeholder: false,
      ...(input.triggerTime !== undefined ? { triggerTime: input.triggerTime } : {}),
    });
    operations.push(...sliceOperations(changes, deleteOp));
  }
  for (const s of ours) if (s.addressType === 'FQDN') operations.push(deleteOp(s));
  return { operations, warnings };
}

function deleteOp(s: EndpointSlice): Operation {
  return { op: 'delete', kind: 'EndpointSlice', namespace: namespaceOf(s), name: nameOf(s) };
}
