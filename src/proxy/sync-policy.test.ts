// When a sync is full, in all three modes, through the daemon's dataplane factory and Fakes:
// pods coming and going add and remove host-side addresses (a ptp gateway on every veth, a
// link-local per veth) between syncs, and none of that may make a sync full (kube-proxy
// full-syncs only at start, hourly, on canary loss or after a failure): the
// `kubeproxy_sync_full_proxy_rules_duration_seconds` count stays flat. A node address that
// NodePorts are served on coming or going still reaches the rules, in the next sync.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Registry } from 'prom-client';
import { endpoint, node, service, slice } from '../kube/testing.js';
import type { EndpointSlice } from '../kube/types.js';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import type { IptablesTableName } from '../netfilter/iptables/model.js';
import { FakeIpset } from '../netfilter/ipset/fake.js';
import { FakeIpvs } from '../netfilter/ipvs/fake.js';
import { FakeNftBackend } from '../netfilter/nftables/backend.js';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { DAEMON_PROXY_MODES, defaultProxyConfig } from './config.js';
import type { DaemonProxyMode } from './config.js';
import { makeDataplane } from './dataplane.js';
import { ServiceHealthServers } from './healthcheck-nodeports.js';
import { FakeIpvsKernel } from './ipvs/kernel.js';
import { NO_NFACCT } from './proxier-options.js';
import type { SyncReport } from './proxier.js';
import { TEST_NODE, TEST_NODE_IP, proxierFakes } from './testing.js';

/** FakeIptables with the one IptablesBackend method it lacks. */
class BackendFake extends FakeIptables {
  ruleExists(table: IptablesTableName, chain: string, args: readonly string[]): Promise<boolean> {
    const line = `-A ${chain} ${args.join(' ')}`;
    return Promise.resolve(this.saveSync(table).split('\n').includes(line));
  }
}

/** A histogram's observation count. */
async function histogramCount(registry: Registry, name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const values = (m?.values ?? []) as { metricName?: string; value: number }[];
  return values.find((v) => v.metricName === `${name}_count`)?.value ?? 0;
}

const FULL = 'kubeproxy_sync_full_proxy_rules_duration_seconds';
const PARTIAL = 'kubeproxy_sync_partial_proxy_rules_duration_seconds';

/** The web Service's slice with pods 10.244.1.2 … 10.244.1.(1+n). */
function pods(n: number): EndpointSlice {
  const ips = Array.from({ length: n }, (_, i) => `10.244.1.${String(i + 2)}`);
  return slice(
    'ns/web',
    ips.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName: TEST_NODE })),
    { ports: [{ name: 'p', port: 8080, protocol: 'TCP' }] },
  );
}

/** The host side of n ptp pods: the gateway on each veth, and each veth's link-local. */
function podAddresses(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push('10.244.1.1/32', `fe80::${(0x100 + i).toString(16)}/64`);
  return out;
}

/** What each mode's kernel says NodePorts are served on (sorted). */
type NodePortView = () => string[];

/** A proxier of `mode` on node-a (192.0.2.10) whose local addresses the test changes. */
async function startMode(mode: DaemonProxyMode, nodePortAddresses: readonly string[]) {
  const f = proxierFakes();
  const addresses = { now: ['127.0.0.1/8', '::1/128', `${TEST_NODE_IP}/24`] };
  const ipt = new BackendFake('IPv4');
  const nft = new FakeNftBackend('IPv4');
  const ipvs = new FakeIpvs();
  const cfg = {
    ...defaultProxyConfig(TEST_NODE),
    mode,
    families: ['IPv4' as const],
    clusterCIDRs: ['10.244.0.0/16'],
    nodePortAddresses,
    minSyncPeriodMs: 1000,
  };
  const { proxier } = await makeDataplane(cfg, {
    execer: new FakeExecer(),
    clock: f.clock,
    log: pino({ level: 'silent' }),
    registry: f.registry,
    metrics: f.metrics,
    health: f.health,
    serviceHealth: new ServiceHealthServers({ addresses: [], isProxyHealthy: () => true }),
    host: () => ({ localAddresses: addresses.now, conntrackTCPLiberal: false, nfacct: NO_NFACCT }),
    iptables: () => ipt,
    nftables: () => nft,
    ipvs: () => new FakeIpvsKernel('IPv4', ipvs, new FakeIpset(), ipt),
    ip: new FakeIp(),
    ipvsProbe: () => Promise.resolve({ ok: true }),
  });
  const nodePorts: NodePortView = () => {
    if (mode === 'nftables') {
      const set = nft.kernel.ruleset().tables.get('ip kube-proxy')?.sets.get('nodeport-ips');
      return set === undefined ? ['fib local'] : [...set.elements.keys()].sort();
    }
    if (mode === 'ipvs')
      return [...ipvs.state().values()]
        .filter((s) => s.virtualServer.port === 30080)
        .map((s) => s.virtualServer.address)
        .sort();
    const lines = ipt.saveSync('nat').split('\n');
    return lines
      .filter((l) => l.startsWith('-A KUBE-SERVICES') && l.includes('-j KUBE-NODEPORTS'))
      .map((l) => / -d (\S+)/.exec(l)?.[1] ?? 'addrtype LOCAL')
      .sort();
  };
  const reports: SyncReport[] = [];
  proxier.onSync((r) => reports.push(...r));
  proxier.attach({ services: f.services, endpointSlices: f.slices, nodes: f.nodes });
  proxier.start();
  f.nodes.upsert(node(TEST_NODE, { ip: TEST_NODE_IP, podCIDR: '10.244.1.0/24' }));
  f.services.upsert(
    service('ns/web', {
      type: 'NodePort',
      clusterIP: '10.96.0.10',
      ports: [{ name: 'p', port: 80, nodePort: 30080, protocol: 'TCP' }],
    }),
  );
  f.slices.upsert(pods(1));
  await f.nodes.start();
  await f.services.start();
  await f.slices.start();
  await f.clock.advance(0);
  await f.clock.advance(1000);
  return { f, proxier, addresses, reports, nodePorts };
}

