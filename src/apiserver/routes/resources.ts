// The REST verbs on every served resource (`/api/v1/...`, `/apis/GROUP/VERSION/...`): list,
// watch, create and deletecollection on a collection; get, update, patch and delete on an
// object; subresources are handed to subresources.ts. Answers wait until the writes they may
// have seen are durable.

import { Hono, type Context } from 'hono';
import { isPlainObject } from '../../util/json.js';
import { apiVersionOf, findResource, type ResourceType } from '../resources.js';
import { ApiError } from '../status.js';
import type { DeleteOptions } from '../store.js';
import { toTable } from '../table.js';
import { checkBody, encode, readBody, type RequestContext } from './context.js';
import {
  JSON_TYPE,
  bool,
  includeObject,
  int,
  json,
  methodNotAllowed,
  notFoundPath,
  objectJson,
  wantsTable,
} from './http.js';
import { patchResponse } from './patch-response.js';
import { subresourceResponse } from './subresources.js';
import { watchResponse } from './watch.js';

/** A request path resolved to a served resource. */
export interface Target {
  readonly rt: ResourceType;
  readonly ns: string | undefined;
  readonly name: string | undefined;
  readonly sub: string | undefined;
  /** Legacy `/watch/` path prefix. */
  readonly watchPath: boolean;
}

/** Splits `/api/v1/...` or `/apis/g/v/...` into a resource target; undefined when not one. */
export function parseResourcePath(path: string): Target | 'unknown-resource' | undefined {
  const segs = path
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 3) {
    group = '';
    version = segs[1] ?? '';
    rest = segs.slice(2);
  } else if (segs[0] === 'apis' && segs.length >= 4) {
    group = segs[1] ?? '';
    version = segs[2] ?? '';
    rest = segs.slice(3);
  } else return undefined;
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  let ns: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const inner = findResource(group, version, rest[2] ?? '');
    if (inner?.namespaced) {
      ns = rest[1];
      rest = rest.slice(2);
    }
  }
  const rt = findResource(group, version, rest[0] ?? '');
  if (!rt) return 'unknown-resource';
  if (rest.length > 3) return 'unknown-resource';
  return { rt, ns, name: rest[1], sub: rest[2], watchPath };
}

/** The resource routes as a hono sub-app. */
export function resourceRoutes(ctx: RequestContext): Hono {
  const app = new Hono();
  app.all('/api/*', (c) => durably(ctx, resourceResponse(ctx, c)));
  app.all('/apis/*', (c) => durably(ctx, resourceResponse(ctx, c)));
  return app;
}

/**
 * Answers only once every write made so far (this request's, and any it may have read) is
 * durable; if their commit failed, the request fails with the storage error instead.
 */
async function durably(ctx: RequestContext, res: Promise<Response>): Promise<Response> {
  const out = await res;
  const pending = ctx.store.durable();
  if (pending) await pending;
  return out;
}

async function resourceResponse(ctx: RequestContext, c: Context): Promise<Response> {
  const target = parseResourcePath(c.req.path);
  if (target === undefined || target === 'unknown-resource') throw notFoundPath();
  const { rt, ns, name, sub } = target;
  const method = c.req.method;
  const dryRun = c.req.query('dryRun') === 'All';
  if (
    rt.namespaced &&
    ns === undefined &&
    (name !== undefined || (method !== 'GET' && method !== 'DELETE'))
  )
    throw notFoundPath();
  if (name === undefined) return collectionResponse(ctx, c, target, dryRun);
  if (target.watchPath && method === 'GET') return watchResponse(ctx, c, rt, ns, name);
  if (sub === undefined) return objectResponse(ctx, c, rt, ns, name, dryRun);
  return subresourceResponse(ctx, c, { rt, ns, name, sub, dryRun });
}

/** list, watch, create and deletecollection. */
async function collectionResponse(
  ctx: RequestContext,
  c: Context,
  { rt, ns, watchPath }: Target,
  dryRun: boolean,
): Promise<Response> {
  const { store } = ctx;
  const method = c.req.method;
  if (method === 'GET') {
    if (bool(c.req.query('watch')) || watchPath) return watchResponse(ctx, c, rt, ns);
    return listResponse(ctx, c, rt, ns);
  }
  if (method === 'POST') {
    const body = await readBody(ctx, c, rt);
    checkBody(ctx, c, rt, body);
    const created = store.create(rt, ns, body, { dryRun });
    return encode(ctx, c, rt, created, 201);
  }
  if (method === 'DELETE') {
    const opts = await deleteOptions(ctx, c, rt);
    const listed = store.list(rt, ns, {
      labelSelector: c.req.query('labelSelector') ?? '',
      fieldSelector: c.req.query('fieldSelector') ?? '',
    });
    const items = listed.items.map((o) =>
      store.delete(rt, o.metadata.namespace, o.metadata.name ?? '', opts),
    );
    return json({
      kind: `${rt.kind}List`,
      apiVersion: apiVersionOf(rt),
      metadata: { resourceVersion: String(store.resourceVersion) },
      items,
    });
  }
  throw methodNotAllowed();
}

