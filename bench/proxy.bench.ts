// Proxy daemon benchmarks: network programming latency (EndpointSlice change → rules
// applied) p50/p99 over 200 changes with 1k Services present, for minSyncPeriod 1 s and 0;
// full and partial sync times with 10k Services; RSS. Rules go to the kernel when running
// as root with `ip` and iptables available — inside a network namespace this bench creates
// and deletes (`svcnet-bench-<pid>`), never the namespace it runs in — otherwise to the
// atomic FakeIptables (also with SVCNET_BENCH_FAKE=1). Every line says which.

import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../src/kube/informer.js';
import { endpoint, service, slice as sliceOf } from '../src/kube/testing.js';
import type { EndpointSlice, Node, Service } from '../src/kube/types.js';
import { RealIptables, commandsFor } from '../src/netfilter/iptables/backend.js';
import { FakeIptables } from '../src/netfilter/iptables/fake.js';
import type { ExecRequest, ExecResult, Execer } from '../src/os/exec.js';
import { RealExecer } from '../src/os/exec.js';
import { realClock } from '../src/util/clock.js';
import { ProxyHealth } from '../src/proxy/healthz.js';
import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import { ProxyMetrics } from '../src/proxy/metrics.js';
import { IptablesProxier } from '../src/proxy/iptables/proxier.js';
import type { ProxierIptables } from '../src/proxy/iptables/proxier.js';
import type { SyncReport } from '../src/proxy/proxier.js';

const NODE = 'bench-node';

class NetnsExecer implements Execer {
  private readonly ns: string;
  private readonly inner: Execer;
  constructor(ns: string, inner: Execer = new RealExecer()) {
    this.ns = ns;
    this.inner = inner;
  }
  run(req: ExecRequest): Promise<ExecResult> {
    return this.inner.run({
      ...req,
      cmd: 'ip',
      args: ['netns', 'exec', this.ns, req.cmd, ...req.args],
    });
  }
}

function canUseKernel(): boolean {
  if (process.env.SVCNET_BENCH_FAKE === '1') return false;
  if (process.getuid?.() !== 0) return false;
  return ['ip', 'iptables-restore', 'iptables-save'].every(
    (t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0,
  );
}

interface Target {
  readonly where: string;
  make(): ProxierIptables;
  cleanup(): void;
}

function kernelTarget(): Target {
  const ns = `svcnet-bench-${process.pid}`;
  spawnSync('ip', ['netns', 'del', ns]);
  const r = spawnSync('ip', ['netns', 'add', ns]);
  if (r.status !== 0) throw new Error(`ip netns add ${ns} failed`);
  // Also when the bench is interrupted.
  process.once('exit', () => spawnSync('ip', ['netns', 'del', ns]));
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.once(sig, () => {
      spawnSync('ip', ['netns', 'del', ns]);
      process.exit(130);
    });
  return {
    where: `kernel (iptables-nft in netns ${ns})`,
    make: () => {
      // A fresh namespace per scenario, so each starts from empty tables.
      spawnSync('ip', ['netns', 'del', ns]);
      spawnSync('ip', ['netns', 'add', ns]);
      return new RealIptables(new NetnsExecer(ns), 'IPv4', commandsFor('IPv4', undefined));
    },
    cleanup: () => {
      spawnSync('ip', ['netns', 'del', ns]);
    },
  };
}

function fakeTarget(): Target {
  const why =
    process.env.SVCNET_BENCH_FAKE === '1' ? 'SVCNET_BENCH_FAKE=1' : 'not root or no iptables';
  return {
    where: `FakeIptables (${why})`,
    make: () => new FakeIptables('IPv4'),
    cleanup: () => undefined,
  };
}

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

interface Harness {
  proxier: IptablesProxier;
  services: FakeInformer<Service>;
  slices: FakeInformer<EndpointSlice>;
  reports: SyncReport[];
  waitSync(): Promise<SyncReport>;
}

async function harness(
  iptables: ProxierIptables,
  minSyncPeriodMs: number,
  n: number,
): Promise<Harness> {
  const clock = realClock;
  const services = new FakeInformer<Service>(Array.from({ length: n }, (_, i) => svc(i)));
  const slices = new FakeInformer<EndpointSlice>(Array.from({ length: n }, (_, i) => slice(i, 0)));
  const nodes = new FakeInformer<Node>();
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
    minSyncPeriodMs,
    syncPeriodMs: 30_000,
  });
  proxier.attach({ services, endpointSlices: slices, nodes });
  const reports: SyncReport[] = [];
  let waiters: ((r: SyncReport) => void)[] = [];
  proxier.onSync((rs) => {
    for (const r of rs) {
      reports.push(r);
      const w = waiters;
      waiters = [];
      for (const f of w) f(r);
    }
  });
  proxier.start();
  const first = new Promise<SyncReport>((resolve) => waiters.push(resolve));
  await services.start();
  await slices.start();
  await first;
  return {
    proxier,
    services,
    slices,
    reports,
    waitSync: () => new Promise<SyncReport>((resolve) => waiters.push(resolve)),
  };
}

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

