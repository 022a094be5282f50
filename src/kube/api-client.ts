// The write side of the Kubernetes API as the controllers need it: get/list/create/update/
// updateStatus/patch/delete (plus pod binding) for a closed set of kinds, on plain wire-JSON
// objects. `ClientNodeKubeClient` talks to a real API server through @kubernetes/client-node
// ~1.4 typed APIs (CoreV1Api, DiscoveryV1Api, AppsV1Api); `FakeKubeClient` is the in-memory
// implementation that models what the controllers depend on: resourceVersion, 409 Conflict on
// stale writes and duplicate names, generateName, generation, spec/status separation, graceful
// pod deletion and watch events. Reading with list+watch is informer.ts/client.ts's job.

import * as k8s from '@kubernetes/client-node';
import { SvcnetError } from '../errors.js';
import { toWire } from './wire.js';
import type {
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
  | 'StatefulSet';

export interface ApiKindMap {
  Pod: Pod;
  Service: Service;
  Endpoints: Endpoints;
  EndpointSlice: EndpointSlice;
  Node: Node;
  Deployment: Deployment;
  ReplicaSet: ReplicaSet;
  StatefulSet: StatefulSet;
}

export interface ListOptions {
  /** Namespace to list; all namespaces when absent (ignored for cluster-scoped kinds). */
  readonly namespace?: string;
  /** Equality-based selector: `k=v`, `k!=v`, `k`, `!k`, comma = AND. */
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

/** A watch event of FakeKubeClient. */
export interface FakeWatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly kind: ApiKind;
  readonly object: KubeObject;
}

export interface FakeKubeClientOptions {
  /** Clock for creationTimestamp/deletionTimestamp (ms since epoch). */
  readonly now?: () => number;
}

const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * In-memory KubeClient. Objects are deep-copied on the way in and out, so callers can never
 * mutate the store. Semantics modelled: one global resourceVersion counter; update with a
 * stale resourceVersion → CONFLICT; create of an existing name → CONFLICT (AlreadyExists);
 * generateName; generation bumps on spec change; update ignores status and updateStatus
 * changes only status; deleting a bound pod without gracePeriodSeconds 0 sets
 * deletionTimestamp (graceful) and a second delete with grace 0 removes it; Background
 * deletion cascades to dependents by controller ownerReference (the garbage collector).
 */
export class FakeKubeClient implements KubeClient {
  private readonly store = new Map<string, KubeObject>();
  private readonly watchers: ((ev: FakeWatchEvent) => void)[] = [];
  private rv = 0;
  private seq = 0;
  private readonly now: () => number;
  /** Every write, in order (`create Pod default/x`), for tests to assert on. */
  readonly writes: string[] = [];

  constructor(opts: FakeKubeClientOptions = {}) {
    this.now = opts.now ?? (() => Date.now());
  }

  /** Subscribes to every change; returns an unsubscribe function. */
  watch(fn: (ev: FakeWatchEvent) => void): () => void {
    this.watchers.push(fn);
    return () => {
      const i = this.watchers.indexOf(fn);
      if (i >= 0) this.watchers.splice(i, 1);
    };
  }

  /** Snapshot of every stored object of a kind (copies). */
  all<K extends ApiKind>(kind: K): ApiKindMap[K][] {
    const out: ApiKindMap[K][] = [];
    for (const [k, v] of this.store)
      if (k.startsWith(`${kind}|`)) out.push(clone(v) as ApiKindMap[K]);
    return out;
  }

  private key(kind: ApiKind, namespace: string, name: string): string {
    return `${kind}|${KIND_INFO[kind].namespaced ? namespace : ''}|${name}`;
  }

  private emit(type: FakeWatchEvent['type'], kind: ApiKind, obj: KubeObject): void {
    for (const w of [...this.watchers]) w({ type, kind, object: clone(obj) });
  }

  private nextRV(): string {
    this.rv += 1;
    return String(this.rv);
  }

  private notFound(kind: ApiKind, name: string): KubeApiError {
    return new KubeApiError(404, 'NotFound', `${KIND_INFO[kind].resource} "${name}" not found`);
  }

  get<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
  ): Promise<ApiKindMap[K] | undefined> {
    const o = this.store.get(this.key(kind, namespace, name));
    return Promise.resolve(o === undefined ? undefined : (clone(o) as ApiKindMap[K]));
  }

  list<K extends ApiKind>(kind: K, opts: ListOptions = {}): Promise<ApiKindMap[K][]> {
    const match = parseEqualitySelector(opts.labelSelector ?? '');
    const items = this.all(kind).filter(
      (o) =>
        (opts.namespace === undefined ||
          !KIND_INFO[kind].namespaced ||
          o.metadata?.namespace === opts.namespace) &&
        match(o.metadata?.labels ?? {}),
    );
    return Promise.resolve(items);
  }

  create<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    try {
      const o = clone(obj);
      const meta = (o.metadata ??= {});
      const namespace = KIND_INFO[kind].namespaced ? (meta.namespace ?? 'default') : undefined;
      if (namespace !== undefined) meta.namespace = namespace;
      else delete meta.namespace;
      if ((meta.name ?? '') === '') {
        if ((meta.generateName ?? '') === '')
          throw new KubeApiError(
            422,
            'Invalid',
            `${kind}: metadata.name or generateName is required`,
          );
        meta.name = `${meta.generateName ?? ''}${this.suffix()}`;
      }
      const name = meta.name ?? '';
      const key = this.key(kind, namespace ?? '', name);
      if (this.store.has(key))
        throw new KubeApiError(
          409,
          'AlreadyExists',
          `${KIND_INFO[kind].resource} "${name}" already exists`,
        );
      this.seq += 1;
      meta.uid = `uid-${this.seq}`;
      meta.resourceVersion = this.nextRV();
      meta.creationTimestamp = isoSeconds(this.now());
      meta.generation = 1;
      delete meta.deletionTimestamp;
      o.kind = kind;
      o.apiVersion = KIND_INFO[kind].apiVersion;
      this.store.set(key, o);
      this.writes.push(`create ${kind} ${namespace !== undefined ? `${namespace}/` : ''}${name}`);
      this.emit('ADDED', kind, o);
      return Promise.resolve(clone(o));
    } catch (e) {
      return Promise.reject(asError(e));
    }
  }

  private suffix(): string {
    this.seq += 1;
    let n = this.seq * 7919 + 104729;
    let s = '';
    for (let i = 0; i < 5; i++) {
      s += NAME_ALPHABET.charAt(n % NAME_ALPHABET.length);
      n = Math.floor(n / NAME_ALPHABET.length);
    }
    return s;
  }

  private existing(kind: ApiKind, obj: KubeObject): { key: string; cur: KubeObject } {
    const { name, namespace } = nameOf(obj);
    const key = this.key(kind, namespace, name);
    const cur = this.store.get(key);
    if (cur === undefined) throw this.notFound(kind, name);
    const rv = obj.metadata?.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== cur.metadata?.resourceVersion)
      throw new KubeApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${KIND_INFO[kind].resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    return { key, cur };
  }

  update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    return this.replace(kind, obj, 'update');
  }

  updateStatus<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    return this.replace(kind, obj, 'status');
  }

  private replace<K extends ApiKind>(
    kind: K,
    obj: ApiKindMap[K],
    mode: 'update' | 'status',
  ): Promise<ApiKindMap[K]> {
    try {
      const { key, cur } = this.existing(kind, obj);
      type Loose = KubeObject & { spec?: unknown; status?: unknown };
      const curL = cur as Loose;
      const next = clone(obj) as unknown as Loose;
      if (mode === 'status') {
        // Only status changes through the status subresource.
        const merged = clone(curL);
        merged.status = next.status;
        return Promise.resolve(this.commit(kind, key, cur, merged, `updateStatus`));
      }
      if (KIND_INFO[kind].hasStatus) next.status = curL.status;
      const curMeta = cur.metadata ?? {};
      const generation =
        JSON.stringify(next.spec) !== JSON.stringify(curL.spec)
          ? (curMeta.generation ?? 1) + 1
          : curMeta.generation;
      next.metadata = {
        ...next.metadata,
        ...pick(curMeta, ['uid', 'creationTimestamp', 'namespace', 'deletionTimestamp']),
        ...(generation !== undefined ? { generation } : {}),
      };
      return Promise.resolve(this.commit(kind, key, cur, next, 'update'));
    } catch (e) {
      return Promise.reject(asError(e));
    }
  }

  private commit<K extends ApiKind>(
    kind: K,
    key: string,
    cur: KubeObject,
    next: KubeObject,
    verb: string,
  ): ApiKindMap[K] {
    next.kind = kind;
    next.apiVersion = KIND_INFO[kind].apiVersion;
    next.metadata = { ...next.metadata, ...pick(cur.metadata ?? {}, ['resourceVersion']) };
    if (JSON.stringify(next) === JSON.stringify(cur)) return clone(cur) as ApiKindMap[K];
    next.metadata.resourceVersion = this.nextRV();
    this.store.set(key, next);
    this.writes.push(`${verb} ${kind} ${describeKey(next)}`);
    this.emit('MODIFIED', kind, next);
    return clone(next) as ApiKindMap[K];
  }

  patch<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
  ): Promise<ApiKindMap[K]> {
    const key = this.key(kind, namespace, name);
    const cur = this.store.get(key);
    if (cur === undefined) return Promise.reject(this.notFound(kind, name));
    const next = mergePatch(clone(cur), patch) as KubeObject;
    next.metadata = { ...next.metadata, ...pick(cur.metadata ?? {}, ['uid']) };
    const meta = next.metadata;
    if (
      JSON.stringify((next as { spec?: unknown }).spec) !==
      JSON.stringify((cur as { spec?: unknown }).spec)
    )
      meta.generation = (cur.metadata?.generation ?? 1) + 1;
    return Promise.resolve(this.commit(kind, key, cur, next, 'patch'));
  }

  delete(kind: ApiKind, namespace: string, name: string, opts: DeleteOptions = {}): Promise<void> {
    const key = this.key(kind, namespace, name);
    const cur = this.store.get(key);
    if (cur === undefined) return Promise.reject(this.notFound(kind, name));
    if (opts.uid !== undefined && opts.uid !== cur.metadata?.uid)
      return Promise.reject(
        new KubeApiError(
          409,
          'Conflict',
          `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${cur.metadata?.uid ?? ''}`,
        ),
      );
    const pod = kind === 'Pod' ? (cur as Pod) : undefined;
    const grace = opts.gracePeriodSeconds ?? pod?.spec?.terminationGracePeriodSeconds ?? 30;
    if (pod !== undefined && grace > 0 && (pod.spec?.nodeName ?? '') !== '') {
      if (pod.metadata?.deletionTimestamp !== undefined) return Promise.resolve();
      const next = clone(cur);
      const meta = (next.metadata ??= {});
      meta.deletionTimestamp = isoSeconds(this.now() + grace * 1000);
      meta.deletionGracePeriodSeconds = grace;
      this.commit(kind, key, cur, next, 'delete(graceful)');
      return Promise.resolve();
    }
    this.store.delete(key);
    this.writes.push(`delete ${kind} ${describeKey(cur)}`);
    const gone = clone(cur);
    (gone.metadata ??= {}).resourceVersion = this.nextRV();
    this.emit('DELETED', kind, gone);
    if (opts.propagationPolicy !== 'Orphan') this.collectDependents(cur.metadata?.uid ?? '');
    return Promise.resolve();
  }

  private collectDependents(uid: string): void {
    if (uid === '') return;
    for (const [key, o] of [...this.store]) {
      if (!(o.metadata?.ownerReferences ?? []).some((r) => r.uid === uid)) continue;
      const kind = key.split('|')[0] as ApiKind;
      const { name, namespace } = nameOf(o);
      void this.delete(kind, namespace, name).catch(() => undefined);
    }
  }

  async bind(namespace: string, name: string, nodeName: string): Promise<void> {
    const pod = await this.get('Pod', namespace, name);
    if (pod === undefined) throw this.notFound('Pod', name);
    if ((pod.spec?.nodeName ?? '') !== '')
      throw new KubeApiError(
        409,
        'Conflict',
        `pod ${name} is already assigned to node "${pod.spec?.nodeName ?? ''}"`,
      );
    await this.patch('Pod', namespace, name, { spec: { nodeName } });
  }
}

