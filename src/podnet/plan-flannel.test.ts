import { test } from 'node:test';
import assert from 'node:assert/strict';
import { node } from '../kube/testing.js';
import type { Node } from '../kube/types.js';
import { renderFdbBatch, renderIpBatch } from '../util/ip-ops.js';
import { parseNetConf } from './parse-net-conf.js';
import {
  desiredState,
  peersFromNodes,
  planOps,
  type FlannelObserved,
  type Uplink,
} from './plan-flannel.js';

const VXLAN = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}', 'f');
const HOSTGW = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}', 'f');
const UPLINK: Uplink = { name: 'eth0', mtu: 1500, ip: '192.168.1.2', prefixlen: 24 };
const EMPTY: FlannelObserved = { device: undefined, routes: [], neighbours: [], fdb: [] };

function flannelNode(name: string, podCIDR: string | undefined, ann: Record<string, string>): Node {
  const n = node(name, podCIDR === undefined ? {} : { podCIDR });
  return { ...n, metadata: { ...n.metadata, annotations: ann } };
}

function vxlanNode(name: string, podCIDR: string, ip: string, mac: string): Node {
  return flannelNode(name, podCIDR, {
    'flannel.alpha.coreos.com/backend-type': 'vxlan',
    'flannel.alpha.coreos.com/backend-data': JSON.stringify({ VNIType: 1, VtepMAC: mac }),
    'flannel.alpha.coreos.com/public-ip': ip,
  });
}

test('peers: nodes without podCIDR, annotations, a valid VtepMAC or their own subnet (first by name wins) are skipped with the reason', () => {
  const nodes = [
    vxlanNode('n1', '10.244.1.0/24', '192.168.1.2', '0e:00:00:00:00:01'),
    vxlanNode('n3', '10.244.3.0/24', '192.168.3.2', '0E:00:00:00:00:03'),
    flannelNode('bare', undefined, {}),
    flannelNode('new', '10.244.4.0/24', {}),
    vxlanNode('outside', '10.9.0.0/24', '192.168.5.2', '0e:00:00:00:00:05'),
    vxlanNode('badmac', '10.244.6.0/24', '192.168.6.2', 'zz'),
    vxlanNode('zclash', '10.244.3.0/24', '192.168.7.2', '0e:00:00:00:00:07'),
    flannelNode('gw', '10.244.8.0/24', {
      'flannel.alpha.coreos.com/backend-type': 'host-gw',
      'flannel.alpha.coreos.com/public-ip': '192.168.8.2',
    }),
  ];
  const { peers, skipped } = peersFromNodes(nodes, 'n1', '10.244.1.0/24', VXLAN, UPLINK);
  assert.deepEqual(peers, [
    { name: 'n3', podCIDR: '10.244.3.0/24', publicIP: '192.168.3.2', vtepMAC: '0e:00:00:00:00:03' },
  ]);
  assert.deepEqual(skipped, [
    { node: 'badmac', reason: 'flannel.alpha.coreos.com/backend-data has no valid VtepMAC' },
    { node: 'bare', reason: 'spec.podCIDR is not set' },
    {
      node: 'gw',
      reason: 'flannel.alpha.coreos.com/backend-type is host-gw, this node runs vxlan',
    },
    { node: 'new', reason: 'no flannel.alpha.coreos.com/backend-type annotation yet' },
    { node: 'outside', reason: 'spec.podCIDR 10.9.0.0/24 is outside the Network 10.244.0.0/16' },
    { node: 'zclash', reason: "spec.podCIDR 10.244.3.0/24 is also Node n3's" },
  ]);
});

test('vxlan: from nothing, flannel.1 (VNI 1, dstport 8472, nolearning, MTU 1450, 10.244.1.0/32) and one route, neighbour and FDB entry per peer', () => {
  const { peers } = peersFromNodes(
    [
      vxlanNode('n2', '10.244.2.0/24', '192.168.2.2', '0e:00:00:00:00:02'),
      vxlanNode('n3', '10.244.3.0/24', '192.168.3.2', '0e:00:00:00:00:03'),
    ],
    'n1',
    '10.244.1.0/24',
    VXLAN,
    UPLINK,
  );
  const desired = desiredState(VXLAN, '10.244.1.0/24', UPLINK, peers, undefined);
  const ops = planOps(VXLAN, '10.244.1.0/24', UPLINK, desired, EMPTY);
  assert.equal(ops.createsDevice, true);
  assert.equal(
    renderIpBatch(ops.ip),
    [
      'link add flannel.1 mtu 1450 type vxlan id 1 dstport 8472 local 192.168.1.2 nolearning',
      'addr add 10.244.1.0/32 dev flannel.1',
      'link set flannel.1 up',
      'route replace 10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink',
      'route replace 10.244.3.0/24 via 10.244.3.0 dev flannel.1 onlink',
      'neigh replace 10.244.2.0 lladdr 0e:00:00:00:00:02 dev flannel.1 nud permanent',
      'neigh replace 10.244.3.0 lladdr 0e:00:00:00:00:03 dev flannel.1 nud permanent',
      '',
    ].join('\n'),
  );
  assert.equal(
    renderFdbBatch(ops.fdb),
    'fdb replace 0e:00:00:00:00:02 dev flannel.1 dst 192.168.2.2 self permanent\n' +
      'fdb replace 0e:00:00:00:00:03 dev flannel.1 dst 192.168.3.2 self permanent\n',
  );
});

