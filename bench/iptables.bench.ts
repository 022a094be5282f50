// `npm run bench -- iptables [--json]`: the iptables mode against the real kernel, with each
// iptables backend (legacy and nft), in network namespaces this bench creates and deletes
// (`svcnet-iptbench-<pid>-<k>`, a fresh one per run; never the namespace it runs in). Each
// run is a child process started inside its namespace (as a proxy runs inside its node's)
// running this file bundled to plain JavaScript (as users run the proxy; see
// nftables.bench.ts), so its RSS is a proxy's. The child is a real IptablesProxier on the
// real binaries (`iptables-legacy-restore` / `iptables-nft-restore`), fed by informers
// holding the shared workload (workload.ts: Services × 10 endpoints). Figures:
//  - full sync at 1k/5k/10k Services (the proxier's first sync: iptables-save, plan,
//    one `iptables-restore --noflush --counters`), per backend;
//  - one-Service partial sync at each size (median of 5 EndpointSlice changes), per backend;
//  - network-programming latency at 1k Services, minSyncPeriod 0: from an EndpointSlice
//    change reaching the proxier (the informer event) to the end of the restore that carries
//    it, p50/p99 over 200 changes, per backend (the unsuffixed figures are legacy's);
//  - the proxier process's RSS at 10k (legacy run, after its syncs, once idle).
// Each namespace is a node of its own and gets its own xtables lock file (XTABLES_LOCKFILE,
// as a node has its own /run/xtables.lock): the lock file is shared by every namespace of
// this machine, and other work's legacy restores, in their own namespaces, held ours for
// seconds (and ours theirs). The one-chain floor is measured with and without the huge-page
// malloc tunable the proxy gives the legacy binaries (backend.ts legacyEnv), alternating.
// A run that does not finish within BENCH_IPT_TIMEOUT_S (default 300 s) is killed (its whole
// process group, restore included) and reported as missed with what it reached. Knobs:
// BENCH_IPT_SIZES (default 1000,5000,10000), BENCH_IPT_VARIANTS (default legacy,nft).
// Needs root, ip and both iptables backends; otherwise it says so and measures nothing.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../src/kube/informer.js';
import type { EndpointSlice, Node, Service } from '../src/kube/types.js';
import { RealIptables, commandsFor } from '../src/netfilter/iptables/backend.js';
import type { IptablesVariant } from '../src/netfilter/iptables/backend.js';
import { RealExecer } from '../src/os/exec.js';
import { ProxyHealth } from '../src/proxy/healthz.js';
import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import { IptablesProxier } from '../src/proxy/iptables/proxier.js';
import { ProxyMetrics } from '../src/proxy/metrics.js';
import type { SyncReport } from '../src/proxy/proxier.js';
import { realClock } from '../src/util/clock.js';
import { benchService, benchSlice } from './workload.js';

const JSON_OUT = process.argv.includes('--json');
const CHILD_FLAG = '--iptables-bench-child';
const ENDPOINTS = 10;
const NODE = 'node-1';
const CHANGES = 200;
const SIZES = (process.env.BENCH_IPT_SIZES ?? '1000,5000,10000').split(',').map(Number);
const VARIANTS = (process.env.BENCH_IPT_VARIANTS ?? 'legacy,nft').split(',') as IptablesVariant[];
const TIMEOUT_MS = Number(process.env.BENCH_IPT_TIMEOUT_S ?? 300) * 1000;
/** Targets of issue 16 (ms, MiB). */
const TARGET = { fullLegacy: 5000, fullNft: 30_000, partial: 100, p99: 200, rss: 150 };

function figure(name: string, value: number, unit: string, target?: number, note?: string): void {
  if (!JSON_OUT) return;
  const t = target !== undefined ? { target } : {};
  process.stdout.write(
    `${JSON.stringify({ bench: 'iptables', figure: name, value: Number(value.toFixed(1)), unit, ...t, ...(note !== undefined ? { note } : {}) })}\n`,
  );
}

function say(line: string): void {
  if (!JSON_OUT) process.stdout.write(`${line}\n`);
}