/** get, update, patch and delete of one object. */
async function objectResponse(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
  ns: string | undefined,
  name: string,
  dryRun: boolean,
): Promise<Response> {
  const { store } = ctx;
  switch (c.req.method) {
    case 'GET':
      return encode(ctx, c, rt, store.get(rt, ns, name));
    case 'PUT': {
      const body = await readBody(ctx, c, rt);
      checkBody(ctx, c, rt, body);
      return encode(ctx, c, rt, store.update(rt, ns, name, body, { dryRun }));
    }
    case 'PATCH':
      return patchResponse(ctx, c, rt, ns, name, undefined, dryRun);
    case 'DELETE': {
      const opts = await deleteOptions(ctx, c, rt);
      return encode(ctx, c, rt, store.delete(rt, ns, name, opts));
    }
    default:
      throw methodNotAllowed();
  }
}

function listResponse(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
  ns: string | undefined,
): Response {
  const q = (k: string): string | undefined => c.req.query(k);
  const limit = int(q('limit'), 'limit');
  const result = ctx.store.list(rt, ns, {
    labelSelector: q('labelSelector') ?? '',
    fieldSelector: q('fieldSelector') ?? '',
    ...(limit !== undefined ? { limit } : {}),
    continue: q('continue') ?? '',
    resourceVersion: q('resourceVersion') ?? '',
    resourceVersionMatch: q('resourceVersionMatch') ?? '',
  });
  const metadata = {
    resourceVersion: result.resourceVersion,
    ...(result.continue !== undefined
      ? { continue: result.continue, remainingItemCount: result.remainingItemCount }
      : {}),
  };
  if (wantsTable(c.req.header('accept')))
    return json(toTable(rt, result.items, ctx.now(), { include: includeObject(q), metadata }));
  // Serialise items without copying them: the list body can be large.
  const head = JSON.stringify({ kind: `${rt.kind}List`, apiVersion: apiVersionOf(rt), metadata });
  const parts: string[] = [head.slice(0, -1), ',"items":['];
  result.items.forEach((o, i) => {
    if (i > 0) parts.push(',');
    parts.push(objectJson(o));
  });
  parts.push(']}');
  return new Response(parts.join(''), { status: 200, headers: { 'Content-Type': JSON_TYPE } });
}

/**
 * DeleteOptions from the body (an unreadable one is ignored, except past the size limit)
 * or the query: grace period, propagation policy, preconditions and dryRun.
 */
async function deleteOptions(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
): Promise<DeleteOptions> {
  const body = await readBody(ctx, c, rt).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 413) throw e;
    return undefined;
  });
  const b = isPlainObject(body) ? body : {};
  const q = (k: string): string | undefined => c.req.query(k);
  const grace =
    typeof b.gracePeriodSeconds === 'number'
      ? b.gracePeriodSeconds
      : int(q('gracePeriodSeconds'), 'gracePeriodSeconds');
  let policy =
    typeof b.propagationPolicy === 'string' ? b.propagationPolicy : q('propagationPolicy');
  if (b.orphanDependents === true || q('orphanDependents') === 'true') policy = 'Orphan';
  if (
    policy !== undefined &&
    policy !== 'Background' &&
    policy !== 'Foreground' &&
    policy !== 'Orphan'
  )
    throw new ApiError(
      422,
      'Invalid',
      `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
    );
  const pre = isPlainObject(b.preconditions) ? b.preconditions : undefined;
  const dryRun = q('dryRun') === 'All' || (Array.isArray(b.dryRun) && b.dryRun.includes('All'));
  return {
    ...(grace !== undefined ? { gracePeriodSeconds: grace } : {}),
    ...(policy !== undefined ? { propagationPolicy: policy } : {}),
    ...(pre !== undefined
      ? {
          preconditions: {
            ...(typeof pre.uid === 'string' ? { uid: pre.uid } : {}),
            ...(typeof pre.resourceVersion === 'string'
              ? { resourceVersion: pre.resourceVersion }
              : {}),
          },
        }
      : {}),
    dryRun,
  };
}
