// Tests of the startup sysctls: what is planned for which settings, host-only table size,
// raise-only semantics, and that a refused write is logged, not fatal.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { FakeSysctl } from '../os/sysctl.js';
import { applySysctls, planSysctls } from './node-setup.js';

const conntrack = {
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeoutSeconds: 86400,
  tcpCloseWaitTimeoutSeconds: 3600,
  tcpBeLiberal: false,
  udpTimeoutSeconds: 0,
  udpStreamTimeoutSeconds: 0,
};

/** The plan as key=value lines (IPv4, host netns, 64 CPUs unless `opts` say otherwise). */
const planned = (opts: Partial<Parameters<typeof planSysctls>[0]>): string[] =>
  planSysctls({
    ipv4: true,
    localhostNodePorts: false,
    conntrack,
    cpus: 64,
    hostNetns: true,
    ...opts,
  }).map((s) => `${s.key}=${s.value}`);

test('planSysctls: route_localnet for IPv4 localhost NodePorts; table size only in the host netns, capped', () => {
  assert.deepEqual(planned({ localhostNodePorts: true, hostNetns: false }), [
    'net.ipv4.conf.all.route_localnet=1',
    'net.netfilter.nf_conntrack_tcp_timeout_established=86400',
    'net.netfilter.nf_conntrack_tcp_timeout_close_wait=3600',
  ]);
  assert.deepEqual(
    planned({ conntrack: { ...conntrack, tcpBeLiberal: true, udpTimeoutSeconds: 30 } }),
    [
      'net.netfilter.nf_conntrack_max=1048576',
      'net.netfilter.nf_conntrack_tcp_timeout_established=86400',
      'net.netfilter.nf_conntrack_tcp_timeout_close_wait=3600',
      'net.netfilter.nf_conntrack_tcp_be_liberal=1',
      'net.netfilter.nf_conntrack_udp_timeout=30',
    ],
  );
  assert.equal(
    planned({ cpus: 2 })[0],
    'net.netfilter.nf_conntrack_max=131072',
    'the minimum wins on small hosts',
  );
});

test('applySysctls writes changes, only raises the table size, and survives refusals', async () => {
  const sysctl = new FakeSysctl(
    {
      'net.ipv4.conf.all.route_localnet': '0',
      'net.netfilter.nf_conntrack_max': '262144',
      'net.netfilter.nf_conntrack_tcp_timeout_established': '432000',
      'net.netfilter.nf_conntrack_tcp_timeout_close_wait': '60',
    },
    ['net.netfilter.nf_conntrack_tcp_timeout_close_wait'],
  );
  const plan = planSysctls({
    ipv4: true,
    localhostNodePorts: true,
    conntrack,
    cpus: 2,
    hostNetns: true,
  });
  const changed = await applySysctls(sysctl, plan, pino({ level: 'silent' }));
  assert.deepEqual(changed, [
    'net.ipv4.conf.all.route_localnet',
    'net.netfilter.nf_conntrack_tcp_timeout_established',
  ]);
  assert.equal(sysctl.values.get('net.netfilter.nf_conntrack_max'), '262144', 'never lowered');
  assert.equal(sysctl.values.get('net.netfilter.nf_conntrack_tcp_timeout_close_wait'), '60');
});
