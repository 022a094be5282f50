// Discovery and OpenAPI documents built from the resource table: aggregated discovery
// (apidiscovery.k8s.io v2 and v2beta1, negotiated from the Accept header exactly as client-go
// parses it), legacy APIVersions / APIGroupList / APIGroup / APIResourceList, and the minimal
// OpenAPI v3 that `kubectl apply` needs to see `fieldValidation` support per kind. Pure.

import {
  RESOURCE_VERBS,
  apiVersionOf,
  groupVersions,
  type ResourceType,
  type Subresource,
} from './resources.js';

export type DiscoveryVersion = 'v2' | 'v2beta1';

/**
 * Picks the aggregated discovery version the client asked for (v2 preferred), or undefined
 * for legacy discovery.
 */
export function negotiateDiscovery(accept: string | undefined): DiscoveryVersion | undefined {
  if (accept === undefined) return undefined;
  const wanted = new Set<string>();
  for (const part of accept.split(',')) {
    const params = new Map<string, string>();
    const [type = '', ...rest] = part.split(';').map((x) => x.trim());
    if (type !== 'application/json') continue;
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0) params.set(p.slice(0, eq).trim(), p.slice(eq + 1).trim());
    }
    if (params.get('g') === 'apidiscovery.k8s.io' && params.get('as') === 'APIGroupDiscoveryList') {
      const v = params.get('v');
      if (v !== undefined) wanted.add(v);
    }
  }
  if (wanted.has('v2')) return 'v2';
  if (wanted.has('v2beta1')) return 'v2beta1';
  return undefined;
}

export function discoveryContentType(v: DiscoveryVersion): string {
  return `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`;
}

const SUB_VERBS: Record<Subresource, string[]> = {
  status: ['get', 'patch', 'update'],
  scale: ['get', 'patch', 'update'],
  finalize: ['update'],
  binding: ['create'],
  log: ['get'],
  eviction: ['create'],
  exec: ['create', 'get'],
  attach: ['create', 'get'],
  portforward: ['create', 'get'],
};

function subKind(
  rt: ResourceType,
  sub: Subresource,
): { group: string; version: string; kind: string } {
  switch (sub) {
    case 'scale':
      return { group: 'autoscaling', version: 'v1', kind: 'Scale' };
    case 'binding':
      return { group: '', version: 'v1', kind: 'Binding' };
    case 'eviction':
      return { group: 'policy', version: 'v1', kind: 'Eviction' };
    case 'log':
      return { group: '', version: 'v1', kind: 'Pod' };
    case 'exec':
      return { group: '', version: 'v1', kind: 'PodExecOptions' };
    case 'attach':
      return { group: '', version: 'v1', kind: 'PodAttachOptions' };
    case 'portforward':
      return { group: '', version: 'v1', kind: 'PodPortForwardOptions' };
    default:
      return { group: rt.group, version: rt.version, kind: rt.kind };
  }
}

function aggregatedResource(rt: ResourceType): Record<string, unknown> {
  return {
    resource: rt.plural,
    responseKind: { group: rt.group, version: rt.version, kind: rt.kind },
    scope: rt.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: rt.singular,
    verbs: RESOURCE_VERBS,
    ...(rt.shortNames.length > 0 ? { shortNames: rt.shortNames } : {}),
    ...(rt.categories.length > 0 ? { categories: rt.categories } : {}),
    ...(rt.subresources.length > 0
      ? {
          subresources: rt.subresources.map((sub) => ({
            subresource: sub,
            responseKind: subKind(rt, sub),
            verbs: SUB_VERBS[sub],
          })),
        }
      : {}),
  };
}

