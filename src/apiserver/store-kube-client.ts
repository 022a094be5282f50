// The in-memory Kubernetes for tests, dry runs and demos: a `KubeClient` over the API server's
// own `Store` (with the real strategies: defaulting, validation, ClusterIP/NodePort
// allocation), so controllers and informers run on real API semantics — resourceVersion and
// 409 Conflict, AlreadyExists, generateName, generation, spec/status separation, graceful pod
// deletion, owner-reference garbage collection, label selectors and watch. It does what the
// HTTP edge does between a request and the store (schema check, merge patch, pods/binding)
// and turns `ApiError`s into the `KubeApiError`s the real client raises. Informers that follow
// it come from `Store.watch`. No I/O; writes are synchronous (a Store without a backend).

import type {
  ApiKind,
  ApiKindMap,
  DeleteOptions,
  KubeClient,
  ListOptions,
} from '../kube/api-client.js';
import { KIND_INFO, KubeApiError } from '../kube/api-client.js';
import { FakeInformer } from '../kube/informer.js';
import type { KubeObject } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { clone } from '../util/json.js';
import { type StoredObject } from './object.js';
import { applyMergePatch, withPatchResourceVersion } from './patch.js';
import { bindPod } from './pod-binding.js';
import { findResourceByKind, type ResourceType } from './resources.js';
import { checkBodySchema } from './schema.js';
import { ApiError } from './status.js';
import type { Store } from './store.js';

/** The served resource of each kind the client handles (KIND_INFO's apiVersion + kind). */
const RESOURCE_OF = Object.fromEntries(
  Object.entries(KIND_INFO).map(([kind, info]) => {
    const rt = findResourceByKind(info.apiVersion, kind);
    if (rt === undefined) throw new Error(`store-kube-client: ${kind} is not served`);
    return [kind, rt];
  }),
) as Readonly<Record<ApiKind, ResourceType>>;

export interface StoreKubeClientOptions {
  /** Clock for what the HTTP edge stamps itself (the PodScheduled condition of a binding). */
  readonly now?: () => number;
}

/**
 * KubeClient on a `Store`. Objects are copied on the way out, so callers never share the
 * store's objects; every rejection is a `KubeApiError` with the status the HTTP API answers.
 */
export class StoreKubeClient implements KubeClient {
  readonly store: Store;
  private readonly now: () => number;

  constructor(store: Store, opts: StoreKubeClientOptions = {}) {
    this.store = store;
    this.now = opts.now ?? Date.now;
  }

  /**
   * An informer whose cache follows the store through `Store.watch` (initial ADDED events
   * included), synchronously; `start()` marks it synced, `stop()` ends the watch.
   */
  informer<K extends ApiKind>(kind: K): FakeInformer<ApiKindMap[K]> {
    const inf = new FakeInformer<ApiKindMap[K]>([], () => {
      watch.stop();
    });
    const watch = this.store.watch(RESOURCE_OF[kind], undefined, {}, (ev) => {
      const obj = clone(ev.object) as unknown as ApiKindMap[K];
      if (ev.type === 'DELETED') inf.delete(objectKey(obj));
      else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') inf.upsert(obj);
    });
    return inf;
  }

  get<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
  ): Promise<ApiKindMap[K] | undefined> {
    return this.run(kind, () => {
      const o = this.store.tryGet(RESOURCE_OF[kind], namespace, name);
      return o === undefined ? undefined : out(kind, o);
    });
  }

  list<K extends ApiKind>(kind: K, opts: ListOptions = {}): Promise<ApiKindMap[K][]> {
    return this.run(kind, () =>
      this.store
        .list(RESOURCE_OF[kind], opts.namespace, { labelSelector: opts.labelSelector ?? '' })
        .items.map((o) => out(kind, o)),
    );
  }

  create<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    return this.run(kind, () => {
      const rt = RESOURCE_OF[kind];
      checkBodySchema(rt, obj);
      return out(kind, this.store.create(rt, scopeOf(rt, obj), obj));
    });
  }

  update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    return this.replace(kind, obj, undefined);
  }

  updateStatus<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
    return this.replace(kind, obj, 'status');
  }

  private replace<K extends ApiKind>(
    kind: K,
    obj: ApiKindMap[K],
    subresource: 'status' | undefined,
  ): Promise<ApiKindMap[K]> {
    return this.run(kind, () => {
      const rt = RESOURCE_OF[kind];
      if (subresource === 'status' && !rt.hasStatus)
        throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      checkBodySchema(rt, obj);
      const name = obj.metadata?.name ?? '';
      const opts = subresource !== undefined ? { subresource } : {};
      return out(kind, this.store.update(rt, scopeOf(rt, obj), name, obj, opts));
    });
  }

  patch<K extends ApiKind>(
    kind: K,
    namespace: string,
    name: string,
    patch: Record<string, unknown>,
  ): Promise<ApiKindMap[K]> {
    return this.run(kind, () => {
      const rt = RESOURCE_OF[kind];
      const current = this.store.get(rt, namespace, name);
      const patched = applyMergePatch(current, patch);
      checkBodySchema(rt, patched);
      const next = withPatchResourceVersion(patched, current, patch);
      return out(kind, this.store.update(rt, namespace, name, next));
    });
  }

  delete(kind: ApiKind, namespace: string, name: string, opts: DeleteOptions = {}): Promise<void> {
    return this.run(kind, () => {
      this.store.delete(RESOURCE_OF[kind], namespace, name, {
        ...(opts.gracePeriodSeconds !== undefined
          ? { gracePeriodSeconds: opts.gracePeriodSeconds }
          : {}),
        ...(opts.propagationPolicy !== undefined
          ? { propagationPolicy: opts.propagationPolicy }
          : {}),
        ...(opts.uid !== undefined ? { preconditions: { uid: opts.uid } } : {}),
      });
    });
  }

  bind(namespace: string, name: string, nodeName: string): Promise<void> {
    return this.run('Pod', () => {
      bindPod(this.store, namespace, name, nodeName, { now: this.now(), dryRun: false });
    });
  }

  /** Runs one store call, as a promise rejected with a KubeApiError on failure. */
  private run<T>(kind: ApiKind, fn: () => T): Promise<T> {
    try {
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(toKubeApiError(e, kind));
    }
  }
}

/** The namespace a write of `obj` goes to (undefined for cluster-scoped kinds). */
function scopeOf(rt: ResourceType, obj: KubeObject): string | undefined {
  return rt.namespaced ? obj.metadata?.namespace : undefined;
}

function out<K extends ApiKind>(_kind: K, o: StoredObject): ApiKindMap[K] {
  return clone(o) as unknown as ApiKindMap[K];
}

function toKubeApiError(e: unknown, kind: ApiKind): KubeApiError {
  if (e instanceof KubeApiError) return e;
  if (e instanceof ApiError) return new KubeApiError(e.status, e.reason, e.message, { cause: e });
  const msg = e instanceof Error ? e.message : String(e);
  return new KubeApiError(500, 'InternalError', `${kind}: ${msg}`, { cause: e });
}
