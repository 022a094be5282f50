// Builders of Services, EndpointSlices, Pods and Nodes for unit, integration and e2e tests and
// for the benchmarks: a key (`ns/name`, or `name` in namespace `default`) and a terse options
// object in, a complete wire object out. Defaults are the smallest object that means something
// (one TCP port 80 named http; one 8080 endpoint port; a Ready Node); everything a test asserts
// on should be passed explicitly. A `null` option leaves the field out. Not used at run time.

import { LABEL_HOSTNAME, LABEL_SERVICE_NAME, LABEL_TOPOLOGY_ZONE } from './names.js';
import type {
  Container,
  Endpoint,
  EndpointSlice,
  KubeObject,
  Node,
  ObjectMeta,
  Pod,
  PodCondition,
  Service,
  ServicePort,
  ServiceSpec,
} from './types.js';

/** `ns/name` → [ns, name]; a bare `name` is in namespace `default`. */
export function splitKey(key: string): [namespace: string, name: string] {
  const i = key.indexOf('/');
  return i < 0 ? ['default', key] : [key.slice(0, i), key.slice(i + 1)];
}

/** Spec fields of `service()`; `ports: null` builds a Service without ports. */
export type ServiceSpecOptions = Omit<ServiceSpec, 'ports'> & { ports?: ServicePort[] | null };

/**
 * A Service `ns/name` with the given spec. Ports default to one TCP port 80 named http; no
 * clusterIP unless given. `extra` adds top-level fields (status) and metadata (labels, uid…).
 */
export function service(
  key: string,
  spec: ServiceSpecOptions = {},
  extra: Partial<Service> = {},
): Service {
  const [namespace, name] = splitKey(key);
  const { ports, ...rest } = spec;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    ...extra,
    metadata: { namespace, name, ...extra.metadata },
    spec: {
      ...(ports === null ? {} : { ports: ports ?? [{ name: 'http', port: 80, protocol: 'TCP' }] }),
      ...rest,
    },
  };
}

/** An endpoint with one address; `more` adds conditions, nodeName, hostname, hints. */
export function endpoint(ip: string, more: Partial<Endpoint> = {}): Endpoint {
  return { addresses: [ip], ...more };
}

export interface SliceOptions {
  /** The slice is named `<service>-<n>` (default 1), unless `name` is given. */
  readonly n?: number;
  readonly name?: string;
  /** Default: one TCP port 8080 named http; `null` leaves ports out. */
  readonly ports?: EndpointSlice['ports'] | null;
  readonly addressType?: EndpointSlice['addressType'];
  /** Labels besides kubernetes.io/service-name. */
  readonly labels?: Record<string, string>;
  /** Other metadata (uid, ownerReferences, resourceVersion…). */
  readonly metadata?: ObjectMeta;
}

/** An EndpointSlice of Service `ns/service`, labelled with kubernetes.io/service-name. */
export function slice(
  serviceKey: string,
  endpoints: Endpoint[],
  o: SliceOptions = {},
): EndpointSlice {
  const [namespace, service] = splitKey(serviceKey);
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace,
      name: o.name ?? `${service}-${String(o.n ?? 1)}`,
      ...o.metadata,
      labels: { [LABEL_SERVICE_NAME]: service, ...o.labels },
    },
    addressType: o.addressType ?? 'IPv4',
    endpoints,
    ...(o.ports === null
      ? {}
      : { ports: o.ports ?? [{ name: 'http', port: 8080, protocol: 'TCP' }] }),
  };
}

export interface PodOptions {
  /** Default `{app: 'web'}`. */
  readonly labels?: Record<string, string>;
  /** One IP, several (dual-stack), or null for none; default 10.244.0.2. */
  readonly ip?: string | string[] | null;
  /** spec.nodeName; default node-a; null for an unscheduled (Pending) Pod. */
  readonly node?: string | null;
  /** The Ready condition; default true. */
  readonly ready?: boolean;
  /** Sets deletionTimestamp. */
  readonly terminating?: boolean;
  /** Default Running when scheduled, else Pending. */
  readonly phase?: NonNullable<Pod['status']>['phase'];
  readonly containers?: Container[];
  readonly hostname?: string;
  readonly subdomain?: string;
  /** The controller that owns the Pod (a ReplicaSet unless the owner's kind says otherwise). */
  readonly owner?: KubeObject & { kind?: string };
  /** creationTimestamp; default 2026-01-01T00:00:00Z. */
  readonly created?: string;
}

/** A Pod `ns/name` with uid `pod-uid-<name>`, by default scheduled, Running and Ready. */
export function pod(key: string, o: PodOptions = {}): Pod {
  const [namespace, name] = splitKey(key);
  const ips = o.ip === null ? [] : Array.isArray(o.ip) ? o.ip : [o.ip ?? '10.244.0.2'];
  const ready = o.ready ?? true;
  const node = o.node === null ? undefined : (o.node ?? 'node-a');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      uid: `pod-uid-${name}`,
      labels: o.labels ?? { app: 'web' },
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
      ...(o.terminating === true ? { deletionTimestamp: '2026-01-01T00:01:00Z' } : {}),
      ...(o.owner !== undefined
        ? {
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: o.owner.kind ?? 'ReplicaSet',
                name: o.owner.metadata?.name ?? '',
                uid: o.owner.metadata?.uid ?? '',
                controller: true,
              },
            ],
          }
        : {}),
    },
    spec: {
      containers: o.containers ?? [{ name: 'c', image: 'nginx', ports: [{ containerPort: 80 }] }],
      ...(node !== undefined ? { nodeName: node } : {}),
      ...(o.hostname !== undefined ? { hostname: o.hostname } : {}),
      ...(o.subdomain !== undefined ? { subdomain: o.subdomain } : {}),
    },
    status: {
      phase: o.phase ?? (node === undefined ? 'Pending' : 'Running'),
      ...(ips.length > 0 ? { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) } : {}),
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

export interface NodeOptions {
  /** topology.kubernetes.io/zone. */
  readonly zone?: string;
  /** spec.podCIDR and spec.podCIDRs. */
  readonly podCIDR?: string;
  /** The InternalIP address. */
  readonly ip?: string;
  readonly unschedulable?: boolean;
  /** Status of the Ready condition; default True. */
  readonly ready?: PodCondition['status'];
}

/** A Node with uid `node-uid-<name>` and the kubernetes.io/hostname label. */
export function node(name: string, o: NodeOptions = {}): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: `node-uid-${name}`,
      labels: {
        [LABEL_HOSTNAME]: name,
        ...(o.zone !== undefined ? { [LABEL_TOPOLOGY_ZONE]: o.zone } : {}),
      },
    },
    spec: {
      ...(o.podCIDR !== undefined ? { podCIDR: o.podCIDR, podCIDRs: [o.podCIDR] } : {}),
      ...(o.unschedulable !== undefined ? { unschedulable: o.unschedulable } : {}),
    },
    status: {
      addresses: o.ip !== undefined ? [{ type: 'InternalIP', address: o.ip }] : [],
      conditions: [{ type: 'Ready', status: o.ready ?? 'True' }],
    },
  };
}