function describeKey(o: KubeObject): string {
  const ns = o.metadata?.namespace;
  return `${ns !== undefined && ns !== '' ? `${ns}/` : ''}${o.metadata?.name ?? ''}`;
}

function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function pick<T extends object>(o: T, fields: readonly (keyof T)[]): Partial<T> {
  const out: Partial<T> = {};
  for (const f of fields) if (o[f] !== undefined) out[f] = o[f];
  return out;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v !== null) out[k] = mergePatch(out[k], v);
  }
  return Object.fromEntries(Object.entries(out).filter(([k]) => patch[k] !== null));
}

/**
 * Parses an equality-based label selector (`a=b,c!=d,e,!f`) into a predicate. Set-based
 * terms (`in`, `notin`) are not supported by the Fake and match nothing.
 */
export function parseEqualitySelector(sel: string): (labels: Record<string, string>) => boolean {
  const terms = sel
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const preds = terms.map((t): ((l: Record<string, string>) => boolean) => {
    if (t.includes(' in ') || t.includes(' notin ')) return () => false;
    const ne = t.indexOf('!=');
    if (ne > 0) {
      const k = t.slice(0, ne);
      const v = t.slice(ne + 2);
      return (l) => l[k] !== v;
    }
    const eq = t.indexOf('=');
    if (eq > 0) {
      const k = t.slice(0, eq);
      const v = t.slice(t[eq + 1] === '=' ? eq + 2 : eq + 1);
      return (l) => l[k] === v;
    }
    if (t.startsWith('!')) return (l) => !(t.slice(1) in l);
    return (l) => t in l;
  });
  return (l) => preds.every((p) => p(l));
}
