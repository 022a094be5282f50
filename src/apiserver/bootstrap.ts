// What kube-apiserver creates for itself at start-up: the system namespaces and the
// `default/kubernetes` Service (first address of the service range, port 443 named https)
// with its Endpoints and EndpointSlice pointing at the API server's advertised address,
// reconciled on every start so a new address or port replaces the old one. Store calls only.

import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../kube/names.js';
import { clone, deepEqual, type StoredObject } from './object.js';
import { ENDPOINTS, ENDPOINTSLICES, NAMESPACES, SERVICES, type ResourceType } from './resources.js';
import type { Store } from './store.js';

export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export interface BootstrapConfig {
  /** Address clients (pods, the lab's components) reach the API server at. */
  readonly advertiseAddress: string;
  readonly port: number;
  /** ClusterIP of the `kubernetes` Service (first address of the primary range). */
  readonly serviceIP: string;
}

function ensure(
  store: Store,
  rt: ResourceType,
  ns: string | undefined,
  desired: StoredObject,
): void {
  const name = desired.metadata.name ?? '';
  const cur = store.tryGet(rt, ns, name);
  if (!cur) {
    store.create(rt, ns, desired);
    return;
  }
  const next = clone(cur) as Record<string, unknown>;
  let changed = false;
  for (const [k, v] of Object.entries(desired)) {
    if (k === 'metadata' || k === 'kind' || k === 'apiVersion') continue;
    if (!deepEqual(next[k], v)) {
      next[k] = v;
      changed = true;
    }
  }
  const labels = { ...cur.metadata.labels, ...desired.metadata.labels };
  if (!deepEqual(labels, cur.metadata.labels ?? {})) {
    (next.metadata as { labels?: Record<string, string> }).labels = labels;
    changed = true;
  }
  if (changed) store.update(rt, ns, name, next);
}

/** Creates or repairs the objects kube-apiserver owns. */
export function bootstrap(store: Store, cfg: BootstrapConfig): void {
  for (const name of SYSTEM_NAMESPACES)
    if (!store.tryGet(NAMESPACES, undefined, name))
      store.create(NAMESPACES, undefined, { metadata: { name } });
  const labels = { component: 'apiserver', provider: 'kubernetes' };
  const svc = store.tryGet(SERVICES, 'default', 'kubernetes');
  const port = { name: 'https', port: 443, protocol: 'TCP', targetPort: cfg.port };
  if (!svc)
    store.create(SERVICES, 'default', {
      metadata: { name: 'kubernetes', labels },
      spec: { type: 'ClusterIP', clusterIP: cfg.serviceIP, ports: [port], sessionAffinity: 'None' },
    });
  else {
    const spec = (svc.spec ?? {}) as { ports?: unknown[] };
    if (!deepEqual(spec.ports, [port])) {
      const next = clone(svc);
      (next as Record<string, unknown>).spec = { ...spec, ports: [port] };
      store.update(SERVICES, 'default', 'kubernetes', next);
    }
  }
  const family = cfg.advertiseAddress.includes(':') ? 'IPv6' : 'IPv4';
  ensure(store, ENDPOINTS, 'default', {
    metadata: { name: 'kubernetes', labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
    subsets: [
      {
        addresses: [{ ip: cfg.advertiseAddress }],
        ports: [{ name: 'https', port: cfg.port, protocol: 'TCP' }],
      },
    ],
  });
  ensure(store, ENDPOINTSLICES, 'default', {
    metadata: {
      name: 'kubernetes',
      labels: { [LABEL_SERVICE_NAME]: 'kubernetes', [LABEL_MANAGED_BY]: 'kube-apiserver' },
    },
    addressType: family,
    endpoints: [{ addresses: [cfg.advertiseAddress], conditions: { ready: true } }],
    ports: [{ name: 'https', port: cfg.port, protocol: 'TCP' }],
  });
}
