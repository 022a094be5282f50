// The embedded API server refuses an EndpointSlice over kube-apiserver's limits (1000
// endpoints, 100 ports) with 422 naming the field, in apimachinery's `Too many` wording, and
// admits one at the limits.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newTestApi, newTestApp } from './testing.js';

const TOKEN = 't';
const PATH = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';

function post(body: unknown): Promise<Response> {
  const api = newTestApi();
  const app = newTestApp(api, TOKEN);
  return Promise.resolve(
    app.request(PATH, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

function slice(name: string, endpoints: number, ports: number) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name },
    addressType: 'IPv4',
    endpoints: Array.from({ length: endpoints }, (_, i) => ({
      addresses: [`10.${String(i >> 16)}.${String((i >> 8) & 255)}.${String(i & 255)}`],
    })),
    ports: Array.from({ length: ports }, (_, i) => ({
      name: `p${String(i)}`,
      port: 1000 + i,
      protocol: 'TCP',
    })),
  };
}

interface StatusBody {
  readonly reason: string;
  readonly message: string;
  readonly details: {
    readonly causes: readonly { reason: string; field: string; message: string }[];
  };
}

const CASES = [
  {
    name: '1001 endpoints',
    body: slice('big', 1001, 1),
    cause: {
      reason: 'FieldValueTooMany',
      field: 'endpoints',
      message: 'Too many: 1001: must have at most 1000 items',
    },
  },
  {
    name: '101 ports',
    body: slice('wide', 1, 101),
    cause: {
      reason: 'FieldValueTooMany',
      field: 'ports',
      message: 'Too many: 101: must have at most 100 items',
    },
  },
];

for (const c of CASES)
  test(`an EndpointSlice with ${c.name} is refused with 422 naming the field`, async () => {
    const res = await post(c.body);
    assert.equal(res.status, 422);
    const body = (await res.json()) as StatusBody;
    assert.equal(body.reason, 'Invalid');
    assert.deepEqual(body.details.causes, [c.cause]);
    assert.match(body.message, new RegExp(`${c.cause.field}: ${c.cause.message}`));
  });

test('an EndpointSlice with 1000 endpoints and 100 ports is admitted', async () => {
  const res = await post(slice('full', 1000, 100));
  assert.equal(res.status, 201);
});
