// The HTTP edge of the embedded API server (hono): bearer-token authentication, discovery and
// OpenAPI, and the REST verbs on every served resource (list, watch, get, create, update,
// patch, delete, deletecollection; status, scale, binding and finalize subresources), with
// content negotiation (Table, aggregated discovery, JSON / YAML / protobuf request bodies).
// It parses requests, calls the store, and encodes answers; the semantics live in store.ts.

import { timingSafeEqual } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { parse as parseYaml } from 'yaml';
import {
  aggregatedDiscovery,
  apiResourceList,
  discoveryContentType,
  legacyAPIGroup,
  legacyAPIGroupList,
  legacyAPIVersions,
  negotiateDiscovery,
  openAPIV3Document,
  openAPIV3Root,
} from './discovery.js';
import { clone, isPlainObject } from '../util/json.js';
import type { StoredObject } from './object.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, patchTypeOf } from './patch.js';
import { decodeProtobufObject, isProtobufContentType } from './protobuf.js';
import {
  DEPLOYMENTS,
  NAMESPACES,
  PODS,
  REPLICASETS,
  STATEFULSETS,
  apiVersionOf,
  findResource,
  type ResourceType,
} from './resources.js';
import {
  DEFAULT_MAX_REQUEST_BYTES,
  checkJsonDepth,
  checkValueDepth,
  readLimitedBody,
} from './limits.js';
import { checkSchema, parseFieldValidation, schemaOf } from './schema.js';
import { formatLabelSelectorObject } from './selectors.js';
import { ApiError } from './status.js';
import type { DeleteOptions, Store, WatchEvent, WatchHandle } from './store.js';
import { toTable, type IncludeObject } from './table.js';

export interface ApiServerOptions {
  readonly store: Store;
  /** Bearer token clients must present; undefined disables authentication (tests only). */
  readonly token?: string;
  /** `host:port` advertised in legacy discovery. */
  readonly serverAddress?: string;
  readonly now?: () => number;
  /** Interval of the `\n` keep-alive on idle watches. */
  readonly heartbeatMs?: number;
  /** Interval of BOOKMARK events on watches that allow them. */
  readonly bookmarkMs?: number;
  /** Largest request body accepted (413 past it); kube-apiserver's 3 MiB by default. */
  readonly maxRequestBytes?: number;
  /** Called for every request after it is answered (logging). */
  readonly onRequest?: (info: { method: string; path: string; status: number; ms: number }) => void;
}

export const SERVER_VERSION = {
  major: '1',
  minor: '33',
  gitVersion: 'v1.33.0-svcnet',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.24.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const JSON_TYPE = 'application/json';
const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);

interface Target {
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

const jsonCache = new WeakMap<object, string>();

/** JSON of a stored object, serialised once however many watchers receive it. */
function objectJson(o: StoredObject): string {
  let text = jsonCache.get(o);
  if (text === undefined) {
    text = JSON.stringify(o);
    jsonCache.set(o, text);
  }
  return text;
}

/** Seconds of a Go duration such as `32s`, `1m0s` or `500ms` (the `timeout` parameter). */
function goDurationSeconds(v: string | undefined): number | undefined {
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

function jsonText(v: unknown): string {
  return v === undefined ? 'null' : JSON.stringify(v);
}

function bool(v: string | undefined): boolean {
  return v === 'true' || v === '1';
}

function int(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw ApiError.badRequest(`invalid value for ${name}: ${v}`);
  return Number(v);
}

function wantsTable(accept: string | undefined): boolean {
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

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': JSON_TYPE, ...headers },
  });
}

function statusResponse(e: ApiError): Response {
  return json(e.toStatus(), e.status);
}

