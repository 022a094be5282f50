// Where the iptables proxier's memory goes at 10k Services × 2 endpoints (issue 16, item 3).
// Feeds the bench workload (bench/proxy.bench.ts: one TCP port per Service, two ready
// endpoints, one of them local) through the real IptablesProxier, syncs fully, does a few
// partial syncs and a forced full sync, then reports RSS and the V8 heap (after gc) at each
// stage, and what each structure holds: it drops one holder at a time and measures again.
//
//   node --expose-gc --import tsx bench/proxy-memory.ts [--kernel] [--services N]
//        [--api-objects [--slim]] [--spaces] [--snapshot]
//
// Default backend: a null iptables that keeps nothing (so the breakdown is the proxier's own
// memory). `--kernel` (root): iptables-legacy in a private network namespace this script
// creates and deletes (`svcnet-mem-<pid>`), for the RSS figure. `--api-objects` gives every
// object what an API server adds (managedFields, kubectl's last-applied annotation), and
// `--slim` drops those as the proxy's informers do. `--spaces` prints V8's heap spaces,
// `--snapshot` writes a heap snapshot after the syncs.

import { spawnSync } from 'node:child_process';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../src/kube/informer.js';
import { endpoint, service, slice as sliceOf } from '../src/kube/testing.js';
import type { EndpointSlice, Node, Service } from '../src/kube/types.js';
import { RealIptables, commandsFor } from '../src/netfilter/iptables/backend.js';
import type { ExecRequest, ExecResult, Execer } from '../src/os/exec.js';
import { RealExecer } from '../src/os/exec.js';
import { realClock } from '../src/util/clock.js';
import { ProxyHealth } from '../src/proxy/healthz.js';
import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import { ProxyMetrics } from '../src/proxy/metrics.js';
import { IptablesProxier } from '../src/proxy/iptables/proxier.js';
import type { ProxierIptables } from '../src/proxy/iptables/proxier.js';
import type { SyncReport } from '../src/proxy/proxier.js';
import { slimForProxy } from '../src/proxy/slim.js';

const NODE = 'bench-node';
const MiB = 2 ** 20;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

interface Mem {
  rss: number;
  heap: number;
  total: number;
  ext: number;
}

async function settle(): Promise<Mem> {
  // A tick first: a finished child process's handles (and its stdin text) go after 'close'.
  await new Promise((r) => setTimeout(r, 50));
  for (let i = 0; i < 4; i++) gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, total: m.heapTotal, ext: m.external + m.arrayBuffers };
}

function line(what: string, m: Mem, prev?: Mem) {
  const d = prev === undefined ? '' : ` (heap ${((m.heap - prev.heap) / MiB).toFixed(1)})`;
  console.log(
    `${what.padEnd(44)} rss ${(m.rss / MiB).toFixed(0).padStart(4)} MiB  heap ${(m.heap / MiB).toFixed(1).padStart(6)}/${(m.total / MiB).toFixed(0)} MiB  ext ${(m.ext / MiB).toFixed(1)} MiB${d}`,
  );
}

class NetnsExecer implements Execer {
  private readonly ns: string;
  private readonly inner: Execer = new RealExecer();
  constructor(ns: string) {
    this.ns = ns;
  }
  run(req: ExecRequest): Promise<ExecResult> {
    return this.inner.run({
      ...req,
      cmd: 'ip',
      args: ['netns', 'exec', this.ns, req.cmd, ...req.args],
    });
  }
}

/** Keeps nothing: restore succeeds, save shows empty tables. */
const nullIptables: ProxierIptables = {
  family: 'IPv4',
  restore: () => Promise.resolve(),
  save: () => Promise.resolve('*nat\nCOMMIT\n*filter\nCOMMIT\n'),
  ensureChain: () => Promise.resolve(false),
  ensureRule: () => Promise.resolve(false),
  chainExists: () => Promise.resolve(true),
} as unknown as ProxierIptables;

