import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Service } from '../kube/types.js';
import { parseLbPool } from './lb-pool.js';
import { LAB_LB_CLASS, LB_IP_MODE_ANNOTATION, reconcileLoadBalancers } from './lb-reconcile.js';

const POOL = parseLbPool('172.18.255.200-172.18.255.202');

function lb(name: string, age: number, extra: Partial<NonNullable<Service['spec']>> = {}): Service {
  return {
    metadata: {
      namespace: 'default',
      name,
      creationTimestamp: `2026-01-01T00:00:${String(age).padStart(2, '0')}Z`,
    },
    spec: { type: 'LoadBalancer', ports: [{ port: 80 }], ...extra },
  };
}

function withIP(s: Service, ip: string): Service {
  return { ...s, status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } };
}

test('new Services get the lowest free addresses, oldest first, with ipMode VIP', () => {
  const r = reconcileLoadBalancers([lb('b', 2), lb('a', 1)], POOL);
  assert.deepEqual(Object.fromEntries(r.assigned), {
    'default/a': '172.18.255.200',
    'default/b': '172.18.255.201',
  });
  assert.deepEqual(
    r.updates.map((u) => [u.service.metadata?.name, u.ingress]),
    [
      ['a', [{ ip: '172.18.255.200', ipMode: 'VIP' }]],
      ['b', [{ ip: '172.18.255.201', ipMode: 'VIP' }]],
    ],
  );
});

test('held addresses are kept and written once; a deleted Service frees its address', () => {
  const held = [withIP(lb('a', 1), '172.18.255.201')];
  const r = reconcileLoadBalancers([...held, lb('b', 2)], POOL);
  assert.equal(r.assigned.get('default/a'), '172.18.255.201');
  assert.equal(r.assigned.get('default/b'), '172.18.255.200');
  assert.deepEqual(
    r.updates.map((u) => u.service.metadata?.name),
    ['b'],
  );
  // a is gone: c can have a's address.
  const next = reconcileLoadBalancers(
    [withIP(lb('b', 2), '172.18.255.200'), lb('c', 3, { loadBalancerIP: '172.18.255.201' })],
    POOL,
  );
  assert.equal(next.assigned.get('default/c'), '172.18.255.201');
});

test('spec.loadBalancerIP is honoured when in the pool and free, else the Service stays pending', () => {
  const r = reconcileLoadBalancers(
    [
      withIP(lb('old', 1), '172.18.255.202'),
      lb('want', 2, { loadBalancerIP: '172.18.255.202' }),
      lb('outside', 3, { loadBalancerIP: '10.0.0.1' }),
      lb('fine', 4, { loadBalancerIP: '172.18.255.201' }),
    ],
    POOL,
  );
  assert.equal(r.assigned.get('default/fine'), '172.18.255.201');
  assert.ok(!r.assigned.has('default/want'));
  assert.deepEqual(r.warnings, [
    'Service default/want: spec.loadBalancerIP: 172.18.255.202 is held by another Service',
    "Service default/outside: spec.loadBalancerIP: 10.0.0.1 is not in the lab's pool",
  ]);
});

test('a held address that disagrees with a new spec.loadBalancerIP moves to the request', () => {
  const r = reconcileLoadBalancers(
    [withIP(lb('a', 1, { loadBalancerIP: '172.18.255.202' }), '172.18.255.200')],
    POOL,
  );
  assert.deepEqual(r.updates[0]?.ingress, [{ ip: '172.18.255.202', ipMode: 'VIP' }]);
});

test('other classes and other types are left alone; the lab class and the Proxy annotation are served', () => {
  const proxy = lb('p', 3, { loadBalancerClass: LAB_LB_CLASS });
  proxy.metadata = { ...proxy.metadata, annotations: { [LB_IP_MODE_ANNOTATION]: 'Proxy' } };
  const r = reconcileLoadBalancers(
    [
      lb('other', 1, { loadBalancerClass: 'example.com/cloud' }),
      { ...lb('np', 2), spec: { type: 'NodePort' } },
      proxy,
    ],
    POOL,
  );
  assert.deepEqual(Object.fromEntries(r.assigned), { 'default/p': '172.18.255.200' });
  assert.deepEqual(r.updates[0]?.ingress, [{ ip: '172.18.255.200', ipMode: 'Proxy' }]);
});

test('an exhausted pool leaves the newest Service pending', () => {
  const r = reconcileLoadBalancers(
    [1, 2, 3, 4].map((i) => lb(`s${String(i)}`, i)),
    POOL,
  );
  assert.equal(r.assigned.size, 3);
  assert.deepEqual(r.warnings, ["Service default/s4: no free address in the lab's pool"]);
});