function verdict(value: number, target: number | undefined, limit: string): string {
  if (target === undefined) return '';
  return value <= target
    ? `  target ${String(target)}: met`
    : `  target ${String(target)}: MISSED (${limit})`;
}

function label(n: number): string {
  return n % 1000 === 0 ? `${String(n / 1000)}k` : String(n);
}

function pct(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- the child: one proxier in its namespace ----

/** What a child reports on its last stdout line (`RESULT {json}`). */
interface ChildResult {
  readonly full?: { ms: number; bytes: number };
  readonly partials?: number[];
  readonly latencies?: number[];
  readonly syncs?: number;
  /** Median duration of the syncs of the latency run. */
  readonly syncMedianMs?: number;
  /** The one-chain floor without the huge-page tunable (the binaries' plain environment). */
  readonly floorPlainMs?: number;
  readonly rssMiB?: number;
  readonly rssBusyMiB?: number;
  /** One restore declaring one empty chain, at this size: the backend's floor per sync. */
  readonly floorMs?: number;
}

interface Harness {
  readonly proxier: IptablesProxier;
  readonly slices: FakeInformer<EndpointSlice>;
  readonly reports: SyncReport[];
  next(): Promise<SyncReport>;
}

const backendOf = (variant: IptablesVariant): RealIptables =>
  new RealIptables(new RealExecer(), 'IPv4', commandsFor('IPv4', variant));

async function harness(variant: IptablesVariant, n: number): Promise<Harness> {
  const iptables = backendOf(variant);
  const services = new FakeInformer<Service>(Array.from({ length: n }, (_, i) => benchService(i)));
  const slices = new FakeInformer<EndpointSlice>(
    Array.from({ length: n }, (_, i) => benchSlice(i, ENDPOINTS)),
  );
  const proxier = new IptablesProxier({
    nodeName: NODE,
    families: [{ family: 'IPv4', iptables }],
    optionsFor: () => ({
      ...DEFAULT_OPTIONS,
      nodeName: NODE,
      nodeIP: '172.18.0.2',
      localDetector: { mode: 'ClusterCIDR', cidr: '10.0.0.0/8' },
      nfacct: { ctStateInvalidDropped: false, localhostNodePortsAccepted: false },
    }),
    clock: realClock,
    log: pino({ level: 'silent' }),
    metrics: new ProxyMetrics(new Registry()),
    health: new ProxyHealth(realClock, 60_000, ['IPv4']),
    minSyncPeriodMs: 0,
    syncPeriodMs: 3_600_000,
  });
  proxier.attach({ services, endpointSlices: slices, nodes: new FakeInformer<Node>() });
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
  const next = (): Promise<SyncReport> => new Promise((resolve) => waiters.push(resolve));
  proxier.start();
  const first = next();
  await services.start();
  await slices.start();
  await first;
  return { proxier, slices, reports, next };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const rssMiB = (): number => process.memoryUsage().rss / 2 ** 20;

/** Full sync, then 5 one-Service partial syncs; RSS when asked (see the file header). */
async function childSync(variant: IptablesVariant, n: number, rss: boolean): Promise<ChildResult> {
  const h = await harness(variant, n);
  const first = h.reports[0];
  const full = { ms: first?.elapsedMs ?? NaN, bytes: first?.restoreBytes ?? 0 };
  process.stderr.write(`full sync done: ${JSON.stringify(full)}\n`);
  const partials: number[] = [];
  for (let k = 0; k < 5; k++) {
    const done = h.next();
    h.slices.upsert(benchSlice((17 + k * 997) % n, ENDPOINTS, 1_000_000 + k));
    partials.push((await done).elapsedMs);
  }
  const floors: number[] = [];
  const plain: number[] = [];
  for (let k = 0; k < 5; k++) {
    const t = performance.now();
    await backendOf(variant).restore(`*nat\n:BENCH-PROBE-${String(k)} - [0:0]\nCOMMIT\n`, {
      noflush: true,
    });
    floors.push(performance.now() - t);
    if (variant !== 'legacy') continue;
    const env = { ...process.env };
    delete env.GLIBC_TUNABLES;
    const t1 = performance.now();
    spawnSync('iptables-legacy-restore', ['-w', '5', '--noflush'], {
      input: `*nat\n:BENCH-PLAIN-${String(k)} - [0:0]\nCOMMIT\n`,
      env,
    });
    plain.push(performance.now() - t1);
  }
  const floorMs = pct(floors, 50);
  const floorPlainMs = plain.length > 0 ? pct(plain, 50) : undefined;
  if (!rss) {
    await h.proxier.stop();
    return { full, partials, floorMs, ...(floorPlainMs !== undefined ? { floorPlainMs } : {}) };
  }
  gc();
  gc();
  const busy = rssMiB();
  // Idle, as a proxy between syncs: V8's memory reducer shrinks the heap some seconds later.
  const heap0 = process.memoryUsage().heapTotal;
  for (let t = 0; t < 30 && process.memoryUsage().heapTotal > heap0 * 0.8; t++) await sleep(1000);
  const idle = rssMiB();
  await h.proxier.stop();
  return {
    full,
    partials,
    floorMs,
    ...(floorPlainMs !== undefined ? { floorPlainMs } : {}),
    rssMiB: idle,
    rssBusyMiB: busy,
  };
}

/** CHANGES EndpointSlice changes at random 20–120 ms apart; latency to the restore's end. */
async function childLatency(variant: IptablesVariant, n: number): Promise<ChildResult> {
  const h = await harness(variant, n);
  const pending: { at: number; done?: number }[] = [];
  const durations: number[] = [];
  h.proxier.onSync((rs) => {
    const r = rs[0];
    if (r === undefined) return;
    durations.push(r.elapsedMs);
    const end = r.startedAt + r.elapsedMs;
    for (const c of pending) if (c.done === undefined && c.at <= r.startedAt) c.done = end;
  });
  const syncs0 = h.reports.length;
  for (let k = 0; k < CHANGES; k++) {
    pending.push({ at: Date.now() });
    h.slices.upsert(benchSlice(Math.floor(Math.random() * n), ENDPOINTS, 1_000_000 + k));
    await sleep(20 + Math.random() * 100);
  }
  const deadline = Date.now() + 30_000;
  while (pending.some((c) => c.done === undefined) && Date.now() < deadline) await sleep(50);
  await h.proxier.stop();
  const latencies = pending.filter((c) => c.done !== undefined).map((c) => (c.done ?? 0) - c.at);
  return { latencies, syncs: h.reports.length - syncs0, syncMedianMs: pct(durations, 50) };
}

async function child(): Promise<void> {
  const [variant, n, mode] = process.argv.slice(process.argv.indexOf(CHILD_FLAG) + 1);
  const v = variant as IptablesVariant;
  const size = Number(n);
  // The proxier's timers are unref'd (a daemon's servers keep it alive); keep the child alive.
  const keepAlive = setInterval(() => undefined, 1000);
  const result =
    mode === 'latency' ? await childLatency(v, size) : await childSync(v, size, mode === 'rss');
  clearInterval(keepAlive);
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

// ---- the parent: namespaces, children, figures ----

interface Run {
  readonly result?: ChildResult;
  /** Why there is no result (timeout, exit status) and the child's last progress line. */
  readonly failed?: string;
  readonly ms: number;
}

let runs = 0;

/** Runs the bundled child in a fresh namespace; kills its process group on timeout. */
async function runChild(bundle: string, args: string[], timeoutMs: number): Promise<Run> {
  const ns = `svcnet-iptbench-${String(process.pid)}-${String(runs++)}`;
  spawnSync('ip', ['netns', 'del', ns]);
  if (spawnSync('ip', ['netns', 'add', ns]).status !== 0)
    throw new Error(`ip netns add ${ns} failed`);
  const t0 = performance.now();
  const lock = join(tmpdir(), `${ns}.xtables.lock`);
  const p = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, '--expose-gc', bundle, CHILD_FLAG, ...args],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, XTABLES_LOCKFILE: lock },
    },
  );
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const killed = { timedOut: false };
  const timer = setTimeout(() => {
    killed.timedOut = true;
    if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL');
  }, timeoutMs);
  const code = await new Promise<number | null>((r) => {
    p.once('exit', (c) => {
      r(c);
    });
  });
  clearTimeout(timer);
  const ms = performance.now() - t0;
  spawnSync('ip', ['netns', 'del', ns]);
  rmSync(lock, { force: true });
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (line !== undefined) return { result: JSON.parse(line.slice(7)) as ChildResult, ms };
  const last = err.trim().split('\n').at(-1) ?? '';
  const why = killed.timedOut
    ? `not finished within ${String(timeoutMs / 1000)} s`
    : `child exit ${String(code)}`;
  return { failed: `${why}${last !== '' ? ` (last: ${last})` : ''}`, ms };
}

