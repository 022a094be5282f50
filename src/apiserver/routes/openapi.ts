// OpenAPI v3 routes of the API server: the root index and one immutable document per
// group/version (`/openapi/v3/api/v1`, `/openapi/v3/apis/apps/v1`), as kubectl explain and
// client-side validation fetch them.

import { Hono } from 'hono';
import { openAPIV3Document, openAPIV3Root } from '../discovery.js';
import { json, notFoundPath } from './http.js';

/** The OpenAPI routes as a hono sub-app. */
export function openapiRoutes(): Hono {
  const app = new Hono();
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
  return app;
}
