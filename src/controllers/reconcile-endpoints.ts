// The Endpoints controller's decision for one Service: the legacy v1 Endpoints object named
// after it, with ready pods in `addresses`, the others in `notReadyAddresses`, subsets
// repacked by identical port lists, capped at 1000 addresses. Terminating pods are left out
// unless publishNotReadyAddresses. Selector-less services are left alone (their Endpoints are
// the user's). Behaviour follows upstream pkg/controller/endpoint; the code is ours. Pure.

import {
  ANNOTATION_ENDPOINTS_OVER_CAPACITY,
  ANNOTATION_LAST_CHANGE_TRIGGER_TIME,
  LABEL_HEADLESS,
} from '../kube/names.js';
import type { EndpointAddress, Endpoints, Pod, Service } from '../kube/types.js';
import { parseIPSloppy } from '../util/ip.js';
import { canonicalJSON, deepEqual } from '../util/json.js';
import { LABEL_SKIP_MIRROR, MAX_ENDPOINTS_ADDRESSES } from './names.js';
import type { Operation } from './operations.js';
import type { ReconcileResult } from './reconcile-endpointslice.js';
import {
  endpointPortsFor,
  isSelectorService,
  selectedPods,
  serviceFamilies,
} from './reconcile-endpointslice.js';
import { portsKey } from './reconcile-slices.js';
import {
  ipFamilyOfAddress,
  isPodReady,
  isPodTerminal,
  isPodTerminating,
  nameOf,
  namespaceOf,
  omitKey,
  podHostname,
  podIPs,
  podRef,
} from './reconcile-util.js';

export interface EndpointsInput {
  /** The service, or undefined when it was deleted. */
  readonly service: Service | undefined;
  readonly namespace: string;
  readonly name: string;
  readonly pods: readonly Pod[];
  readonly existing: Endpoints | undefined;
  readonly triggerTime?: string;
}

type Subset = NonNullable<Endpoints['subsets']>[number];
type SubsetPort = NonNullable<Subset['ports']>[number];

/** Decides the Endpoints write for one Service. */
export function reconcileEndpoints(input: EndpointsInput): ReconcileResult {
  const { service, existing } = input;
  const warnings: string[] = [];
  if (service === undefined) {
    // The Service is gone: its Endpoints go with it.
    return {
      operations:
        existing === undefined
          ? []
          : [{ op: 'delete', kind: 'Endpoints', namespace: input.namespace, name: input.name }],
      warnings,
    };
  }
  if (!isSelectorService(service)) return { operations: [], warnings };

  const ns = namespaceOf(service);
  const publishNotReady = service.spec?.publishNotReadyAddresses === true;
  const family = serviceFamilies(service)[0];
  const groups = new Map<
    string,
    { ports: SubsetPort[]; ready: EndpointAddress[]; notReady: EndpointAddress[] }
  >();
  let total = 0;
  const pods = selectedPods(service, input.pods);
  for (const pod of pods) {
    if (isPodTerminal(pod)) continue;
    if (isPodTerminating(pod) && !publishNotReady) continue;
    const ip = podIPs(pod).find((a) => ipFamilyOfAddress(a) === family);
    if (ip === undefined) continue;
    const addr: EndpointAddress = { ip };
    const hostname = podHostname(service, pod);
    if (hostname !== undefined) addr.hostname = hostname;
    const nodeName = pod.spec?.nodeName;
    if (nodeName !== undefined && nodeName !== '') addr.nodeName = nodeName;
    addr.targetRef = podRef(pod);
    const eports = endpointPortsFor(service, pod);
    // A pod whose named ports resolve for none of several service ports serves nothing.
    if (eports.length === 0 && (service.spec?.ports ?? []).length > 0) {
      warnings.push(`Pod ${ns}/${nameOf(pod)}: no service port resolves; skipped`);
      continue;
    }
    const ports: SubsetPort[] = eports.map((p) => ({
      ...(p.name !== undefined && p.name !== '' ? { name: p.name } : {}),
      port: p.port ?? 0,
      protocol: p.protocol ?? 'TCP',
      ...(p.appProtocol !== undefined ? { appProtocol: p.appProtocol } : {}),
    }));
    const key = portsKey(eports);
    let g = groups.get(key);
    if (g === undefined) {
      g = { ports, ready: [], notReady: [] };
      groups.set(key, g);
    }
    if (total >= MAX_ENDPOINTS_ADDRESSES) continue;
    total += 1;
    if (publishNotReady || isPodReady(pod)) g.ready.push(addr);
    else g.notReady.push(addr);
  }
  const overCapacity = total >= MAX_ENDPOINTS_ADDRESSES && pods.length > MAX_ENDPOINTS_ADDRESSES;

  const subsets: Subset[] = [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, g]) => ({
      ...(g.ready.length > 0 ? { addresses: sortAddresses(g.ready) } : {}),
      ...(g.notReady.length > 0 ? { notReadyAddresses: sortAddresses(g.notReady) } : {}),
      ...(g.ports.length > 0 ? { ports: g.ports } : {}),
    }))
    .filter((s) => s.addresses !== undefined || s.notReadyAddresses !== undefined);

  const labels = omitKey(service.metadata?.labels, LABEL_HEADLESS);
  labels[LABEL_SKIP_MIRROR] = 'true';
  if (service.spec?.clusterIP === 'None') labels[LABEL_HEADLESS] = '';

  const annotations = omitKey(existing?.metadata?.annotations, ANNOTATION_ENDPOINTS_OVER_CAPACITY);
  if (overCapacity) annotations[ANNOTATION_ENDPOINTS_OVER_CAPACITY] = 'truncated';

  if (
    existing !== undefined &&
    deepEqual(existing.subsets ?? [], subsets) &&
    deepEqual(existing.metadata?.labels ?? {}, labels) &&
    deepEqual(withoutTrigger(existing.metadata?.annotations), withoutTrigger(annotations))
  )
    return { operations: [], warnings };

  if (input.triggerTime !== undefined)
    annotations[ANNOTATION_LAST_CHANGE_TRIGGER_TIME] = input.triggerTime;
  const prevMeta = { ...existing?.metadata };
  delete prevMeta.annotations;
  const metadata = {
    ...prevMeta,
    name: nameOf(service),
    namespace: ns,
    labels,
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
  const object: Endpoints = { apiVersion: 'v1', kind: 'Endpoints', metadata, subsets };
  const operation: Operation =
    existing === undefined
      ? { op: 'create', kind: 'Endpoints', object }
      : { op: 'update', kind: 'Endpoints', object };
  return { operations: [operation], warnings };
}

function sortAddresses(a: EndpointAddress[]): EndpointAddress[] {
  const key = (x: EndpointAddress): string =>
    `${(parseIPSloppy(x.ip)?.value ?? 0n).toString(16).padStart(32, '0')}/${canonicalJSON(x)}`;
  return a
    .map((x) => ({ x, k: key(x) }))
    .sort((p, q) => (p.k < q.k ? -1 : p.k > q.k ? 1 : 0))
    .map((p) => p.x);
}

function withoutTrigger(a: Record<string, string> | undefined): Record<string, string> {
  return omitKey(a, ANNOTATION_LAST_CHANGE_TRIGGER_TIME);
}
