// The one config → options path of the daemon, render and trace: a Node's addresses and
// podCIDRs as the rules see them, and the per-family node IP and local-traffic detector.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { node } from '../kube/testing.js';
import { defaultProxyConfig } from './config.js';
import {
  NO_NFACCT,
  ipvsProxierOptionsFor,
  nftablesProxierOptionsFor,
  proxierOptionsFor,
  proxyNodeOf,
} from './proxier-options.js';

const HOST = { localAddresses: ['127.0.0.1'], conntrackTCPLiberal: false, nfacct: NO_NFACCT };

test('proxyNodeOf: InternalIPs first, an ExternalIP only for a family without one; canonical forms', () => {
  const n = node('w1', { zone: 'z1', podCIDR: '10.244.1.0/24' });
  n.spec = { podCIDRs: ['10.244.1.0/24', 'FD00:10:244:1::/64'] };
  n.status = {
    addresses: [
      { type: 'ExternalIP', address: '203.0.113.5' },
      { type: 'InternalIP', address: '172.18.0.3' },
      { type: 'ExternalIP', address: '2001:DB8::5' },
      { type: 'Hostname', address: 'w1' },
    ],
  };
  assert.deepEqual(proxyNodeOf('w1', n), {
    name: 'w1',
    ips: ['172.18.0.3', '2001:db8::5'],
    zone: 'z1',
    podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
  });
  assert.deepEqual(proxyNodeOf('gone', undefined), {
    name: 'gone',
    ips: [],
    zone: '',
    podCIDRs: [],
  });
});

test('proxierOptionsFor: each family gets its own node IP and detector, None where the config has no data', () => {
  const n = node('w1', { ip: '172.18.0.3', podCIDR: '10.244.1.0/24' });
  const pn = proxyNodeOf('w1', n);
  const cluster = { ...defaultProxyConfig('w1'), clusterCIDRs: ['10.244.0.0/16'] };
  const v4 = proxierOptionsFor(cluster, pn, HOST, 'IPv4');
  assert.equal(v4.nodeIP, '172.18.0.3');
  assert.deepEqual(v4.localDetector, { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' });
  const v6 = proxierOptionsFor(cluster, pn, HOST, 'IPv6');
  assert.equal(v6.nodeIP, '');
  assert.deepEqual(v6.localDetector, { mode: 'None' });

  const nodeCIDR = { ...cluster, detectLocalMode: 'NodeCIDR' as const };
  assert.deepEqual(proxierOptionsFor(nodeCIDR, pn, HOST, 'IPv4').localDetector, {
    mode: 'NodeCIDR',
    cidr: '10.244.1.0/24',
  });
  const bridge = { ...cluster, detectLocalMode: 'BridgeInterface' as const, bridgeInterface: '' };
  assert.deepEqual(proxierOptionsFor(bridge, pn, HOST, 'IPv4').localDetector, { mode: 'None' });
  assert.equal(
    proxierOptionsFor({ ...cluster, masqueradeBit: 14 }, pn, HOST, 'IPv4').masqueradeMark,
    '0x4000',
  );
});

test('nftablesProxierOptionsFor: nodePortAddresses defaults to primary; the family node IP, detector, mark and ServiceCIDRs', () => {
  const n = node('w1', { ip: '172.18.0.3', podCIDR: '10.244.1.0/24' });
  const pn = proxyNodeOf('w1', n);
  const cluster = { ...defaultProxyConfig('w1'), clusterCIDRs: ['10.244.0.0/16'] };
  const v4 = nftablesProxierOptionsFor(cluster, pn, HOST, 'IPv4', ['10.96.0.0/12']);
  assert.deepEqual(v4, {
    nodeName: 'w1',
    nodeIP: '172.18.0.3',
    nodeZone: '',
    localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
    masqueradeMark: '0x4000',
    masqueradeAll: false,
    nodePortAddresses: ['primary'],
    localAddresses: [],
    serviceCIDRs: ['10.96.0.0/12'],
  });
  const all = nftablesProxierOptionsFor(
    { ...cluster, nodePortAddresses: ['all'] },
    pn,
    HOST,
    'IPv6',
  );
  assert.deepEqual(all.nodePortAddresses, ['all']);
  assert.equal(all.nodeIP, '');
  assert.deepEqual(all.localDetector, { mode: 'None' });
});

/** A node's interfaces with pods on it: ptp host-side addresses and veth link-locals. */
const CHURNED = [
  '127.0.0.1/8',
  '::1/128',
  '172.18.0.3/16',
  '10.244.1.1/32',
  '10.244.1.1/32',
  'fe80::8c3b:1ff:fe2e:11/64',
  'fe80::a0:2ff:fe3c:12/64',
  '192.168.5.7/24',
];

test('options carry only the local addresses the rules can use: none when NodePorts match every address', () => {
  const n = node('w1', { ip: '172.18.0.3', podCIDR: '10.244.1.0/24' });
  const pn = proxyNodeOf('w1', n);
  const cfg = { ...defaultProxyConfig('w1'), clusterCIDRs: ['10.244.0.0/16'] };
  const host = { ...HOST, localAddresses: CHURNED };
  // iptables: nodePortAddresses unset means `-m addrtype --dst-type LOCAL`, no address list.
  assert.deepEqual(proxierOptionsFor(cfg, pn, host, 'IPv4').localAddresses, []);
  assert.deepEqual(
    proxierOptionsFor(
      { ...cfg, nodePortAddresses: ['192.168.0.0/16', 'primary'] },
      pn,
      host,
      'IPv4',
    ).localAddresses,
    ['172.18.0.3', '192.168.5.7'],
  );
  // nftables: `primary` by default; `all` uses fib, no address list.
  assert.deepEqual(nftablesProxierOptionsFor(cfg, pn, host, 'IPv4').localAddresses, ['172.18.0.3']);
  assert.deepEqual(
    nftablesProxierOptionsFor({ ...cfg, nodePortAddresses: ['all'] }, pn, host, 'IPv4')
      .localAddresses,
    [],
  );
  // Loopback stays when selected: resolution warns about it.
  assert.deepEqual(
    proxierOptionsFor({ ...cfg, nodePortAddresses: ['localhost'] }, pn, host, 'IPv4')
      .localAddresses,
    ['127.0.0.1'],
  );
  // ipvs: this family's addresses, canonical and once each.
  assert.deepEqual(ipvsProxierOptionsFor(cfg, pn, host, 'IPv4', '').localAddresses, [
    '127.0.0.1',
    '172.18.0.3',
    '10.244.1.1',
    '192.168.5.7',
  ]);
});
