import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { toWire } from './wire.js';

test('a client-node model goes back to wire JSON: RFC 3339 timestamps, nested models, maps', () => {
  const svc = new k8s.V1Service();
  svc.apiVersion = 'v1';
  svc.kind = 'Service';
  svc.metadata = Object.assign(new k8s.V1ObjectMeta(), {
    name: 'web',
    namespace: 'default',
    labels: { app: 'web' },
    creationTimestamp: new Date('2026-11-24T01:02:03Z'),
  });
  svc.spec = Object.assign(new k8s.V1ServiceSpec(), {
    ports: [
      Object.assign(new k8s.V1ServicePort(), { port: 80, targetPort: 'http', protocol: 'TCP' }),
    ],
    selector: { app: 'web' },
  });
  const wire = JSON.parse(JSON.stringify(toWire(svc, 'V1Service'))) as unknown;
  assert.deepEqual(wire, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'web',
      namespace: 'default',
      labels: { app: 'web' },
      creationTimestamp: '2026-11-24T01:02:03.000Z',
    },
    spec: { ports: [{ port: 80, targetPort: 'http', protocol: 'TCP' }], selector: { app: 'web' } },
  });
});

test('renamed properties take their JSON names', () => {
  const meta = new k8s.V1ListMeta();
  meta._continue = 'token';
  meta.resourceVersion = '7';
  assert.deepEqual(JSON.parse(JSON.stringify(toWire(meta, 'V1ListMeta'))), {
    continue: 'token',
    resourceVersion: '7',
  });
});

test('arrays, maps of models and unknown types', () => {
  const stamp = new Date('2026-01-01T00:00:00Z');
  const conds = toWire(
    [{ type: 'Ready', status: 'True', lastTransitionTime: stamp }],
    'Array<V1PodCondition>',
  );
  assert.deepEqual(JSON.parse(JSON.stringify(conds)), [
    { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00.000Z' },
  ]);
  const map = toWire({ a: { port: 1 } }, '{ [key: string]: V1ServicePort; }') as Record<
    string,
    unknown
  >;
  assert.deepEqual(JSON.parse(JSON.stringify(map)), { a: { port: 1 } });
  const odd = { x: new Date(0) };
  assert.equal(toWire(odd, 'NoSuchModel'), odd);
  assert.equal(toWire(undefined, 'V1Pod'), undefined);
  assert.equal(toWire('s', 'string'), 's');
});
