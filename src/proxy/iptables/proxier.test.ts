// Unit tests of the proxier wiring against Fakes (FakeInformer, FakeIptables, FakeClock,
// FakeConntrack): nothing is programmed before both caches sync; a full sync writes rules,
// hooks and canaries in one restore; later changes are partial; a failed restore is
// counted and followed by a full sync; bad objects are skipped and counted; a flushed table
// is restored after the canary notices; stale UDP conntrack entries are deleted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointSlice, Node, Service } from '../../kube/types.js';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { isBuiltinChain, type IptablesTableName } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { CanaryMonitor } from './canary.js';
import { DEFAULT_OPTIONS } from './options.js';
import { IptablesProxier } from './proxier.js';
import {
  TEST_LOCAL_DETECTOR,
  TEST_NODE,
  TEST_NODE_IP,
  baseDeps,
  checkUdpEndpointReplaced,
  checkWaitsForBothCaches,
  eps,
  metric,
  proxierFakes,
  startProxier,
  startSynced,
  svc,
  syncWithInvalidService,
} from '../testing.js';
import { assertFlows, assertRulesEqual, type Flow, type FlowNode } from './testing.js';

/** A FakeIptables whose next restores can be made to fail. */
class FlakyIptables extends FakeIptables {
  failNext = 0;
  texts: string[] = [];
  override restore(text: string, options: { noflush: boolean; counters?: boolean }): Promise<void> {
    this.texts.push(text);
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('iptables-restore: line 3 failed'));
    }
    return super.restore(text, options);
  }
}

function setup() {
  const f = proxierFakes();
  const ipt = new FlakyIptables('IPv4');
  const proxier = new IptablesProxier({
    ...baseDeps(f),
    families: [{ family: 'IPv4', iptables: ipt }],
    optionsFor: (_family, node) => ({
      ...DEFAULT_OPTIONS,
      nodeName: TEST_NODE,
      nodeIP: TEST_NODE_IP,
      nodeZone: node?.metadata?.labels?.['topology.kubernetes.io/zone'] ?? '',
      localDetector: TEST_LOCAL_DETECTOR,
    }),
  });
  const reports = startProxier(proxier, f);
  return { ...f, ipt, proxier, reports, applies: () => ipt.texts.length };
}

/** setup() with one Service and its EndpointSlice, both caches synced. */
async function startWith(
  service: Service,
  slice: EndpointSlice,
): Promise<ReturnType<typeof setup>> {
  const s = setup();
  s.services.upsert(service);
  s.slices.upsert(slice);
  await startSynced(s);
  return s;
}

/** The node of setup()'s proxier, for tracing packets through its kernel. */
const NODE_NET: FlowNode = {
  nodeIP: TEST_NODE_IP,
  localAddresses: [],
  localDetector: TEST_LOCAL_DETECTOR,
};

/**
 * Traces flows through everything in the fake kernel; the jumps from the built-in chains must
 * be there (nothing is assumed).
 */
function assertKernelFlows(ipt: FakeIptables, flows: readonly Flow[]): void {
  assertFlows(ipt.saveSync(), flows, NODE_NET, { requireHooks: true });
}

/** A pod on another node, and the node itself. */
const POD = '10.244.2.2';
const NODE_IP = NODE_NET.nodeIP;

/**
 * The whole kernel after the first full sync of ns/web (10.96.0.10:80 -> 10.244.1.5:8080), in
 * canonical order.
 */