function fullTarget(v: IptablesVariant, n: number): number | undefined {
  if (n !== 10_000) return undefined;
  return v === 'legacy' ? TARGET.fullLegacy : TARGET.fullNft;
}

const LIMIT_FULL: Record<IptablesVariant, string> = {
  legacy: 'iptables-legacy-restore rebuilds and copies the whole nat table blob',
  nft: 'iptables-nft-restore looks every chain up in its cache: quadratic in chains',
};

async function syncRuns(bundle: string, v: IptablesVariant): Promise<void> {
  for (const n of SIZES) {
    const withRss = v === 'legacy' && n === Math.max(...SIZES);
    const r = await runChild(bundle, [v, String(n), withRss ? 'rss' : 'sync'], TIMEOUT_MS);
    const l = label(n);
    const target = fullTarget(v, n);
    const fullName = `iptables-kernel-full-sync-${l}-${v}`;
    if (r.result?.full === undefined) {
      say(
        `full sync ${l} Services × ${String(ENDPOINTS)} endpoints, iptables-${v}: ${r.failed ?? '?'}` +
          (target !== undefined ? `  target ${String(target)}: MISSED (${LIMIT_FULL[v]})` : ''),
      );
      figure(fullName, r.ms, 'ms', target, r.failed);
      continue;
    }
    const { full, partials = [] } = r.result;
    say(
      `full sync ${l} Services × ${String(ENDPOINTS)} endpoints, iptables-${v}: ${full.ms.toFixed(0)} ms ` +
        `(${(full.bytes / 1e6).toFixed(1)} MB restore input)${verdict(full.ms, target, LIMIT_FULL[v])}`,
    );
    figure(fullName, full.ms, 'ms', target);
    const partial = pct(partials, 50);
    const pTarget = n === 10_000 && v === 'legacy' ? TARGET.partial : undefined;
    say(
      `  one-Service partial sync at ${l}, iptables-${v}: median ${partial.toFixed(0)} ms (runs ${partials.map((x) => x.toFixed(0)).join(', ')})` +
        verdict(
          partial,
          pTarget,
          'iptables-legacy replaces the whole nat table per restore; see the one-chain floor below',
        ),
    );
    figure(`iptables-kernel-partial-sync-${l}-${v}`, partial, 'ms', pTarget);
    if (r.result.floorMs !== undefined) {
      say(
        `  a restore declaring one empty chain at ${l}, iptables-${v}: ${r.result.floorMs.toFixed(0)} ms ` +
          `(the floor of any sync: ${v === 'legacy' ? 'the kernel copies the whole table out and back in' : 'iptables-nft fetches its cache and commits one transaction'})`,
      );
      figure(`iptables-kernel-one-chain-restore-${l}-${v}`, r.result.floorMs, 'ms');
    }
    if (r.result.floorPlainMs !== undefined) {
      say(
        `  the same without the huge-page malloc tunable (GLIBC_TUNABLES unset), alternating: ` +
          `${r.result.floorPlainMs.toFixed(0)} ms`,
      );
      figure(`iptables-kernel-one-chain-restore-${l}-${v}-plain`, r.result.floorPlainMs, 'ms');
    }
    if (r.result.rssMiB !== undefined) {
      say(
        `proxier process RSS at ${l} Services × ${String(ENDPOINTS)} endpoints (informer caches, trackers, plan state; compiled JS): ` +
          `${(r.result.rssBusyMiB ?? NaN).toFixed(0)} MiB after its syncs, ${r.result.rssMiB.toFixed(0)} MiB idle` +
          verdict(
            r.result.rssMiB,
            TARGET.rss,
            'the informer caches, trackers and previous plan state',
          ),
      );
      figure(`iptables-proxy-rss-${l}`, r.result.rssMiB, 'MiB', TARGET.rss);
    }
  }
}

