// The HTTP edge of `svcnet ui`: a hono app serving the JSON API (snapshot, per-node rules,
// trace), the SSE stream of changes and the built page (dist/ui: index.html and assets/).
// It decides nothing itself: snapshot.ts, rules-view.ts and trace-request.ts do, over a
// UiCluster (informers, or a Fake in tests) and a RulesProvider. With a token every request
// needs `Authorization: Bearer TOKEN` or the cookie that `/?token=TOKEN` sets (a browser
// cannot add headers to EventSource). Routes and shapes: docs/ui.md.

import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { SvcnetError, ValidationError } from '../errors.js';
import type { ApiError, ChangeEvent, ClusterSnapshot, RulesSourceInfo } from './api-types.js';
import { parseRoutingDump, type RoutingState } from '../trace/routes/dump.js';
import { buildRulesView } from './rules-view.js';
import { resolveTraceQuery, traceResolved } from './trace-request.js';

/** The cluster as the UI sees it. */
export interface UiCluster {
  snapshot(): ClusterSnapshot;
  /** Calls `listener` with the kinds changed (debounced); returns the unsubscribe function. */
  subscribe(listener: (e: ChangeEvent) => void): () => void;
}

export interface NodeRules {
  readonly text: string;
  readonly source: RulesSourceInfo;
}

/** Where each node's rules come from (files, the lab's live rules, or our planner). */
export interface RulesProvider {
  read(node: string): Promise<NodeRules | undefined>;
}

export interface UiServerOptions {
  readonly cluster: UiCluster;
  readonly rules: RulesProvider;
  /** The built page (dist/ui): index.html and assets/. */
  readonly assetsDir: string;
  /** When set, every request must carry it (non-loopback listeners). */
  readonly token?: string;
  /** SSE keep-alive comment interval (default 15 s). */
  readonly keepAliveMs?: number;
  /**
   * A node's routing dumps (`svcnet lab ui`: read live, src/trace/routes/collect.ts), for the
   * route each hop takes; without it hops come from the objects only.
   */
  readonly routes?: (node: string) => Promise<string | undefined>;
}

/** The node's routing state, or a note saying why it could not be read. */
async function readRoutes(
  opts: UiServerOptions,
  node: string,
): Promise<{ state?: RoutingState; note?: string }> {
  if (opts.routes === undefined) return {};
  try {
    const text = await opts.routes(node);
    return text === undefined ? {} : { state: parseRoutingDump(text) };
  } catch (e) {
    if (!(e instanceof SvcnetError)) throw e;
    return { note: `routes of ${node} not read (hops from the cluster objects): ${e.message}` };
  }
}

const TOKEN_COOKIE = 'svcnet-ui-token';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

