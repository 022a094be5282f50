import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ipvsNodePortIPs, ipvsProxierOptionsFor } from '../proxier-options.js';
import { filterCIDRs, firstColumn, isValidForSet, nodeIPsOf } from './host.js';

// The fixture vectors (misc-unit-vectors.json) run in the kube-proxy-ipvs conformance suite;
// these pin the edges the daemon relies on.

test('local addresses for a family: loopback and IPv6 link-local never, mapped IPv4 is IPv4', () => {
  assert.equal(isValidForSet('10.0.0.1/24', 'IPv4'), true, 'a /prefix is ignored');
  assert.equal(isValidForSet('::ffff:10.0.0.1', 'IPv4'), true);
  assert.equal(isValidForSet('::ffff:10.0.0.1', 'IPv6'), false);
  assert.equal(isValidForSet('febf::1', 'IPv6'), false, 'fe80::/10 reaches febf');
  assert.equal(isValidForSet('fec0::1', 'IPv6'), true);
  assert.equal(isValidForSet('not-an-ip', 'IPv4'), false);
});

test('node IPs: every device minus kube-ipvs0, each once, canonical', () => {
  assert.deepEqual(
    nodeIPsOf(
      {
        eth0: ['10.0.0.5/24', '2001:db8::5/64'],
        eth1: ['10.0.0.5/24', '192.168.1.1/24'],
        'kube-ipvs0': ['10.96.0.1/32', '192.168.1.1/32'],
      },
      'IPv4',
    ),
    ['10.0.0.5'],
  );
  assert.deepEqual(nodeIPsOf({ eth0: ['2001:DB8::5/64'] }, 'IPv6'), ['2001:db8::5']);
});

test('excludeCIDRs per family keep their order; /proc/modules names', () => {
  assert.deepEqual(filterCIDRs(['fd00::/8', '10.0.0.0/8', 'junk', '11.0.0.0/8'], 'IPv4'), [
    '10.0.0.0/8',
    '11.0.0.0/8',
  ]);
  assert.deepEqual(firstColumn('ip_vs_rr 16384 1 - Live 0x0\n\n  ip_vs 200704 3 ip_vs_rr\n'), [
    'ip_vs_rr',
    'ip_vs',
  ]);
});

test('NodePort addresses of ipvs mode: node IPs when unset, never a Service IP on kube-ipvs0', () => {
  const local = ['127.0.0.1/8', '10.0.0.5/24', '10.96.0.10/32', 'fe80::1/64', '2001:db8::5/64'];
  assert.deepEqual(ipvsNodePortIPs([], local, 'IPv4', ['10.96.0.10']), ['10.0.0.5']);
  assert.deepEqual(ipvsNodePortIPs(['0.0.0.0/0'], local, 'IPv4'), ['10.0.0.5', '10.96.0.10']);
  assert.deepEqual(ipvsNodePortIPs([], local, 'IPv6'), ['2001:db8::5']);
  assert.deepEqual(ipvsNodePortIPs(['10.0.0.0/8'], local, 'IPv4'), ['10.0.0.5', '10.96.0.10']);
});

test('ipvs options carry the family excludeCIDRs and the scheduler', () => {
  const node = { name: 'n', ips: ['10.0.0.5'], zone: '', podCIDRs: [] };
  const config = {
    clusterCIDRs: [],
    detectLocalMode: 'ClusterCIDR' as const,
    bridgeInterface: '',
    interfaceNamePrefix: '',
    masqueradeBit: 14,
    masqueradeAll: false,
    nodePortAddresses: [],
    localhostNodePorts: true,
    syncPeriodMs: 30_000,
  };
  const host = {
    localAddresses: ['10.0.0.5/24', '10.96.0.1/32'],
    ipvsBoundAddresses: ['10.96.0.1'],
  };
  const o = ipvsProxierOptionsFor(config, node, host, 'IPv4', '', ['fd00::/8', '10.8.0.0/16']);
  assert.deepEqual(o.excludeCIDRs, ['10.8.0.0/16']);
  assert.equal(o.scheduler, 'rr');
  assert.deepEqual(o.nodePortIPs, ['10.0.0.5']);
  const v6 = ipvsProxierOptionsFor(config, node, host, 'IPv6', 'sh', ['fd00::/8', '10.8.0.0/16']);
  assert.deepEqual(v6.excludeCIDRs, ['fd00::/8']);
  assert.equal(v6.scheduler, 'sh');
});
