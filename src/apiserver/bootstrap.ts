// What kube-apiserver creates for itself at start-up: the system namespaces, the default
// ServiceCIDR `kubernetes` (the service ranges) and the `default/kubernetes` Service (first address of the service range, port 443 named https)
// with its Endpoints and EndpointSlice pointing at the API server's advertised address,
// reconciled on every start so a new address or port replaces the old one, and again every
// few seconds by `startBootstrapLoop` so a deleted one comes back (as kube-apiserver's
// bootstrap controller does). Store calls and timers from an injected clock only.

import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../kube/names.js';
import { clone, deepEqual } from '../util/json.js';
import type { StoredObject } from './object.js';
import { DEFAULT_SERVICE_CIDR_NAME } from '../kube/service-cidr.js';
import {
  ENDPOINTS,
  ENDPOINTSLICES,
  NAMESPACES,
  SERVICECIDRS,
  SERVICES,
  type ResourceType,
} from './resources.js';
import type { Clock, TimerHandle } from '../util/clock.js';
import type { Store } from './store.js';

export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export interface BootstrapConfig {
  /** Address clients (pods, the lab's components) reach the API server at. */
  readonly advertiseAddress: string;
  readonly port: number;
  /** ClusterIP of the `kubernetes` Service (first address of the primary range). */
  readonly serviceIP: string;
  /**
   * The service ranges (--service-cluster-ip-range): the default ServiceCIDR `kubernetes` is
   * created from them when missing. An existing one is left as it is, as kube-apiserver does.
   */
  readonly serviceCIDRs?: readonly string[];
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

/**
 * Creates or repairs the objects kube-apiserver owns. Each step runs even when an earlier one
 * failed (a namespace still terminating, a storage error); the first error is thrown at the end.
 */
export function bootstrap(store: Store, cfg: BootstrapConfig): void {
  const errors: unknown[] = [];
  const step = (fn: () => void): void => {
    try {
      fn();
    } catch (e) {
      errors.push(e);
    }
  };
  for (const name of SYSTEM_NAMESPACES)
    step(() => {
      if (!store.tryGet(NAMESPACES, undefined, name))
        store.create(NAMESPACES, undefined, { metadata: { name } });
    });
  step(() => {
    ensureKubernetesService(store, cfg);
  });
  const cidrs = cfg.serviceCIDRs ?? [];
  if (cidrs.length > 0)
    step(() => {
      if (!store.tryGet(SERVICECIDRS, undefined, DEFAULT_SERVICE_CIDR_NAME))
        store.create(SERVICECIDRS, undefined, {
          metadata: { name: DEFAULT_SERVICE_CIDR_NAME },
          spec: { cidrs: [...cidrs] },
        });
    });
  const family = cfg.advertiseAddress.includes(':') ? 'IPv6' : 'IPv4';
  step(() => {
    ensure(store, ENDPOINTS, 'default', {
      metadata: {
        name: 'kubernetes',
        labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' },
      },
      subsets: [
        {
          addresses: [{ ip: cfg.advertiseAddress }],
          ports: [{ name: 'https', port: cfg.port, protocol: 'TCP' }],
        },
      ],
    });
  });
  step(() => {
    ensure(store, ENDPOINTSLICES, 'default', {
      metadata: {
        name: 'kubernetes',
        labels: { [LABEL_SERVICE_NAME]: 'kubernetes', [LABEL_MANAGED_BY]: 'kube-apiserver' },
      },
      addressType: family,
      endpoints: [{ addresses: [cfg.advertiseAddress], conditions: { ready: true } }],
      ports: [{ name: 'https', port: cfg.port, protocol: 'TCP' }],
    });
  });
  if (errors.length > 0) throw errors[0];
}

function ensureKubernetesService(store: Store, cfg: BootstrapConfig): void {
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
}

export interface BootstrapLoop {
  stop(): void;
}

/**
 * Runs `bootstrap` every `intervalMs` (default 5 s, so a deleted system object is back within
 * 10 s); failures go to onError and the loop goes on.
 */
export function startBootstrapLoop(
  store: Store,
  cfg: BootstrapConfig,
  opts: { clock: Clock; intervalMs?: number; onError?: (e: unknown) => void },
): BootstrapLoop {
  const interval = opts.intervalMs ?? 5000;
  let handle: TimerHandle | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped) return;
    try {
      bootstrap(store, cfg);
    } catch (e) {
      opts.onError?.(e);
    }
    handle = opts.clock.setTimeout(tick, interval);
  };
  handle = opts.clock.setTimeout(tick, interval);
  return {
    stop: () => {
      stopped = true;
      if (handle) opts.clock.clearTimeout(handle);
    },
  };
}
