// The PATCH verb of the API server, on an object or its status: JSON patch, merge patch,
// strategic merge patch and server-side apply (which creates a missing object). The patched
// object goes through the same schema check and store update as a PUT.

import type { Context } from 'hono';
import { isPlainObject } from '../../util/json.js';
import type { StoredObject } from '../object.js';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  patchTypeOf,
  withPatchResourceVersion,
  type PatchType,
} from '../patch.js';
import type { ResourceType } from '../resources.js';
import { ApiError } from '../status.js';
import { checkBody, encode, readBody, type RequestContext } from './context.js';

/** The object `body` patches `current` into, by patch type. */
function applyPatch(type: PatchType, kind: string, current: StoredObject, body: unknown): unknown {
  if (type === 'json') return applyJsonPatch(current, body);
  if (type === 'merge') return applyMergePatch(current, body);
  return applyStrategicMergePatch(kind, current, body);
}

/** Answers a PATCH of object `name` (or of its status when `sub` says so). */
export async function patchResponse(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
  ns: string | undefined,
  name: string,
  sub: 'status' | undefined,
  dryRun: boolean,
): Promise<Response> {
  const { store } = ctx;
  const ct = c.req.header('content-type') ?? '';
  const type = patchTypeOf(ct);
  if (type === undefined) throw ApiError.unsupportedMediaType(ct);
  const body = await readBody(ctx, c, rt);
  const current = store.tryGet(rt, ns, name);
  if (type === 'apply') {
    if (c.req.query('fieldManager') === undefined)
      throw new ApiError(
        422,
        'Invalid',
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
      );
    if (!isPlainObject(body)) throw ApiError.badRequest('apply patch must be an object');
    if (current === undefined) {
      checkBody(ctx, c, rt, body);
      const created = store.create(
        rt,
        ns,
        { ...body, metadata: { ...(isPlainObject(body.metadata) ? body.metadata : {}), name } },
        { dryRun },
      );
      return encode(ctx, c, rt, created, 201);
    }
  } else if (current === undefined) throw ApiError.notFound(rt.group, rt.plural, name);
  const patched = applyPatch(type, rt.kind, current, body);
  checkBody(ctx, c, rt, patched);
  return encode(
    ctx,
    c,
    rt,
    store.update(rt, ns, name, withPatchResourceVersion(patched, current, body), {
      dryRun,
      ...(sub ? { subresource: sub } : {}),
    }),
  );
}
