// Small pure helpers of the API server's HTTP edge: JSON answers and Status errors, query
// parameter parsing (booleans, integers, Go durations) and Accept negotiation for Tables.
// They know nothing of the store; route modules combine them with a RequestContext.

import type { StoredObject } from '../object.js';
import { ApiError } from '../status.js';
import type { IncludeObject } from '../table.js';

export const JSON_TYPE = 'application/json';

/** A JSON answer; `headers` may override the Content-Type. */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': JSON_TYPE, ...headers },
  });
}

/** The Status object of an error, with its HTTP status. */
export function statusResponse(e: ApiError): Response {
  return json(e.toStatus(), e.status);
}

/** 404 for a path that names no API, group, version or resource. */
export function notFoundPath(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource');
}

/** 405 for a verb the resource (or subresource) does not serve. */
export function methodNotAllowed(): ApiError {
  return ApiError.methodNotAllowed(
    'the server does not allow this method on the requested resource',
  );
}

const jsonCache = new WeakMap<object, string>();

/** JSON of a stored object, serialised once however many watchers receive it. */
export function objectJson(o: StoredObject): string {
  let text = jsonCache.get(o);
  if (text === undefined) {
    text = JSON.stringify(o);
    jsonCache.set(o, text);
  }
  return text;
}

/** Seconds of a Go duration such as `32s`, `1m0s` or `500ms` (the `timeout` parameter). */
export function goDurationSeconds(v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const units: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  let rest = v;
  while (rest !== '') {
    const m = /^(\d+(?:\.\d+)?)(ms|h|m|s)/.exec(rest);
    if (!m) throw ApiError.badRequest(`invalid timeout: ${v}`);
    total += Number(m[1]) * (units[m[2] ?? 's'] ?? 1);
    rest = rest.slice(m[0].length);
  }
  return Math.max(1, Math.ceil(total));
}

/** JSON text of a value as Go's validation messages print it (`null` for a missing one). */
export function jsonText(v: unknown): string {
  return v === undefined ? 'null' : JSON.stringify(v);
}

/** A boolean query parameter: `true` or `1`. */
export function bool(v: string | undefined): boolean {
  return v === 'true' || v === '1';
}

/** An integer query parameter; 400 naming it when it is not one. */
export function int(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw ApiError.badRequest(`invalid value for ${name}: ${v}`);
  return Number(v);
}

/** Whether the Accept header asks for a `meta.k8s.io` Table (kubectl get). */
export function wantsTable(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return accept
    .split(',')
    .some(
      (p) =>
        p.includes('as=Table') &&
        p.includes('g=meta.k8s.io') &&
        p.trim().startsWith('application/json'),
    );
}

/** The `includeObject` parameter of a Table request; `Metadata` unless it names another. */
export function includeObject(q: (k: string) => string | undefined): IncludeObject {
  const v = q('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}