function ip(i: number, base: number): string {
  return `10.${base + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`;
}

function svc(i: number): Service {
  return service(
    `bench/s${i}`,
    {
      type: 'ClusterIP',
      clusterIP: ip(i, 96),
      clusterIPs: [ip(i, 96)],
      ports: [{ name: 'p', port: 80, protocol: 'TCP' }],
    },
    { metadata: { resourceVersion: '1' } },
  );
}

function slice(i: number, gen: number): EndpointSlice {
  return sliceOf(
    `bench/s${i}`,
    [0, 1].map((k) =>
      endpoint(ip((i * 2 + k + gen * 7919) % 1_000_000, 200), {
        conditions: { ready: true },
        nodeName: k === 0 ? NODE : 'other',
      }),
    ),
    {
      ports: [{ name: 'p', port: 8080, protocol: 'TCP' }],
      metadata: { resourceVersion: String(gen) },
    },
  );
}

/**
 * What an API server adds to an object applied with kubectl: server-side-apply field owners
 * and the last applied configuration. Decoded per object, as a watch would.
 */
function asFromApiServer<T extends Service | EndpointSlice>(obj: T): T {
  const fields = JSON.stringify({
    'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} }, 'f:annotations': { '.': {} } },
    'f:spec': obj.kind === 'Service' ? { 'f:ports': { '.': {}, 'k:{"port":80}': {} } } : {},
    'f:endpoints': {},
  });
  const managed = [
    { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: obj.apiVersion },
    { manager: 'kube-controller-manager', operation: 'Update', apiVersion: obj.apiVersion },
  ].map((m) => ({ ...m, time: '2026-11-25T05:00:00Z', fieldsType: 'FieldsV1', fieldsV1: fields }));
  const wire = JSON.stringify({
    ...obj,
    metadata: {
      ...obj.metadata,
      uid: `0b6c4a52-7a8e-4f0e-9d5c-${String(obj.metadata?.name).padStart(12, '0')}`,
      creationTimestamp: '2026-11-25T05:00:00Z',
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': `${JSON.stringify(obj)}\n`,
      },
      managedFields: managed,
    },
  });
  return JSON.parse(wire) as T;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const kernel = args.includes('--kernel');
  const n = Number(args[args.indexOf('--services') + 1] ?? 10_000) || 10_000;
  let iptables = nullIptables;
  const ns = `svcnet-mem-${process.pid}`;
  if (kernel) {
    if (spawnSync('ip', ['netns', 'add', ns]).status !== 0) throw new Error('ip netns add failed');
    process.once('exit', () => spawnSync('ip', ['netns', 'del', ns]));
    iptables = new RealIptables(new NetnsExecer(ns), 'IPv4', commandsFor('IPv4', 'legacy'));
  }
  const keepAlive = setInterval(() => undefined, 1000);
  console.log(
    `${n} Services × 2 endpoints, backend ${kernel ? `iptables-legacy in netns ${ns}` : 'null'}`,
  );
  const m0 = await settle();
  line('start', m0);

  // --api-objects: objects as an API server sends them; --slim: as the proxy's informers
  // keep them (slimForProxy on ingest).
  const api = args.includes('--api-objects');
  const slim = args.includes('--slim');
  const ingest = <T extends Service | EndpointSlice>(o: T): T => {
    const out = api ? asFromApiServer(o) : o;
    if (slim) slimForProxy(out);
    return out;
  };
  let services: FakeInformer<Service> | undefined = new FakeInformer<Service>(
    Array.from({ length: n }, (_, i) => ingest(svc(i))),
  );
  let slices: FakeInformer<EndpointSlice> | undefined = new FakeInformer<EndpointSlice>(
    Array.from({ length: n }, (_, i) => ingest(slice(i, 0))),
  );
  const m1 = await settle();
  line('informer caches filled', m1, m0);

  const clock = realClock;
  const proxier = new IptablesProxier({
    nodeName: NODE,
    families: [{ family: 'IPv4', iptables }],
    optionsFor: () => ({
      ...DEFAULT_OPTIONS,
      nodeName: NODE,
      nodeIP: '192.0.2.1',
      localDetector: { mode: 'ClusterCIDR', cidr: '10.200.0.0/13' },
      nfacct: { ctStateInvalidDropped: false, localhostNodePortsAccepted: false },
    }),
    clock,
    log: pino({ level: 'silent' }),
    metrics: new ProxyMetrics(new Registry()),
    health: new ProxyHealth(clock, 60_000, ['IPv4']),
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
  });
  let waiters: ((r: SyncReport) => void)[] = [];
  const reports: SyncReport[] = [];
  proxier.onSync((rs) => {
    for (const r of rs) {
      reports.push(r);
      const w = waiters;
      waiters = [];
      for (const f of w) f(r);
    }
  });
  const nextSync = () => new Promise<SyncReport>((resolve) => waiters.push(resolve));
  proxier.attach({ services, endpointSlices: slices, nodes: new FakeInformer<Node>() });
  proxier.start();
  const first = nextSync();
  await services.start();
  await slices.start();
  const r1 = await first;
  const m2 = await settle();
  line(`first full sync (${r1.elapsedMs} ms, ${(r1.restoreBytes / 1e6).toFixed(1)} MB)`, m2, m1);
  for (let k = 0; k < 3; k++) {
    const next = nextSync();
    slices.upsert(slice(k * 997, 100 + k));
    await next;
  }
  const m3 = await settle();
  line('after 3 partial syncs', m3, m2);
  const full = nextSync();
  proxier.forceFullSync('bench');
  const r2 = await full;
  const m4 = await settle();
  line(`after a forced full sync (${r2.elapsedMs} ms)`, m4, m3);
  console.log(`RSS at ${n} Services (after gc): ${(m4.rss / MiB).toFixed(0)} MiB`);
  if (args.includes('--spaces'))
    for (const sp of getHeapSpaceStatistics())
      console.log(
        `  ${sp.space_name.padEnd(24)} committed ${(sp.physical_space_size / MiB).toFixed(1)} MiB used ${(sp.space_used_size / MiB).toFixed(1)} MiB`,
      );
  if (args.includes('--snapshot')) console.log(`heap snapshot: ${writeHeapSnapshot()}`);
  await proxier.stop();

  // What each holder keeps: drop it, gc, measure.
  console.log('-- retained by (drop one holder at a time) --');
  const p = proxier as unknown as Record<string, unknown>;
  const fam = (p.families as Record<string, unknown>[])[0] ?? {};
  let prev = await settle();
  const drop = async (what: string, f: () => void) => {
    f();
    const m = await settle();
    console.log(
      `${what.padEnd(44)} ${((prev.heap - m.heap) / MiB).toFixed(1).padStart(6)} MiB heap`,
    );
    prev = m;
  };
  await drop('lastPlan (a summary now)', () => {
    fam.lastPlan = undefined;
  });
  await drop('hooks', () => {
    fam.hooks = undefined;
  });
  await drop('planState (buckets, fragments)', () => {
    fam.planState = undefined;
  });
  await drop('conntrackView', () => {
    fam.conntrackView = new Map();
  });
  await drop('endpoints tracker', () => {
    fam.endpoints = undefined;
  });
  await drop('services tracker', () => {
    fam.services = undefined;
  });
  await drop('proxier accepted objects (2 maps)', () => {
    (p.acceptedServices as Map<string, unknown>).clear();
    (p.acceptedSlices as Map<string, unknown>).clear();
  });
  await drop('informer caches (the objects)', () => {
    services = undefined;
    slices = undefined;
    p.deps = undefined;
    p.runner = undefined;
  });
  line('end', await settle(), m0);
  clearInterval(keepAlive);
}

await main();
