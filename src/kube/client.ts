// The real Informer, on @kubernetes/client-node ~1.4 (pinned: 2.x crashes on Node 20). All
// use of client-node's informer machinery is in this file. It adds what client-node's
// ListWatch lacks: restart with backoff after any list/watch error (client-node stops; an API
// server restarting refuses connections for a while), the backoff reset once a list or watch
// succeeds again, relist after 410 Gone, plain wire-JSON objects (client-node turns timestamps into Date), old objects
// on update, and a synced signal.

import * as k8s from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import type { AgentOptions } from 'node:https';
import { SvcnetError } from '../errors.js';
import { hintFor, InformerError, summarizeApiError } from './api-errors.js';
import type { ApiClientOrigin, ApiFailureReason } from './api-errors.js';
import { InformerCache, type Informer } from './informer.js';
import type { EndpointSlice, KubeObject, Node, Pod, Service, ServiceCIDR } from './types.js';
import { objectKey } from './types.js';
import { toWire } from './wire.js';
import {
  hasInClusterEnv,
  inClusterKubeConfig,
  readInClusterConfig,
  SERVICE_ACCOUNT_DIR,
} from './in-cluster.js';

/** Loads a kubeconfig file (or the default locations when path is undefined). */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path !== undefined) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return reuseConnections(kc);
}

type CreateAgent = (cluster: k8s.Cluster | null, opts: AgentOptions) => unknown;

/**
 * client-node 1.4 makes a new HTTP agent for every request (KubeConfig's
 * applySecurityAuthentication), without keep-alive: every list, status write and watch was a
 * TCP connect and a TLS handshake on both ends, a tenth of a 300-Pod lab's CPU. This keeps one
 * keep-alive agent per KubeConfig and TLS material (ca, cert, key are re-read per request,
 * so rotated files still take effect), as client-go keeps one transport. Requests through a
 * proxy (cluster.proxyUrl) keep client-node's own agents.
 */