async function latencyRun(bundle: string, v: IptablesVariant): Promise<void> {
  const r = await runChild(bundle, [v, '1000', 'latency'], TIMEOUT_MS);
  const suffix = v === 'legacy' ? '' : `-${v}`;
  const lat = r.result?.latencies ?? [];
  if (lat.length === 0) {
    say(`network programming latency at 1k, iptables-${v}: ${r.failed ?? 'no sample'}`);
    figure(`iptables-latency-p99-1k${suffix}`, r.ms, 'ms', TARGET.p99, r.failed ?? 'no sample');
    return;
  }
  const [p50, p99] = [pct(lat, 50), pct(lat, 99)];
  say(
    `network programming latency at 1k Services, minSyncPeriod 0, iptables-${v}: p50 ${p50.toFixed(0)} ms, ` +
      `p99 ${p99.toFixed(0)} ms, max ${Math.max(...lat).toFixed(0)} ms (${String(lat.length)}/${String(CHANGES)} changes, ${String(r.result?.syncs ?? 0)} syncs, ` +
      `median sync ${(r.result?.syncMedianMs ?? NaN).toFixed(0)} ms: a change waits for the sync in flight, then its own)` +
      verdict(p99, TARGET.p99, 'a restore of the nat table per sync, on a loaded machine'),
  );
  figure(`iptables-latency-p50-1k${suffix}`, p50, 'ms');
  figure(`iptables-latency-sync-median-1k${suffix}`, r.result?.syncMedianMs ?? NaN, 'ms');
  figure(`iptables-latency-p99-1k${suffix}`, p99, 'ms', TARGET.p99);
}

