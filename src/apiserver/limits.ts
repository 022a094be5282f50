// The API server's size and shape limits, as kube-apiserver and etcd set them: the request
// body (3 MiB, `--max-request-bytes`; 413 RequestEntityTooLarge, refused from Content-Length
// or while streaming, never buffered past the limit), the stored object (etcd's 1.5 MiB
// `--max-request-bytes`), ConfigMap data (1 MiB, 422 naming `data`) and the nesting depth of
// JSON and YAML bodies (400 instead of a stack overflow further down). Pure except for
// reading a request body stream; the HTTP edge (server.ts) and the strategies call it.

import { ApiError } from './status.js';

/** kube-apiserver's default `MaxRequestBodyBytes` (3 MiB). */
export const DEFAULT_MAX_REQUEST_BYTES = 3 * 1024 * 1024;
/** etcd's default `--max-request-bytes`: the largest object a write may store. */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** kube-apiserver's `MaxSecretSize`, which also bounds a ConfigMap's data + binaryData. */
export const MAX_CONFIGMAP_DATA_BYTES = 1024 * 1024;
/**
 * Deepest nesting of arrays and objects accepted in a body. kube-apiserver's JSON decoder
 * stops at 10,000, but V8's recursive JSON.stringify and the yaml parser overflow the
 * default stack between 700 and 5,000 levels; Kubernetes objects nest about 20 deep.
 */
export const MAX_NESTING_DEPTH = 512;

/** 413 RequestEntityTooLarge, as apimachinery words it. */
export function requestEntityTooLarge(detail: string): ApiError {
  return new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: ${detail}`);
}

function tooDeep(max: number): ApiError {
  return ApiError.badRequest(
    `error decoding request body: exceeded max depth: the body nests arrays and objects more than ${max} levels deep`,
  );
}

/**
 * Reads a request body, refusing it with 413 as soon as Content-Length announces more than
 * `limit` bytes or the bytes read pass it (chunked bodies). Stops reading at that point and
 * cancels the stream, so memory never holds more than `limit` plus one chunk.
 */
export async function readLimitedBody(
  body: ReadableStream<Uint8Array> | null,
  contentLength: string | undefined,
  limit: number,
): Promise<Uint8Array> {
  if (contentLength !== undefined && /^\d+$/.test(contentLength.trim())) {
    if (Number(contentLength) > limit) {
      await body?.cancel().catch(() => undefined);
      throw requestEntityTooLarge(`limit is ${limit}`);
    }
  }
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw requestEntityTooLarge(`limit is ${limit}`);
    }
    chunks.push(value);
  }
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Throws 400 when JSON text nests arrays/objects deeper than `max`. One pass, no recursion,
 * brackets inside strings ignored; run before JSON.parse so a hostile body costs nothing.
 */
export function checkJsonDepth(text: string, max = MAX_NESTING_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) throw tooDeep(max);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}

/** Throws 400 when a decoded value nests deeper than `max` (iterative; for YAML bodies). */
export function checkValueDepth(value: unknown, max = MAX_NESTING_DEPTH): void {
  const stack: [unknown, number][] = [[value, 0]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, d] = top;
    if (typeof v !== 'object' || v === null) continue;
    if (d + 1 > max) throw tooDeep(max);
    for (const child of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>))
      if (typeof child === 'object' && child !== null) stack.push([child, d + 1]);
  }
}

/** Bytes of a string in UTF-8, without encoding it. */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Decoded size of a base64 value (binaryData), without decoding it. */
export function base64Length(s: string): number {
  const clean = s.replace(/\s+/g, '');
  const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - pad);
}

/**
 * Size of an object as storage would hold it (its JSON), refused past etcd's limit. The
 * status is 413 RequestEntityTooLarge: kube-apiserver passes etcd's "request is too large"
 * through as a 500, but nothing is stored and the client's request is at fault.
 */
export function checkObjectSize(obj: unknown, max = MAX_OBJECT_BYTES): void {
  const size = utf8Length(JSON.stringify(obj));
  if (size > max)
    throw requestEntityTooLarge(
      `the object is ${size} bytes; storage accepts at most ${max} (etcd --max-request-bytes)`,
    );
}
