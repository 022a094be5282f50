// The RequestContext every route module of the API server is built over (the store, the
// clock, the limits and timers of one server), and the request steps they share: reading a
// body within the size limit (JSON, YAML or protobuf), checking it against the kind's schema
// (collecting `fieldValidation` warnings), and encoding an object as JSON or as a Table.

import type { Context } from 'hono';
import { parse as parseYaml } from 'yaml';
import type { KubeletDialer } from '../kubelet-proxy.js';
import { checkJsonDepth, checkValueDepth, readLimitedBody } from '../limits.js';
import type { StoredObject } from '../object.js';
import { decodeProtobufObject, isProtobufContentType } from '../protobuf.js';
import type { ResourceType } from '../resources.js';
import { checkBodySchema, parseFieldValidation } from '../schema.js';
import { ApiError } from '../status.js';
import type { Store } from '../store.js';
import { toTable } from '../table.js';
import { JSON_TYPE, includeObject, json, wantsTable } from './http.js';

/** What one API server's routes share; built once by `createApiServer`. */
export interface RequestContext {
  readonly store: Store;
  readonly now: () => number;
  /** `host:port` advertised in legacy discovery; the request's Host when undefined. */
  readonly serverAddress: string | undefined;
  /** Interval of the `\n` keep-alive on idle watches. */
  readonly heartbeatMs: number;
  /** Interval of BOOKMARK events on watches that allow them. */
  readonly bookmarkMs: number;
  /** Largest request body accepted (413 past it). */
  readonly maxRequestBytes: number;
  /** Warnings for the answer to a request (`Warning: 299 - "..."` headers), by hono Context. */
  readonly warnings: WeakMap<object, string[]>;
  /** How the kubelet-served Pod subresources reach the node (none: 400). */
  readonly kubelet: KubeletDialer | undefined;
}

/** Adds `Warning` lines to the answer of request `c`. */
export function addWarnings(ctx: RequestContext, c: Context, lines: readonly string[]): void {
  ctx.warnings.set(c, [...(ctx.warnings.get(c) ?? []), ...lines]);
}

/**
 * Checks a body (or a patched object) against its kind's schema before the store sees it:
 * a field of the wrong type is 422 naming it; unknown fields follow `fieldValidation`.
 */
export function checkBody(ctx: RequestContext, c: Context, rt: ResourceType, body: unknown): void {
  const mode = parseFieldValidation(c.req.query('fieldValidation'));
  if (mode === undefined)
    throw ApiError.badRequest(
      `fieldValidation: Unsupported value: ${JSON.stringify(c.req.query('fieldValidation'))}: supported values: "Ignore", "Strict", "Warn"`,
    );
  const unknown = checkBodySchema(rt, body);
  if (unknown.length === 0 || mode === 'Ignore') return;
  const lines = unknown.map((f) => `unknown field "${f}"`);
  if (mode === 'Strict') throw ApiError.badRequest(`strict decoding error: ${lines.join(', ')}`);
  addWarnings(ctx, c, lines);
}

/**
 * The decoded request body (undefined when empty): protobuf, YAML or JSON by Content-Type,
 * 413 past the size limit, 400 when undecodable or nested too deeply.
 */
export async function readBody(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
): Promise<unknown> {
  const ct = c.req.header('content-type') ?? JSON_TYPE;
  // With a Content-Length within the limit (Node's parser holds the body to it), hono's
  // direct read is the fast path; otherwise count while streaming.
  const length = c.req.header('content-length');
  const raw =
    length !== undefined && /^\d+$/.test(length) && Number(length) <= ctx.maxRequestBytes
      ? new Uint8Array(await c.req.arrayBuffer())
      : await readLimitedBody(c.req.raw.body, length, ctx.maxRequestBytes);
  if (isProtobufContentType(ct)) return decodeProtobufObject(raw, rt);
  const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  if (text.trim() === '') return undefined;
  const base = ct.split(';')[0]?.trim().toLowerCase() ?? '';
  const isYaml = base === 'application/yaml' || base === 'application/apply-patch+yaml';
  if (!isYaml) checkJsonDepth(text);
  let value: unknown;
  try {
    // The yaml parser recurses: a deeply nested document fails here (stack overflow
    // included) and is a 400 like any other undecodable body.
    value = isYaml ? (parseYaml(text) as unknown) : (JSON.parse(text) as unknown);
  } catch (e) {
    throw ApiError.badRequest(
      `error decoding request body: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  checkValueDepth(value);
  return value;
}

/** One object as the answer: a Table when the client asked for one, else its JSON. */
export function encode(
  ctx: RequestContext,
  c: Context,
  rt: ResourceType,
  obj: StoredObject,
  status = 200,
): Response {
  if (wantsTable(c.req.header('accept')))
    return json(
      toTable(rt, [obj], ctx.now(), {
        include: includeObject((k) => c.req.query(k)),
        metadata: { resourceVersion: obj.metadata.resourceVersion ?? '' },
      }),
      status,
    );
  return json(obj, status);
}
