import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceChangeTracker } from './service-change-tracker.js';
import { EndpointsChangeTracker, localReadyEndpoints } from './endpoints-change-tracker.js';
import { endpoint, service, slice } from '../../kube/testing.js';

test('ServiceChangeTracker: add, no-op update, delete; bursts that cancel out change nothing', () => {
  const t = new ServiceChangeTracker('IPv4');
  const a = service('ns/a', { clusterIP: '10.96.0.1' });
  assert.equal(t.update(undefined, a), true);
  let r = t.apply();
  assert.deepEqual([...r.updatedServices], ['ns/a']);
  assert.deepEqual([...r.services.keys()], ['ns/a:http/TCP']);

  // An update kube-proxy does not care about (labels, selector) is a no-op.
  const relabelled = {
    ...a,
    metadata: { ...a.metadata, labels: { x: 'y' } },
    spec: { ...a.spec, selector: { app: 'z' } },
  };
  assert.equal(t.update(a, relabelled), false);
  assert.equal(t.apply().updatedServices.size, 0);

  // Port change then change back within one burst: nothing pending.
  const moved = service('ns/a', { clusterIP: '10.96.0.1', ports: [{ name: 'http', port: 81 }] });
  t.update(relabelled, moved);
  assert.equal(t.update(moved, relabelled), false);
  assert.equal(t.apply().updatedServices.size, 0);

  // Add and delete of a new Service within one burst cancel out.
  const b = service('ns/b', { clusterIP: '10.96.0.2' });
  t.update(undefined, b);
  assert.equal(t.update(b, undefined), false);
  assert.equal(t.apply().services.size, 1);

  t.update(relabelled, undefined);
  r = t.apply();
  assert.deepEqual([...r.updatedServices], ['ns/a']);
  assert.equal(r.services.size, 0);
});

test('ServiceChangeTracker: a port removed from a UDP service reports its ClusterIP', () => {
  const t = new ServiceChangeTracker('IPv4');
  const dns = service('kube-system/dns', {
    clusterIP: '10.96.0.10',
    ports: [
      { name: 'dns', port: 53, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, protocol: 'TCP' },
    ],
  });
  t.update(undefined, dns);
  t.apply();
  t.update(dns, {
    ...dns,
    spec: { ...dns.spec, ports: [{ name: 'dns-tcp', port: 53, protocol: 'TCP' }] },
  });
  const r = t.apply();
  assert.deepEqual([...r.deletedUDPClusterIPs], ['10.96.0.10']);
  assert.deepEqual([...r.services.keys()], ['kube-system/dns:dns-tcp/TCP']);
});

test('EndpointsChangeTracker: slices merge, dedupe (local wins) and sort by ip:port', () => {
  const t = new EndpointsChangeTracker('IPv4', 'node-a');
  t.update(undefined, slice('ns/web', [endpoint('10.0.0.10'), endpoint('10.0.0.2')], { n: 1 }));
  t.update(
    undefined,
    slice('ns/web', [endpoint('10.0.0.2', { nodeName: 'node-a' }), endpoint('10.0.0.9')], { n: 2 }),
  );
  t.update(undefined, slice('ns/web', [endpoint('fd00::1')], { n: 3, addressType: 'IPv6' }));
  const r = t.apply();
  const eps = r.endpoints.get('ns/web:http/TCP') ?? [];
  assert.deepEqual(
    eps.map((e) => e.endpoint),
    ['10.0.0.10:8080', '10.0.0.2:8080', '10.0.0.9:8080'],
    'string order, as kube-proxy writes them',
  );
  assert.equal(eps.find((e) => e.ip === '10.0.0.2')?.isLocal, true);
  assert.deepEqual([...r.updatedServices], ['ns/web']);
});

