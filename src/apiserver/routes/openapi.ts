// OpenAPI routes of the API server: v3's root index and one immutable document per
// group/version (`/openapi/v3/api/v1`, `/openapi/v3/apis/apps/v1`), as kubectl explain and
// client-side validation fetch them; and the v2 document (openapi-v2.ts), JSON or protobuf,
// which kubectl reads to validate a `kind: List`.

import { Hono } from 'hono';
import { openAPIV3Document, openAPIV3Root } from '../discovery.js';
import { OPENAPI_V2_PROTOBUF, openAPIV2Document, openAPIV2Protobuf } from '../openapi-v2.js';
import { json, notFoundPath } from './http.js';

/** The OpenAPI routes as a hono sub-app. */
export function openapiRoutes(): Hono {
  const app = new Hono();
  app.get('/openapi/v2', (c) => {
    const accept = c.req.header('Accept') ?? '';
    if (accept.includes('application/com.github.proto-openapi.spec.v2'))
      return new Response(openAPIV2Protobuf(), {
        headers: { 'Content-Type': OPENAPI_V2_PROTOBUF },
      });
    return json(openAPIV2Document());
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
  return app;
}
