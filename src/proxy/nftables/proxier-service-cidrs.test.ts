// The nftables proxier and the cluster's ServiceCIDRs: a ServiceCIDR added through the
// informer makes the next sync full and writes cluster-ips-check's "Drop traffic to
// unallocated ClusterIPs" rule for the family's CIDRs; a changed or removed one rewrites or
// removes it; an unchanged set queues nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../../kube/informer.js';
import { service } from '../../kube/testing.js';
import type { EndpointSlice, Service, ServiceCIDR } from '../../kube/types.js';
import { FakeNftBackend } from '../../netfilter/nftables/backend.js';
import { renderTransaction } from '../../netfilter/nftables/render.js';
import { FakeClock } from '../../util/clock.js';
import { ProxyHealth } from '../healthz.js';
import { ProxyMetrics } from '../metrics.js';
import type { SyncReport } from '../proxier.js';
import { DEFAULT_NFTABLES_OPTIONS } from './options.js';
import { tableRefOf } from './plan.js';
import { NftablesProxier } from './proxier.js';
import { NftablesMetrics } from './sync-metrics.js';

const NODE = 'node-a';

function serviceCIDR(name: string, cidrs: string[]): ServiceCIDR {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name, resourceVersion: cidrs.join(',') },
    spec: { cidrs },
  };
}

async function setup() {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const nft = new FakeNftBackend('IPv4');
  const registry = new Registry();
  const services = new FakeInformer<Service>([
    service('ns/web', { clusterIP: '172.30.0.10', ports: [{ name: 'p', port: 80 }] }),
  ]);
  const slices = new FakeInformer<EndpointSlice>();
  const serviceCIDRs = new FakeInformer<ServiceCIDR>();
  const proxier = new NftablesProxier({
    nodeName: NODE,
    families: [{ family: 'IPv4', nft }],
    optionsFor: (_family, _node, cidrs) => ({
      ...DEFAULT_NFTABLES_OPTIONS,
      nodeName: NODE,
      nodeIP: '192.0.2.10',
      serviceCIDRs: cidrs,
    }),
    nftMetrics: new NftablesMetrics(registry),
    clock,
    log: pino({ level: 'silent' }),
    metrics: new ProxyMetrics(registry),
    health: new ProxyHealth(clock, 60_000, ['IPv4']),
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
  });
  proxier.attach({ services, endpointSlices: slices, serviceCIDRs });
  const reports: SyncReport[][] = [];
  proxier.onSync((r) => reports.push(r));
  proxier.start();
  await services.start();
  await slices.start();
  await serviceCIDRs.start();
  await clock.advance(0);
  /** cluster-ips-check's rules as the Fake kernel holds them (rendered, without handles). */
  const checkRules = (): string[] =>
    nft.kernel.listRules(tableRefOf('IPv4'), 'cluster-ips-check').map((r) =>
      renderTransaction([{ verb: 'add', object: r }])
        .trim()
        .replace(/ handle \d+/, ''),
    );
  return { clock, serviceCIDRs, proxier, reports, checkRules };
}

const REJECT =
  'add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"';
const drop = (cidrs: string) =>
  `add rule ip kube-proxy cluster-ips-check ip daddr { ${cidrs} } drop comment "Drop traffic to unallocated ClusterIPs"`;

test('a ServiceCIDR added, changed and removed rewrites the drop rule of cluster-ips-check', async () => {
  const s = await setup();
  assert.deepEqual(s.checkRules(), [REJECT], 'no ServiceCIDR: no drop rule');
  const synced = s.reports.length;

  s.serviceCIDRs.upsert(serviceCIDR('kubernetes', ['172.30.0.0/16', 'fd00:10:96::/112']));
  await s.clock.advance(1000);
  assert.equal(s.reports.length, synced + 1, 'the change queued a sync');
  assert.equal(s.reports.at(-1)?.[0]?.fullSync, true, 'new options: a full sync');
  assert.deepEqual(s.checkRules(), [REJECT, drop('172.30.0.0/16')], 'IPv4 CIDRs only');

  s.serviceCIDRs.upsert(serviceCIDR('extra', ['10.100.0.0/16']));
  await s.clock.advance(1000);
  assert.deepEqual(s.checkRules(), [REJECT, drop('10.100.0.0/16 , 172.30.0.0/16')]);

  s.serviceCIDRs.delete('extra');
  s.serviceCIDRs.delete('kubernetes');
  await s.clock.advance(1000);
  assert.deepEqual(s.checkRules(), [REJECT], 'all removed: no drop rule');
  await s.proxier.stop();
});

test('an update that leaves the CIDRs as they were queues no sync', async () => {
  const s = await setup();
  s.serviceCIDRs.upsert(serviceCIDR('kubernetes', ['172.30.0.0/16']));
  await s.clock.advance(1000);
  const synced = s.reports.length;
  s.serviceCIDRs.upsert({
    ...serviceCIDR('kubernetes', ['172.30.0.0/16']),
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  });
  s.proxier.onServiceCIDRs(['172.30.0.0/16', '172.30.0.0/16']);
  await s.clock.advance(5000);
  assert.equal(s.reports.length, synced);
  await s.proxier.stop();
});
