// The write side of the Kubernetes API as the controllers need it: get/list/create/update/
// updateStatus/patch/delete (plus pod binding) for a closed set of kinds, on plain wire-JSON
// objects. `ClientNodeKubeClient` talks to a real API server through @kubernetes/client-node
// ~1.4 typed APIs (CoreV1Api, DiscoveryV1Api, AppsV1Api). The in-memory implementation for
// tests and dry runs is apiserver/store-kube-client.ts: the API server's own Store, so fakes
// and the real server share one set of semantics. Reading with list+watch is
// informer.ts/client.ts's job.

import * as k8s from '@kubernetes/client-node';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { SvcnetError } from '../errors.js';
import { toWire } from './wire.js';
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

/** An API error with its HTTP status and Kubernetes reason. */
export class KubeApiError extends SvcnetError {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message: string, options?: { cause?: unknown }) {
    super(codeForStatus(status), message, options);
    this.status = status;
    this.reason = reason;
    this.name = 'KubeApiError';
  }
}

function codeForStatus(status: number): SvcnetError['code'] {
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 400 || status === 422) return 'INVALID_INPUT';
  return 'INTERNAL';
}

export function isConflict(e: unknown): boolean {
  return e instanceof SvcnetError && e.code === 'CONFLICT';
}

export function isNotFound(e: unknown): boolean {
  return e instanceof SvcnetError && e.code === 'NOT_FOUND';
}

interface KindInfo {
  readonly api: 'core' | 'discovery' | 'apps';
  readonly apiVersion: string;
  readonly model: string;
  /** Resource name as in URLs and Status messages. */
  readonly resource: string;
  /** Stem of client-node's method names, e.g. `Pod` in `readNamespacedPod`. */
  readonly stem: string;
  readonly namespaced: boolean;
  readonly hasStatus: boolean;
}

export const KIND_INFO: Readonly<Record<ApiKind, KindInfo>> = {
  Pod: info('core', 'v1', 'V1Pod', 'pods', 'Pod', true, true),
  Service: info('core', 'v1', 'V1Service', 'services', 'Service', true, true),
  Endpoints: info('core', 'v1', 'V1Endpoints', 'endpoints', 'Endpoints', true, false),
  EndpointSlice: info(
    'discovery',
    'discovery.k8s.io/v1',
    'V1EndpointSlice',
    'endpointslices.discovery.k8s.io',
    'EndpointSlice',
    true,
    false,
  ),
  Node: info('core', 'v1', 'V1Node', 'nodes', 'Node', false, true),
  Deployment: info('apps', 'apps/v1', 'V1Deployment', 'deployments.apps', 'Deployment', true, true),
  ReplicaSet: info('apps', 'apps/v1', 'V1ReplicaSet', 'replicasets.apps', 'ReplicaSet', true, true),
  StatefulSet: info(
    'apps',
    'apps/v1',
    'V1StatefulSet',
    'statefulsets.apps',
    'StatefulSet',
    true,
    true,
  ),
  DaemonSet: info('apps', 'apps/v1', 'V1DaemonSet', 'daemonsets.apps', 'DaemonSet', true, true),
  ControllerRevision: info(
    'apps',
    'apps/v1',
    'V1ControllerRevision',
    'controllerrevisions.apps',
    'ControllerRevision',
    true,
    false,
  ),
};

function info(
  api: KindInfo['api'],
  apiVersion: string,
  model: string,
  resource: string,
  stem: string,
  namespaced: boolean,
  hasStatus: boolean,
): KindInfo {
  return { api, apiVersion, model, resource, stem, namespaced, hasStatus };
}

/** The collection path of a kind across all namespaces (`/api/v1/pods`, `/apis/apps/v1/…`). */
export function collectionPath(kind: ApiKind): string {
  const ki = KIND_INFO[kind];
  const plural = ki.resource.split('.')[0] ?? '';
  return ki.apiVersion === 'v1' ? `/api/v1/${plural}` : `/apis/${ki.apiVersion}/${plural}`;
}

/**
 * Lists every object of a kind with one plain GET on a connection of its own, the kubeconfig's
 * credentials applied, failing after `timeoutMs`. For callers that poll the whole cluster
 * (`lab up`'s readiness rounds): client-node's fetch path, under 7 concurrent lists of a
 * 300-Pod cluster on a loaded machine, sometimes never settled the Pod list and held no socket
 * either, so no timer of its own could fire; this one always settles.
 */
export async function listAll<K extends ApiKind>(
  kc: k8s.KubeConfig,
  kind: K,
  timeoutMs: number,
): Promise<ApiKindMap[K][]> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const opts: RequestOptions = {
    method: 'GET',
    hostname: server.hostname.replace(/^\[|\]$/g, ''),
    port: server.port,
    path: collectionPath(kind),
    headers: { Accept: 'application/json' },
    timeout: timeoutMs,
  };
  // CA, client certificate or token from the kubeconfig; then a connection of its own rather
  // than the keep-alive agent client-node makes.
  await kc.applyToHTTPSOptions(opts);
  opts.agent = false;
  const body = await new Promise<string>((resolve, reject) => {
    const req = (server.protocol === 'http:' ? httpRequest : httpsRequest)(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(text);
        else
          reject(
            new SvcnetError(
              'INTERNAL',
              `GET ${opts.path ?? ''}: ${String(res.statusCode)} ${text.slice(0, 200)}`,
            ),
          );
      });
    });
    req.on('timeout', () => {
      req.destroy(new Error(`GET ${opts.path ?? ''}: no answer in ${String(timeoutMs)} ms`));
    });
    req.on('error', reject);
    req.end();
  });
  return (JSON.parse(body) as { items?: ApiKindMap[K][] }).items ?? [];
}

