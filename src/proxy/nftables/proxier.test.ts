// Unit tests of the nftables proxier against Fakes (FakeInformer, NftFake, FakeClock,
// FakeConntrack): nothing is programmed before both caches sync; a full sync writes the whole
// table in one transaction per family; later changes are partial and touch only the changed
// Service; a refused transaction is counted, leaves the kernel alone and is retried as a full
// sync; a removed Service's chain is flushed at once and deleted ≥ 1 s later in its own
// transaction (a failed delete is counted and forces a full sync); bad objects are skipped,
// logged and counted; the periodic full sync; stale UDP conntrack entries are deleted.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Transaction } from '../../netfilter/nftables/model.js';
import { tableKey } from '../../netfilter/nftables/model.js';
import { renderTransaction } from '../../netfilter/nftables/render.js';
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
import { DEFAULT_NFTABLES_OPTIONS } from './options.js';
import { tableRefOf } from './plan.js';
import { NftablesProxier } from './proxier.js';
import { FakeNftBackend } from '../../netfilter/nftables/backend.js';
import { NftablesMetrics } from './sync-metrics.js';

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

function setup(fullSyncPeriodMs?: number) {
  const f = proxierFakes();
  const nft = new FlakyNft();
  const proxier = new NftablesProxier({
    ...baseDeps(f, fullSyncPeriodMs),
    families: [{ family: 'IPv4', nft }],
    optionsFor: () => ({
      ...DEFAULT_NFTABLES_OPTIONS,
      nodeName: TEST_NODE,
      nodeIP: TEST_NODE_IP,
      localDetector: TEST_LOCAL_DETECTOR,
    }),
    nftMetrics: new NftablesMetrics(f.registry),
  });
  const reports = startProxier(proxier, f);
  return { ...f, nft, proxier, reports, applies: () => nft.attempts.length };
}

type Setup = ReturnType<typeof setup>;

/** The chain of ns/NAME's port p, as its service-ips element points at it. */
function serviceChainOf(s: Setup, name: string): string | undefined {
  return s.nft.chains().find((c) => c.startsWith('service-') && c.endsWith(`-ns/${name}/tcp/p`));
}

const WEB = svc('web', '10.96.0.10', 80);

test('nothing is programmed until both Services and EndpointSlices have synced', async () => {
  await checkWaitsForBothCaches(setup());
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
  await syncWithInvalidService(s);
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
  await checkUdpEndpointReplaced(setup());
});
