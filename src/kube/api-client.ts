// The write side of the Kubernetes API as the controllers need it: get/list/create/update/
// updateStatus/patch/delete (plus pod binding) for a closed set of kinds, on plain wire-JSON
// objects. `HttpKubeClient` talks to a real API server over HTTP (rest.ts). The in-memory implementation for
// tests and dry runs is apiserver/store-kube-client.ts: the API server's own Store, so fakes
// and the real server share one set of semantics. Reading with list+watch is
// informer.ts/client.ts's job.

import { SvcnetError } from '../errors.js';
import type { KubeConfig } from './kubeconfig.js';
import { KubeApiError, kubeRequest, type RequestOptions } from './rest.js';
import type {
  ControllerRevision,
  DaemonSet,
  Deployment,
  EndpointSlice,
  Endpoints,
  KubeObject,
  Node,
  Pod,
  ReplicaSet,
  Service,
  StatefulSet,
} from './types.js';

/** The kinds the client can read and write. */
export type ApiKind =
  | 'Pod'
  | 'Service'
  | 'Endpoints'
  | 'EndpointSlice'
  | 'Node'
  | 'Deployment'
  | 'ReplicaSet'
  | 'StatefulSet'
  | 'DaemonSet'
  | 'ControllerRevision';

export interface ApiKindMap {
  Pod: Pod;
  Service: Service;
  Endpoints: Endpoints;
  EndpointSlice: EndpointSlice;
  Node: Node;
  Deployment: Deployment;
  ReplicaSet: ReplicaSet;
  StatefulSet: StatefulSet;
  DaemonSet: DaemonSet;
  ControllerRevision: ControllerRevision;
}

export interface ListOptions {
  /** Namespace to list; all namespaces when absent (ignored for cluster-scoped kinds). */
  readonly namespace?: string;
  /** Label selector in the API's text grammar (see kube/selectors.ts), comma = AND. */
  readonly labelSelector?: string;
}

export interface DeleteOptions {
  readonly gracePeriodSeconds?: number;
  /** Precondition: delete only the object with this uid (409 otherwise). */
  readonly uid?: string;
  readonly propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
}

/**
 * Writes and point reads against the API. Every method rejects with a `KubeApiError`
 * (codes NOT_FOUND, CONFLICT for 409 AlreadyExists/Conflict, INVALID_INPUT for 400/422,
 * INTERNAL otherwise). `get` resolves undefined for a missing object instead of throwing.
 * Cluster-scoped kinds (Node) take namespace ''.
 */
export interface KubeClient {
  get<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
  ): Promise<ApiKindMap[K] | undefined>;
  list<K extends ApiKind>(kind: K, opts?: ListOptions): Promise<ApiKindMap[K][]>;
  create<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]>;
  /** PUT; a set metadata.resourceVersion that is not current gives CONFLICT. */
  update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]>;
  /** PUT on the status subresource (only status changes). */
  updateStatus<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]>;
  /** JSON merge patch (RFC 7386). */
  patch<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
  ): Promise<ApiKindMap[K]>;
  delete(kind: ApiKind, namespace: string, name: string, opts?: DeleteOptions): Promise<void>;
  /** Binds a pod to a node (the scheduler's write). CONFLICT when it is already bound. */
  bind(namespace: string, name: string, nodeName: string): Promise<void>;
}

export { KubeApiError };

export function isConflict(e: unknown): boolean {
  return e instanceof SvcnetError && e.code === 'CONFLICT';
}

export function isNotFound(e: unknown): boolean {
  return e instanceof SvcnetError && e.code === 'NOT_FOUND';
}

interface KindInfo {
  readonly apiVersion: string;
  /** Resource name as in URLs and Status messages. */
  readonly resource: string;
  readonly namespaced: boolean;
  readonly hasStatus: boolean;
}

function info(
  apiVersion: string,
  resource: string,
  namespaced: boolean,
  hasStatus: boolean,
): KindInfo {
  return { apiVersion, resource, namespaced, hasStatus };
}

export const KIND_INFO: Readonly<Record<ApiKind, KindInfo>> = {
  Pod: info('v1', 'pods', true, true),
  Service: info('v1', 'services', true, true),
  Endpoints: info('v1', 'endpoints', true, false),
  EndpointSlice: info('discovery.k8s.io/v1', 'endpointslices.discovery.k8s.io', true, false),
  Node: info('v1', 'nodes', false, true),
  Deployment: info('apps/v1', 'deployments.apps', true, true),
  ReplicaSet: info('apps/v1', 'replicasets.apps', true, true),
  StatefulSet: info('apps/v1', 'statefulsets.apps', true, true),
  DaemonSet: info('apps/v1', 'daemonsets.apps', true, true),
  ControllerRevision: info('apps/v1', 'controllerrevisions.apps', true, false),
};

/** The collection path of a kind across all namespaces (`/api/v1/pods`, `/apis/apps/v1/…`). */
export function collectionPath(kind: ApiKind): string {
  return objectPath(kind, '');
}

