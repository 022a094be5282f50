import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Node, Service } from '../kube/types.js';
import { renderIpOp } from '../util/ip-ops.js';
import {
  announcementOps,
  healthProbes,
  LABEL_EXCLUDE_FROM_LB,
  lbNodeIPs,
  planAnnouncements,
} from './lb-announce.js';
import { LB_IP_MODE_ANNOTATION } from './lb-reconcile.js';

function node(name: string, ip: string, ready = true, labels: Record<string, string> = {}): Node {
  return {
    metadata: { name, labels },
    status: {
      addresses: [{ type: 'InternalIP', address: ip }],
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

const NODES = [
  node('w2', '172.18.0.4'),
  node('cp', '172.18.0.2'),
  node('w1', '172.18.0.3'),
  node('down', '172.18.0.5', false),
  node('excluded', '172.18.0.6', true, { [LABEL_EXCLUDE_FROM_LB]: '' }),
];

const cluster: Service = {
  metadata: { namespace: 'default', name: 'c' },
  spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' },
};
const local: Service = {
  metadata: { namespace: 'default', name: 'l' },
  spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
};
const ASSIGNED = new Map([
  ['default/c', '172.18.255.200'],
  ['default/l', '172.18.255.201'],
]);

test('ready nodes not excluded receive load-balanced traffic', () => {
  assert.deepEqual(lbNodeIPs(NODES), ['172.18.0.2', '172.18.0.3', '172.18.0.4']);
});

test('Cluster goes to every node, Local only to nodes whose health check answered 200', () => {
  const ips = lbNodeIPs(NODES);
  assert.deepEqual(
    healthProbes([cluster, local], ASSIGNED, ips).map((p) => `${p.nodeIP}:${String(p.port)}`),
    ['172.18.0.2:32000', '172.18.0.3:32000', '172.18.0.4:32000'],
  );
  const plan = planAnnouncements([cluster, local], ASSIGNED, ips, new Set(['172.18.0.3:32000']));
  assert.deepEqual(Object.fromEntries(plan), {
    '172.18.255.200': ['172.18.0.2', '172.18.0.3', '172.18.0.4'],
    '172.18.255.201': ['172.18.0.3'],
  });
});

test('an ipMode Proxy address is not routed', () => {
  const proxy: Service = {
    ...cluster,
    metadata: { ...cluster.metadata, annotations: { [LB_IP_MODE_ANNOTATION]: 'Proxy' } },
  };
  const plan = planAnnouncements([proxy], ASSIGNED, lbNodeIPs(NODES), new Set());
  assert.deepEqual(Object.fromEntries(plan), { '172.18.255.200': [] });
});

test('routes: multipath for several nodes, one gateway for one, deleted when none is left', () => {
  const ops = announcementOps(
    new Map([
      ['172.18.255.200', ['172.18.0.2', '172.18.0.3']],
      ['172.18.255.201', ['172.18.0.3']],
      ['172.18.255.202', []],
      ['172.18.255.203', ['172.18.0.4']],
    ]),
    new Map([
      ['172.18.255.202', ['172.18.0.4']],
      ['172.18.255.203', ['172.18.0.4']],
      ['172.18.255.204', ['?']],
    ]),
    'br0',
  );
  assert.deepEqual(ops.map(renderIpOp), [
    'route replace 172.18.255.200/32 nexthop via 172.18.0.2 dev br0 nexthop via 172.18.0.3 dev br0',
    'route replace 172.18.255.201/32 via 172.18.0.3 dev br0',
    'route del 172.18.255.202/32 dev br0',
    'route del 172.18.255.204/32 dev br0',
  ]);
});