/** Whether an Authorization header carries the bearer token, compared in constant time. */
export function tokenMatches(expected: Buffer, header: string | undefined): boolean {
  if (header === undefined) return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return false;
  const got = Buffer.from(m[1] ?? '');
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** The API server as a hono app (use `app.request()` in tests, @hono/node-server to serve). */
export function createApiServer(opts: ApiServerOptions): Hono {
  const store = opts.store;
  const now = opts.now ?? Date.now;
  const expected = opts.token !== undefined ? Buffer.from(opts.token) : undefined;
  const heartbeatMs = opts.heartbeatMs ?? 20_000;
  const bookmarkMs = opts.bookmarkMs ?? 60_000;
  const maxRequestBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const app = new Hono();

  app.use('*', async (c, next) => {
    const start = performance.now();
    if (
      expected !== undefined &&
      !PUBLIC_PATHS.has(c.req.path) &&
      !tokenMatches(expected, c.req.header('authorization'))
    ) {
      c.res = json(new ApiError(401, 'Unauthorized', 'Unauthorized').toStatus(), 401);
    } else {
      await next();
      for (const w of warnings.get(c) ?? [])
        c.res.headers.append('Warning', `299 - ${JSON.stringify(w)}`);
    }
    opts.onRequest?.({
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: performance.now() - start,
    });
  });

  app.onError((err) => {
    if (err instanceof ApiError) return statusResponse(err);
    return statusResponse(ApiError.internal(err instanceof Error ? err.message : String(err)));
  });

  for (const p of ['/healthz', '/livez', '/readyz']) app.get(p, (c) => c.text('ok'));
  app.get('/version', () => json(SERVER_VERSION));

  app.get('/api', (c) => {
    const v = negotiateDiscovery(c.req.header('accept'));
    if (v)
      return json(aggregatedDiscovery(true, v), 200, {
        'Content-Type': discoveryContentType(v),
        Vary: 'Accept',
      });
    return json(legacyAPIVersions(opts.serverAddress ?? new URL(c.req.url).host), 200, {
      Vary: 'Accept',
    });
  });
  app.get('/apis', (c) => {
    const v = negotiateDiscovery(c.req.header('accept'));
    if (v)
      return json(aggregatedDiscovery(false, v), 200, {
        'Content-Type': discoveryContentType(v),
        Vary: 'Accept',
      });
    return json(legacyAPIGroupList(), 200, { Vary: 'Accept' });
  });
  app.get('/api/:version', (c) => {
    const list = apiResourceList('', c.req.param('version'));
    if (!list) throw notFoundPath();
    return json(list);
  });
  app.get('/apis/:group', (c) => {
    const g = legacyAPIGroup(c.req.param('group'));
    if (!g) throw notFoundPath();
    return json(g);
  });
  app.get('/apis/:group/:version', (c) => {
    const list = apiResourceList(c.req.param('group'), c.req.param('version'));
    if (!list) throw notFoundPath();
    return json(list);
  });
  app.get('/openapi/v3', () => json(openAPIV3Root()));
  app.get('/openapi/v3/*', (c) => {
    const rest = c.req.path.slice('/openapi/v3/'.length).split('/');
    const doc =
      rest[0] === 'api'
        ? openAPIV3Document('', rest[1] ?? '')
        : rest[0] === 'apis'
          ? openAPIV3Document(rest[1] ?? '', rest[2] ?? '')
          : undefined;
    if (!doc) throw notFoundPath();
    return json(doc, 200, { 'Cache-Control': 'public, immutable' });
  });

  app.all('/api/*', (c) => durably(handleResource(c)));
  app.all('/apis/*', (c) => durably(handleResource(c)));
  app.all('*', () => statusResponse(notFoundPath()));

  /** Warnings for the answer to a request (`Warning: 299 - "..."` headers). */
  const warnings = new WeakMap<object, string[]>();

  /**
   * Checks a body (or a patched object) against its kind's schema before the store sees it:
   * a field of the wrong type is 422 naming it; unknown fields follow `fieldValidation`.
   */
  function checkBody(c: Context, rt: ResourceType, body: unknown): void {
    const mode = parseFieldValidation(c.req.query('fieldValidation'));
    if (mode === undefined)
      throw ApiError.badRequest(
        `fieldValidation: Unsupported value: ${JSON.stringify(c.req.query('fieldValidation'))}: supported values: "Ignore", "Strict", "Warn"`,
      );
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    const { causes, unknown } = checkSchema(body, schemaOf(rt));
    if (causes.length > 0) {
      const meta = (body as { metadata?: { name?: unknown } }).metadata;
      const name = typeof meta?.name === 'string' ? meta.name : '';
      throw ApiError.invalid(rt.group, rt.kind, name, causes);
    }
    if (unknown.length === 0 || mode === 'Ignore') return;
    const lines = unknown.map((f) => `unknown field "${f}"`);
    if (mode === 'Strict') throw ApiError.badRequest(`strict decoding error: ${lines.join(', ')}`);
    warnings.set(c, [...(warnings.get(c) ?? []), ...lines]);
  }

  function notFoundPath(): ApiError {
    return new ApiError(404, 'NotFound', 'the server could not find the requested resource');
  }

  async function readBody(c: Context, rt: ResourceType): Promise<unknown> {
    const ct = c.req.header('content-type') ?? JSON_TYPE;
    // With a Content-Length within the limit (Node's parser holds the body to it), hono's
    // direct read is the fast path; otherwise count while streaming.
    const length = c.req.header('content-length');
    const raw =
      length !== undefined && /^\d+$/.test(length) && Number(length) <= maxRequestBytes
        ? new Uint8Array(await c.req.arrayBuffer())
        : await readLimitedBody(c.req.raw.body, length, maxRequestBytes);
    if (isProtobufContentType(ct)) return decodeProtobufObject(raw, rt);
    const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
    if (text.trim() === '') return undefined;
    const base = ct.split(';')[0]?.trim().toLowerCase() ?? '';
    if (base !== 'application/yaml' && base !== 'application/apply-patch+yaml')
      checkJsonDepth(text);
    let value: unknown;
    try {
      // The yaml parser recurses: a deeply nested document fails here (stack overflow
      // included) and is a 400 like any other undecodable body.
      value =
        base === 'application/yaml' || base === 'application/apply-patch+yaml'
          ? (parseYaml(text) as unknown)
          : (JSON.parse(text) as unknown);
    } catch (e) {
      throw ApiError.badRequest(
        `error decoding request body: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    checkValueDepth(value);
    return value;
  }

  function includeObject(q: (k: string) => string | undefined): IncludeObject {
    const v = q('includeObject');
    return v === 'None' || v === 'Object' ? v : 'Metadata';
  }

  function encode(c: Context, rt: ResourceType, obj: StoredObject, status = 200): Response {
    if (wantsTable(c.req.header('accept')))
      return json(
        toTable(rt, [obj], now(), {
          include: includeObject((k) => c.req.query(k)),
          metadata: { resourceVersion: obj.metadata.resourceVersion ?? '' },
        }),
        status,
      );
    return json(obj, status);
  }

  /**
   * Answers only once every write made so far (this request's, and any it may have read) is
   * durable; if their commit failed, the request fails with the storage error instead.
   */
  async function durably(res: Promise<Response>): Promise<Response> {
    const out = await res;
    const pending = store.durable();
    if (pending) await pending;
    return out;
  }

  async function handleResource(c: Context): Promise<Response> {
    const target = parseResourcePath(c.req.path);
    if (target === undefined || target === 'unknown-resource') throw notFoundPath();
    const { rt, ns, name, sub } = target;
    const method = c.req.method;
    const q = (k: string): string | undefined => c.req.query(k);
    const dryRun = q('dryRun') === 'All';
    if (
      rt.namespaced &&
      ns === undefined &&
      (name !== undefined || (method !== 'GET' && method !== 'DELETE'))
    )
      throw notFoundPath();

    if (name === undefined) {
      if (method === 'GET') {
        if (bool(q('watch')) || target.watchPath) return watchResponse(c, rt, ns);
        return listResponse(c, rt, ns);
      }
      if (method === 'POST') {
        const body = await readBody(c, rt);
        checkBody(c, rt, body);
        const created = store.create(rt, ns, body, { dryRun });
        return encode(c, rt, created, 201);
      }
      if (method === 'DELETE') {
        const opts = await deleteOptions(c, rt);
        const listed = store.list(rt, ns, {
          labelSelector: q('labelSelector') ?? '',
          fieldSelector: q('fieldSelector') ?? '',
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
      throw ApiError.methodNotAllowed(
        `the server does not allow this method on the requested resource`,
      );
    }

    if (target.watchPath && method === 'GET') return watchResponse(c, rt, ns, name);

    if (sub === undefined) {
      switch (method) {
        case 'GET':
          return encode(c, rt, store.get(rt, ns, name));
        case 'PUT': {
          const body = await readBody(c, rt);
          checkBody(c, rt, body);
          return encode(c, rt, store.update(rt, ns, name, body, { dryRun }));
        }
        case 'PATCH':
          return patchResponse(c, rt, ns, name, undefined, dryRun);
        case 'DELETE': {
          const opts = await deleteOptions(c, rt);
          return encode(c, rt, store.delete(rt, ns, name, opts));
        }
        default:
          throw ApiError.methodNotAllowed(
            'the server does not allow this method on the requested resource',
          );
      }
    }
    if (!rt.subresources.includes(sub as never)) throw notFoundPath();
    if (sub === 'status') {
      if (method === 'GET') return encode(c, rt, store.get(rt, ns, name));
      if (method === 'PUT') {
        const body = await readBody(c, rt);
        checkBody(c, rt, body);
        return encode(c, rt, store.update(rt, ns, name, body, { subresource: 'status', dryRun }));
      }
      if (method === 'PATCH') return patchResponse(c, rt, ns, name, 'status', dryRun);
    }
    if (sub === 'scale' && (rt === DEPLOYMENTS || rt === REPLICASETS || rt === STATEFULSETS)) {
      if (method === 'GET') return json(toScale(store.get(rt, ns, name)));
      if (method === 'PUT' || method === 'PATCH')
        return scaleWrite(c, rt, ns, name, method, dryRun);
    }
    if (sub === 'binding' && rt === PODS && method === 'POST') return bindPod(c, ns, name, dryRun);
    if (sub === 'finalize' && rt === NAMESPACES && method === 'PUT') {
      const body = await readBody(c, rt);
      const cur = clone(store.get(rt, undefined, name));
      const spec = isPlainObject(body) && isPlainObject(body.spec) ? body.spec : {};
      (cur as Record<string, unknown>).spec = {
        ...((cur as { spec?: object }).spec ?? {}),
        finalizers: spec.finalizers ?? [],
      };
      return json(store.update(rt, undefined, name, cur, { dryRun }));
    }
    if (sub === 'log' && rt === PODS && method === 'GET')
      throw ApiError.badRequest(
        `container logs of pod "${name}" are not available from the svcnet API server`,
      );
    throw ApiError.methodNotAllowed(
      'the server does not allow this method on the requested resource',
    );
  }

  function listResponse(c: Context, rt: ResourceType, ns: string | undefined): Response {
    const q = (k: string): string | undefined => c.req.query(k);
    const limit = int(q('limit'), 'limit');
    const result = store.list(rt, ns, {
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
      return json(toTable(rt, result.items, now(), { include: includeObject(q), metadata }));
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

  function watchResponse(
    c: Context,
    rt: ResourceType,
    ns: string | undefined,
    name?: string,
  ): Response {
    const q = (k: string): string | undefined => c.req.query(k);
    const table = wantsTable(c.req.header('accept'));
    const include = includeObject(q);
    const timeoutSeconds =
      int(q('timeoutSeconds'), 'timeoutSeconds') ?? goDurationSeconds(q('timeout'));
    const allowBookmarks = bool(q('allowWatchBookmarks'));
    let fieldSelector = q('fieldSelector') ?? '';
    if (name !== undefined)
      fieldSelector =
        fieldSelector === '' ? `metadata.name=${name}` : `${fieldSelector},metadata.name=${name}`;
    const encoder = new TextEncoder();
    let handle: WatchHandle | undefined;
    const timers: NodeJS.Timeout[] = [];
    let first = true;
    let closed = false;
    const cleanup = (): void => {
      closed = true;
      handle?.stop();
      for (const t of timers) clearInterval(t);
    };
    const line = (e: WatchEvent): string => {
      if (e.type === 'BOOKMARK' || e.type === 'ERROR') return `${JSON.stringify(e)}\n`;
      if (!table) return `{"type":"${e.type}","object":${objectJson(e.object)}}\n`;
      const t = toTable(rt, [e.object], now(), {
        include,
        withColumns: first,
        metadata: { resourceVersion: e.object.metadata.resourceVersion ?? '' },
      });
      first = false;
      return `${JSON.stringify({ type: e.type, object: t })}\n`;
    };
    // Validate (and fail with a plain HTTP error) before the stream starts.
    // Events are batched per turn of the event loop: one stream chunk (one TLS record) for a
    // burst of events instead of one per event.
    let pending = '';
    let scheduled = false;
    let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
    const flush = (): void => {
      scheduled = false;
      if (closed || !controllerRef || pending === '') return;
      const chunk = pending;
      pending = '';
      controllerRef.enqueue(encoder.encode(chunk));
    };
    const send = (text: string): void => {
      if (closed) return;
      pending += text;
      if (!scheduled && controllerRef) {
        scheduled = true;
        setImmediate(flush);
      }
    };
    try {
      handle = store.watch(
        rt,
        ns,
        {
          labelSelector: q('labelSelector') ?? '',
          fieldSelector,
          resourceVersion: q('resourceVersion') ?? '',
          sendInitialEvents: bool(q('sendInitialEvents')),
          allowWatchBookmarks: allowBookmarks,
        },
        (e) => {
          send(line(e));
        },
      );
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 410 && e.status !== 504)) throw e;
      // As kube-apiserver's watch cache: a 200 stream carrying one ERROR event, then EOF.
      const body = `${JSON.stringify({ type: 'ERROR', object: e.toStatus() })}\n`;
      return new Response(body, { status: 200, headers: { 'Content-Type': JSON_TYPE } });
    }
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controllerRef = controller;
        flush();
        const close = (): void => {
          if (closed) return;
          cleanup();
          try {
            controller.close();
          } catch {
            // already closed by the client
          }
        };
        const timeoutMs =
          timeoutSeconds !== undefined && timeoutSeconds > 0
            ? timeoutSeconds * 1000
            : (1800 + Math.random() * 1800) * 1000;
        const t = setTimeout(close, timeoutMs);
        t.unref();
        timers.push(t);
        const hb = setInterval(() => {
          send('\n');
        }, heartbeatMs);
        hb.unref();
        timers.push(hb);
        if (allowBookmarks) {
          const bm = setInterval(() => {
            send(line({ type: 'BOOKMARK', object: store.bookmark(rt) }));
          }, bookmarkMs);
          bm.unref();
          timers.push(bm);
        }
      },
      cancel() {
        cleanup();
      },
    });
    c.req.raw.signal.addEventListener('abort', cleanup);
    return new Response(stream, {
      status: 200,
      headers: {
        'Content-Type': JSON_TYPE,
        'Transfer-Encoding': 'chunked',
        'Cache-Control': 'no-cache, private',
      },
    });
  }

  async function deleteOptions(c: Context, rt: ResourceType): Promise<DeleteOptions> {
    const body = await readBody(c, rt).catch((e: unknown) => {
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

  async function patchResponse(
    c: Context,
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    sub: 'status' | undefined,
    dryRun: boolean,
  ): Promise<Response> {
    const ct = c.req.header('content-type') ?? '';
    const type = patchTypeOf(ct);
    if (type === undefined) {
      if (ct.includes('apply-patch+cbor')) throw ApiError.unsupportedMediaType(ct);
      throw ApiError.unsupportedMediaType(ct);
    }
    const body = await readBody(c, rt);
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
        checkBody(c, rt, body);
        const created = store.create(
          rt,
          ns,
          { ...body, metadata: { ...(isPlainObject(body.metadata) ? body.metadata : {}), name } },
          { dryRun },
        );
        return encode(c, rt, created, 201);
      }
      const merged = applyStrategicMergePatch(rt.kind, current, body);
      checkBody(c, rt, merged);
      return encode(
        c,
        rt,
        store.update(rt, ns, name, withRV(merged, current, body), {
          dryRun,
          ...(sub ? { subresource: sub } : {}),
        }),
      );
    }
    if (current === undefined) throw ApiError.notFound(rt.group, rt.plural, name);
    let patched: unknown;
    if (type === 'json') patched = applyJsonPatch(current, body);
    else if (type === 'merge') patched = applyMergePatch(current, body);
    else patched = applyStrategicMergePatch(rt.kind, current, body);
    checkBody(c, rt, patched);
    return encode(
      c,
      rt,
      store.update(rt, ns, name, withRV(patched, current, body), {
        dryRun,
        ...(sub ? { subresource: sub } : {}),
      }),
    );
  }

  /** A patch is applied to the current object; it conflicts only if it names another resourceVersion. */
  function withRV(patched: unknown, current: StoredObject, patch: unknown): unknown {
    if (!isPlainObject(patched)) return patched;
    const meta = isPlainObject(patched.metadata) ? patched.metadata : {};
    const patchMeta = isPlainObject(patch) && isPlainObject(patch.metadata) ? patch.metadata : {};
    const rv =
      typeof patchMeta.resourceVersion === 'string'
        ? patchMeta.resourceVersion
        : current.metadata.resourceVersion;
    return { ...patched, metadata: { ...meta, resourceVersion: rv } };
  }

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

  async function scaleWrite(
    c: Context,
    rt: ResourceType,
    ns: string | undefined,
    name: string,
    method: string,
    dryRun: boolean,
  ): Promise<Response> {
    const current = store.get(rt, ns, name);
    const scale = toScale(current);
    const body = await readBody(c, rt);
    let next: unknown;
    if (method === 'PUT') next = body;
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
      throw new ApiError(
        422,
        'Invalid',
        `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${jsonText(replicas)}: must be greater than or equal to 0`,
        {
          name,
          group: 'autoscaling',
          kind: 'Scale',
          causes: [
            {
              reason: 'FieldValueInvalid',
              field: 'spec.replicas',
              message: `Invalid value: ${jsonText(replicas)}: must be greater than or equal to 0`,
            },
          ],
        },
      );
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

  async function bindPod(
    c: Context,
    ns: string | undefined,
    name: string,
    dryRun: boolean,
  ): Promise<Response> {
    const body = await readBody(c, PODS);
    const target = isPlainObject(body) && isPlainObject(body.target) ? body.target : {};
    const node = typeof target.name === 'string' ? target.name : '';
    if (node === '')
      throw new ApiError(422, 'Invalid', 'Binding.core "" is invalid: target.name: Required value');
    const pod = store.get(PODS, ns, name);
    const spec = (pod.spec ?? {}) as { nodeName?: string };
    if (spec.nodeName !== undefined && spec.nodeName !== '')
      throw ApiError.conflict(
        '',
        'pods',
        name,
        `pod ${name} is already assigned to node "${spec.nodeName}"`,
      );
    if (pod.metadata.deletionTimestamp !== undefined)
      throw ApiError.conflict(
        '',
        'pods',
        name,
        `pod ${name} is being deleted, cannot be assigned to a host`,
      );
    const next = clone(pod);
    (next as Record<string, unknown>).spec = { ...spec, nodeName: node };
    const status = clone((pod.status ?? {}) as { conditions?: object[] });
    status.conditions = [
      ...(status.conditions ?? []).filter((x) => (x as { type?: string }).type !== 'PodScheduled'),
      {
        type: 'PodScheduled',
        status: 'True',
        lastProbeTime: null,
        lastTransitionTime: new Date(now()).toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    ];
    const updated = store.update(PODS, ns, name, next, { dryRun });
    if (!dryRun) {
      const withStatus = clone(updated);
      withStatus.status = status;
      store.update(PODS, ns, name, withStatus, { subresource: 'status' });
    }
    return json(
      { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 },
      201,
    );
  }

  return app;
}
