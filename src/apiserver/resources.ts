// The resource types the embedded API server serves: group/version/kind, plural and short
// names, scope, categories, subresources and the field selectors each supports. Discovery,
// OpenAPI, routing, Table conversion and the store all read this one table. Pure data.

import type { KubeObject } from '../kube/types.js';

export type Subresource =
  | 'status'
  | 'scale'
  | 'finalize'
  | 'binding'
  | 'log'
  | 'eviction'
  | 'exec'
  | 'attach'
  | 'portforward';

export interface ResourceType {
  /** API group; '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Lower-case plural used in paths, e.g. `endpointslices`. */
  readonly plural: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly subresources: readonly Subresource[];
  /** Kind-specific field selector labels (metadata.name/namespace are always supported). */
  readonly fields: Readonly<Record<string, (o: KubeObject) => string | undefined>>;
  /** Whether the object has a spec/status split (status writes go through /status). */
  readonly hasStatus: boolean;
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export const RESOURCE_VERBS: readonly string[] = VERBS;

type Loose = Record<string, unknown>;

function dig(o: unknown, ...path: string[]): unknown {
  let cur: unknown = o;
  for (const p of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Loose)[p];
  }
  return cur;
}

function str(o: unknown, ...path: string[]): string | undefined {
  const v = dig(o, ...path);
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string'
    ? v
    : typeof v === 'boolean' || typeof v === 'number'
      ? String(v)
      : undefined;
}

function boolField(o: unknown, ...path: string[]): string {
  return dig(o, ...path) === true ? 'true' : 'false';
}

/** Field selectors whose value is the string at the label's own dotted path. */
function pathFields(...labels: string[]): ResourceType['fields'] {
  return Object.fromEntries(labels.map((l) => [l, (o: KubeObject) => str(o, ...l.split('.'))]));
}

function r(
  group: string,
  kind: string,
  plural: string,
  opts: Partial<Omit<ResourceType, 'group' | 'kind' | 'plural'>> = {},
): ResourceType {
  return {
    group,
    version: 'v1',
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced: true,
    shortNames: [],
    categories: [],
    subresources: [],
    fields: {},
    hasStatus: false,
    ...opts,
  };
}

export const NAMESPACES = r('', 'Namespace', 'namespaces', {
  namespaced: false,
  shortNames: ['ns'],
  subresources: ['status', 'finalize'],
  fields: pathFields('status.phase'),
  hasStatus: true,
});
export const NODES = r('', 'Node', 'nodes', {
  namespaced: false,
  shortNames: ['no'],
  subresources: ['status'],
  fields: { 'spec.unschedulable': (o) => boolField(o, 'spec', 'unschedulable') },
  hasStatus: true,
});
export const PODS = r('', 'Pod', 'pods', {
  shortNames: ['po'],
  categories: ['all'],
  subresources: ['status', 'binding', 'log', 'eviction', 'exec', 'attach', 'portforward'],
  fields: {
    ...pathFields(
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
    ),
    'spec.hostNetwork': (o) => boolField(o, 'spec', 'hostNetwork'),
    ...pathFields('status.phase', 'status.podIP'),
    'status.podIPs': (o) => str(o, 'status', 'podIP'),
    ...pathFields('status.nominatedNodeName'),
  },
  hasStatus: true,
});
export const SERVICES = r('', 'Service', 'services', {
  shortNames: ['svc'],
  categories: ['all'],
  subresources: ['status'],
  fields: pathFields('spec.clusterIP', 'spec.type'),
  hasStatus: true,
});
export const ENDPOINTS = r('', 'Endpoints', 'endpoints', {
  singular: 'endpoints',
  shortNames: ['ep'],
});
export const EVENTS = r('', 'Event', 'events', {
  shortNames: ['ev'],
  fields: {
    ...pathFields(
      'involvedObject.kind',
      'involvedObject.namespace',
      'involvedObject.name',
      'involvedObject.uid',
      'involvedObject.apiVersion',
      'involvedObject.resourceVersion',
      'involvedObject.fieldPath',
      'reason',
      'reportingComponent',
    ),
    source: (o) => str(o, 'source', 'component'),
    ...pathFields('type'),
  },
});
export const CONFIGMAPS = r('', 'ConfigMap', 'configmaps', { shortNames: ['cm'] });
export const SERVICEACCOUNTS = r('', 'ServiceAccount', 'serviceaccounts', { shortNames: ['sa'] });
export const ENDPOINTSLICES = r('discovery.k8s.io', 'EndpointSlice', 'endpointslices');
export const DEPLOYMENTS = r('apps', 'Deployment', 'deployments', {
  shortNames: ['deploy'],
  categories: ['all'],
  subresources: ['status', 'scale'],
  hasStatus: true,
});
export const REPLICASETS = r('apps', 'ReplicaSet', 'replicasets', {
  shortNames: ['rs'],
  categories: ['all'],
  subresources: ['status', 'scale'],
  fields: { 'status.replicas': (o) => str(o, 'status', 'replicas') ?? '0' },
  hasStatus: true,
});
export const STATEFULSETS = r('apps', 'StatefulSet', 'statefulsets', {
  shortNames: ['sts'],
  categories: ['all'],
  subresources: ['status', 'scale'],
  hasStatus: true,
});
export const DAEMONSETS = r('apps', 'DaemonSet', 'daemonsets', {
  shortNames: ['ds'],
  categories: ['all'],
  subresources: ['status'],
  hasStatus: true,
});

