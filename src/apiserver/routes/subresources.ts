// Subresources of the API server's objects: `status` (get, put, patch), `scale` of
// Deployments, ReplicaSets and StatefulSets (an autoscaling/v1 Scale view of spec.replicas),
// `binding` of Pods (the scheduler's write, which also sets PodScheduled), `finalize` of
// Namespaces, `log` of Pods through the node's kubelet (kubelet-proxy.ts), and a 400 for
// `exec`/`attach`/`portforward` asked without an upgrade.

import type { Context } from 'hono';
import { clone, isPlainObject } from '../../util/json.js';
import type { StoredObject } from '../object.js';
import { podLogResponse } from '../kubelet-proxy.js';
import { bindPod } from '../pod-binding.js';
import { applyJsonPatch, applyMergePatch, patchTypeOf } from '../patch.js';
import {
  DEPLOYMENTS,
  NAMESPACES,
  PODS,
  REPLICASETS,
  STATEFULSETS,
  type ResourceType,
} from '../resources.js';
import { formatLabelSelectorObject } from '../selectors.js';
import { ApiError } from '../status.js';
import { checkBody, encode, readBody, type RequestContext } from './context.js';
import { json, jsonText, methodNotAllowed, notFoundPath } from './http.js';
import { patchResponse } from './patch-response.js';

/** A request on subresource `sub` of object `name`. */
export interface SubresourceRequest {
  readonly rt: ResourceType;
  readonly ns: string | undefined;
  readonly name: string;
  readonly sub: string;
  readonly dryRun: boolean;
}

/** Answers a request on a subresource; 404 for one the resource lacks, 405 for a wrong verb. */
export async function subresourceResponse(
  ctx: RequestContext,
  c: Context,
  r: SubresourceRequest,
): Promise<Response> {
  const { store } = ctx;
  const { rt, ns, name, sub, dryRun } = r;
  const method = c.req.method;
  if (!rt.subresources.includes(sub as never)) throw notFoundPath();
  if (sub === 'status') {
    if (method === 'GET') return encode(ctx, c, rt, store.get(rt, ns, name));
    if (method === 'PUT') {
      const body = await readBody(ctx, c, rt);
      checkBody(ctx, c, rt, body);
      return encode(
        ctx,
        c,
        rt,
        store.update(rt, ns, name, body, { subresource: 'status', dryRun }),
      );
    }
    if (method === 'PATCH') return patchResponse(ctx, c, rt, ns, name, 'status', dryRun);
  }
  if (sub === 'scale' && (rt === DEPLOYMENTS || rt === REPLICASETS || rt === STATEFULSETS)) {
    if (method === 'GET') return json(toScale(store.get(rt, ns, name)));
    if (method === 'PUT' || method === 'PATCH') return scaleWrite(ctx, c, r);
  }
  if (sub === 'binding' && rt === PODS && method === 'POST') return bindPodResponse(ctx, c, r);
  if (sub === 'finalize' && rt === NAMESPACES && method === 'PUT')
    return finalizeNamespace(ctx, c, r);
  if (sub === 'log' && rt === PODS && method === 'GET')
    return podLogResponse(
      store,
      ctx.kubelet,
      ns ?? 'default',
      name,
      new URL(c.req.url).searchParams,
      c.req.raw.signal,
    );
  // Reached only without an Upgrade header: streams are served by the listener's upgrade path.
  if ((sub === 'exec' || sub === 'attach' || sub === 'portforward') && rt === PODS)
    throw ApiError.badRequest('Upgrade request required');
  throw methodNotAllowed();
}

/** The autoscaling/v1 Scale view of a workload. */
function toScale(o: StoredObject): Record<string, unknown> {
  const spec = (o.spec ?? {}) as { replicas?: number; selector?: object };
  const status = (o.status ?? {}) as { replicas?: number };
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: o.metadata.name,
      namespace: o.metadata.namespace,
      uid: o.metadata.uid,
      resourceVersion: o.metadata.resourceVersion,
      creationTimestamp: o.metadata.creationTimestamp,
    },
    spec: { replicas: spec.replicas ?? 0 },
    status: {
      replicas: status.replicas ?? 0,
      selector: formatLabelSelectorObject(spec.selector ?? {}).replace('<none>', ''),
    },
  };
}

/** 422 for a Scale whose spec.replicas is not a whole number >= 0. */
function invalidReplicas(name: string, replicas: unknown): ApiError {
  const message = `Invalid value: ${jsonText(replicas)}: must be greater than or equal to 0`;
  return new ApiError(
    422,
    'Invalid',
    `Scale.autoscaling "${name}" is invalid: spec.replicas: ${message}`,
    {
      name,
      group: 'autoscaling',
      kind: 'Scale',
      causes: [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message }],
    },
  );
}

/** PUT or PATCH of a Scale: writes spec.replicas of the workload, answers the new Scale. */
async function scaleWrite(
  ctx: RequestContext,
  c: Context,
  { rt, ns, name, dryRun }: SubresourceRequest,
): Promise<Response> {
  const { store } = ctx;
  const current = store.get(rt, ns, name);
  const scale = toScale(current);
  const body = await readBody(ctx, c, rt);
  let next: unknown;
  if (c.req.method === 'PUT') next = body;
  else {
    const type = patchTypeOf(c.req.header('content-type') ?? '');
    if (type === 'json') next = applyJsonPatch(scale, body);
    else if (type === 'merge' || type === 'strategic' || type === 'apply')
      next = applyMergePatch(scale, body);
    else throw ApiError.unsupportedMediaType(c.req.header('content-type') ?? '');
  }
  const n = isPlainObject(next) ? next : {};
  const replicas = isPlainObject(n.spec) ? n.spec.replicas : undefined;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
    throw invalidReplicas(name, replicas);
  const meta = isPlainObject(n.metadata) ? n.metadata : {};
  const rv =
    typeof meta.resourceVersion === 'string' && meta.resourceVersion !== ''
      ? meta.resourceVersion
      : current.metadata.resourceVersion;
  const updated = clone(current);
  updated.metadata.resourceVersion = rv ?? '';
  (updated as Record<string, unknown>).spec = { ...(updated.spec ?? {}), replicas };
  const out = store.update(rt, ns, name, updated, { dryRun });
  return json(toScale(out));
}

/** POST of a Binding: assigns an unbound, live Pod to a node and marks it PodScheduled. */
async function bindPodResponse(
  ctx: RequestContext,
  c: Context,
  { ns, name, dryRun }: SubresourceRequest,
): Promise<Response> {
  const body = await readBody(ctx, c, PODS);
  const target = isPlainObject(body) && isPlainObject(body.target) ? body.target : {};
  const node = typeof target.name === 'string' ? target.name : '';
  bindPod(ctx.store, ns, name, node, { now: ctx.now(), dryRun });
  return json(
    { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 },
    201,
  );
}

/** PUT of a Namespace's finalize: replaces spec.finalizers only. */
async function finalizeNamespace(
  ctx: RequestContext,
  c: Context,
  { rt, name, dryRun }: SubresourceRequest,
): Promise<Response> {
  const { store } = ctx;
  const body = await readBody(ctx, c, rt);
  const cur = clone(store.get(rt, undefined, name));
  const spec = isPlainObject(body) && isPlainObject(body.spec) ? body.spec : {};
  (cur as Record<string, unknown>).spec = {
    ...((cur as { spec?: object }).spec ?? {}),
    finalizers: spec.finalizers ?? [],
  };
  return json(store.update(rt, undefined, name, cur, { dryRun }));
}
