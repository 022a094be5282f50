// The ipvs mode of the daemon's dataplane factory against Fakes: kube-proxy's ipvs sysctls
// are made before the first sync, the ipvs periods reach the runner, and each sync's options
// carry the node IPs for NodePorts (never a Service IP bound to kube-ipvs0) and the family's
// excludeCIDRs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { service, slice, endpoint } from '../kube/testing.js';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import { FakeIpset } from '../netfilter/ipset/fake.js';
import { FakeIpvs } from '../netfilter/ipvs/fake.js';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { FakeSysctl } from '../os/sysctl.js';
import { addrAdd, dummy } from '../util/ip-ops.js';
import { IPVS_DUMMY_DEVICE } from './ipvs/names.js';
import { planIpvsSysctls } from './ipvs/sysctls.js';
import { resolveProxyConfig } from './config.js';
import { makeDataplane } from './dataplane.js';
import { ServiceHealthServers } from './healthcheck-nodeports.js';
import { FakeIpvsKernel } from './ipvs/kernel.js';
import { IpvsProxier } from './ipvs/proxier.js';
import { NO_NFACCT } from './proxier-options.js';
import { TEST_NODE, proxierFakes } from './testing.js';

test('ipvs dataplane: sysctls first, then node IPs and excludeCIDRs in every sync', async () => {
  const f = proxierFakes();
  const cfg = resolveProxyConfig(
    {
      proxyMode: 'ipvs',
      hostnameOverride: TEST_NODE,
      ipvsStrictArp: true,
      ipvsExcludeCidrs: '10.200.0.0/16,fd00::/8',
      ipvsMinSyncPeriod: '0s',
    },
    undefined,
    'h',
  );
  // Every key ipvs mode may set, at a value it changes, on a 6.1 kernel.
  const keys = planIpvsSysctls({ kernelRelease: '5.4', strictARP: true }).map((s) => s.key);
  const sysctl = new FakeSysctl({
    'kernel.osrelease': '6.1.0-27-amd64',
    ...Object.fromEntries(keys.map((k) => [k, '7'])),
  });
  const ipvs = new FakeIpvs();
  const kernel = new FakeIpvsKernel('IPv4', ipvs, new FakeIpset(), new FakeIptables('IPv4'));
  // A restart where kube-ipvs0 is up: its Service IP shows among the local addresses.
  const ip = new FakeIp();
  await ip.batch(undefined, [
    dummy(IPVS_DUMMY_DEVICE),
    addrAdd('10.96.0.10/32', IPVS_DUMMY_DEVICE),
  ]);
  const localAddresses = ['127.0.0.1/8', '192.0.2.10/24', '10.96.0.10/32'];
  const { proxier } = await makeDataplane(cfg, {
    execer: new FakeExecer(),
    clock: f.clock,
    log: pino({ level: 'silent' }),
    registry: f.registry,
    metrics: f.metrics,
    health: f.health,
    serviceHealth: new ServiceHealthServers({ addresses: [], isProxyHealthy: () => true }),
    host: () => ({ localAddresses, conntrackTCPLiberal: false, nfacct: NO_NFACCT }),
    ipvs: () => kernel,
    ip,
    ipvsProbe: () => Promise.resolve({ ok: true }),
    sysctl,
  });
  assert.deepEqual(
    sysctl.writes.map((w) => `${w.key}=${w.value}`),
    [
      'net.ipv4.vs.conntrack=1',
      'net.ipv4.vs.expire_nodest_conn=1',
      'net.ipv4.vs.expire_quiescent_template=1',
      'net.ipv4.ip_forward=1',
      'net.ipv4.conf.all.arp_ignore=1',
      'net.ipv4.conf.all.arp_announce=2',
    ],
    'conn_reuse_mode is left alone on 6.1',
  );
  proxier.attach({ services: f.services, endpointSlices: f.slices, nodes: f.nodes });
  proxier.start();
  f.services.upsert(
    service('ns/web', {
      type: 'NodePort',
      clusterIP: '10.96.0.10',
      ports: [{ name: 'p', port: 80, nodePort: 30080, protocol: 'TCP' }],
    }),
  );
  f.slices.upsert(
    slice('ns/web', [endpoint('10.244.1.5', { nodeName: TEST_NODE })], {
      ports: [{ name: 'p', port: 8080, protocol: 'TCP' }],
    }),
  );
  await f.services.start();
  await f.slices.start();
  await f.clock.advance(0);
  await f.clock.advance(1_000);
  const vss = [...ipvs.state().values()].map(
    (s) => `${s.virtualServer.address}:${s.virtualServer.port}`,
  );
  assert.deepEqual(vss.sort(), ['10.96.0.10:80', '192.0.2.10:30080']);
  assert.ok(proxier instanceof IpvsProxier);
  const plan = proxier.lastPlan('IPv4');
  assert.deepEqual(plan?.boundAddresses, ['10.96.0.10']);
  await proxier.stop();
});
