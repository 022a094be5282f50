// The /openapi/v2 route: protobuf when client-go asks for it (under a Content-Type Go can
// parse), JSON otherwise; the protobuf holds Document.swagger and Document.info only.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newTestApi, newTestApp } from './testing.js';

const TOKEN = 't';

async function get(accept: string): Promise<Response> {
  const api = newTestApi();
  const app = newTestApp(api, TOKEN);
  return app.request('/openapi/v2', {
    headers: { Authorization: `Bearer ${TOKEN}`, Accept: accept },
  });
}

test('/openapi/v2 in protobuf: swagger 2.0 and the info header, labelled without the @', async () => {
  const res = await get('application/com.github.proto-openapi.spec.v2@v1.0+protobuf');
  assert.equal(res.status, 200);
  assert.equal(
    res.headers.get('Content-Type'),
    'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
  );
  const bytes = new Uint8Array(await res.arrayBuffer());
  const info = [0x0a, 10, ...Buffer.from('Kubernetes'), 0x12, 7, ...Buffer.from('v1.33.0')];
  assert.deepEqual([...bytes], [0x0a, 3, ...Buffer.from('2.0'), 0x12, info.length, ...info]);
});

test('/openapi/v2 in JSON: no paths, no definitions', async () => {
  const res = await get('application/json');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {
    swagger: '2.0',
    info: { title: 'Kubernetes', version: 'v1.33.0' },
    paths: {},
    definitions: {},
  });
});
