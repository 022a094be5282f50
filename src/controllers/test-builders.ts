// Builders of Services, Pods, Nodes and workloads for the controllers' unit tests and dry
// runs: terse option bags in, complete wire objects out. Also `applyToStore`, which plays a
// reconciler's operations against a plain object list the way an API server would (names for
// generateName, uids, resourceVersions), so tests can check that a second pass is a no-op.

import type { ApiKind } from '../kube/api-client.js';
import type {
  Container,
  KubeObject,
  Node,
  Pod,
  Service,
  ServicePort,
  ServiceType,
} from '../kube/types.js';
import type { Operation } from './operations.js';

export interface SvcOpts {
  selector?: Record<string, string> | null;
  ports?: ServicePort[];
  clusterIP?: string;
  publishNotReadyAddresses?: boolean;
  trafficDistribution?: string;
  ipFamilies?: ('IPv4' | 'IPv6')[];
  labels?: Record<string, string>;
  type?: ServiceType;
}

export function svc(name: string, o: SvcOpts = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: 'default',
      uid: `svc-uid-${name}`,
      ...(o.labels !== undefined ? { labels: o.labels } : {}),
    },
    spec: {
      ...(o.selector === null ? {} : { selector: o.selector ?? { app: name } }),
      ports: o.ports ?? [{ name: 'http', port: 3000, targetPort: 80, protocol: 'TCP' }],
      clusterIP: o.clusterIP ?? '10.96.0.10',
      ...(o.ipFamilies !== undefined ? { ipFamilies: o.ipFamilies } : {}),
      ...(o.type !== undefined ? { type: o.type } : {}),
      ...(o.publishNotReadyAddresses !== undefined
        ? { publishNotReadyAddresses: o.publishNotReadyAddresses }
        : {}),
      ...(o.trafficDistribution !== undefined
        ? { trafficDistribution: o.trafficDistribution }
        : {}),
    },
  };
}

export interface PodOpts {
  labels?: Record<string, string>;
  ip?: string | string[] | null;
  node?: string | null;
  ready?: boolean;
  terminating?: boolean;
  phase?: NonNullable<Pod['status']>['phase'];
  containers?: Container[];
  hostname?: string;
  subdomain?: string;
  owner?: KubeObject & { kind?: string };
  created?: string;
}

export function pod(name: string, o: PodOpts = {}): Pod {
  const ips = o.ip === null ? [] : Array.isArray(o.ip) ? o.ip : [o.ip ?? '10.244.0.2'];
  const ready = o.ready ?? true;
  const node = o.node === null ? undefined : (o.node ?? 'node-a');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
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

export function node(
  name: string,
  o: { zone?: string; podCIDR?: string; ip?: string; unschedulable?: boolean } = {},
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: `node-uid-${name}`,
      labels: {
        'kubernetes.io/hostname': name,
        ...(o.zone !== undefined ? { 'topology.kubernetes.io/zone': o.zone } : {}),
      },
    },
    spec: {
      ...(o.podCIDR !== undefined ? { podCIDR: o.podCIDR, podCIDRs: [o.podCIDR] } : {}),
      ...(o.unschedulable !== undefined ? { unschedulable: o.unschedulable } : {}),
    },
    status: {
      addresses: o.ip !== undefined ? [{ type: 'InternalIP', address: o.ip }] : [],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

export function nodeMap(...nodes: Node[]): Map<string, Node> {
  return new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
}

let nameSeq = 0;

/**
 * Applies operations of one kind to a list as an API server would, returning the new list:
 * creates get a name (generateName + counter), uid and resourceVersion; updates replace by
 * name and bump resourceVersion; deletes remove by name.
 */
export function applyToStore<T extends KubeObject>(
  kind: ApiKind,
  store: readonly T[],
  ops: readonly Operation[],
): T[] {
  let out = [...store];
  for (const op of ops) {
    if (op.op !== 'bind' && op.kind !== kind) continue;
    if (op.op === 'create') {
      nameSeq += 1;
      const o = structuredClone(op.object) as T;
      const meta = (o.metadata ??= {});
      meta.name ??= `${meta.generateName ?? ''}x${String(nameSeq)}`;
      meta.uid = `uid-${meta.name}`;
      meta.resourceVersion = '1';
      out.push(o);
    } else if (op.op === 'update' || op.op === 'updateStatus') {
      const name = op.object.metadata?.name;
      out = out.map((o) => (o.metadata?.name === name ? (structuredClone(op.object) as T) : o));
    } else if (op.op === 'delete') {
      out = out.filter((o) => o.metadata?.name !== op.name);
    }
  }
  return out;
}
