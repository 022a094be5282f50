// The real Informer: list, then watch from the list's resourceVersion, on our own HTTP client
// (rest.ts), as client-go's reflector does. It relists with backoff after any list or watch
// error (an API server restarting refuses connections for a while), resets the backoff once a
// watch opens again, relists at once after 410 Gone, re-watches from the
// last resourceVersion when the server ends a watch (its timeoutSeconds), and delivers plain
// wire-JSON objects, the old object on update, deletions a relist finds, and a synced signal.

import { hintFor, InformerError, summarizeApiError } from './api-errors.js';
import type { ApiClientOrigin, ApiFailureReason } from './api-errors.js';
import { InformerCache, type Informer } from './informer.js';
import { KubeConfig } from './kubeconfig.js';
import { kubeRequest, kubeWatch, KubeApiError, type Watch } from './rest.js';
import type { EndpointSlice, KubeObject, Node, Pod, Service, ServiceCIDR } from './types.js';
import { objectKey } from './types.js';

export { KubeConfig, loadKubeConfig, resolveKubeConfig } from './kubeconfig.js';
export type { KubeConfigEnv } from './kubeconfig.js';

/** Failure reasons already explained, per client configuration (the hint comes once each). */
const explained = new WeakMap<KubeConfig, Set<ApiFailureReason>>();

function originOf(kc: KubeConfig): ApiClientOrigin {
  return { source: kc.source, server: kc.server, user: kc.user.name };
}

/**
 * One line for a failed list or watch, with the count and backoff; the first failure of each
 * reason per client configuration also says what to check.
 */
export function informerError(
  kc: KubeConfig,
  resource: string,
  err: unknown,
  failures: number,
  retryInMs: number,
): InformerError {
  const failure = summarizeApiError(err);
  let seen = explained.get(kc);
  if (seen === undefined) {
    seen = new Set();
    explained.set(kc, seen);
  }
  const first = !seen.has(failure.reason);
  seen.add(failure.reason);
  return new InformerError(
    resource,
    failure,
    failures,
    retryInMs,
    first ? hintFor(failure.reason, originOf(kc)) : undefined,
    err,
  );
}

export interface ResourceSpec {
  /** Collection path across namespaces, e.g. `/api/v1/services`. */
  readonly path: string;
}

/** A resource from its group/version prefix and plural: `<prefix>/<plural>`. */
function resource(prefix: string, plural: string): ResourceSpec {
  return { path: `${prefix}/${plural}` };
}

const CORE = '/api/v1';
const APPS = '/apis/apps/v1';
const NETWORKING = '/apis/networking.k8s.io/v1';
const DISCOVERY = '/apis/discovery.k8s.io/v1';

export const SERVICES = resource(CORE, 'services');
export const ENDPOINT_SLICES = resource(DISCOVERY, 'endpointslices');
export const NODES = resource(CORE, 'nodes');
export const PODS = resource(CORE, 'pods');
export const ENDPOINTS = resource(CORE, 'endpoints');
export const DEPLOYMENTS = resource(APPS, 'deployments');
export const REPLICA_SETS = resource(APPS, 'replicasets');
export const STATEFUL_SETS = resource(APPS, 'statefulsets');
export const DAEMON_SETS = resource(APPS, 'daemonsets');
export const CONTROLLER_REVISIONS = resource(APPS, 'controllerrevisions');
export const NAMESPACES = resource(CORE, 'namespaces');
export const CONFIG_MAPS = resource(CORE, 'configmaps');
/** networking.k8s.io/v1 (Kubernetes 1.33+); older servers answer 404 (see service-cidr.ts). */
export const SERVICE_CIDRS = resource(NETWORKING, 'servicecidrs');

export interface InformerOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** First retry delay after an error; doubles up to maxBackoffMs. */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /**
   * Run on every listed or watched object before it is cached, changing it in place: a
   * consumer that reads few fields drops the rest here (keeping metadata.resourceVersion).
   * Default: objects are kept whole.
   */
  readonly slim?: (obj: KubeObject) => void;
}

/** A watch lasts 5 to 10 minutes, then resumes from its resourceVersion (client-go's spread). */
const MIN_WATCH_S = 300;
/** No byte for this long on a watch (bookmarks come every minute) means a dead connection. */
const WATCH_IDLE_MS = (2 * MIN_WATCH_S + 60) * 1000;

interface List<T> {
  readonly items?: T[];
  readonly metadata?: { resourceVersion?: string };
}

/** 410 Gone, as an answer or as a watch's ERROR event: the resourceVersion is too old. */
function isGone(e: unknown): boolean {
  return e instanceof KubeApiError && e.status === 410;
}