const WEB_KERNEL = `
  *filter
  :KUBE-NODEPORTS - [0:0]
  :KUBE-SERVICES - [0:0]
  :KUBE-EXTERNAL-SERVICES - [0:0]
  :KUBE-FIREWALL - [0:0]
  :KUBE-FORWARD - [0:0]
  :KUBE-PROXY-CANARY - [0:0]
  :KUBE-PROXY-FIREWALL - [0:0]
  :FORWARD ACCEPT [0:0]
  :INPUT ACCEPT [0:0]
  :OUTPUT ACCEPT [0:0]
  -A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
  -A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP
  -A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
  -A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  -A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
  -A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
  -A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
  -A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
  -A INPUT -j KUBE-FIREWALL
  -A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
  -A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
  -A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
  -A OUTPUT -j KUBE-FIREWALL
  -A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
  -A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
  COMMIT
  *mangle
  :KUBE-PROXY-CANARY - [0:0]
  :FORWARD ACCEPT [0:0]
  :INPUT ACCEPT [0:0]
  :OUTPUT ACCEPT [0:0]
  :POSTROUTING ACCEPT [0:0]
  :PREROUTING ACCEPT [0:0]
  COMMIT
  *nat
  :KUBE-NODEPORTS - [0:0]
  :KUBE-SERVICES - [0:0]
  :KUBE-MARK-MASQ - [0:0]
  :KUBE-POSTROUTING - [0:0]
  :KUBE-PROXY-CANARY - [0:0]
  :KUBE-SEP-MIKUYBR3QLWTAU6I - [0:0]
  :KUBE-SVC-7X3VEG6HU4XBR2VS - [0:0]
  :INPUT ACCEPT [0:0]
  :OUTPUT ACCEPT [0:0]
  :POSTROUTING ACCEPT [0:0]
  :PREROUTING ACCEPT [0:0]
  -A KUBE-SERVICES -m comment --comment "ns/web:p cluster IP" -m tcp -p tcp -d 10.96.0.10 --dport 80 -j KUBE-SVC-7X3VEG6HU4XBR2VS
  -A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
  -A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
  -A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
  -A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
  -A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
  -A KUBE-SEP-MIKUYBR3QLWTAU6I -m comment --comment ns/web:p -s 10.244.1.5 -j KUBE-MARK-MASQ
  -A KUBE-SEP-MIKUYBR3QLWTAU6I -m comment --comment ns/web:p -m tcp -p tcp -j DNAT --to-destination 10.244.1.5:8080
  -A KUBE-SVC-7X3VEG6HU4XBR2VS -m comment --comment "ns/web:p cluster IP" -m tcp -p tcp -d 10.96.0.10 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
  -A KUBE-SVC-7X3VEG6HU4XBR2VS -m comment --comment "ns/web:p -> 10.244.1.5:8080" -j KUBE-SEP-MIKUYBR3QLWTAU6I
  -A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
  -A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
  -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
  COMMIT
`;

test('nothing is programmed until both Services and EndpointSlices have synced', async () => {
  await checkWaitsForBothCaches(setup());
});

test('a full sync writes service chains, jump rules and canaries in one restore; later changes are partial', async () => {
  const s = await startWith(svc('web', '10.96.0.10', 80), eps('web', 8080, ['10.244.1.5']));
  assert.equal(s.ipt.texts.length, 1);
  assert.equal(s.reports[0]?.[0]?.fullSync, true);
  // Service chains, the jumps from the built-in chains and the canaries, all in one restore.
  assertRulesEqual(WEB_KERNEL, s.ipt.saveSync());
  for (const t of ['mangle', 'nat', 'filter'] as IptablesTableName[])
    assert.equal(await s.ipt.chainExists(t, 'KUBE-PROXY-CANARY'), true, `canary in ${t}`);
  assertKernelFlows(s.ipt, [
    {
      name: 'from a pod (PREROUTING)',
      src: POD,
      dst: '10.96.0.10',
      port: 80,
      want: '10.244.1.5:8080',
    },
    {
      name: 'from the node (OUTPUT)',
      src: NODE_IP,
      dst: '10.96.0.10',
      port: 80,
      want: '10.244.1.5:8080',
      masq: true,
    },
  ]);

  // Another full sync leaves the kernel as it is (no duplicated jumps).
  s.proxier.forceFullSync('test');
  await s.clock.advance(1000);
  assertRulesEqual(WEB_KERNEL, s.ipt.saveSync());

  s.services.upsert(svc('other', '10.96.0.11', 81));
  s.slices.upsert(
    eps('web', 8080, ['10.244.1.6'], 'TCP', new Date(s.clock.now() - 250).toISOString()),
  );
  await s.clock.advance(1000);
  const last = s.reports.at(-1)?.[0];
  assert.equal(last?.fullSync, false);
  const partial = parseDocument(s.ipt.texts.at(-1) ?? '');
  assert.deepEqual(
    partial.tables.flatMap((t) => t.rules.filter((r) => isBuiltinChain(t.name, r.chain))),
    [],
    'partial syncs do not touch the hooks',
  );
  assert.deepEqual(
    partial.tables
      .flatMap((t) => t.chains.map((c) => `${t.name} ${c.name}`))
      .filter((c) => !/KUBE-(SVC|SEP|EXT)-/.test(c)),
    [
      'filter KUBE-SERVICES',
      'filter KUBE-EXTERNAL-SERVICES',
      'filter KUBE-FORWARD',
      'filter KUBE-NODEPORTS',
      'filter KUBE-PROXY-FIREWALL',
      'filter KUBE-FIREWALL',
    ],
    'a partial sync restores what changed only: the new Service without endpoints changes ' +
      'filter (REJECT), the moved endpoint its chains, and nat KUBE-SERVICES stays as it was',
  );
  assertKernelFlows(s.ipt, [
    {
      name: 'web: the new endpoint only',
      src: POD,
      dst: '10.96.0.10',
      port: 80,
      want: '10.244.1.6:8080',
    },
    { name: 'other: no endpoints', src: POD, dst: '10.96.0.11', port: 81, want: 'REJECT' },
  ]);
  // The kernel holds exactly what a fresh proxier writes for the same objects (the old
  // endpoint's chain is gone).
  const fresh = setup();
  fresh.services.upsert(svc('web', '10.96.0.10', 80));
  fresh.services.upsert(svc('other', '10.96.0.11', 81));
  fresh.slices.upsert(eps('web', 8080, ['10.244.1.6']));
  await fresh.services.start();
  await fresh.slices.start();
  await fresh.clock.advance(0);
  assertRulesEqual(fresh.ipt.saveSync(), s.ipt.saveSync());
  await fresh.proxier.stop();
  const np = await s.registry.getSingleMetricAsString(
    'kubeproxy_network_programming_duration_seconds',
  );
  assert.match(np, /kubeproxy_network_programming_duration_seconds_count\{ip_family="IPv4"\} 1/);
  assert.match(np, /kubeproxy_network_programming_duration_seconds_sum\{ip_family="IPv4"\} 1\.25/);
  assert.equal(s.health.status().healthy, true);
  assert.ok((s.health.status().lastUpdated ?? 0) > 0);
  await s.proxier.stop();
});