function apiError(status: 400 | 401 | 404 | 500, message: string, field?: string): Response {
  const body: ApiError = { error: { message, ...(field !== undefined ? { field } : {}) } };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>svcnet ui: page not built</title></head>
<body><h1>The svcnet ui page is not built</h1><p>The API works (<a href="/api/snapshot">/api/snapshot</a>),
but dist/ui/index.html is missing. Build the page with <code>npm run build:ui</code> (or <code>npm run build</code>) in the svcnet checkout, then reload.</p></body></html>`;

/** The SSE stream: `hello`, then one `change` per debounced change, keep-alives between. */
async function sendChanges(stream: SSEStreamingApi, opts: UiServerOptions): Promise<void> {
  let wake: (() => void) | undefined;
  const queue: ChangeEvent[] = [];
  const unsubscribe = opts.cluster.subscribe((e) => {
    queue.push(e);
    wake?.();
  });
  stream.onAbort(() => {
    unsubscribe();
    wake?.();
  });
  await stream.writeSSE({
    event: 'hello',
    data: JSON.stringify({ revision: opts.cluster.snapshot().revision }),
  });
  // A function, not the property: the stream aborts while this loop awaits.
  const open = (): boolean => !stream.aborted;
  while (open()) {
    const e = queue.shift();
    if (e !== undefined) {
      await stream.writeSSE({ event: 'change', data: JSON.stringify(e) });
      continue;
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
      const t = setTimeout(resolve, opts.keepAliveMs ?? 15_000);
      t.unref();
    });
    wake = undefined;
    if (queue.length === 0 && open()) await stream.write(': keep-alive\n\n');
  }
  unsubscribe();
}

/** The UI's hono app. */
export function createUiApp(opts: UiServerOptions): Hono {
  const app = new Hono();
  const token = opts.token;

  if (token !== undefined)
    app.use('*', async (c, next) => {
      const q = c.req.query('token');
      if (q !== undefined && sameToken(q, token) && c.req.path === '/')
        return new Response(null, {
          status: 302,
          headers: {
            location: '/',
            'set-cookie': `${TOKEN_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict`,
          },
        });
      const header = c.req.header('authorization') ?? '';
      const bearer = /^Bearer (.+)$/.exec(header)?.[1];
      const jar = new RegExp(`(?:^|;\\s*)${TOKEN_COOKIE}=([^;]*)`).exec(
        c.req.header('cookie') ?? '',
      );
      const cookie = jar?.[1] === undefined ? undefined : decodeURIComponent(jar[1]);
      if (
        (bearer !== undefined && sameToken(bearer, token)) ||
        (cookie !== undefined && sameToken(cookie, token))
      )
        return next();
      return apiError(
        401,
        'this svcnet ui needs the bearer token printed at its start (open /?token=TOKEN once)',
      );
    });

  // Serialised once per snapshot: every open page refetches it on each change.
  let serialised: { snap: ClusterSnapshot; text: string } | undefined;
  app.get('/api/snapshot', (c) => {
    const snap = opts.cluster.snapshot();
    if (serialised?.snap !== snap) serialised = { snap, text: JSON.stringify(snap) };
    return c.body(serialised.text, 200, { 'content-type': 'application/json' });
  });

  app.get('/api/nodes/:node/rules', async (c) => {
    const node = c.req.param('node');
    const rules = await opts.rules.read(node);
    if (rules === undefined)
      return apiError(404, `no rules for node ${JSON.stringify(node)}`, 'node');
    try {
      return c.json(
        buildRulesView(node, rules.source.origin, rules.source.description, rules.text),
      );
    } catch (e) {
      if (e instanceof SvcnetError)
        return apiError(500, `${rules.source.description}: ${e.message}`);
      throw e;
    }
  });

  app.get('/api/trace', async (c) => {
    const q = c.req.query();
    const snap = opts.cluster.snapshot();
    let resolved;
    try {
      for (const field of ['src', 'dst'] as const)
        if ((q[field] ?? '') === '')
          throw new ValidationError([{ object: 'trace', field, message: 'required' }]);
      resolved = resolveTraceQuery(snap, {
        src: q.src ?? '',
        dst: q.dst ?? '',
        ...(q.proto !== undefined && q.proto !== '' ? { proto: q.proto } : {}),
        ...(q.node !== undefined && q.node !== '' ? { node: q.node } : {}),
      });
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      const first = e.errors[0];
      return apiError(
        400,
        e.errors.map((x) => `${x.field}: ${x.message}`).join('; '),
        first?.field,
      );
    }
    const rules = await opts.rules.read(resolved.node.name);
    if (rules === undefined)
      return apiError(400, `no rules for node ${resolved.node.name}`, 'node');
    const routes = await readRoutes(opts, resolved.node.name);
    try {
      const t = traceResolved(
        snap,
        resolved,
        { text: rules.text, origin: rules.source.origin },
        routes.state,
      );
      return c.json(routes.note === undefined ? t : { ...t, notes: [...t.notes, routes.note] });
    } catch (e) {
      if (e instanceof SvcnetError)
        return apiError(500, `${rules.source.description}: ${e.message}`);
      throw e;
    }
  });

  app.get('/api/events', (c) => streamSSE(c, (stream) => sendChanges(stream, opts)));

  app.all('/api/*', (c) => apiError(404, `no such API route: ${c.req.method} ${c.req.path}`));

  app.get('*', async (c) => {
    const path = c.req.path === '/' ? '/index.html' : c.req.path;
    const rel = normalize(path).replace(/^\/+/, '');
    if (rel !== 'index.html' && !rel.startsWith('assets/')) return c.notFound();
    try {
      const body = await readFile(join(opts.assetsDir, rel));
      return c.body(body, 200, {
        'content-type': CONTENT_TYPES[extname(rel)] ?? 'application/octet-stream',
        'cache-control': rel.startsWith('assets/')
          ? 'public, max-age=31536000, immutable'
          : 'no-cache',
      });
    } catch {
      if (rel === 'index.html') return c.html(NOT_BUILT, 503);
      return c.notFound();
    }
  });

  return app;
}