type Started = Awaited<ReturnType<typeof startMode>>;

/** Scales the web pods to n: the slice changes, and so do the host's veth addresses. */
async function scaleTo(s: Started, n: number): Promise<void> {
  s.addresses.now = [...s.addresses.now.filter((a) => !isPodAddress(a)), ...podAddresses(n)];
  s.f.slices.upsert(pods(n));
  await s.f.clock.advance(1000);
}

function isPodAddress(a: string): boolean {
  return a.startsWith('10.244.') || a.startsWith('fe80:');
}

for (const mode of DAEMON_PROXY_MODES)
  test(`${mode}: pods scaling 1→10→1 (veth and link-local addresses churning) never make a sync full`, async () => {
    const s = await startMode(mode, []);
    try {
      const fullBefore = await histogramCount(s.f.registry, FULL);
      assert.equal(fullBefore, 1, 'the first sync is full');
      const partialBefore = await histogramCount(s.f.registry, PARTIAL);
      const seen = s.reports.length;
      for (const n of [3, 6, 10, 7, 4, 1, 0, 2, 1]) await scaleTo(s, n);
      const churn = s.reports.slice(seen);
      assert.equal(churn.length, 9, 'one sync per scale step');
      assert.deepEqual(
        churn.filter((r) => r.fullSync).map((r) => r.family),
        [],
        'no full sync',
      );
      assert.equal(await histogramCount(s.f.registry, FULL), fullBefore);
      assert.equal(await histogramCount(s.f.registry, PARTIAL), partialBefore + 9);
    } finally {
      await s.proxier.stop();
    }
  });

test('iptables: NodePorts use addrtype LOCAL, so no address reaches the rules', async () => {
  const s = await startMode('iptables', []);
  try {
    await scaleTo(s, 3);
    assert.deepEqual(s.nodePorts(), ['addrtype LOCAL']);
  } finally {
    await s.proxier.stop();
  }
});

test('ipvs: the ptp gateway is a node IP (as kube-proxy serves NodePorts on it), added and removed by partial syncs', async () => {
  const s = await startMode('ipvs', []);
  try {
    assert.deepEqual(s.nodePorts(), [TEST_NODE_IP]);
    await scaleTo(s, 2);
    assert.deepEqual(s.nodePorts(), ['10.244.1.1', TEST_NODE_IP]);
    await scaleTo(s, 0);
    assert.deepEqual(s.nodePorts(), [TEST_NODE_IP]);
    assert.deepEqual(
      s.reports.slice(-2).map((r) => r.fullSync),
      [false, false],
    );
  } finally {
    await s.proxier.stop();
  }
});

const BEFORE = [TEST_NODE_IP];
const AFTER = [TEST_NODE_IP, '192.0.2.11'];

for (const mode of DAEMON_PROXY_MODES)
  test(`${mode}: a node address nodePortAddresses selects reaches the rules in the next sync (partial), and goes again`, async () => {
    const s = await startMode(mode, ['192.0.2.0/24']);
    try {
      await scaleTo(s, 4);
      assert.deepEqual(s.nodePorts(), BEFORE, 'pod addresses are outside nodePortAddresses');
      const full = await histogramCount(s.f.registry, FULL);
      s.addresses.now = [...s.addresses.now, '192.0.2.11/24'];
      await scaleTo(s, 5);
      assert.deepEqual(s.nodePorts(), AFTER);
      s.addresses.now = s.addresses.now.filter((a) => a !== '192.0.2.11/24');
      await scaleTo(s, 3);
      assert.deepEqual(s.nodePorts(), BEFORE);
      assert.equal(await histogramCount(s.f.registry, FULL), full, 'only partial syncs');
    } finally {
      await s.proxier.stop();
    }
  });

test('nftables: with nodePortAddresses unset (primary) only the node IP is served; pod addresses never reach nodeport-ips', async () => {
  const s = await startMode('nftables', []);
  try {
    await scaleTo(s, 5);
    assert.deepEqual(s.nodePorts(), [TEST_NODE_IP]);
  } finally {
    await s.proxier.stop();
  }
});