test('a failed restore is counted, leaves the kernel alone, and the retry is a full sync', async () => {
  const s = setup();
  await startSynced(s);
  s.ipt.failNext = 1;
  s.services.upsert(svc('web', '10.96.0.10', 80));
  s.slices.upsert(eps('web', 8080, ['10.244.1.5']));
  await s.clock.advance(1000);
  assert.equal(
    await metric(s.registry, 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total'),
    1,
  );
  assert.equal(
    await metric(s.registry, 'kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total'),
    1,
  );
  const toWeb = { src: POD, dst: '10.96.0.10', port: 80 };
  assertKernelFlows(s.ipt, [{ ...toWeb, want: 'NONE' }]);
  await s.clock.advance(30_000); // retry after syncPeriod
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true);
  assertKernelFlows(s.ipt, [{ ...toWeb, want: '10.244.1.5:8080' }]);
  await s.proxier.stop();
});

test('an invalid Service is skipped, logged and counted; valid ones are still programmed', async () => {
  const s = setup();
  await syncWithInvalidService(s);
  assertKernelFlows(s.ipt, [
    {
      name: 'the invalid Service is not programmed',
      src: POD,
      dst: '10.96.0.99',
      port: 0,
      want: 'NONE',
    },
    { name: 'no endpoints: REJECT', src: POD, dst: '10.96.0.10', port: 80, want: 'REJECT' },
  ]);
  await s.proxier.stop();
});

test('a flushed table is noticed by the canary and restored by a full sync', async () => {
  const s = await startWith(svc('web', '10.96.0.10', 80), eps('web', 8080, ['10.244.1.5']));
  const canary = new CanaryMonitor({
    probes: [s.ipt],
    checks: (f) => s.proxier.canaryChecks(f),
    intervalMs: 2000,
    clock: s.clock,
    onLost: () => {
      s.proxier.forceFullSync('canary');
    },
  });
  canary.start();
  await s.clock.advance(2000);
  const before = s.ipt.texts.length;
  assert.equal(s.ipt.texts.length, before, 'no resync while intact');
  s.ipt.flushTable('nat');
  s.ipt.flushTable('mangle');
  await s.clock.advance(2000);
  await s.clock.advance(1000);
  assert.ok(s.ipt.texts.length > before);
  assertRulesEqual(WEB_KERNEL, s.ipt.saveSync());
  await canary.stop();
  await s.proxier.stop();
});

test('replacing the endpoint of a UDP service deletes the old endpoint flows', async () => {
  await checkUdpEndpointReplaced(setup());
});

test('Node heartbeats do not cause syncs; a zone change does; a deleted Node turns healthz ineligible', async () => {
  const s = setup();
  await s.services.start();
  await s.slices.start();
  await s.nodes.start();
  await s.clock.advance(0);
  const n = s.ipt.texts.length;
  const node = (zone: string, hb: string, deleting = false): Node => ({
    metadata: {
      name: TEST_NODE,
      labels: { 'topology.kubernetes.io/zone': zone },
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    status: { conditions: [{ type: 'Ready', status: 'True', reason: hb }] },
  });
  s.nodes.upsert(node('z1', 'a'));
  await s.clock.advance(1000);
  const afterFirst = s.ipt.texts.length;
  assert.equal(afterFirst, n + 1, 'first Node sighting syncs');
  s.nodes.upsert(node('z1', 'b'));
  await s.clock.advance(1000);
  assert.equal(s.ipt.texts.length, afterFirst, 'heartbeat: no sync');
  s.nodes.upsert(node('z2', 'b'));
  await s.clock.advance(1000);
  assert.equal(s.ipt.texts.length, afterFirst + 1, 'zone change: sync');
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true, 'topology change means a full sync');
  s.nodes.upsert(node('z2', 'b', true));
  assert.equal(s.health.status().nodeEligible, false);
  await s.proxier.stop();
});
