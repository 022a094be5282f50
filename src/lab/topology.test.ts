import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planLab, networkScript, podGateway } from './topology.js';

test('the default lab is kind-like: one control plane and two workers on 172.18.0.0/16', () => {
  const plan = planLab();
  assert.deepEqual(
    plan.nodes.map((n) => [n.name, n.role, n.ip, n.podCIDR]),
    [
      ['svcnet-control-plane', 'control-plane', '172.18.0.2', '10.244.0.0/24'],
      ['svcnet-worker', 'worker', '172.18.0.3', '10.244.1.0/24'],
      ['svcnet-worker2', 'worker', '172.18.0.4', '10.244.2.0/24'],
    ],
  );
  assert.equal(podGateway(plan.nodes[1]!), '10.244.1.1');
  assert.equal(plan.dnsServiceIP, '10.96.0.10');
});

test('every node routes the other nodes pod CIDRs via their node IPs and has a default route', () => {
  const script = networkScript(planLab({ nodes: 3 }));
  assert.deepEqual(script.namespaces, ['hub', 'node-0', 'node-1', 'node-2']);
  const node1 = script.batches.find((b) => b.netns === 'node-1')!;
  assert.ok(node1.lines.includes('route add 10.244.0.0/24 via 172.18.0.2 dev eth0'));
  assert.ok(node1.lines.includes('route add 10.244.2.0/24 via 172.18.0.4 dev eth0'));
  assert.ok(!node1.lines.some((l) => l.includes('10.244.1.0/24')));
  assert.ok(node1.lines.includes('route add default via 172.18.0.1 dev eth0'));
  assert.ok(script.sysctls.every((s) => s.settings.includes('net.ipv4.ip_forward=1')));
});

test('bad names and node counts are rejected naming the flag', () => {
  assert.throws(() => planLab({ nodes: 0 }), /--nodes: must be 1-200, got 0/);
  assert.throws(() => planLab({ name: 'Bad_Name' }), /lab name: must be a lowercase DNS label/);
});
