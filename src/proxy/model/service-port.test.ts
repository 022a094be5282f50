import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  servicePortsFor,
  isExternallyAccessible,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from './service-port.js';
import { service } from '../../kube/testing.js';
import type { Service } from '../../kube/types.js';

test('which Services are programmed', () => {
  const cases: [string, Service, number][] = [
    ['plain ClusterIP', service('ns/a', { clusterIP: '10.96.0.1' }), 1],
    ['headless clusterIP None', service('ns/a', { clusterIP: 'None' }), 0],
    ['no clusterIP', service('ns/a', {}), 0],
    [
      'ExternalName',
      service('ns/a', { type: 'ExternalName', externalName: 'x.example', clusterIP: '10.96.0.1' }),
      0,
    ],
    [
      'claimed by another proxy',
      service(
        'ns/a',
        { clusterIP: '10.96.0.1' },
        { metadata: { labels: { 'service.kubernetes.io/service-proxy-name': 'cilium' } } },
      ),
      0,
    ],
    [
      'labelled headless',
      service(
        'ns/a',
        { clusterIP: '10.96.0.1' },
        { metadata: { labels: { 'service.kubernetes.io/headless': '' } } },
      ),
      0,
    ],
    [
      'IPv6-only service in the IPv4 proxier',
      service('ns/a', { clusterIP: 'fd00::1', clusterIPs: ['fd00::1'] }),
      0,
    ],
    [
      'two ports',
      service('ns/a', {
        clusterIP: '10.96.0.1',
        ports: [
          { name: 'a', port: 1 },
          { name: 'b', port: 2, protocol: 'UDP' },
        ],
      }),
      2,
    ],
  ];
  for (const [name, s, n] of cases) assert.equal(servicePortsFor(s, 'IPv4').ports.length, n, name);
});

test('dual-stack Service gives each family its own ClusterIP', () => {
  const s = service('ns/a', { clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1', 'fd00:96::1'] });
  assert.equal(servicePortsFor(s, 'IPv4').ports[0]?.clusterIP, '10.96.0.1');
  assert.equal(servicePortsFor(s, 'IPv6').ports[0]?.clusterIP, 'fd00:96::1');
});

test('IPs are read leniently, written canonically, and filtered by family', () => {
  const s = service(
    'ns/a',
    {
      type: 'LoadBalancer',
      clusterIP: '10.096.000.010',
      externalIPs: ['192.168.010.005', '2001:db8::0:5', 'bogus'],
      loadBalancerSourceRanges: [' 203.0.113.0/25', '2001:db8::/32'],
    },
    {
      status: {
        loadBalancer: {
          ingress: [
            { ip: '1.2.3.4' },
            { ip: '5.6.7.8', ipMode: 'Proxy' },
            { hostname: 'lb.example' },
            { ip: '2001:db8::9' },
          ],
        },
      },
    },
  );
  const r = servicePortsFor(s, 'IPv4');
  const p = r.ports[0];
  assert.ok(p);
  assert.equal(p.clusterIP, '10.96.0.10');
  assert.deepEqual(p.externalIPs, ['192.168.10.5']);
  assert.deepEqual(
    p.loadBalancerVIPs,
    ['1.2.3.4'],
    'ipMode Proxy and other families are not captured',
  );
  assert.deepEqual(p.loadBalancerSourceRanges, ['203.0.113.0/25'], 'entries are trimmed');
  assert.match(r.warnings.join('\n'), /"bogus" is not an IP/);
  const v6 = servicePortsFor(
    { ...s, spec: { ...s.spec, clusterIPs: ['10.96.0.10', 'fd00::a'] } },
    'IPv6',
  ).ports[0];
  assert.ok(v6);
  assert.deepEqual(v6.externalIPs, ['2001:db8::5']);
  assert.deepEqual(v6.loadBalancerVIPs, ['2001:db8::9']);
});

test('names, affinity, policies and health check node port', () => {
  const base = { clusterIP: '10.96.0.1', ports: [{ port: 53, protocol: 'UDP' as const }] };
  const p = servicePortsFor(
    service('kube-system/dns', { ...base, sessionAffinity: 'ClientIP' }),
    'IPv4',
  ).ports[0];
  assert.ok(p);
  assert.equal(p.nameString, 'kube-system/dns', 'unnamed port: no ":"');
  assert.equal(p.key, 'kube-system/dns/UDP');
  assert.deepEqual(p.sessionAffinity, { type: 'ClientIP', timeoutSeconds: 10800 });

  const lb = (spec: object) =>
    servicePortsFor(service('ns/lb', { ...base, healthCheckNodePort: 31000, ...spec }), 'IPv4')
      .ports[0];
  assert.equal(
    lb({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' })?.healthCheckNodePort,
    31000,
  );
  assert.equal(
    lb({ type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' })?.healthCheckNodePort,
    0,
  );
  assert.equal(
    lb({ type: 'ClusterIP', externalTrafficPolicy: 'Local' })?.externalPolicyLocal,
    false,
    'not externally accessible',
  );

  const itp = lb({ internalTrafficPolicy: 'Local' });
  assert.ok(itp);
  assert.equal(usesClusterEndpoints(itp), false);
  assert.equal(usesLocalEndpoints(itp), true);
  const np = lb({
    type: 'NodePort',
    internalTrafficPolicy: 'Local',
    ports: [{ port: 80, nodePort: 30080 }],
  });
  assert.ok(np);
  assert.equal(isExternallyAccessible(np), true);
  assert.equal(
    usesClusterEndpoints(np),
    true,
    'external access needs cluster endpoints for short-circuits',
  );
});