/** Lists every object of a kind with one GET, failing after `timeoutMs` of silence. */
export async function listAll<K extends ApiKind>(
  kc: KubeConfig,
  kind: K,
  timeoutMs: number,
): Promise<ApiKindMap[K][]> {
  const list = await kubeRequest<{ items?: ApiKindMap[K][] }>(kc, collectionPath(kind), {
    timeoutMs,
  });
  return list.items ?? [];
}

/**
 * The path of a kind's collection in a namespace (across namespaces for ''), or of one object
 * when `name` is given.
 */
function objectPath(kind: ApiKind, namespace: string, name?: string, sub?: string): string {
  const ki = KIND_INFO[kind];
  const plural = ki.resource.split('.')[0] ?? '';
  const prefix = ki.apiVersion === 'v1' ? '/api/v1' : `/apis/${ki.apiVersion}`;
  const ns =
    ki.namespaced && namespace !== '' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const obj = name !== undefined ? `/${encodeURIComponent(name)}` : '';
  return `${prefix}${ns}/${plural}${obj}${sub !== undefined ? `/${sub}` : ''}`;
}

/** KubeClient over HTTP (rest.ts). */
export class HttpKubeClient implements KubeClient {
  private readonly kc: KubeConfig;

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  private wire<K extends ApiKind>(kind: K, obj: unknown): ApiKindMap[K] {
    const wire = obj as ApiKindMap[K];
    wire.kind ??= kind as never;
    wire.apiVersion ??= KIND_INFO[kind].apiVersion;
    return wire;
  }

  private async call<K extends ApiKind>(
    kind: K,
    path: string,
    opts: RequestOptions,
    name: string,
  ): Promise<ApiKindMap[K]> {
    try {
      return this.wire(kind, await kubeRequest<unknown>(this.kc, path, opts));
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 0)
        throw new KubeApiError(0, e.reason, `${kind} ${name}: ${e.message}`, { cause: e.cause });
      throw e;
    }
  }

  async get<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
  ): Promise<ApiKindMap[K] | undefined> {
    try {
      return await this.call(kind, objectPath(kind, namespace, name), {}, name);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list<K extends ApiKind>(kind: K, opts: ListOptions = {}): Promise<ApiKindMap[K][]> {
    const path =
      opts.namespace !== undefined && KIND_INFO[kind].namespaced
        ? objectPath(kind, opts.namespace)
        : collectionPath(kind);
    const res = await kubeRequest<{ items?: unknown[] }>(this.kc, path, {
      query: { labelSelector: opts.labelSelector },
    });
    return (res.items ?? []).map((i) => this.wire(kind, i));
  }

  async create<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    const { name, namespace } = nameOf(obj);
    return this.call(
      kind,
      objectPath(kind, namespace),
      { method: 'POST', body: withTypeMeta(kind, obj) },
      name,
    );
  }

  async update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    const { name, namespace } = nameOf(obj);
    return this.call(
      kind,
      objectPath(kind, namespace, name),
      { method: 'PUT', body: withTypeMeta(kind, obj) },
      name,
    );
  }

  async updateStatus<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    if (!KIND_INFO[kind].hasStatus)
      throw new SvcnetError('UNSUPPORTED', `${kind} has no status subresource`);
    const { name, namespace } = nameOf(obj);
    return this.call(
      kind,
      objectPath(kind, namespace, name, 'status'),
      { method: 'PUT', body: withTypeMeta(kind, obj) },
      name,
    );
  }

  async patch<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
  ): Promise<ApiKindMap[K]> {
    return this.call(
      kind,
      objectPath(kind, namespace, name),
      { method: 'PATCH', body: patch, contentType: 'application/merge-patch+json' },
      name,
    );
  }

  async delete(
    kind: ApiKind,
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.uid !== undefined) body.preconditions = { uid: opts.uid };
    if (opts.propagationPolicy !== undefined) body.propagationPolicy = opts.propagationPolicy;
    await this.call(kind, objectPath(kind, namespace, name), { method: 'DELETE', body }, name);
  }

  async bind(namespace: string, name: string, nodeName: string): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace },
      target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
    };
    try {
      await kubeRequest(this.kc, objectPath('Pod', namespace, name, 'binding'), {
        method: 'POST',
        body,
      });
    } catch (e) {
      // An API server without pods/binding (404 or 405): set spec.nodeName directly.
      if (!(e instanceof KubeApiError) || (e.status !== 404 && e.status !== 405)) throw e;
      if (isNotFound(e) && (await this.get('Pod', namespace, name)) === undefined) throw e;
      await this.patch('Pod', namespace, name, { spec: { nodeName } });
    }
  }
}

function withTypeMeta<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): ApiKindMap[K] {
  return { ...obj, apiVersion: KIND_INFO[kind].apiVersion, kind };
}

function nameOf(obj: KubeObject): { name: string; namespace: string } {
  return { name: obj.metadata?.name ?? '', namespace: obj.metadata?.namespace ?? '' };
}
