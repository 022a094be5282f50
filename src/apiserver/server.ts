// The HTTP edge of the embedded API server (hono): bearer-token authentication, request
// logging and `Warning` headers as middleware, Status answers for errors, and the route
// modules mounted in order: discovery and health (routes/discovery.ts), OpenAPI
// (routes/openapi.ts), then the REST verbs on every resource (routes/resources.ts, with
// watch, patch and subresources beside it). Request-body size limits live in limits.ts and
// listener.ts; the semantics live in store.ts.

import { timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import type { KubeletDialer } from './kubelet-proxy.js';
import { DEFAULT_MAX_REQUEST_BYTES } from './limits.js';
import type { RequestContext } from './routes/context.js';
import { PUBLIC_PATHS, discoveryRoutes } from './routes/discovery.js';
import { json, notFoundPath, statusResponse } from './routes/http.js';
import { openapiRoutes } from './routes/openapi.js';
import { resourceRoutes } from './routes/resources.js';
import { ApiError } from './status.js';
import type { Store } from './store.js';

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
  /** How Pod logs (and exec, attach, port-forward) reach the node; none: they answer 400. */
  readonly kubelet?: KubeletDialer;
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
  const ctx: RequestContext = {
    store: opts.store,
    now: opts.now ?? Date.now,
    serverAddress: opts.serverAddress,
    heartbeatMs: opts.heartbeatMs ?? 20_000,
    bookmarkMs: opts.bookmarkMs ?? 60_000,
    maxRequestBytes: opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
    warnings: new WeakMap(),
    kubelet: opts.kubelet,
  };
  const expected = opts.token !== undefined ? Buffer.from(opts.token) : undefined;
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
      for (const w of ctx.warnings.get(c) ?? [])
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

  app.route('/', discoveryRoutes(ctx));
  app.route('/', openapiRoutes());
  app.route('/', resourceRoutes(ctx));
  app.all('*', () => statusResponse(notFoundPath()));
  return app;
}
