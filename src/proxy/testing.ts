// Test support shared by both proxiers' unit tests (iptables/proxier.test.ts,
// nftables/proxier.test.ts): the Fakes around a proxier (clock, registry and metrics, healthz,
// conntrack, the three informers), the base dependencies built from them, wiring and starting
// a proxier, the ns/NAME Service and EndpointSlice builders, a summed metric, and the checks
// both modes must pass (waiting for both caches, skipping an invalid Service, UDP conntrack). Test code only: nothing at run time imports it.

import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../kube/informer.js';
import { ANNOTATION_LAST_CHANGE_TRIGGER_TIME } from '../kube/names.js';
import { endpoint, service, slice } from '../kube/testing.js';
import type { EndpointSlice, Node, Service } from '../kube/types.js';
import { FakeConntrack } from '../os/conntrack.js';
import { FakeClock } from '../util/clock.js';
import { ProxyHealth } from './healthz.js';
import { ProxyMetrics } from './metrics.js';
import type { ProxierBaseDeps } from './proxier-base.js';
import type { Proxier, SyncReport } from './proxier.js';

/** The node every test proxier runs on, and the nodeName of every endpoint eps() makes. */
export const TEST_NODE = 'node-a';
export const TEST_NODE_IP = '192.0.2.10';
/** Pod traffic is traffic from 10.244.0.0/16. */
export const TEST_LOCAL_DETECTOR = { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' } as const;

/** What a test proxier is built on and driven through. */
export interface ProxierFakes {
  readonly clock: FakeClock;
  readonly registry: Registry;
  readonly metrics: ProxyMetrics;
  readonly health: ProxyHealth;
  readonly conntrack: FakeConntrack;
  readonly services: FakeInformer<Service>;
  readonly slices: FakeInformer<EndpointSlice>;
  readonly nodes: FakeInformer<Node>;
}

/** Fresh Fakes; the clock starts at 2026-01-01, healthz serves IPv4. */
export function proxierFakes(): ProxierFakes {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const registry = new Registry();
  return {
    clock,
    registry,
    metrics: new ProxyMetrics(registry),
    health: new ProxyHealth(clock, 60_000, ['IPv4']),
    conntrack: new FakeConntrack(),
    services: new FakeInformer<Service>(),
    slices: new FakeInformer<EndpointSlice>(),
    nodes: new FakeInformer<Node>(),
  };
}

/** The dependencies every proxier takes, from `f`: minSyncPeriod 1 s, syncPeriod 30 s. */
export function baseDeps(f: ProxierFakes, fullSyncPeriodMs?: number): ProxierBaseDeps {
  return {
    nodeName: TEST_NODE,
    clock: f.clock,
    log: pino({ level: 'silent' }),
    metrics: f.metrics,
    health: f.health,
    conntrack: f.conntrack,
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    ...(fullSyncPeriodMs !== undefined ? { fullSyncPeriodMs } : {}),
  };
}

/** Attaches `proxier` to f's informers and starts it; returns where its sync reports go. */
export function startProxier(proxier: Proxier, f: ProxierFakes): SyncReport[][] {
  proxier.attach({ services: f.services, endpointSlices: f.slices, nodes: f.nodes });
  const reports: SyncReport[][] = [];
  proxier.onSync((r) => reports.push(r));
  proxier.start();
  return reports;
}

/** Starts the Service and EndpointSlice informers and runs the first sync. */
export async function startSynced(f: ProxierFakes): Promise<void> {
  await f.services.start();
  await f.slices.start();
  await f.clock.advance(0);
}

/** Service ns/NAME: ClusterIP `ip`, one port named p. */
export function svc(
  name: string,
  ip: string,
  port: number,
  protocol: 'TCP' | 'UDP' = 'TCP',
): Service {
  return service(`ns/${name}`, { clusterIP: ip, ports: [{ name: 'p', port, protocol }] });
}

/**
 * The slice ns/NAME-1 of Service ns/NAME: port p, every endpoint ready on TEST_NODE; `when`
 * sets its last-change-trigger-time.
 */
export function eps(
  name: string,
  port: number,
  ips: string[],
  protocol: 'TCP' | 'UDP' = 'TCP',
  when?: string,
): EndpointSlice {
  return slice(
    `ns/${name}`,
    ips.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName: TEST_NODE })),
    {
      ports: [{ name: 'p', port, protocol }],
      ...(when !== undefined
        ? { metadata: { annotations: { [ANNOTATION_LAST_CHANGE_TRIGGER_TIME]: when } } }
        : {}),
    },
  );
}

/** The sum of a metric's values (0 when it has none). */
export async function metric(registry: Registry, name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values as { value: number }[] | undefined)?.reduce((a, v) => a + v.value, 0) ?? 0;
}

/** A test proxier with `applies()`: how many times it has handed rules to its kernel. */
export type ProxierUnderTest = ProxierFakes & {
  readonly proxier: Proxier;
  readonly applies: () => number;
};

/** Both modes: nothing is programmed until the Service and EndpointSlice caches have synced. */
export async function checkWaitsForBothCaches(s: ProxierUnderTest): Promise<void> {
  s.services.upsert(svc('web', '10.96.0.10', 80));
  await s.services.start();
  await s.clock.advance(5000);
  assert.equal(s.applies(), 0);
  await s.slices.start();
  await s.clock.advance(0);
  assert.equal(s.applies(), 1);
  await s.proxier.stop();
}

/**
 * Both modes: an invalid Service (port 0) is skipped and counted; web (10.96.0.10:80) is
 * synced beside it. The caller checks what the kernel holds, then stops the proxier.
 */
export async function syncWithInvalidService(s: ProxierUnderTest): Promise<void> {
  const bad: Service = {
    metadata: { name: 'bad', namespace: 'ns' },
    spec: { clusterIP: '10.96.0.99', ports: [{ port: 0 }] },
  };
  s.services.upsert(bad);
  s.services.upsert(svc('web', '10.96.0.10', 80));
  await startSynced(s);
  assert.equal(await metric(s.registry, 'svcnet_proxy_invalid_objects_total'), 1);
}

/**
 * Both modes: when a UDP Service's only endpoint is replaced, the conntrack entries to the
 * old endpoint through that Service are deleted, and no others. Stops the proxier.
 */
export async function checkUdpEndpointReplaced(s: ProxierUnderTest): Promise<void> {
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
}
