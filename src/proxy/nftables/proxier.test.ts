// Unit tests of the nftables proxier against Fakes (FakeInformer, NftFake, FakeClock,
// FakeConntrack): nothing is programmed before both caches sync; a full sync writes the whole
// table in one transaction per family; later changes are partial and touch only the changed
// Service; a refused transaction is counted, leaves the kernel alone and is retried as a full
// sync; a removed Service's chain is flushed at once and deleted ≥ 1 s later in its own
// transaction (a failed delete is counted and forces a full sync); bad objects are skipped,
// logged and counted; the periodic full sync; stale UDP conntrack entries are deleted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../../kube/informer.js';
import { endpoint, service, slice } from '../../kube/testing.js';
import type { EndpointSlice, Node, Service } from '../../kube/types.js';
import type { Transaction } from '../../netfilter/nftables/model.js';
import { tableKey } from '../../netfilter/nftables/model.js';
import { renderTransaction } from '../../netfilter/nftables/render.js';
import { FakeConntrack } from '../../os/conntrack.js';
import { FakeClock } from '../../util/clock.js';
import { ProxyHealth } from '../healthz.js';
import { ProxyMetrics } from '../metrics.js';
import type { SyncReport } from '../proxier.js';
import { DEFAULT_NFTABLES_OPTIONS } from './options.js';
import { tableRefOf } from './plan.js';
import { NftablesProxier } from './proxier.js';
import { FakeNftBackend } from '../../netfilter/nftables/backend.js';
import { NftablesMetrics } from './sync-metrics.js';

const NODE = 'node-a';
const TABLE = tableRefOf('IPv4');

/** FakeNftBackend whose next applies can be made to fail; every attempt is recorded. */
class FlakyNft extends FakeNftBackend {
  readonly attempts: Transaction[] = [];
  /** Fail the next N applies (whatever they are), or those that delete a chain. */
  failNext = 0;
  failDeletes = 0;

  override apply(tx: Transaction): Promise<number> {
    this.attempts.push(tx);
    const deletes = tx.some((op) => op.verb === 'delete' && op.object.kind === 'chain');
    if (this.failNext > 0 || (deletes && this.failDeletes > 0)) {
      if (this.failNext > 0) this.failNext--;
      else this.failDeletes--;
      return Promise.reject(
        new Error('nft: Error: Could not process rule: Device or resource busy'),
      );
    }
    return super.apply(tx);
  }

  chains(): string[] {
    return this.kernel.ruleset().tables.get(tableKey(TABLE)) === undefined
      ? []
      : this.kernel.listChains(TABLE);
  }

  elements(map: string): string[] {
    return this.kernel
      .listElements(TABLE, map)
      .map((e) => e.key.join(' . '))
      .sort();
  }

  /** The rules of a chain, rendered (with their kernel handles). */
  rules(chain: string): string[] {
    return this.kernel
      .listRules(TABLE, chain)
      .map((r) => renderTransaction([{ verb: 'add', object: r }]).trim());
  }
}

/** Service ns/NAME: ClusterIP `ip`, one port named p. */
function svc(name: string, ip: string, port: number, protocol: 'TCP' | 'UDP' = 'TCP'): Service {
  return service(`ns/${name}`, { clusterIP: ip, ports: [{ name: 'p', port, protocol }] });
}

/** The slice ns/NAME-1 of Service ns/NAME: port p, every endpoint ready on this node. */
function eps(
  name: string,
  port: number,
  ips: string[],
  protocol: 'TCP' | 'UDP' = 'TCP',
): EndpointSlice {
  return slice(
    `ns/${name}`,
    ips.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName: NODE })),
    { ports: [{ name: 'p', port, protocol }] },
  );
}

function setup(fullSyncPeriodMs?: number) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const nft = new FlakyNft();
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const health = new ProxyHealth(clock, 60_000, ['IPv4']);
  const conntrack = new FakeConntrack();
  const services = new FakeInformer<Service>();
  const slices = new FakeInformer<EndpointSlice>();
  const nodes = new FakeInformer<Node>();
  const proxier = new NftablesProxier({
    nodeName: NODE,
    families: [{ family: 'IPv4', nft }],
    optionsFor: () => ({
      ...DEFAULT_NFTABLES_OPTIONS,
      nodeName: NODE,
      nodeIP: '192.0.2.10',
      localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
    }),
    nftMetrics: new NftablesMetrics(registry),
    clock,
    log: pino({ level: 'silent' }),
    metrics,
    health,
    conntrack,
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    ...(fullSyncPeriodMs !== undefined ? { fullSyncPeriodMs } : {}),
  });
  proxier.attach({ services, endpointSlices: slices, nodes });
  const reports: SyncReport[][] = [];
  proxier.onSync((r) => reports.push(r));
  proxier.start();
  return { clock, nft, registry, health, conntrack, services, slices, proxier, reports };
}

