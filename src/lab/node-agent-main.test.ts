import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreKubeClient } from '../apiserver/store-kube-client.js';
import { newTestApi } from '../apiserver/testing.js';
import { KubePodStatusWriter, labConflist, labNode, nodeConflist } from './node-agent-main.js';
import { parseFlannelConfig, flannelDelegate } from '../cni/parse-flannel.js';
import { parseConflist } from '../cni/runtime/parse-conflist.js';

test("the node's CNI network is kindnet's shape for both plugin sets", () => {
  for (const cni of ['svcnet', 'reference'] as const) {
    const list = parseConflist(labConflist(cni, ['10.244.1.0/24'], '/s/ipam'));
    assert.equal(list.name, 'kindnet');
    const plugin = list.plugins[0] as Record<string, unknown>;
    assert.equal(plugin.type, cni === 'svcnet' ? 'svcnet-cni' : 'ptp');
    assert.deepEqual(plugin.ipam, {
      type: 'host-local',
      dataDir: '/s/ipam',
      ranges: [[{ subnet: '10.244.1.0/24' }]],
      routes: [{ dst: '0.0.0.0/0' }],
    });
  }
  const dual = parseConflist(labConflist('svcnet', ['10.244.1.0/24', 'fd00:10:244:1::/64'], '/i'));
  assert.deepEqual((dual.plugins[0] as { ipam: unknown }).ipam, {
    type: 'host-local',
    dataDir: '/i',
    ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00:10:244:1::/64' }]],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
  });
});

const FILES = { ipamDir: '/n/ipam', subnetFile: '/n/flannel/subnet.env', flannelDataDir: '/n/fl' };

test("kubenet's network: cbr0 with the podCIDR's gateway, host-local, no masquerade, hairpin", () => {
  for (const cni of ['svcnet', 'reference'] as const) {
    const list = parseConflist(nodeConflist('kubenet', cni, ['10.244.2.0/24'], FILES));
    assert.equal(list.name, 'kubenet');
    const p = list.plugins[0] as Record<string, unknown>;
    assert.deepEqual(
      [p.type, p.mode, p.bridge, p.isGateway, p.ipMasq, p.hairpinMode],
      cni === 'svcnet'
        ? ['svcnet-cni', 'bridge', 'cbr0', true, false, true]
        : ['bridge', undefined, 'cbr0', true, false, true],
    );
    assert.deepEqual((p.ipam as { ranges: unknown }).ranges, [[{ subnet: '10.244.2.0/24' }]]);
  }
});

test("flannel's network: type flannel over the node's subnet.env, delegating to the cni0 bridge", () => {
  for (const net of ['flannel', 'flannel-host-gw'] as const) {
    const text = nodeConflist(net, 'svcnet', ['10.244.2.0/24'], FILES);
    const list = parseConflist(text);
    assert.equal(list.name, 'cbr0');
    const plugin = JSON.stringify({ ...list.plugins[0], name: 'cbr0', cniVersion: '1.0.0' });
    const f = parseFlannelConfig(plugin);
    assert.equal(f.subnetFile, '/n/flannel/subnet.env');
    assert.equal(f.dataDir, '/n/fl');
    const d = flannelDelegate(f, {
      network: '10.244.0.0/16',
      subnet: '10.244.2.0/24',
      gateway: '10.244.2.1',
      mtu: 1450,
      ipMasq: true,
    });
    assert.equal(d.type, 'bridge');
    assert.equal(d.isDefaultGateway, true);
    assert.equal(d.mtu, 1450);
    assert.deepEqual(d.ipam, {
      type: 'host-local',
      dataDir: '/n/ipam',
      ranges: [[{ subnet: '10.244.2.0/24' }]],
      routes: [{ dst: '10.244.0.0/16' }],
    });
  }
  assert.equal(
    nodeConflist('kindnet', 'svcnet', ['10.244.2.0/24'], FILES),
    labConflist('svcnet', ['10.244.2.0/24'], '/n/ipam'),
  );
});

test('a lab node registers like a kind node: podCIDR, InternalIP, role label, Ready', () => {
  const n = labNode({
    node: 'lab-control-plane',
    nodeIPs: ['172.18.0.2'],
    podCIDRs: ['10.244.0.0/24'],
    role: 'control-plane',
    now: new Date('2026-01-01T00:00:00Z'),
  });
  assert.deepEqual(n.spec, { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] });
  assert.deepEqual(n.metadata, {
    name: 'lab-control-plane',
    labels: {
      'kubernetes.io/hostname': 'lab-control-plane',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
      'beta.kubernetes.io/os': 'linux',
      'node-role.kubernetes.io/control-plane': '',
    },
  });
  assert.deepEqual(n.status.addresses?.[0], { type: 'InternalIP', address: '172.18.0.2' });
  assert.equal(n.status.conditions?.[0]?.status, 'True');
  const w = labNode({
    node: 'w',
    nodeIPs: ['172.18.0.3', 'fc00:f853:ccd:e793::3'],
    podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
    role: 'worker',
    now: new Date(),
  });
  assert.equal(w.metadata?.labels?.['node-role.kubernetes.io/control-plane'], undefined);
  // Dual-stack: both pod ranges (IPv4 first, spec.podCIDR the first) and both InternalIPs.
  assert.deepEqual(w.spec, {
    podCIDR: '10.244.1.0/24',
    podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
  });
  assert.deepEqual(
    w.status.addresses?.filter((a) => a.type === 'InternalIP').map((a) => a.address),
    ['172.18.0.3', 'fc00:f853:ccd:e793::3'],
  );
});

test('status writes go to the live Pod; a replaced Pod (new uid) is left alone', async () => {
  const client = new StoreKubeClient(newTestApi().store);
  const created = await client.create('Pod', {
    metadata: { name: 'p', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/e2e-test-images/agnhost:2.53' }] },
  });
  const writer = new KubePodStatusWriter(client);
  await writer.updateStatus(created, { phase: 'Running', podIP: '10.244.1.5' });
  assert.equal((await client.get('Pod', 'default', 'p'))?.status?.podIP, '10.244.1.5');
  const stale = { ...created, metadata: { ...created.metadata, uid: 'other' } };
  await writer.updateStatus(stale, { phase: 'Running', podIP: '10.244.1.9' });
  assert.equal((await client.get('Pod', 'default', 'p'))?.status?.podIP, '10.244.1.5');
  await writer.finalizeDelete(created);
  assert.equal(await client.get('Pod', 'default', 'p'), undefined);
  await writer.finalizeDelete(created); // already gone: success
});
