import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ValidationError } from '../errors.js';
import { describeNode, nodeHostIPs, resolveNode } from './node-model.js';
import type { Node } from './types.js';

function node(
  name: string,
  addresses: Node['status'] extends infer S
    ? S extends { addresses?: infer A }
      ? A
      : never
    : never,
  zone?: string,
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: zone !== undefined ? { 'topology.kubernetes.io/zone': zone } : {} },
    spec: { podCIDRs: ['10.244.1.0/24'] },
    status: { addresses },
  };
}

const nodes = [
  node('a', [{ type: 'InternalIP', address: '172.18.0.2' }]),
  node(
    'b',
    [
      { type: 'ExternalIP', address: '203.0.113.3' },
      { type: 'InternalIP', address: '172.18.0.3' },
    ],
    'zone-b',
  ),
  node('c', [
    { type: 'ExternalIP', address: '203.0.113.4' },
    { type: 'Hostname', address: 'c' },
  ]),
];

test('--node takes the Node of that name: its InternalIP, podCIDRs and zone', () => {
  const b = resolveNode(nodes, { name: 'b' });
  assert.deepEqual(b.nodeIPs, ['172.18.0.3']);
  assert.equal(b.zone, 'zone-b');
  assert.equal(
    describeNode(b),
    'node b (Node from the manifests): IP 172.18.0.3 (InternalIP of the Node), podCIDR 10.244.1.0/24, zone zone-b',
  );
  // A Node with only an ExternalIP uses it, as kubelet's GetNodeHostIPs does.
  assert.deepEqual(nodeHostIPs(nodes[2]), ['203.0.113.4']);
  assert.match(
    describeNode(resolveNode(nodes, { name: 'c' })),
    /IP 203\.0\.113\.4 \(ExternalIP of the Node\)/,
  );
});

test('--node-ip overrides; defaults are named as defaults; a misspelt --node is an error', () => {
  const b = resolveNode(nodes, { name: 'b', nodeIPs: ['10.0.0.9'] });
  assert.deepEqual(b.nodeIPs, ['10.0.0.9']);
  assert.match(describeNode(b), /IP 10\.0\.0\.9 \(from --node-ip\)/);
  assert.equal(
    describeNode(resolveNode([], {})),
    'node node-1 (default; set with --node): IP 172.18.0.2 (default; set with --node-ip)',
  );
  assert.equal(resolveNode([nodes[1]!], {}).name, 'b', 'the only Node');
  assert.throws(
    () => resolveNode(nodes, { name: 'bb' }),
    (e: unknown) =>
      e instanceof ValidationError &&
      e.message === 'node: --node: no Node "bb" in the manifests (they have a, b, c)',
  );
  assert.throws(
    () => resolveNode(nodes, { nodeIPs: ['nope'] }),
    /--node-ip\[0\]: must be an IP address/,
  );
});