type Setup = ReturnType<typeof setup>;

/** Starts the Service and EndpointSlice informers and runs the first sync. */
async function startSynced(s: Setup): Promise<void> {
  await s.services.start();
  await s.slices.start();
  await s.clock.advance(0);
}

async function metric(registry: Registry, name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values as { value: number }[] | undefined)?.reduce((a, v) => a + v.value, 0) ?? 0;
}

/** The chain of ns/NAME's port p, as its service-ips element points at it. */
function serviceChainOf(s: Setup, name: string): string | undefined {
  return s.nft.chains().find((c) => c.startsWith('service-') && c.endsWith(`-ns/${name}/tcp/p`));
}

const WEB = svc('web', '10.96.0.10', 80);

test('nothing is programmed until both Services and EndpointSlices have synced', async () => {
  const s = setup();
  s.services.upsert(WEB);
  await s.services.start();
  await s.clock.advance(5000);
  assert.equal(s.nft.attempts.length, 0);
  await s.slices.start();
  await s.clock.advance(0);
  assert.equal(s.nft.attempts.length, 1);
  await s.proxier.stop();
});

test('a full sync writes the whole table in one transaction; later changes are partial and touch only the changed Service', async () => {
  const s = setup();
  s.services.upsert(WEB);
  s.slices.upsert(eps('web', 8080, ['10.244.1.5', '10.244.1.6']));
  await startSynced(s);
  assert.equal(s.nft.attempts.length, 1);
  assert.equal(s.reports[0]?.[0]?.fullSync, true);
  assert.ok((s.reports.at(0)?.at(0)?.restoreBytes ?? 0) > 1000);
  const chain = serviceChainOf(s, 'web') ?? assert.fail(s.nft.chains().join(' '));
  assert.ok(s.nft.chains().includes('services'));
  assert.deepEqual(s.nft.elements('service-ips'), ['10.96.0.10 . tcp . 80']);
  assert.deepEqual(s.nft.elements('cluster-ips'), ['10.96.0.10']);
  assert.match(
    s.nft.rules(chain).join('\n'),
    /numgen random mod 2 map \{ 0 : 10\.244\.1\.5 \. 8080 , 1 : 10\.244\.1\.6 \. 8080 \}/,
  );

  s.services.upsert(svc('other', '10.96.0.11', 81));
  await s.clock.advance(1000);
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, false);
  const partial = renderTransaction(s.nft.attempts.at(-1) ?? []);
  assert.doesNotMatch(partial, /add table|chain ip kube-proxy services|web/, partial);
  assert.match(partial, /no-endpoint-services .*10\.96\.0\.11 \. tcp \. 81/);
  assert.deepEqual(s.nft.elements('cluster-ips'), ['10.96.0.10', '10.96.0.11']);
  for (const [name, count] of [
    ['kubeproxy_sync_full_proxy_rules_duration_seconds', 1],
    ['kubeproxy_sync_partial_proxy_rules_duration_seconds', 1],
    ['kubeproxy_sync_proxy_rules_duration_seconds', 2],
  ] as const)
    assert.match(
      await s.registry.getSingleMetricAsString(name),
      new RegExp(`^${name}_count ${String(count)}$`, 'm'),
    );
  assert.equal(
    await metric(s.registry, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds'),
    s.clock.now() / 1000,
  );
  assert.equal(s.health.status().healthy, true);

  // The same objects from scratch give the same table.
  const fresh = setup();
  fresh.services.upsert(WEB);
  fresh.services.upsert(svc('other', '10.96.0.11', 81));
  fresh.slices.upsert(eps('web', 8080, ['10.244.1.5', '10.244.1.6']));
  await startSynced(fresh);
  assert.equal(fresh.nft.kernel.dump(), s.nft.kernel.dump());
  await fresh.proxier.stop();
  await s.proxier.stop();
});

test('a refused transaction is counted, leaves the kernel alone, and the retry is a full sync', async () => {
  const s = setup();
  await startSynced(s);
  const before = s.nft.kernel.dump();
  s.nft.failNext = 1;
  s.services.upsert(WEB);
  s.slices.upsert(eps('web', 8080, ['10.244.1.5']));
  await s.clock.advance(1000);
  assert.equal(
    await metric(s.registry, 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total'),
    1,
  );
  assert.equal(s.nft.kernel.dump(), before);
  await s.clock.advance(30_000); // retry after syncPeriod
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true);
  assert.deepEqual(s.nft.elements('service-ips'), ['10.96.0.10 . tcp . 80']);
  await s.proxier.stop();
});

