// Benchmarks the iptables plan + render of full syncs at 1k, 10k and 50k Services × 10
// endpoints, and a one-Service partial sync at 10k. Targets on the 2-core dev machine: full
// 10k under 300 ms, partial under 5 ms. Prints time (median of runs) and peak heap/RSS.

import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import type { IptablesProxierOptions } from '../src/proxy/iptables/options.js';
import { planIptables } from '../src/proxy/iptables/plan.js';
import type { PlanState } from '../src/proxy/iptables/plan.js';
import { trackObjects } from '../src/proxy/iptables/plan-objects.js';
import { takeSnapshot } from '../src/proxy/model/snapshot.js';
import type { ProxySnapshot } from '../src/proxy/model/snapshot.js';
import { benchService, benchSlice } from './workload.js';

const OPTIONS: IptablesProxierOptions = {
  ...DEFAULT_OPTIONS,
  nodeName: 'node-1',
  nodeIP: '172.18.0.2',
  localDetector: { mode: 'ClusterCIDR', cidr: '10.0.0.0/8' },
  localAddresses: ['127.0.0.1', '172.18.0.2'],
};

const service = benchService;
const slice = benchSlice;

/** `make(0) … make(n - 1)`, made one at a time (each is garbage once the trackers read it). */
function* each<T>(n: number, make: (i: number) => T): Generator<T> {
  for (let i = 0; i < n; i++) yield make(i);
}

function build(n: number) {
  const t = trackObjects(
    each(n, service),
    each(n, (i) => slice(i, 10)),
    'IPv4',
    'node-1',
  );
  return { svcs: t.services, eps: t.endpoints, snap: t.snapshot };
}

function planAndRender(
  snap: ProxySnapshot,
  changed: ReadonlySet<string> | 'all',
  previous?: PlanState,
) {
  const plan = planIptables(
    {
      family: 'IPv4',
      services: snap.services,
      endpoints: snap.endpoints,
      options: OPTIONS,
      changedServices: changed,
    },
    previous,
  );
  return { plan, text: plan.text };
}

function mb(bytes: number): string {
  return `${(bytes / 1048576).toFixed(0)} MiB`;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** Runs fn `runs` times; median wall and CPU (user+system) time, peak heap and RSS. */
function measure<T>(runs: number, fn: (run: number) => T, collect = true) {
  const samples: Sample[] = [];
  let result: T | undefined;
  let heap = 0;
  let rss = 0;
  for (let r = 0; r < runs; r++) {
    // A forced full GC leaves sweeping to helper threads; skip it for short measurements.
    if (collect) gc();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    result = fn(r);
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(c0);
    samples.push({ wallMs, cpuMs: (c.user + c.system) / 1000 });
    const m = process.memoryUsage();
    heap = Math.max(heap, m.heapUsed);
    rss = Math.max(rss, m.rss);
  }
  return {
    wallMs: median(samples.map((x) => x.wallMs)),
    cpuMs: median(samples.map((x) => x.cpuMs)),
    result: result as T,
    heap,
    rss,
  };
}

function verdict(ms: number, target: number): string {
  return ms < target ? 'met' : 'MISSED';
}

function report(label: string, m: ReturnType<typeof measure>, extra: string): void {
  process.stdout.write(
    `${label}: ${m.wallMs.toFixed(1)} ms wall, ${m.cpuMs.toFixed(1)} ms CPU${extra}; ` +
      `peak heap ${mb(m.heap)}, rss ${mb(m.rss)}\n`,
  );
}

export async function run(): Promise<void> {
  const load = (await import('node:os')).loadavg()[0] ?? 0;
  process.stdout.write(`(load average ${load.toFixed(1)}; wall times on a shared machine vary)\n`);
  partialSync();
  for (const n of [1000, 10000, 50000]) {
    const { snap } = build(n);
    const runs = n >= 50000 ? 2 : 5;
    const cold = measure(runs, () => planAndRender(snap, 'all'));
    const lines = cold.result.text.split('\n').length;
    const t = n === 10000 ? ` (target < 300 ms: ${verdict(cold.wallMs, 300)})` : '';
    report(
      `full sync, cold  ${String(n).padStart(5)} services x 10 endpoints`,
      cold,
      `${t}; ${lines} lines, ${mb(cold.result.text.length)}`,
    );
    const prev = cold.result.plan.state;
    const warm = measure(runs, () => planAndRender(snap, 'all', prev));
    report(`full resync, warm ${String(n).padStart(5)} services x 10 endpoints`, warm, '');
  }
}

/** A one-Service partial sync at 10k Services (measured first, on a small heap). */
export function partialSync(): void {
  const { svcs, eps, snap } = build(10000);
  let previous = planAndRender(snap, 'all').plan.state;
  const partial = measure(
    15,
    (r) => {
      eps.update(slice(42, 10, r), slice(42, 10, r + 1));
      const s = takeSnapshot(svcs, eps);
      const p = planAndRender(s, s.changedServices, previous);
      previous = p.plan.state;
      return p;
    },
    false,
  );
  report(
    'partial sync 10000 services, 1 changed',
    partial,
    ` (target < 5 ms: ${verdict(partial.wallMs, 5)}); ${partial.result.text.split('\n').length} lines`,
  );
}
