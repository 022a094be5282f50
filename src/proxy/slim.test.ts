import assert from 'node:assert/strict';
import { test } from 'node:test';
import { service } from '../kube/testing.js';
import { slimForProxy } from './slim.js';

test('slimForProxy drops managedFields and last-applied, keeps every other field', () => {
  const svc = service(
    'default/web',
    { clusterIP: '10.96.0.10' },
    {
      metadata: {
        resourceVersion: '7',
        labels: { app: 'web' },
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': '{"big":"json"}',
          'service.kubernetes.io/topology-mode': 'Auto',
        },
        managedFields: [{ manager: 'kubectl' }],
      },
    },
  );
  const expected = structuredClone(svc);
  delete expected.metadata?.managedFields;
  delete expected.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'];
  slimForProxy(svc);
  assert.deepEqual(svc, expected);
  assert.equal(svc.metadata?.annotations?.['service.kubernetes.io/topology-mode'], 'Auto');
});

test('slimForProxy leaves an object without metadata or annotations alone', () => {
  const bare = { apiVersion: 'v1', kind: 'Service' };
  slimForProxy(bare);
  assert.deepEqual(bare, { apiVersion: 'v1', kind: 'Service' });
});
