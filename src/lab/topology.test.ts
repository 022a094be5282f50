import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planLab, networkScript, podGateway } from './topology.js';
import { renderIpOp } from '../util/ip-ops.js';

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
  assert.deepEqual(script.namespaces, ['hub', 'node-0', 'node-1', 'node-2', 'outside']);
  const node1 = { lines: script.batches.find((b) => b.netns === 'node-1')!.ops.map(renderIpOp) };
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

test('traffic leaving the lab is routed to a dead-end device in the hub and rejected there', () => {
  const script = networkScript(planLab({ nodes: 2 }));
  const hub = (script.batches.find((b) => b.netns === 'hub')?.ops ?? []).map(renderIpOp);
  assert.ok(hub.includes('route add default dev nowhere'));
  assert.ok(
    hub.includes('route add 10.244.1.0/24 via 172.18.0.3 dev br0'),
    'answers find the Pods',
  );
  const fw = script.firewall.find((f) => f.netns === 'hub')?.restore.join('\n') ?? '';
  assert.match(fw, /-A FORWARD -o nowhere .*-j REJECT --reject-with icmp-admin-prohibited/);
  assert.deepEqual(
    script.firewall.map((f) => f.netns),
    ['hub'],
    "nodes get no rules but the proxy's",
  );
});

test('the outside host sits on the lab bridge and reaches the LB pool via the hub', () => {
  const plan = planLab({ nodes: 2 });
  assert.deepEqual(plan.outside, { netns: 'outside', ip: '172.18.254.1', hubInterface: 'out' });
  const script = networkScript(plan);
  const hub = (script.batches.find((b) => b.netns === 'hub')?.ops ?? []).map(renderIpOp);
  assert.ok(hub.includes('link add out type veth peer name eth0 netns outside'));
  assert.ok(hub.includes('link set out master br0 up'));
  const out = (script.batches.find((b) => b.netns === 'outside')?.ops ?? []).map(renderIpOp);
  assert.deepEqual(out, [
    'link set lo up',
    'addr add 172.18.254.1/16 dev eth0',
    'link set eth0 up',
    'route add default via 172.18.0.1 dev eth0',
    'route add 172.18.255.200/29 via 172.18.0.1 dev eth0',
    'route add 172.18.255.208/28 via 172.18.0.1 dev eth0',
    'route add 172.18.255.224/28 via 172.18.0.1 dev eth0',
    'route add 172.18.255.240/29 via 172.18.0.1 dev eth0',
    'route add 172.18.255.248/31 via 172.18.0.1 dev eth0',
    'route add 172.18.255.250/32 via 172.18.0.1 dev eth0',
  ]);
  const hubSysctls = script.sysctls.find((s) => s.netns === 'hub')?.settings ?? [];
  assert.ok(hubSysctls.includes('net.ipv4.conf.br0.send_redirects=0'));
});

test('--lb-pool is parsed and may not hold the lab own addresses', () => {
  assert.equal(planLab({ lbPool: '10.200.0.0/28' }).lbPool, '10.200.0.0/28');
  assert.throws(
    () => planLab({ lbPool: '172.18.0.0/24' }),
    /--lb-pool: 172.18.0.0\/24 holds lab addresses \(172.18.0.1, 172.18.0.2, 172.18.0.3, 172.18.0.4\)/,
  );
  assert.throws(() => planLab({ lbPool: 'fd00::/120' }), /--lb-pool: must be an IPv4 CIDR/);
});

/** The rendered ops of one namespace's batch. */
function opsOf(script: ReturnType<typeof networkScript>, netns: string): string[] {
  return (script.batches.find((b) => b.netns === netns)?.ops ?? []).map(renderIpOp);
}

test('the default pod network is kindnet: nodes share br0 and route each other pods', () => {
  const plan = planLab();
  assert.equal(plan.podNetwork, 'kindnet');
  const hub = opsOf(networkScript(plan), 'hub');
  assert.ok(!hub.some((l) => l.includes('isolated')));
  assert.ok(hub.includes('route add 10.244.1.0/24 via 172.18.0.3 dev br0'));
});

test('kubenet: nodes on isolated hub ports, the hub holds one cloud route per podCIDR', () => {
  const script = networkScript(planLab({ podNetwork: 'kubenet' }));
  const hub = opsOf(script, 'hub');
  for (const i of [0, 1, 2]) {
    assert.ok(hub.includes(`link set n${String(i)} type bridge_slave isolated on`));
    assert.ok(
      hub.includes(`route add 10.244.${String(i)}.0/24 via 172.18.0.${String(i + 2)} dev br0`),
    );
  }
  assert.ok(!hub.includes('link set out type bridge_slave isolated on'));
  const node1 = opsOf(script, 'node-1');
  assert.ok(!node1.some((l) => l.startsWith('route add 10.244.')));
  assert.ok(node1.includes('route add default via 172.18.0.1 dev eth0'));
  const hubSysctls = script.sysctls.find((s) => s.netns === 'hub')?.settings ?? [];
  assert.ok(hubSysctls.includes('net.ipv4.conf.br0.proxy_arp_pvlan=1'));
  assert.ok(hubSysctls.includes('net.ipv4.neigh.br0.proxy_delay=0'));
  const nodeSysctls = script.sysctls.find((s) => s.netns === 'node-1')?.settings ?? [];
  assert.ok(nodeSysctls.includes('net.bridge.bridge-nf-call-iptables=1'));
});

test('flannel: isolated nodes and no pod route anywhere (only the overlay carries pods)', () => {
  const script = networkScript(planLab({ podNetwork: 'flannel' }));
  const hub = opsOf(script, 'hub');
  assert.ok(hub.includes('link set n1 type bridge_slave isolated on'));
  for (const ns of script.namespaces)
    assert.ok(!opsOf(script, ns).some((l) => l.includes('10.244.')), ns);
});

test('flannel-host-gw: one shared segment (host-gw needs it), no pod routes in the plan', () => {
  const script = networkScript(planLab({ podNetwork: 'flannel-host-gw' }));
  const hub = opsOf(script, 'hub');
  assert.ok(!hub.some((l) => l.includes('isolated')));
  for (const ns of script.namespaces)
    assert.ok(!opsOf(script, ns).some((l) => l.includes('10.244.')), ns);
});

test('--pod-network: unknown values and dual-stack with flannel or kubenet are refused', () => {
  assert.throws(
    () => planLab({ podNetwork: 'calico' as never }),
    /--pod-network: must be one of kindnet, flannel, flannel-host-gw, kubenet, got "calico"/,
  );
  for (const podNetwork of ['flannel', 'flannel-host-gw', 'kubenet'] as const)
    assert.throws(
      () => planLab({ podNetwork, ipFamily: 'dual' }),
      new RegExp(`--ip-family dual: not supported with --pod-network ${podNetwork}`),
    );
  assert.equal(planLab({ ipFamily: 'dual' }).podNetwork, 'kindnet');
});