export function reuseConnections(kc: k8s.KubeConfig): k8s.KubeConfig {
  const target = kc as unknown as { createAgent: CreateAgent };
  const make = target.createAgent.bind(kc);
  const agents = new Map<string, unknown>();
  const text = (v: unknown): string =>
    v === undefined || v === null
      ? ''
      : Buffer.isBuffer(v)
        ? v.toString('base64')
        : JSON.stringify(v);
  target.createAgent = (cluster, opts) => {
    if (cluster === null || (cluster.proxyUrl ?? '') !== '') return make(cluster, opts);
    const key = [
      cluster.server,
      text(opts.ca),
      text(opts.cert),
      text(opts.key),
      String(opts.rejectUnauthorized),
      text(opts.servername),
    ].join('|');
    let agent = agents.get(key);
    if (agent === undefined) {
      agent = make(cluster, { ...opts, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
  return kc;
}

/** Where each resolved KubeConfig came from, for the hints of API errors (see api-errors.ts). */
const origins = new WeakMap<
  k8s.KubeConfig,
  ApiClientOrigin & { explained: Set<ApiFailureReason> }
>();

export interface KubeConfigEnv {
  readonly KUBECONFIG?: string | undefined;
  readonly KUBERNETES_SERVICE_HOST?: string | undefined;
  readonly KUBERNETES_SERVICE_PORT?: string | undefined;
}

/**
 * The client configuration as client-go's daemons find it: `--kubeconfig` when given, else
 * the file(s) in `$KUBECONFIG`, else the in-cluster ServiceAccount config (a Pod with
 * KUBERNETES_SERVICE_HOST/PORT and a mounted token, in-cluster.ts). A file that is missing, is not YAML, or
 * has no current context with a server is one INVALID_INPUT error naming it (CLI exit 2),
 * never a retry loop; so is finding none of the three.
 */
export function resolveKubeConfig(
  flag: string | undefined,
  env: KubeConfigEnv = process.env,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
): k8s.KubeConfig {
  let kc = new k8s.KubeConfig();
  let source: string;
  try {
    if (flag !== undefined && flag !== '') {
      source = `--kubeconfig ${flag}`;
      if (!existsSync(flag)) throw new Error('no such file');
      kc.loadFromFile(flag);
    } else if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== '') {
      source = `$KUBECONFIG ${env.KUBECONFIG}`;
      const files = env.KUBECONFIG.split(':').filter((f) => f !== '' && existsSync(f));
      if (files.length === 0) throw new Error('no such file');
      kc.loadFromFile(files[0] ?? '');
      for (const f of files.slice(1)) {
        const more = new k8s.KubeConfig();
        more.loadFromFile(f);
        kc.mergeConfig(more, true);
      }
    } else if (hasInClusterEnv(env)) {
      source = 'in-cluster config';
      kc = inClusterKubeConfig(readInClusterConfig(env, serviceAccountDir));
    } else
      throw new SvcnetError(
        'INVALID_INPUT',
        `no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or run in a Pod (with $KUBERNETES_SERVICE_HOST, $KUBERNETES_SERVICE_PORT and a ServiceAccount token in ${serviceAccountDir})`,
      );
  } catch (e) {
    if (e instanceof SvcnetError) throw e;
    const msg = (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
    throw new SvcnetError(
      'INVALID_INPUT',
      `${describeSource(flag, env)}: not a usable kubeconfig (${msg})`,
      {
        cause: e,
      },
    );
  }
  // client-node's type says string; a file without current-context gives undefined.
  const context = kc.getCurrentContext() as string | undefined;
  const cluster = kc.getCurrentCluster();
  if (cluster === null || cluster.server === '')
    throw new SvcnetError(
      'INVALID_INPUT',
      `${source}: not a usable kubeconfig (${
        context === undefined || context === ''
          ? 'no current-context'
          : `context ${JSON.stringify(context)} names no cluster with a server`
      })`,
    );
  origins.set(kc, {
    source,
    server: cluster.server,
    user: kc.getCurrentUser()?.name ?? '',
    explained: new Set(),
  });
  return reuseConnections(kc);
}

function describeSource(flag: string | undefined, env: KubeConfigEnv): string {
  if (flag !== undefined && flag !== '') return `--kubeconfig ${flag}`;
  if (env.KUBECONFIG !== undefined && env.KUBECONFIG !== '') return `$KUBECONFIG ${env.KUBECONFIG}`;
  return 'in-cluster config';
}

/** The origin of a KubeConfig for hints; a plain description when it was not resolved here. */
function originOf(kc: k8s.KubeConfig): ApiClientOrigin & { explained: Set<ApiFailureReason> } {
  let o = origins.get(kc);
  if (o === undefined) {
    o = {
      source: 'the kubeconfig',
      server: kc.getCurrentCluster()?.server ?? '(no server)',
      user: kc.getCurrentUser()?.name ?? '',
      explained: new Set(),
    };
    origins.set(kc, o);
  }
  return o;
}

/**
 * One line for a failed list or watch, with the count and backoff; the first failure of each
 * reason per client configuration also says what to check.
 */
export function informerError(
  kc: k8s.KubeConfig,
  resource: string,
  err: unknown,
  failures: number,
  retryInMs: number,
): InformerError {
  const failure = summarizeApiError(err);
  const origin = originOf(kc);
  const first = !origin.explained.has(failure.reason);
  origin.explained.add(failure.reason);
  return new InformerError(
    resource,
    failure,
    failures,
    retryInMs,
    first ? hintFor(failure.reason, origin) : undefined,
    err,
  );
}

export interface ResourceSpec {
  /** Watch path, e.g. `/api/v1/services`. */
  readonly path: string;
  /** client-node model name for (de)serialising list items, e.g. `V1Service`. */
  readonly model: string;
  readonly list: (
    kc: k8s.KubeConfig,
    labelSelector?: string,
    fieldSelector?: string,
  ) => Promise<{ items: unknown[]; metadata?: { resourceVersion?: string } }>;
}

type Selectors = { labelSelector?: string; fieldSelector?: string };

/** The request parameters for the selectors that are set (an absent selector is left out). */
function selectors(labelSelector?: string, fieldSelector?: string): Selectors {
  return {
    ...(labelSelector ? { labelSelector } : {}),
    ...(fieldSelector ? { fieldSelector } : {}),
  };
}

/** client-node's generated API classes, by the URL prefix of their group/version. */
interface ApiGroup<A extends k8s.ApiType> {
  readonly prefix: string;
  readonly api: k8s.ApiConstructor<A>;
}

const CORE: ApiGroup<k8s.CoreV1Api> = { prefix: '/api/v1', api: k8s.CoreV1Api };
const APPS: ApiGroup<k8s.AppsV1Api> = { prefix: '/apis/apps/v1', api: k8s.AppsV1Api };
const NETWORKING: ApiGroup<k8s.NetworkingV1Api> = {
  prefix: '/apis/networking.k8s.io/v1',
  api: k8s.NetworkingV1Api,
};
const DISCOVERY: ApiGroup<k8s.DiscoveryV1Api> = {
  prefix: '/apis/discovery.k8s.io/v1',
  api: k8s.DiscoveryV1Api,
};

type ListResult = Awaited<ReturnType<ResourceSpec['list']>>;
type ListMethod = (params: Selectors) => Promise<ListResult>;

/** The kinds an API class can list: `list<Kind><suffix>` methods that take selectors. */
type ListableKind<A, Suffix extends string> = {
  [M in keyof A]: A[M] extends ListMethod
    ? M extends `list${infer K}${Suffix}`
      ? K
      : never
    : never;
}[keyof A];

/**
 * A resource from its group, plural and kind: path `<prefix>/<plural>`, model `V1<Kind>`, and
 * client-node's `list<Kind>ForAllNamespaces` (namespaced) or `list<Kind>` (cluster-scoped),
 * which the kind's type checks to exist.
 */
function resource<A extends k8s.ApiType>(
  group: ApiGroup<A>,
  plural: string,
  ...[kind, scope]:
    | [kind: ListableKind<A, 'ForAllNamespaces'>, scope: 'Namespaced']
    | [kind: ListableKind<A, ''>, scope: 'Cluster']
): ResourceSpec {
  const method = scope === 'Namespaced' ? `list${kind}ForAllNamespaces` : `list${kind}`;
  return {
    path: `${group.prefix}/${plural}`,
    model: `V1${kind}`,
    list: async (kc, label, field) => {
      // ListableKind proved at compile time that the method exists and takes selectors.
      const api = kc.makeApiClient(group.api) as unknown as Partial<Record<string, ListMethod>>;
      const list = api[method];
      if (list === undefined) throw new SvcnetError('INTERNAL', `client-node has no ${method}`);
      return list.call(api, selectors(label, field));
    },
  };
}

export const SERVICES = resource(CORE, 'services', 'Service', 'Namespaced');
export const ENDPOINT_SLICES = resource(DISCOVERY, 'endpointslices', 'EndpointSlice', 'Namespaced');
export const NODES = resource(CORE, 'nodes', 'Node', 'Cluster');
export const PODS = resource(CORE, 'pods', 'Pod', 'Namespaced');
export const ENDPOINTS = resource(CORE, 'endpoints', 'Endpoints', 'Namespaced');
export const DEPLOYMENTS = resource(APPS, 'deployments', 'Deployment', 'Namespaced');
export const REPLICA_SETS = resource(APPS, 'replicasets', 'ReplicaSet', 'Namespaced');
export const STATEFUL_SETS = resource(APPS, 'statefulsets', 'StatefulSet', 'Namespaced');
export const DAEMON_SETS = resource(APPS, 'daemonsets', 'DaemonSet', 'Namespaced');
export const CONTROLLER_REVISIONS = resource(
  APPS,
  'controllerrevisions',
  'ControllerRevision',
  'Namespaced',
);
export const NAMESPACES = resource(CORE, 'namespaces', 'Namespace', 'Cluster');
export const CONFIG_MAPS = resource(CORE, 'configmaps', 'ConfigMap', 'Namespaced');
/** networking.k8s.io/v1 (Kubernetes 1.33+); older servers answer 404 (see service-cidr.ts). */
export const SERVICE_CIDRS = resource(NETWORKING, 'servicecidrs', 'ServiceCIDR', 'Cluster');

export interface InformerOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** First retry delay after an error; doubles up to maxBackoffMs. */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /**
   * Run on every listed or watched object before it is cached, changing it in place (the
   * ListWatch underneath caches the same object): a consumer that reads few fields drops the
   * rest here. Default: objects are kept whole.
   */
  readonly slim?: (obj: KubeObject) => void;
}

type WireObject = KubeObject & k8s.KubernetesObject;

class ClientNodeInformer<T extends KubeObject> extends InformerCache<T> {
  private readonly lw: k8s.ListWatch<WireObject>;
  private stopped = false;
  private backoffMs: number;
  /** Failed lists/watches since the last good list. */
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  /** A list+watch start in flight: it opens its watch only after the list returns. */
  private starting: Promise<void> | undefined;
  private readonly opts: InformerOptions;

  constructor(kc: k8s.KubeConfig, spec: ResourceSpec, opts: InformerOptions) {
    super();
    this.opts = opts;
    this.backoffMs = opts.initialBackoffMs ?? 500;
    const listFn = async (): Promise<k8s.KubernetesListObject<WireObject>> => {
      const list = await spec.list(kc, opts.labelSelector, opts.fieldSelector);
      // A good list ends a run of failures (a start() that failed still resolves).
      this.resetBackoff();
      // Back to wire JSON: client-node's models carry Date objects for timestamps.
      const items = list.items.map((i) => toWire(i, spec.model) as WireObject);
      if (opts.slim !== undefined) for (const i of items) opts.slim(i);
      const metadata = new k8s.V1ListMeta();
      metadata.resourceVersion = list.metadata?.resourceVersion ?? '';
      return { items, metadata };
    };
    this.lw = new k8s.ListWatch<WireObject>(
      spec.path,
      new k8s.Watch(kc),
      listFn,
      false,
      opts.labelSelector,
      opts.fieldSelector,
    );
    this.lw.on(k8s.ADD, (o) => {
      this.apply(o as unknown as T);
    });
    this.lw.on(k8s.UPDATE, (o) => {
      this.apply(o as unknown as T);
    });
    this.lw.on(k8s.DELETE, (o) => {
      this.emitDelete(this.take(objectKey(o)) ?? (o as unknown as T));
    });
    const resource = spec.path.split('/').pop() ?? spec.path;
    this.lw.on(k8s.ERROR, (err) => {
      this.failures++;
      const wrapped = informerError(kc, resource, err, this.failures, this.backoffMs);
      this.emitError(wrapped);
      this.scheduleRestart();
    });
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

  private track(p: Promise<void>): void {
    const tracked = p
      .catch(() => undefined)
      .finally(() => {
        if (this.starting === tracked) this.starting = undefined;
      });
    this.starting = tracked;
  }

  private scheduleRestart(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs ?? 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      const before = this.failures;
      this.track(
        this.lw.start().then(
          () => {
            // The watch is open again (a failed list or watch would have counted): the next
            // outage, e.g. another restart of the API server, starts from the first delay,
            // even when the watch resumed from its resourceVersion without a list.
            if (this.failures === before && !this.stopped) this.resetBackoff();
          },
          () => {
            this.scheduleRestart();
          },
        ),
      );
    }, delay);
    this.retryTimer.unref();
  }

  async start(): Promise<void> {
    this.stopped = false;
    // ListWatch.start() resolves after the list and the watch request are made; a failed
    // list is reported through ERROR (and retried), so wait for the first good list.
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (this.lw.latestResourceVersion() !== '' || this.stopped) {
          resolve();
          return;
        }
        setTimeout(check, 50).unref();
      };
      this.track(this.lw.start().finally(check));
    });
    if (!this.hasSynced()) this.markSynced();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.lw.stop();
    // client-node's ListWatch opens the watch after its list returns without looking at its
    // stopped flag again, so a start that was mid-list would leave a watch open: wait for it
    // and stop once more.
    if (this.starting) {
      await this.starting;
      await this.lw.stop();
    }
  }
}

export function createInformer<T extends KubeObject>(
  kc: k8s.KubeConfig,
  spec: ResourceSpec,
  opts: InformerOptions = {},
): Informer<T> {
  return new ClientNodeInformer<T>(kc, spec, opts);
}

export type { Service, EndpointSlice, Node, Pod, ServiceCIDR };