type ApiMethod = (param: object, options?: k8s.ConfigurationOptions) => Promise<unknown>;
type ApiObject = Record<string, ApiMethod | undefined>;

/** KubeClient on @kubernetes/client-node's typed APIs. */
export class ClientNodeKubeClient implements KubeClient {
  private readonly apis: Record<KindInfo['api'], ApiObject>;

  constructor(kc: k8s.KubeConfig) {
    this.apis = {
      core: kc.makeApiClient(k8s.CoreV1Api) as unknown as ApiObject,
      discovery: kc.makeApiClient(k8s.DiscoveryV1Api) as unknown as ApiObject,
      apps: kc.makeApiClient(k8s.AppsV1Api) as unknown as ApiObject,
    };
  }

  private async call(
    kind: ApiKind,
    verb: string,
    suffix: string,
    param: object,
    options?: k8s.ConfigurationOptions,
  ): Promise<unknown> {
    const ki = KIND_INFO[kind];
    const scope = ki.namespaced && verb !== 'listAll' ? 'Namespaced' : '';
    const method =
      verb === 'listAll' && ki.namespaced
        ? `list${ki.stem}ForAllNamespaces`
        : `${verb === 'listAll' ? 'list' : verb}${scope}${ki.stem}${suffix}`;
    const api = this.apis[ki.api];
    const fn = api[method];
    if (fn === undefined)
      throw new SvcnetError('INTERNAL', `client-node has no method ${method} for ${kind}`);
    try {
      return await fn.call(api, param, options);
    } catch (e) {
      throw toKubeApiError(e, kind, param);
    }
  }

  private toWire<K extends ApiKind>(kind: K, obj: unknown): ApiKindMap[K] {
    const wire = toWire(obj, KIND_INFO[kind].model) as ApiKindMap[K];
    wire.kind ??= kind as never;
    wire.apiVersion ??= KIND_INFO[kind].apiVersion;
    return wire;
  }

  async get<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
  ): Promise<ApiKindMap[K] | undefined> {
    try {
      return this.toWire(kind, await this.call(kind, 'read', '', { name, namespace }));
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list<K extends ApiKind>(kind: K, opts: ListOptions = {}): Promise<ApiKindMap[K][]> {
    const param = {
      ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
      ...(opts.labelSelector !== undefined ? { labelSelector: opts.labelSelector } : {}),
    };
    const verb = opts.namespace !== undefined || !KIND_INFO[kind].namespaced ? 'list' : 'listAll';
    const res = (await this.call(kind, verb, '', param)) as { items?: unknown[] };
    return (res.items ?? []).map((i) => this.toWire(kind, i));
  }

  async create<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    const namespace = obj.metadata?.namespace ?? '';
    const body = withTypeMeta(kind, obj);
    return this.toWire(kind, await this.call(kind, 'create', '', { namespace, body }));
  }

  async update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    const { name, namespace } = nameOf(obj);
    const body = withTypeMeta(kind, obj);
    return this.toWire(kind, await this.call(kind, 'replace', '', { name, namespace, body }));
  }

  async updateStatus<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    if (!KIND_INFO[kind].hasStatus)
      throw new SvcnetError('UNSUPPORTED', `${kind} has no status subresource`);
    const { name, namespace } = nameOf(obj);
    const body = withTypeMeta(kind, obj);
    return this.toWire(kind, await this.call(kind, 'replace', 'Status', { name, namespace, body }));
  }

  async patch<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
  ): Promise<ApiKindMap[K]> {
    const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
    return this.toWire(
      kind,
      await this.call(kind, 'patch', '', { name, namespace, body: patch }, options),
    );
  }

  async delete(
    kind: ApiKind,
    namespace: string,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    const body: Record<string, unknown> = {};
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.uid !== undefined) body.preconditions = { uid: opts.uid };
    if (opts.propagationPolicy !== undefined) body.propagationPolicy = opts.propagationPolicy;
    await this.call(kind, 'delete', '', { name, namespace, body });
  }

  async bind(namespace: string, name: string, nodeName: string): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace },
      target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
    };
    try {
      await this.call('Pod', 'create', 'Binding', { name, namespace, body });
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

function toKubeApiError(e: unknown, kind: ApiKind, param: object): KubeApiError {
  if (e instanceof KubeApiError) return e;
  const name = 'name' in param ? String(param.name) : '';
  if (e instanceof k8s.ApiException) {
    const status = e.code;
    let reason = '';
    let message = `${kind} ${name}: HTTP ${status}`;
    const body: unknown = e.body;
    try {
      const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as {
        reason?: string;
        message?: string;
      };
      reason = parsed.reason ?? '';
      if (parsed.message !== undefined) message = parsed.message;
    } catch {
      // Body was not a Status; keep the generic message.
    }
    return new KubeApiError(status, reason, message, { cause: e });
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new KubeApiError(0, 'ConnectionError', `${kind} ${name}: ${msg}`, { cause: e });
}
