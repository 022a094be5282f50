import { test } from 'node:test';
import assert from 'node:assert/strict';
import { podsPerNodeObjects } from './pods-per-node.js';

test('N per node is one Deployment of N × nodes netexec Pods behind a Service', () => {
  const [deploy, svc] = podsPerNodeObjects(100, 3);
  assert.equal(deploy?.kind, 'Deployment');
  assert.equal((deploy as { spec: { replicas: number } }).spec.replicas, 300);
  assert.equal(svc?.kind, 'Service');
  assert.deepEqual((svc as { spec: { selector: unknown } }).spec.selector, { app: 'netexec' });
});

test('out of range is refused naming the flag', () => {
  assert.throws(() => podsPerNodeObjects(0, 3), /--pods-per-node: must be 1-250/);
  assert.throws(() => podsPerNodeObjects(251, 3), /got 251/);
});
