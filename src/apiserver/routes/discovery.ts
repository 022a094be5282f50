// Health, version and discovery routes of the API server: `/healthz` `/livez` `/readyz`,
// `/version`, `/api` and `/apis` (aggregated discovery when the Accept header asks for it,
// the legacy documents otherwise), and the per-group and per-version resource lists.

import { Hono } from 'hono';
import {
  aggregatedDiscovery,
  apiResourceList,
  discoveryContentType,
  legacyAPIGroup,
  legacyAPIGroupList,
  legacyAPIVersions,
  negotiateDiscovery,
} from '../discovery.js';
import type { RequestContext } from './context.js';
import { json, notFoundPath } from './http.js';

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

/** Paths answered without a bearer token. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  '/healthz',
  '/livez',
  '/readyz',
  '/version',
]);

/**
 * `/api` or `/apis`: the aggregated document in the negotiated version, else `legacy()`;
 * both vary on Accept.
 */
function rootDiscovery(accept: string | undefined, core: boolean, legacy: () => unknown): Response {
  const v = negotiateDiscovery(accept);
  if (v)
    return json(aggregatedDiscovery(core, v), 200, {
      'Content-Type': discoveryContentType(v),
      Vary: 'Accept',
    });
  return json(legacy(), 200, { Vary: 'Accept' });
}

/** The discovery routes as a hono sub-app. */
export function discoveryRoutes(ctx: RequestContext): Hono {
  const app = new Hono();
  for (const p of ['/healthz', '/livez', '/readyz']) app.get(p, (c) => c.text('ok'));
  app.get('/version', () => json(SERVER_VERSION));
  app.get('/api', (c) =>
    rootDiscovery(c.req.header('accept'), true, () =>
      legacyAPIVersions(ctx.serverAddress ?? new URL(c.req.url).host),
    ),
  );
  app.get('/apis', (c) => rootDiscovery(c.req.header('accept'), false, legacyAPIGroupList));
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
  return app;
}
