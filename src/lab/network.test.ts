import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeIp } from '../os/ip.js';
import { netnsPath } from '../util/ip-ops.js';
import { buildNetwork, deleteNamespaces } from './network.js';
import { networkScript, planLab } from './topology.js';

test('the 3-node lab network on FakeIp: each namespace gets its links, addresses and routes', async () => {
  const ip = new FakeIp();
  const script = networkScript(planLab({ nodes: 3 }));
  await buildNetwork(ip, script);
  assert.equal(
    ip.dump(netnsPath('hub')),
    [
      'link br0 bridge up 172.18.0.1/16',
      'link lo up',
      'link n0 veth up master br0',
      'link n1 veth up master br0',
      'link n2 veth up master br0',
      'link nowhere veth up',
      'link nowhere-end veth',
      'link out veth up master br0',
      'route 0.0.0.0/0 dev nowhere scope link',
      'route 10.244.0.0/24 via 172.18.0.2 dev br0',
      'route 10.244.1.0/24 via 172.18.0.3 dev br0',
      'route 10.244.2.0/24 via 172.18.0.4 dev br0',
      'route 172.18.0.0/16 dev br0 scope link',
    ].join('\n'),
  );
  const nodes = [
    ['node-0', '172.18.0.2', ['10.244.1.0/24 via 172.18.0.3', '10.244.2.0/24 via 172.18.0.4']],
    ['node-1', '172.18.0.3', ['10.244.0.0/24 via 172.18.0.2', '10.244.2.0/24 via 172.18.0.4']],
    ['node-2', '172.18.0.4', ['10.244.0.0/24 via 172.18.0.2', '10.244.1.0/24 via 172.18.0.3']],
  ] as const;
  for (const [ns, nodeIP, podRoutes] of nodes)
    assert.equal(
      ip.dump(netnsPath(ns)),
      [
        `link eth0 veth up ${nodeIP}/16`,
        'link lo up',
        'route 0.0.0.0/0 via 172.18.0.1 dev eth0',
        ...podRoutes.map((r) => `route ${r} dev eth0`),
        'route 172.18.0.0/16 dev eth0 scope link',
      ].join('\n'),
      ns,
    );
  // The outside host: on the bridge, the LB pool via the hub.
  assert.equal(
    ip.dump(netnsPath('outside')),
    [
      'link eth0 veth up 172.18.254.1/16',
      'link lo up',
      'route 0.0.0.0/0 via 172.18.0.1 dev eth0',
      'route 172.18.0.0/16 dev eth0 scope link',
      'route 172.18.255.200/29 via 172.18.0.1 dev eth0',
      'route 172.18.255.208/28 via 172.18.0.1 dev eth0',
      'route 172.18.255.224/28 via 172.18.0.1 dev eth0',
      'route 172.18.255.240/29 via 172.18.0.1 dev eth0',
      'route 172.18.255.248/31 via 172.18.0.1 dev eth0',
      'route 172.18.255.250/32 via 172.18.0.1 dev eth0',
    ].join('\n'),
  );
  await deleteNamespaces(ip, script.namespaces);
  for (const ns of script.namespaces) assert.equal(await ip.netnsExists(netnsPath(ns)), false);
  assert.equal(ip.dump(undefined), 'link lo', 'nothing leaks into the namespace we run in');
});

test('--ip-family dual: IPv6 addresses, default routes and pod routes beside the IPv4 ones', async () => {
  const ip = new FakeIp();
  const plan = planLab({ nodes: 2, ipFamily: 'dual' });
  const script = networkScript(plan);
  await buildNetwork(ip, script);
  const hub = ip.dump(netnsPath('hub')).split('\n');
  assert.ok(
    hub.includes('link br0 bridge up 172.18.0.1/16 fc00:f853:ccd:e793::1/64'),
    hub.join('\n'),
  );
  assert.ok(hub.includes('route ::/0 dev nowhere scope link'), hub.join('\n'));
  assert.ok(hub.includes('route fd00:10:244:1::/64 via fc00:f853:ccd:e793::3 dev br0'));
  const node0 = ip.dump(netnsPath('node-0')).split('\n');
  assert.ok(
    node0.includes('link eth0 veth up 172.18.0.2/16 fc00:f853:ccd:e793::2/64'),
    node0.join('\n'),
  );
  assert.ok(node0.includes('route ::/0 via fc00:f853:ccd:e793::1 dev eth0'), node0.join('\n'));
  assert.ok(node0.includes('route fd00:10:244:1::/64 via fc00:f853:ccd:e793::3 dev eth0'));
  const out = ip.dump(netnsPath('outside')).split('\n');
  assert.ok(out.includes('route ::/0 via fc00:f853:ccd:e793::1 dev eth0'), out.join('\n'));
  // IPv6 forwarding in the hub and the nodes; the hub rejects IPv6 leaving the lab too.
  for (const ns of ['hub', 'node-0', 'node-1'])
    assert.ok(
      script.sysctls
        .find((s) => s.netns === ns)
        ?.settings.includes('net.ipv6.conf.all.forwarding=1'),
      ns,
    );
  assert.deepEqual(
    script.firewall.map((f) => [f.netns, f.family ?? 'IPv4', f.restore[1]?.split(' -j ')[1]]),
    [
      ['hub', 'IPv4', 'REJECT --reject-with icmp-admin-prohibited'],
      ['hub', 'IPv6', 'REJECT --reject-with icmp6-adm-prohibited'],
    ],
  );
  assert.equal(planLab().ipFamily, 'ipv4');
  assert.equal(planLab().nodes[0]?.ip6, undefined);
  assert.throws(
    () => planLab({ ipFamily: 'ipv5' as 'dual' }),
    /--ip-family: must be one of ipv4, dual, got "ipv5"/,
  );
});

test('a kubenet lab on FakeIp: the nodes hub ports are isolated, the outside host port is not', async () => {
  const ip = new FakeIp();
  await buildNetwork(ip, networkScript(planLab({ nodes: 2, podNetwork: 'kubenet' })));
  const hub = netnsPath('hub');
  assert.deepEqual(
    ['n0', 'n1', 'out'].map((dev) => ip.isolated(hub, dev)),
    [true, true, false],
  );
  assert.doesNotMatch(ip.dump(netnsPath('node-0')), /10\.244\./);
});
