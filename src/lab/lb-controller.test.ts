import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeInformer } from '../kube/informer.js';
import type { Node, Service } from '../kube/types.js';
import { FakeIp } from '../os/ip.js';
import { FakeClock } from '../util/clock.js';
import { addrAdd, bridge, linkUp } from '../util/ip-ops.js';
import { LabLoadBalancer, PROBE_PERIOD_MS } from './lb-controller.js';
import { parseLbPool } from './lb-pool.js';

const quiet = { info: () => undefined, warn: () => undefined };

function node(name: string, ip: string): Node {
  return {
    metadata: { name },
    status: {
      addresses: [{ type: 'InternalIP', address: ip }],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

function svc(name: string, local: boolean): Service {
  return {
    metadata: { namespace: 'default', name, creationTimestamp: `2026-01-01T00:00:0${name}Z` },
    spec: {
      type: 'LoadBalancer',
      externalTrafficPolicy: local ? 'Local' : 'Cluster',
      ...(local ? { healthCheckNodePort: 32000 } : {}),
    },
  };
}

function routesOf(ip: FakeIp): string[] {
  return ip
    .dump(undefined)
    .split('\n')
    .filter((l) => l.startsWith('route 172.18.255.'));
}

test('assigns addresses, routes them to the right nodes, follows health checks and deletions', async () => {
  const ip = new FakeIp();
  await ip.batch(undefined, [bridge('br0'), linkUp('br0'), addrAdd('172.18.0.1/16', 'br0')]);
  const services = new FakeInformer<Service>([svc('1', false), svc('2', true)]);
  const nodes = new FakeInformer<Node>([node('a', '172.18.0.2'), node('b', '172.18.0.3')]);
  const written: Service[] = [];
  let healthy = new Set(['172.18.0.3:32000']);
  const clock = new FakeClock();
  const lb = new LabLoadBalancer({
    services,
    nodes,
    client: {
      updateStatus: (_kind, obj) => {
        written.push(obj as Service);
        services.upsert(obj as Service);
        return Promise.resolve(obj);
      },
    },
    ip,
    dev: 'br0',
    pool: parseLbPool('172.18.255.200/30'),
    probe: (p) => Promise.resolve(healthy.has(`${p.nodeIP}:${String(p.port)}`)),
    clock,
    log: quiet,
  });
  await lb.start();
  await lb.syncNow();
  assert.deepEqual(
    written.map((s) => [s.metadata?.name, s.status?.loadBalancer?.ingress?.[0]?.ip]),
    [
      ['1', '172.18.255.200'],
      ['2', '172.18.255.201'],
    ],
  );
  // FakeIp models a multipath route by its first nexthop.
  assert.deepEqual(routesOf(ip), [
    'route 172.18.255.200/32 via 172.18.0.2 dev br0',
    'route 172.18.255.201/32 via 172.18.0.3 dev br0',
  ]);
  assert.match(
    ip.history.join('\n'),
    /nexthop via 172\.18\.0\.2 dev br0 nexthop via 172\.18\.0\.3/,
  );
  // The local endpoint moves: the next periodic check follows it.
  healthy = new Set(['172.18.0.2:32000']);
  await clock.advance(PROBE_PERIOD_MS);
  await lb.syncNow();
  assert.ok(routesOf(ip).includes('route 172.18.255.201/32 via 172.18.0.2 dev br0'));
  services.delete('default/2');
  await lb.syncNow();
  assert.deepEqual(routesOf(ip), ['route 172.18.255.200/32 via 172.18.0.2 dev br0']);
  await lb.stop();
});
