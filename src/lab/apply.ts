// `kubectl apply`, as much of it as the lab needs: each manifest object is created, or
// replaced when it already exists (keeping the server's resourceVersion, and a Service's
// allocated clusterIP and nodePorts the manifest leaves out), in file order. Any kind the API
// server serves works (Namespaces, Deployments, StatefulSets, Services, ...): its resource
// name and scope come from the server's discovery document for the object's apiVersion.

import { SvcnetError } from '../errors.js';
import type { KubeConfig } from '../kube/kubeconfig.js';
import { KubeApiError, kubeRequest } from '../kube/rest.js';
import type { KubeObject } from '../kube/types.js';

export interface Applied {
  readonly ref: string;
  readonly action: 'created' | 'configured';
}

function refOf(o: KubeObject & { kind?: string }): string {
  const ns = o.metadata?.namespace;
  return `${(o.kind ?? 'object').toLowerCase()}/${o.metadata?.name ?? ''}${ns ? ` -n ${ns}` : ''}`;
}

function statusOf(e: unknown): number | undefined {
  return e instanceof KubeApiError && e.status !== 0 ? e.status : undefined;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

interface APIResource {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** Kind → resource name and scope per apiVersion, from discovery, each version read once. */
class Resources {
  private readonly kc: KubeConfig;
  private readonly lists = new Map<string, Promise<APIResource[]>>();

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  /** The collection path an object of this apiVersion and kind is created in. */
  async collection(obj: KubeObject & { apiVersion?: string; kind?: string }): Promise<string> {
    const apiVersion = obj.apiVersion ?? '';
    const kind = obj.kind ?? '';
    const prefix = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    let list = this.lists.get(apiVersion);
    if (list === undefined) {
      list = kubeRequest<{ resources?: APIResource[] }>(this.kc, prefix).then(
        (l) => l.resources ?? [],
      );
      this.lists.set(apiVersion, list);
    }
    const r = (await list).find((x) => x.kind === kind && !x.name.includes('/'));
    if (r === undefined)
      throw new SvcnetError(
        'INVALID_INPUT',
        `the server serves no kind ${JSON.stringify(kind)} in apiVersion ${JSON.stringify(apiVersion)}`,
      );
    const ns = obj.metadata?.namespace ?? 'default';
    return `${prefix}${r.namespaced ? `/namespaces/${encodeURIComponent(ns)}` : ''}/${r.name}`;
  }
}

type Plain = Record<string, unknown>;

function plain(v: unknown): Plain {
  return typeof v === 'object' && v !== null ? (v as Plain) : {};
}

interface PortLike {
  port?: number;
  protocol?: string;
  nodePort?: number;
}

/** Fields the server owns that a replace must carry over from the live object. */
export function carryOver(live: Plain, want: Plain): Plain {
  const liveMeta = plain(live.metadata);
  const next: Plain = {
    ...want,
    metadata: { ...plain(want.metadata), resourceVersion: liveMeta.resourceVersion },
  };
  if (want.kind !== 'Service') return next;
  const liveSpec = plain(live.spec);
  const spec: Plain = { ...plain(want.spec) };
  const type = (t: unknown): unknown => t ?? 'ClusterIP';
  if (spec.clusterIP === undefined && spec.type !== 'ExternalName' && liveSpec.clusterIP) {
    spec.clusterIP = liveSpec.clusterIP;
    spec.clusterIPs ??= liveSpec.clusterIPs;
  }
  if (type(spec.type) === type(liveSpec.type) && Array.isArray(spec.ports)) {
    const livePorts = (Array.isArray(liveSpec.ports) ? liveSpec.ports : []) as PortLike[];
    spec.ports = (spec.ports as PortLike[]).map((p) => {
      const old = livePorts.find(
        (l) => l.port === p.port && (l.protocol ?? 'TCP') === (p.protocol ?? 'TCP'),
      );
      return p.nodePort === undefined && old?.nodePort !== undefined
        ? { ...p, nodePort: old.nodePort }
        : p;
    });
  }
  next.spec = spec;
  return next;
}

/** Replaces tried before a conflict is reported (client-go's DefaultRetry: 5 steps). */
const REPLACE_ATTEMPTS = 5;

/** Creates or replaces each object; stops at the first refusal, naming the object. */
export async function applyObjects(
  kc: KubeConfig,
  objects: readonly KubeObject[],
): Promise<Applied[]> {
  const resources = new Resources(kc);
  const done: Applied[] = [];
  for (const obj of objects) {
    const want = obj as unknown as Plain;
    const ref = refOf(obj);
    try {
      const collection = await resources.collection(obj);
      const path = `${collection}/${encodeURIComponent(obj.metadata?.name ?? '')}`;
      try {
        await kubeRequest(kc, collection, { method: 'POST', body: want });
        done.push({ ref, action: 'created' });
        continue;
      } catch (e) {
        if (statusOf(e) !== 409) throw e;
      }
      // Read-modify-replace, again on a conflict (client-go's RetryOnConflict): a controller
      // writing the object's status between our read and replace is not the user's error.
      for (let attempt = 1; ; attempt++) {
        const live = await kubeRequest<Plain>(kc, path);
        try {
          await kubeRequest(kc, path, { method: 'PUT', body: carryOver(live, want) });
          break;
        } catch (e) {
          if (statusOf(e) !== 409 || attempt >= REPLACE_ATTEMPTS) throw e;
        }
      }
      done.push({ ref, action: 'configured' });
    } catch (e) {
      const status = statusOf(e);
      throw new SvcnetError(
        status !== undefined && status >= 400 && status < 500 ? 'INVALID_INPUT' : 'INTERNAL',
        `${ref}: ${messageOf(e)}`,
        { cause: e },
      );
    }
  }
  return done;
}