/** The DaemonSet controller's template history (`kubectl rollout history/undo ds/NAME`). */
export const CONTROLLERREVISIONS = r('apps', 'ControllerRevision', 'controllerrevisions');

/** rbac.authorization.k8s.io/v1: stored and served for kubectl; nothing enforces them. */
const RBAC = 'rbac.authorization.k8s.io';
export const CLUSTERROLES = r(RBAC, 'ClusterRole', 'clusterroles', { namespaced: false });
export const CLUSTERROLEBINDINGS = r(RBAC, 'ClusterRoleBinding', 'clusterrolebindings', {
  namespaced: false,
});
export const ROLES = r(RBAC, 'Role', 'roles');
export const ROLEBINDINGS = r(RBAC, 'RoleBinding', 'rolebindings');

/** networking.k8s.io/v1 (GA in Kubernetes 1.33): the ranges ClusterIPs come from. */
export const SERVICECIDRS = r('networking.k8s.io', 'ServiceCIDR', 'servicecidrs', {
  namespaced: false,
  subresources: ['status'],
  hasStatus: true,
});

/** Every served resource, in discovery order. */
export const RESOURCES: readonly ResourceType[] = [
  NAMESPACES,
  NODES,
  PODS,
  SERVICES,
  ENDPOINTS,
  EVENTS,
  CONFIGMAPS,
  SERVICEACCOUNTS,
  ENDPOINTSLICES,
  DEPLOYMENTS,
  REPLICASETS,
  STATEFULSETS,
  DAEMONSETS,
  CONTROLLERREVISIONS,
  SERVICECIDRS,
  CLUSTERROLES,
  CLUSTERROLEBINDINGS,
  ROLES,
  ROLEBINDINGS,
];

/** `apps/v1`, or `v1` for the core group. */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group === '' ? rt.version : `${rt.group}/${rt.version}`;
}

/** Stable key of a resource type in the store and the data dir: `apps/deployments`. */
export function resourceKey(rt: ResourceType): string {
  return rt.group === '' ? rt.plural : `${rt.group}/${rt.plural}`;
}

/** Served group versions, core first, each with its resources. */
export function groupVersions(): { group: string; version: string; resources: ResourceType[] }[] {
  const out: { group: string; version: string; resources: ResourceType[] }[] = [];
  for (const rt of RESOURCES) {
    let gv = out.find((g) => g.group === rt.group && g.version === rt.version);
    if (!gv) {
      gv = { group: rt.group, version: rt.version, resources: [] };
      out.push(gv);
    }
    gv.resources.push(rt);
  }
  return out;
}

export function findResource(
  group: string,
  version: string,
  plural: string,
): ResourceType | undefined {
  return RESOURCES.find(
    (rt) => rt.group === group && rt.version === version && rt.plural === plural,
  );
}

export function findResourceByKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCES.find((rt) => apiVersionOf(rt) === apiVersion && rt.kind === kind);
}

/** Value of a field selector label for an object (metadata.name/namespace for every kind). */
export function fieldValue(rt: ResourceType, o: KubeObject, field: string): string | undefined {
  if (field === 'metadata.name') return o.metadata?.name;
  if (field === 'metadata.namespace') return o.metadata?.namespace ?? '';
  return rt.fields[field]?.(o);
}

/** The field selector labels a resource supports. */
export function supportedFields(rt: ResourceType): Set<string> {
  return new Set(['metadata.name', 'metadata.namespace', ...Object.keys(rt.fields)]);
}