/** web (with an endpoint) and other synced, then web deleted: its chain is stale. */
async function withStaleWebChain(): Promise<{ s: Setup; chain: string }> {
  const s = setup();
  s.services.upsert(WEB);
  s.slices.upsert(eps('web', 8080, ['10.244.1.5']));
  s.services.upsert(svc('other', '10.96.0.11', 81));
  await startSynced(s);
  const chain = serviceChainOf(s, 'web') ?? assert.fail('no web chain');
  s.services.delete('ns/web');
  await s.clock.advance(1000);
  return { s, chain };
}

test("a removed Service's chain is flushed at once and deleted at least 1 s later, in its own transaction", async () => {
  const { s, chain } = await withStaleWebChain();
  assert.ok(s.nft.chains().includes(chain), 'flushed, not deleted yet');
  assert.deepEqual(s.nft.rules(chain), []);
  assert.deepEqual(s.nft.elements('service-ips'), []);

  // The next sync (here: a change to another Service) deletes it first, alone.
  s.services.upsert(svc('other', '10.96.0.11', 82));
  await s.clock.advance(1000);
  assert.ok(!s.nft.chains().includes(chain), 'deleted');
  const [cleanup] = s.nft.attempts.slice(-2);
  assert.deepEqual(
    cleanup?.map((op) => `${op.verb} ${op.object.kind}`),
    ['delete chain'],
  );
  await s.proxier.stop();
});

test('a failed delete of stale chains is counted, the sync still applies, and the next sync is full', async () => {
  const { s, chain } = await withStaleWebChain();
  s.nft.failDeletes = 1;
  s.services.upsert(svc('other', '10.96.0.11', 82));
  await s.clock.advance(1000);
  assert.equal(
    await metric(s.registry, 'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total'),
    1,
  );
  assert.deepEqual(s.nft.elements('cluster-ips'), ['10.96.0.11'], 'the sync itself applied');
  assert.ok(s.nft.chains().includes(chain));
  s.services.upsert(svc('third', '10.96.0.12', 83));
  await s.clock.advance(1000);
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true);
  // The full sync found the chain in the kernel and aged it again; it goes a second later.
  s.services.upsert(svc('third', '10.96.0.12', 84));
  await s.clock.advance(1000);
  assert.ok(!s.nft.chains().includes(chain));
  await s.proxier.stop();
});

test('an invalid Service is skipped, logged and counted; valid ones are still programmed', async () => {
  const s = setup();
  const bad: Service = {
    metadata: { name: 'bad', namespace: 'ns' },
    spec: { clusterIP: '10.96.0.99', ports: [{ port: 0 }] },
  };
  s.services.upsert(bad);
  s.services.upsert(WEB);
  await startSynced(s);
  assert.equal(await metric(s.registry, 'svcnet_proxy_invalid_objects_total'), 1);
  assert.deepEqual(s.nft.elements('cluster-ips'), ['10.96.0.10']);
  await s.proxier.stop();
});

test('a full sync happens at least every fullSyncPeriod', async () => {
  const s = setup(60_000);
  s.services.upsert(WEB);
  await startSynced(s);
  s.services.upsert(svc('other', '10.96.0.11', 81));
  await s.clock.advance(1000);
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, false);
  // The runner syncs every syncPeriod (30 s) without changes: partial until the hour is up.
  await s.clock.advance(30_000);
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, false);
  await s.clock.advance(30_000);
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true);
  await s.proxier.stop();
});

test('replacing the endpoint of a UDP service deletes the old endpoint flows', async () => {
  const s = setup();
  s.services.upsert(svc('dns', '10.96.0.10', 53, 'UDP'));
  s.slices.upsert(eps('dns', 5353, ['10.244.1.5'], 'UDP'));
  await startSynced(s);
  const flow = (origSrcPort: number, origDst: string) => ({
    family: 'IPv4' as const,
    protocol: 'UDP' as const,
    origSrc: '10.244.2.2',
    origSrcPort,
    origDst,
    origDstPort: 53,
    replySrc: '10.244.1.5',
    replySrcPort: 5353,
  });
  s.conntrack.flows.push(flow(5000, '10.96.0.10'), flow(5001, '10.96.0.11'));
  s.slices.upsert(eps('dns', 5353, ['10.244.1.6'], 'UDP'));
  await s.clock.advance(1000);
  assert.deepEqual(
    s.conntrack.flows.map((f) => f.origDst),
    ['10.96.0.11'],
  );
  assert.equal(await metric(s.registry, 'kubeproxy_conntrack_reconciler_deleted_entries_total'), 1);
  await s.proxier.stop();
});