class HttpInformer<T extends KubeObject> extends InformerCache<T> {
  private readonly kc: KubeConfig;
  private readonly spec: ResourceSpec;
  private readonly opts: InformerOptions;
  private readonly resource: string;
  private stopped = true;
  private backoffMs: number;
  /** Failed lists/watches since a watch last opened. */
  private failures = 0;
  private resourceVersion = '';
  private watch: Watch | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private listed: (() => void) | undefined;

  constructor(kc: KubeConfig, spec: ResourceSpec, opts: InformerOptions) {
    super();
    this.kc = kc;
    this.spec = spec;
    this.opts = opts;
    this.backoffMs = opts.initialBackoffMs ?? 500;
    this.resource = spec.path.split('/').pop() ?? spec.path;
  }

  /** stop() was called (read through a call: it changes while a run awaits). */
  private halted(): boolean {
    return this.stopped;
  }

  private selectors(): Record<string, string | undefined> {
    return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector };
  }

  private resetBackoff(): void {
    this.failures = 0;
    this.backoffMs = this.opts.initialBackoffMs ?? 500;
  }

  private apply(obj: T): void {
    this.opts.slim?.(obj);
    const old = this.get(objectKey(obj));
    // A relist re-delivers unchanged objects; suppress those no-op updates.
    if (
      old?.metadata?.resourceVersion !== undefined &&
      old.metadata.resourceVersion === obj.metadata?.resourceVersion
    )
      return;
    this.emitUpsert(this.put(obj), obj);
  }

  /** Lists, replacing the cache: what vanished is deleted, what changed is updated. */
  private async relist(): Promise<void> {
    const list = await kubeRequest<List<T>>(this.kc, this.spec.path, { query: this.selectors() });
    if (this.stopped) return;
    const items = list.items ?? [];
    const keep = new Set(items.map((o) => objectKey(o)));
    for (const o of this.list()) {
      const key = objectKey(o);
      if (!keep.has(key)) {
        const gone = this.take(key);
        if (gone !== undefined) this.emitDelete(gone);
      }
    }
    for (const o of items) this.apply(o);
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    this.listed?.();
  }

  private onEvent(type: string, obj: unknown): void {
    const o = obj as T;
    const rv = o.metadata?.resourceVersion;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
        this.apply(o);
        break;
      case 'DELETED': {
        this.emitDelete(this.take(objectKey(o)) ?? o);
        break;
      }
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const st = obj as { code?: number; reason?: string; message?: string };
        throw new KubeApiError(
          st.code ?? 500,
          st.reason ?? '',
          st.message ?? `watch ${this.spec.path}: ERROR event`,
        );
      }
      default:
        return;
    }
    if (rv !== undefined && rv !== '') this.resourceVersion = rv;
  }

  /** List once, then watch; on errors back off and list again, until stopped. */
  private async run(): Promise<void> {
    let relist = true;
    while (!this.stopped) {
      try {
        if (relist) {
          await this.relist();
          relist = false;
          if (this.halted()) return;
        }
        this.watch = kubeWatch(
          this.kc,
          this.spec.path,
          {
            ...this.selectors(),
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: Math.floor(MIN_WATCH_S * (1 + Math.random())),
          },
          (e) => {
            this.onEvent(e.type, e.object);
          },
          () => {
            // The watch is open: the next outage, e.g. another restart of the API server,
            // starts from the first delay. (Not a good list: a server that lists but refuses
            // every watch would be relisted in a tight loop.)
            this.resetBackoff();
          },
          WATCH_IDLE_MS,
        );
        await this.watch.done;
        // The server ended the watch (its timeout): resume from the last resourceVersion.
      } catch (e) {
        if (this.halted()) return;
        if (isGone(e)) {
          relist = true;
          continue;
        }
        this.failures++;
        this.emitError(informerError(this.kc, this.resource, e, this.failures, this.backoffMs));
        const delay = this.backoffMs;
        this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 30_000);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          t.unref();
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = undefined;
        relist = true;
      } finally {
        this.watch = undefined;
      }
    }
  }

  /** Starts list+watch; resolves after the first good list (or stop()). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    const listed = new Promise<void>((resolve) => {
      this.listed = () => {
        this.listed = undefined;
        resolve();
      };
    });
    this.loop = this.run();
    await Promise.race([listed, this.loop]);
    if (!this.hasSynced() && !this.halted()) this.markSynced();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listed?.();
    this.watch?.abort();
    this.wake?.();
    await this.loop;
  }
}

export function createInformer<T extends KubeObject>(
  kc: KubeConfig,
  spec: ResourceSpec,
  opts: InformerOptions = {},
): Informer<T> {
  return new HttpInformer<T>(kc, spec, opts);
}

export type { Service, EndpointSlice, Node, Pod, ServiceCIDR };