async function latency(target: Target, minSyncPeriodMs: number): Promise<void> {
  const h = await harness(target.make(), minSyncPeriodMs, 1000);
  const pending: { at: number; done?: number }[] = [];
  h.proxier.onSync((rs) => {
    const r = rs[0];
    if (r === undefined) return;
    const end = r.startedAt + r.elapsedMs;
    for (const c of pending) if (c.done === undefined && c.at <= r.startedAt) c.done = end;
  });
  for (let k = 0; k < 200; k++) {
    const i = Math.floor(Math.random() * 1000);
    pending.push({ at: Date.now() });
    h.slices.upsert(slice(i, k + 1));
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
  }
  const deadline = Date.now() + 30_000;
  while (pending.some((c) => c.done === undefined) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  await h.proxier.stop();
  const lat = pending.filter((c) => c.done !== undefined).map((c) => (c.done ?? 0) - c.at);
  const syncs = h.reports.length - 1;
  console.log(
    `network programming latency, 1k Services, 200 EndpointSlice changes, minSyncPeriod ${minSyncPeriodMs} ms, ${target.where}: ` +
      `p50 ${pct(lat, 50).toFixed(0)} ms, p99 ${pct(lat, 99).toFixed(0)} ms, max ${Math.max(...lat).toFixed(0)} ms ` +
      `(${lat.length}/200 measured, ${syncs} syncs) — target p99 < ${minSyncPeriodMs >= 1000 ? '1500' : '200'} ms`,
  );
}

async function syncTimes(target: Target): Promise<void> {
  const rss0 = process.memoryUsage().rss;
  const t0 = Date.now();
  const h = await harness(target.make(), 0, 10_000);
  const full = h.reports[0];
  const setupMs = Date.now() - t0;
  // Printed at once: with iptables-nft at this size the later syncs can take minutes.
  console.log(
    `10k Services × 2 endpoints, ${target.where}: first full sync ${full?.elapsedMs ?? NaN} ms ` +
      `(restore input ${((full?.restoreBytes ?? 0) / 1e6).toFixed(1)} MB; informer load + sync ${setupMs} ms), ` +
      `RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
  );
  const partial: number[] = [];
  for (let k = 0; k < 3; k++) {
    const next = h.waitSync();
    h.slices.upsert(slice(k * 997, 100 + k));
    partial.push((await next).elapsedMs);
  }
  const fulls: number[] = [];
  for (let k = 0; k < 1; k++) {
    const next = h.waitSync();
    h.proxier.forceFullSync('bench');
    fulls.push((await next).elapsedMs);
  }
  (globalThis as { gc?: () => void }).gc?.();
  const rss = process.memoryUsage().rss;
  await h.proxier.stop();
  console.log(
    `10k Services × 2 endpoints, ${target.where}: later full sync ${fulls.join(', ')} ms, ` +
      `partial syncs (one EndpointSlice) p50 ${pct(partial, 50)} ms max ${Math.max(...partial)} ms`,
  );
  console.log(
    `RSS with 10k Services loaded: ${(rss / 2 ** 20).toFixed(0)} MiB (grew ${((rss - rss0) / 2 ** 20).toFixed(0)} MiB)`,
  );
}

/** Runs all proxy benchmarks (see the file header). */
export async function run(): Promise<void> {
  const target = canUseKernel() ? kernelTarget() : fakeTarget();
  // The proxier's timers are unref'd (a daemon's servers keep it alive); keep the bench alive.
  const keepAlive = setInterval(() => undefined, 1000);
  try {
    await latency(target, 1000);
    await latency(target, 0);
    await syncTimes(target);
  } finally {
    clearInterval(keepAlive);
    target.cleanup();
  }
}