function usable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const v of VARIANTS)
    if (spawnSync('sh', ['-c', `command -v iptables-${v}-restore`]).status !== 0)
      return `no iptables-${v}-restore`;
  if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) return 'no ip';
  return undefined;
}

/** This file bundled to plain JavaScript, in a temp folder (as nftables.bench.ts does). */
async function compiledSelf(): Promise<{ file: string; remove: () => void }> {
  const esbuild = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-iptbench-'));
  const file = join(dir, 'iptables.bench.mjs');
  await esbuild.build({
    entryPoints: [fileURLToPath(import.meta.url)],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: file,
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __c } from 'node:module'; const require = __c(import.meta.url);",
    },
  });
  return {
    file,
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs the bench (see the file header). */
export async function run(): Promise<void> {
  const why = usable();
  if (why !== undefined) {
    say(`iptables bench skipped: ${why} (needs root, ip, iptables-legacy and iptables-nft)`);
    return;
  }
  const load = spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.trim();
  say(
    `iptables ${spawnSync('iptables-legacy', ['--version'], { encoding: 'utf8' }).stdout.trim()} / ` +
      `${spawnSync('iptables-nft', ['--version'], { encoding: 'utf8' }).stdout.trim()}; ` +
      `load average ${load} on a shared machine (other work runs beside the bench: figures are upper bounds)`,
  );
  const compiled = await compiledSelf();
  try {
    for (const v of VARIANTS) await latencyRun(compiled.file, v);
    for (const v of VARIANTS) await syncRuns(compiled.file, v);
  } finally {
    compiled.remove();
  }
}

if (process.argv.includes(CHILD_FLAG)) await child();