test('EndpointsChangeTracker: conditions default like kube-proxy, leading zeros are canonicalised', () => {
  const t = new EndpointsChangeTracker('IPv4', 'n');
  t.update(
    undefined,
    slice('ns/web', [
      endpoint('010.000.000.001'),
      endpoint('10.0.0.2', { conditions: { ready: false } }),
      endpoint('10.0.0.3', { conditions: { ready: false, serving: true, terminating: true } }),
    ]),
  );
  const eps = t.apply().endpoints.get('ns/web:http/TCP') ?? [];
  assert.deepEqual(
    eps.map((e) => [e.ip, e.ready, e.serving, e.terminating]),
    [
      ['10.0.0.1', true, true, false],
      ['10.0.0.2', false, false, false],
      ['10.0.0.3', false, true, true],
    ],
  );
});

test('EndpointsChangeTracker: no-op bursts cancel out; deletes remove; UDP changes ask for conntrack cleanup', () => {
  const t = new EndpointsChangeTracker('IPv4', 'n');
  const s1 = slice('ns/dns', [endpoint('10.0.0.1')], {
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
  });
  t.update(undefined, s1);
  let r = t.apply();
  assert.equal(r.conntrackCleanupRequired, true, 'a UDP port going from 0 to 1 endpoint');
  const s1b = { ...s1, metadata: { ...s1.metadata, resourceVersion: '2' } };
  assert.equal(t.update(s1, s1b), false, 'same endpoints: nothing pending');
  r = t.apply();
  assert.equal(r.updatedServices.size, 0);
  const s2 = slice('ns/dns', [endpoint('10.0.0.2')], {
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
  });
  t.update(s1b, s2);
  r = t.apply();
  assert.equal(r.conntrackCleanupRequired, true, 'a UDP endpoint went away');
  t.update(s2, undefined);
  r = t.apply();
  assert.equal(r.endpoints.size, 0);
  assert.deepEqual([...r.updatedServices], ['ns/dns']);
  const unlabelled = { ...s2, metadata: { name: 'x', namespace: 'ns' } };
  assert.equal(
    t.update(undefined, unlabelled),
    false,
    'slices without the service-name label are ignored',
  );
});

test('localReadyEndpoints counts ready local endpoints per Service, not terminating ones', () => {
  const t = new EndpointsChangeTracker('IPv4', 'me');
  t.update(
    undefined,
    slice('ns/lb', [
      endpoint('10.0.0.1', { nodeName: 'me' }),
      endpoint('10.0.0.2', {
        nodeName: 'me',
        conditions: { ready: false, serving: true, terminating: true },
      }),
      endpoint('10.0.0.3', { nodeName: 'other' }),
    ]),
  );
  assert.deepEqual([...localReadyEndpoints(t.apply().endpoints)], [['ns/lb', 1]]);
});

test('EndpointsChangeTracker: an update is a no-op exactly when every endpoint field is the same', () => {
  const t = new EndpointsChangeTracker('IPv4', 'n');
  const ports = [
    { name: 'b', port: 81, protocol: 'TCP' as const },
    { name: 'a', port: 80, protocol: 'TCP' as const },
  ];
  const base = slice('ns/web', [endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z1' }] } })], {
    ports,
  });
  t.update(undefined, base);
  t.apply();
  const same = slice('ns/web', [endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z1' }] } })], {
    ports: [...ports].reverse(),
  });
  assert.equal(t.update(base, same), false, 'same endpoints, ports listed in another order');
  const variants = [
    endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z2' }] } }),
    endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z1' }], forNodes: [{ name: 'n' }] } }),
    endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z1' }] }, nodeName: 'n' }),
    endpoint('10.0.0.1', { hints: { forZones: [{ name: 'z1' }] }, conditions: { serving: false } }),
  ];
  for (const v of variants) {
    assert.equal(t.update(base, slice('ns/web', [v], { ports })), true, JSON.stringify(v));
    assert.equal(t.update(base, base), false, 'back to the applied state');
  }
  const fewerPorts = slice('ns/web', [endpoint('10.0.0.1')], { ports: ports.slice(0, 1) });
  assert.equal(t.update(base, fewerPorts), true);
});