test('vxlan: in step is no ops; a gone Node loses its entries; a moved VTEP is replaced; a wrong device is re-created', () => {
  const device = {
    name: 'flannel.1',
    mac: '0e:00:00:00:00:01',
    mtu: 1450,
    up: true,
    kind: 'vxlan',
    addrs: [{ local: '10.244.1.0', prefixlen: 32 }],
    vxlan: { id: 1, port: 8472, local: '192.168.1.2', learning: false },
  };
  const observed: FlannelObserved = {
    device,
    routes: [
      { dst: '0.0.0.0/0', gateway: '192.168.1.1', dev: 'eth0' },
      { dst: '10.244.1.0/24', gateway: undefined, dev: 'cni0' },
      { dst: '10.244.2.0/24', gateway: '10.244.2.0', dev: 'flannel.1' },
      { dst: '10.244.3.0/24', gateway: '10.244.3.0', dev: 'flannel.1' },
    ],
    neighbours: [
      { dst: '10.244.2.0', lladdr: '0e:00:00:00:00:02', permanent: true },
      { dst: '10.244.3.0', lladdr: '0e:00:00:00:00:03', permanent: true },
    ],
    fdb: [
      { mac: '0e:00:00:00:00:02', dst: '192.168.2.2' },
      { mac: '0e:00:00:00:00:03', dst: '192.168.3.2' },
    ],
  };
  const n2 = vxlanNode('n2', '10.244.2.0/24', '192.168.2.2', '0e:00:00:00:00:02');
  const n3 = vxlanNode('n3', '10.244.3.0/24', '192.168.3.2', '0e:00:00:00:00:03');
  const plan = (nodes: Node[], obs: FlannelObserved) => {
    const { peers } = peersFromNodes(nodes, 'n1', '10.244.1.0/24', VXLAN, UPLINK);
    const desired = desiredState(VXLAN, '10.244.1.0/24', UPLINK, peers, device.mac);
    const ops = planOps(VXLAN, '10.244.1.0/24', UPLINK, desired, obs);
    return { ip: renderIpBatch(ops.ip), fdb: renderFdbBatch(ops.fdb), fresh: ops.createsDevice };
  };
  assert.deepEqual(plan([n2, n3], observed), { ip: '', fdb: '', fresh: false });
  assert.deepEqual(plan([n2], observed), {
    ip: 'route del 10.244.3.0/24 dev flannel.1\nneigh del 10.244.3.0 dev flannel.1\n',
    fdb: 'fdb del 0e:00:00:00:00:03 dev flannel.1 dst 192.168.3.2 self\n',
    fresh: false,
  });
  const moved = vxlanNode('n3', '10.244.3.0/24', '192.168.9.2', '0e:00:00:00:00:03');
  assert.deepEqual(plan([n2, moved], observed), {
    ip: '',
    fdb:
      'fdb del 0e:00:00:00:00:03 dev flannel.1 dst 192.168.3.2 self\n' +
      'fdb replace 0e:00:00:00:00:03 dev flannel.1 dst 192.168.9.2 self permanent\n',
    fresh: false,
  });
  const wrong = { ...observed, device: { ...device, vxlan: { ...device.vxlan, port: 4789 } } };
  const again = plan([n2], wrong);
  assert.equal(again.fresh, true);
  assert.match(
    again.ip,
    /^link del flannel.1\nlink add flannel.1 mtu 1450 address 0e:00:00:00:00:01 type vxlan id 1 dstport 8472 local 192.168.1.2 nolearning\n/,
  );
  assert.match(again.ip, /route replace 10.244.2.0\/24 via 10.244.2.0 dev flannel.1 onlink/);
});

test("host-gw: routes via the peers' public IPs on the uplink; a peer on another segment is skipped", () => {
  const gwNode = (name: string, cidr: string, ip: string): Node =>
    flannelNode(name, cidr, {
      'flannel.alpha.coreos.com/backend-type': 'host-gw',
      'flannel.alpha.coreos.com/backend-data': 'null',
      'flannel.alpha.coreos.com/public-ip': ip,
    });
  const { peers, skipped } = peersFromNodes(
    [gwNode('n2', '10.244.2.0/24', '192.168.1.3'), gwNode('far', '10.244.5.0/24', '10.0.0.5')],
    'n1',
    '10.244.1.0/24',
    HOSTGW,
    UPLINK,
  );
  assert.deepEqual(skipped, [
    {
      node: 'far',
      reason: "public IP 10.0.0.5 is not on eth0's subnet (host-gw needs one L2 segment)",
    },
  ]);
  const desired = desiredState(HOSTGW, '10.244.1.0/24', UPLINK, peers, undefined);
  const ops = planOps(HOSTGW, '10.244.1.0/24', UPLINK, desired, {
    ...EMPTY,
    routes: [{ dst: '10.244.7.0/24', gateway: '192.168.1.7', dev: 'eth0' }],
  });
  assert.equal(
    renderIpBatch(ops.ip),
    'route del 10.244.7.0/24 dev eth0\nroute replace 10.244.2.0/24 via 192.168.1.3 dev eth0\n',
  );
  assert.deepEqual(ops.fdb, []);
});
