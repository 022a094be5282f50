import { test } from 'node:test';
import assert from 'node:assert/strict';
import { carryOver } from './apply.js';

const live = {
  kind: 'Service',
  metadata: { name: 's', resourceVersion: '42' },
  spec: {
    type: 'NodePort',
    clusterIP: '10.96.3.4',
    clusterIPs: ['10.96.3.4'],
    ports: [{ port: 80, protocol: 'TCP', nodePort: 31234 }],
  },
};

test('a re-applied Service keeps its allocated clusterIP and nodePorts', () => {
  const next = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { type: 'NodePort', ports: [{ port: 80 }, { port: 81 }] },
  });
  // The live object's allocations (resourceVersion, clusterIP(s), port 80's nodePort) on the
  // new ports; the new port 81 gets none.
  assert.deepEqual(next, {
    ...live,
    spec: { ...live.spec, ports: [{ port: 80, nodePort: 31234 }, { port: 81 }] },
  });
});

test('a type change drops node ports; ExternalName takes no clusterIP', () => {
  const toCluster = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { ports: [{ port: 80 }] },
  });
  assert.deepEqual((toCluster.spec as { ports: unknown }).ports, [{ port: 80 }]);
  const toExternal = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { type: 'ExternalName', externalName: 'example.org' },
  });
  assert.equal((toExternal.spec as { clusterIP?: string }).clusterIP, undefined);
});

test('other kinds only get the live resourceVersion', () => {
  assert.deepEqual(
    carryOver(
      { metadata: { resourceVersion: '7' }, spec: { replicas: 1 } },
      { kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 3 } },
    ),
    { kind: 'Deployment', metadata: { name: 'd', resourceVersion: '7' }, spec: { replicas: 3 } },
  );
});
