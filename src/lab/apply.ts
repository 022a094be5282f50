// `kubectl apply`, as much of it as the lab needs: each manifest object is created, or
// replaced when it already exists (keeping the server's resourceVersion, and a Service's
// allocated clusterIP and nodePorts the manifest leaves out), in file order. Any kind the API
// server serves works (Namespaces, Deployments, StatefulSets, Services, ...), through
// client-node's generic object API.

import * as k8s from '@kubernetes/client-node';
import { SvcnetError } from '../errors.js';
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
  return e instanceof k8s.ApiException ? e.code : undefined;
}

function messageOf(e: unknown): string {
  if (e instanceof k8s.ApiException) {
    try {
      const body: unknown = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      const m = (body as { message?: unknown } | undefined)?.message;
      if (typeof m === 'string') return m;
    } catch {
      // not a Status body
    }
    return `HTTP ${String(e.code)}`;
  }
  return e instanceof Error ? e.message : String(e);
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
  kc: k8s.KubeConfig,
  objects: readonly KubeObject[],
): Promise<Applied[]> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  const done: Applied[] = [];
  for (const obj of objects) {
    const want = obj as unknown as k8s.KubernetesObject;
    const ref = refOf(obj);
    try {
      try {
        await api.create(want);
        done.push({ ref, action: 'created' });
        continue;
      } catch (e) {
        if (statusOf(e) !== 409) throw e;
      }
      // Read-modify-replace, again on a conflict (client-go's RetryOnConflict): a controller
      // writing the object's status between our read and replace is not the user's error.
      for (let attempt = 1; ; attempt++) {
        const live = await api.read({
          apiVersion: want.apiVersion ?? '',
          kind: want.kind ?? '',
          metadata: { name: want.metadata?.name ?? '', namespace: want.metadata?.namespace ?? '' },
        });
        try {
          await api.replace(carryOver(plain(JSON.parse(JSON.stringify(live))), plain(want)));
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