/** Aggregated discovery for `/api` (core) or `/apis` (named groups). */
export function aggregatedDiscovery(core: boolean, v: DiscoveryVersion): Record<string, unknown> {
  const items = groupVersions()
    .filter((gv) => (gv.group === '') === core)
    .map((gv) => ({
      metadata: core ? { creationTimestamp: null } : { name: gv.group, creationTimestamp: null },
      versions: [
        {
          version: gv.version,
          resources: gv.resources.map(aggregatedResource),
          freshness: 'Current',
        },
      ],
    }));
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${v}`,
    metadata: {},
    items,
  };
}

export function legacyAPIVersions(serverAddress: string): Record<string, unknown> {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(group: string, version: string): Record<string, unknown> {
  const gv = { groupVersion: `${group}/${version}`, version };
  return { name: group, versions: [gv], preferredVersion: gv };
}

export function legacyAPIGroupList(): Record<string, unknown> {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groupVersions()
      .filter((gv) => gv.group !== '')
      .map((gv) => apiGroup(gv.group, gv.version)),
  };
}

export function legacyAPIGroup(group: string): Record<string, unknown> | undefined {
  const gv = groupVersions().find((g) => g.group === group && group !== '');
  return gv ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(gv.group, gv.version) } : undefined;
}

/** APIResourceList for one group version (kubectl, client-node's KubernetesObjectApi and svcnet's own apply read it). */
export function apiResourceList(
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const gv = findGroupVersion(group, version);
  if (!gv) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const rt of gv.resources) {
    resources.push({
      name: rt.plural,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: RESOURCE_VERBS,
      ...(rt.shortNames.length > 0 ? { shortNames: rt.shortNames } : {}),
      ...(rt.categories.length > 0 ? { categories: rt.categories } : {}),
    });
    for (const sub of rt.subresources) {
      const k = subKind(rt, sub);
      resources.push({
        name: `${rt.plural}/${sub}`,
        singularName: '',
        namespaced: rt.namespaced,
        ...(k.group !== rt.group ? { group: k.group, version: k.version } : {}),
        kind: k.kind,
        verbs: SUB_VERBS[sub],
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources,
  };
}

// ---- OpenAPI v3 ----

/** The served group version `group`/`version`, if there is one. */
function findGroupVersion(
  group: string,
  version: string,
): ReturnType<typeof groupVersions>[number] | undefined {
  return groupVersions().find((g) => g.group === group && g.version === version);
}

function gvPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/** Content hash of a group version's document (stable for a given resource table). */
function docHash(doc: unknown): string {
  const text = JSON.stringify(doc);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).toUpperCase().padStart(8, '0');
}

export function openAPIV3Root(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const gv of groupVersions()) {
    const p = gvPath(gv.group, gv.version);
    const doc = openAPIV3Document(gv.group, gv.version);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${docHash(doc)}` };
  }
  return { paths };
}

const FIELD_VALIDATION = {
  name: 'fieldValidation',
  in: 'query',
  description:
    'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
  schema: { type: 'string', uniqueItems: true },
};
const DRY_RUN = { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } };
const FIELD_MANAGER = {
  name: 'fieldManager',
  in: 'query',
  schema: { type: 'string', uniqueItems: true },
};

function operation(rt: ResourceType, verb: string, action: string): Record<string, unknown> {
  return {
    description: `${verb} ${rt.kind}`,
    operationId: `${verb}${rt.kind}`,
    parameters:
      action === 'get' || action === 'list' ? [] : [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION],
    responses: { '200': { description: 'OK' } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: rt.group, version: rt.version, kind: rt.kind },
  };
}

/** A group version's OpenAPI v3 document: paths with the operations kubectl looks at. */
export function openAPIV3Document(
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const gv = findGroupVersion(group, version);
  if (!gv) return undefined;
  const paths: Record<string, unknown> = {};
  const base = `/${gvPath(group, version)}`;
  for (const rt of gv.resources) {
    const coll = rt.namespaced
      ? `${base}/namespaces/{namespace}/${rt.plural}`
      : `${base}/${rt.plural}`;
    paths[coll] = { get: operation(rt, 'list', 'list'), post: operation(rt, 'create', 'post') };
    paths[`${coll}/{name}`] = {
      get: operation(rt, 'read', 'get'),
      put: operation(rt, 'replace', 'put'),
      patch: operation(rt, 'patch', 'patch'),
      delete: operation(rt, 'delete', 'delete'),
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.33.0' },
    paths,
    components: { schemas: {} },
  };
}

export function apiVersionString(rt: ResourceType): string {
  return apiVersionOf(rt);
}
