// `npm run bench -- nftables [--json]`: the nftables mode against the real kernel, in a
// network namespace this bench creates (`svcnet-nftbench-<pid>`, deleted after; never the
// namespace it runs in). The bench re-runs itself inside that namespace (as the proxy runs
// inside its node's), so `nft` is started directly. Workload: Services × 10 endpoints
// (ClusterIP, every 10th NodePort, 2 of 10 endpoints local), planned by proxy/nftables'
// planner. Figures: full sync of 1k and 10k Services (plan + apply through RealNftBackend:
// cache-free encoding, parts of ~1k Services), then in a second process, as a proxy: the light
// read-back, add one Service and change one endpoint at 10k (median of 5 partial syncs, ours
// and the peer alternating), and that process's RSS at the end (it keeps every Service and
// EndpointSlice as informers do; RSS is read right after the syncs and again once idle, when
// V8's memory reducer has shrunk the heap as it does in a proxy between syncs; the target
// applies to the idle figure). The peer in the same run
// is what kube-proxy does: the same transactions rendered as plain `nft -f -` text, one
// transaction. At 1k both rulesets are compared (`nft list ruleset` must be identical).
// The second process runs compiled JavaScript, as users run the proxy (an installed package
// runs tsc's dist/, the lab an esbuild bundle; neither loads tsx): the bench bundles itself
// with esbuild into a temporary folder and runs that with plain node, so its RSS is a
// proxy's, not tsx's (the tsx loader alone adds ~45 MiB).
// Needs root and nft; otherwise it says so and measures nothing.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EndpointSlice, Service } from '../src/kube/types.js';
import { RealNftBackend } from '../src/netfilter/nftables/backend.js';
import type { Transaction } from '../src/netfilter/nftables/model.js';
import { RealExecer } from '../src/os/exec.js';
import { trackObjects } from '../src/proxy/iptables/plan-objects.js';
import type { TrackedObjects } from '../src/proxy/iptables/plan-objects.js';
import { takeSnapshot } from '../src/proxy/model/snapshot.js';
import type { ProxySnapshot } from '../src/proxy/model/snapshot.js';
import { DEFAULT_NFTABLES_OPTIONS } from '../src/proxy/nftables/options.js';
import type { NftablesProxierOptions } from '../src/proxy/nftables/options.js';
import { planNftables, tableRefOf } from '../src/proxy/nftables/plan.js';
import { benchService, benchSlice } from './workload.js';
import type { NftPlanState, NftablesPlan } from '../src/proxy/nftables/plan.js';

const JSON_OUT = process.argv.includes('--json');
/** What runs this process: the partials child runs the bundle (see the file header). */
const RUNTIME = import.meta.url.endsWith('.mjs')
  ? 'compiled JS bundle, no tsx (as users run it)'
  : 'TypeScript through tsx';
const CHILD_FLAG = '--nftables-bench-child';
const PARTIALS_FLAG = '--nftables-bench-partials';
const ENDPOINTS = 10;
const REPEATS = 5;
/** The large size (10k; BENCH_NFT_SERVICES overrides it for a quick run). */
const LARGE = Number(process.env.BENCH_NFT_SERVICES ?? 10_000);

const OPTIONS: NftablesProxierOptions = {
  ...DEFAULT_NFTABLES_OPTIONS,
  nodeName: 'node-1',
  nodeIP: '172.18.0.2',
  localDetector: { mode: 'ClusterCIDR', cidr: '10.0.0.0/8' },
  localAddresses: ['127.0.0.1', '172.18.0.2'],
  serviceCIDRs: ['172.0.0.0/8'],
};

function figure(name: string, value: number, unit: string, target?: number): void {
  if (!JSON_OUT) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'nftables', figure: name, value: Number(value.toFixed(1)), unit, ...(target !== undefined ? { target } : {}) })}\n`,
  );
}

function say(line: string): void {
  if (!JSON_OUT) process.stdout.write(`${line}\n`);
}

function verdict(value: number, target: number, limit: string): string {
  return value <= target
    ? `target ${String(target)}: met`
    : `target ${String(target)}: MISSED (${limit})`;
}

const service = benchService;
const slice = (i: number, salt = 0): EndpointSlice => benchSlice(i, ENDPOINTS, salt);

/** n Services; the trackers are fed as a proxy's informers feed them (not timed). */
class Workload {
  n: number;
  /** What a proxy's informers keep: every Service and EndpointSlice, by key. */
  readonly cache = new Map<string, Service | EndpointSlice>();
  constructor(n: number) {
    this.n = n;
  }
  track(): TrackedObjects {
    const services = Array.from({ length: this.n }, (_, i) => service(i));
    const slices = Array.from({ length: this.n }, (_, i) => slice(i));
    for (const o of [...services, ...slices]) this.keep(o);
    return trackObjects(services, slices, 'IPv4', OPTIONS.nodeName, true);
  }
  keep(o: Service | EndpointSlice): void {
    this.cache.set(`${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, o);
  }
  plan(
    snap: ProxySnapshot,
    changed: ReadonlySet<string> | 'all',
    previous?: NftPlanState,
  ): NftablesPlan {
    return planNftables(
      {
        family: 'IPv4',
        services: snap.services,
        endpoints: snap.endpoints,
        options: OPTIONS,
        changedServices: changed,
        nowMs: Date.now(),
      },
      previous,
    );
  }
}

function time<T>(f: () => T): { value: T; ms: number } {
  const t = performance.now();
  const value = f();
  return { value, ms: performance.now() - t };
}

async function timeAsync<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await f();
  return { value, ms: performance.now() - t };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

/** Run before every timed step, so no collection of the last step's garbage lands in it. */
function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const execer = new RealExecer();
const ref = tableRefOf('IPv4');

/** kube-proxy's way: the plain text, one `nft -f -`. */
async function peerApply(tx: Transaction): Promise<number> {
  const b = new RealNftBackend(execer, 'IPv4', { encoding: 'plain' });
  return (await timeAsync(() => b.apply(tx))).ms;
}

function listRuleset(): string {
  return spawnSync('nft', ['list', 'ruleset'], { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout;
}

async function fullSync(n: number, label: string, target?: number): Promise<NftablesPlan> {
  const w = new Workload(n);
  const tracked = w.track();
  const planned = time(() => w.plan(tracked.snapshot, 'all'));
  const tx = planned.value.transaction;
  const ours = new RealNftBackend(execer, 'IPv4');
  await ours.deleteTable(ref);
  gc();
  const applied = await timeAsync(() => ours.apply(tx, { split: true }));
  const total = planned.ms + applied.ms;
  const mine = n <= 1000 ? listRuleset() : '';
  await ours.deleteTable(ref);
  gc();
  const peer = await peerApply(tx);
  const same = n <= 1000 ? (listRuleset() === mine ? 'identical' : 'DIFFERENT') : 'not compared';
  await ours.deleteTable(ref);
  say(
    `full sync ${label} Services × ${String(ENDPOINTS)} endpoints (${String(tx.length)} operations): ` +
      `${total.toFixed(0)} ms (plan ${planned.ms.toFixed(0)} ms, apply ${applied.ms.toFixed(0)} ms, ` +
      `${(applied.value / 1e6).toFixed(1)} MB to nft)` +
      (target !== undefined
        ? `  ${verdict(total, target, 'the kernel walks the table set list per anonymous map: O(Services²)')}`
        : '') +
      `; peer (kube-proxy-shaped one nft -f): apply ${peer.toFixed(0)} ms; rulesets ${same}`,
  );
  figure(`nftables-kernel-full-sync-${label}`, total, 'ms', target);
  figure(`nftables-peer-full-sync-${label}`, peer, 'ms');
  return planned.value;
}

/** Milliseconds to start `nft --version` from this process (fork + exec grow with RSS). */
function spawnCost(): number {
  const xs: number[] = [];
  for (let k = 0; k < 5; k++) xs.push(time(() => spawnSync('nft', ['--version'])).ms);
  return median(xs);
}

interface Memory {
  readonly rss: number;
  readonly heapTotal: number;
  readonly text: string;
}

function memory(): Memory {
  const m = process.memoryUsage();
  const mib = (x: number) => x / 2 ** 20;
  return {
    rss: mib(m.rss),
    heapTotal: mib(m.heapTotal),
    text: `${mib(m.rss).toFixed(0)} MiB (heap ${mib(m.heapUsed).toFixed(0)} MiB used of ${mib(m.heapTotal).toFixed(0)} MiB)`,
  };
}

/**
 * Waits, idle, until V8's memory reducer has run (it shrinks the heap some seconds after the
 * last busy GC, as it does in an idle proxy between syncs), at most 30 s.
 */
async function settle(busyHeapTotal: number): Promise<Memory & { ms: number }> {
  const t = performance.now();
  let m = memory();
  while (performance.now() - t < 30_000 && m.heapTotal > busyHeapTotal * 0.8) {
    await new Promise((r) => setTimeout(r, 1000));
    m = memory();
  }
  return { ...m, ms: performance.now() - t };
}

/** Times the light read-back; what it read is dropped before RSS is measured. */
async function readBack(backend: RealNftBackend): Promise<void> {
  const read = await timeAsync(() => backend.readTable(ref, { rules: false }));
  say(
    `read back at 10k without rules (a full sync's diff base): ${read.ms.toFixed(0)} ms, ` +
      `${String(read.value?.chains.size ?? 0)} chains, ${String(read.value?.sets.get('service-ips')?.elements.size ?? 0)} service-ips elements`,
  );
  figure('nftables-kernel-read-table-10k', read.ms, 'ms');
}

/**
 * A process of its own, as a proxy at 10k Services: the trackers are fed once and then
 * updated per change (as informers do); each partial sync plans from a snapshot, and ours
 * and the peer alternate. RSS is read at the end, after GC.
 */
async function partials(): Promise<void> {
  gc();
  const baseline = process.memoryUsage().rss / 2 ** 20;
  const w = new Workload(LARGE);
  const t = w.track();
  const backend = new RealNftBackend(execer, 'IPv4');
  await backend.deleteTable(ref);
  let state = await (async (): Promise<NftPlanState> => {
    const first = w.plan(t.snapshot, 'all');
    await backend.apply(first.transaction, { split: true });
    return first.state;
  })();
  gc();
  await readBack(backend);
  const measure = async (
    what: string,
    change: (k: number) => void,
  ): Promise<{ ours: number[]; peer: number[]; plan: number[]; ops: number }> => {
    const r = { ours: [] as number[], peer: [] as number[], plan: [] as number[], ops: 0 };
    for (let k = 0; k < 2 * REPEATS; k++) {
      change(k);
      gc();
      const p = time(() => {
        const snap = takeSnapshot(t.services, t.endpoints);
        return w.plan(snap, snap.changedServices, state);
      });
      const applyMs =
        k % 2 === 0
          ? (await timeAsync(() => backend.apply(p.value.transaction))).ms
          : await peerApply(p.value.transaction);
      (k % 2 === 0 ? r.ours : r.peer).push(p.ms + applyMs);
      r.plan.push(p.ms);
      r.ops = Math.max(r.ops, p.value.transaction.length);
      state = p.value.state;
    }
    say(
      `${what} at 10k: sync (plan + apply) median ${median(r.ours).toFixed(1)} ms (runs ${r.ours.map((x) => x.toFixed(0)).join(', ')}); ` +
        `peer (same plan, kube-proxy-shaped nft -f) median ${median(r.peer).toFixed(1)} ms; ` +
        `of which planning median ${median(r.plan).toFixed(1)} ms`,
    );
    return r;
  };
  const add = await measure('add one Service', () => {
    const i = w.n++;
    const [s, e] = [service(i), slice(i)];
    w.keep(s);
    w.keep(e);
    t.services.update(undefined, s);
    t.endpoints.update(undefined, e);
  });
  const addMs = median(add.ours);
  const start = spawnCost();
  const probes: number[] = [];
  for (let k = 0; k < 3; k++) {
    const chain = { kind: 'chain' as const, ...ref, name: `bench-probe-${String(k)}` };
    probes.push((await timeAsync(() => backend.apply([{ verb: 'add', object: chain }]))).ms);
  }
  say(
    `  add one Service: ${String(add.ops)} operations; an nft -f adding one empty chain takes ${median(probes).toFixed(1)} ms now (start + table-list fetch + commit)`,
  );
  say(
    `  add one Service: ${verdict(addMs, 50, `nf_tables validates the whole table graph on each commit (~20 ms at 10k); starting nft from this process costs ${start.toFixed(1)} ms`)}`,
  );
  figure('nftables-kernel-add-one-10k', addMs, 'ms', 50);
  figure('nftables-peer-add-one-10k', median(add.peer), 'ms');
  const change = await measure('change one endpoint', (k) => {
    const i = (17 + k * 997) % w.n;
    const e = slice(i, 1_000_000 + k);
    w.keep(e);
    t.endpoints.update(slice(i), e);
  });
  figure('nftables-kernel-change-endpoint-10k', median(change.ours), 'ms');
  figure('nftables-peer-change-endpoint-10k', median(change.peer), 'ms');
  say(
    '  change one endpoint: dropping its stale hairpin elements takes a `delete element`, for which nft 1.0.6 first downloads every chain and set (README-speed.md)',
  );
  gc();
  gc();
  const held = `${String(w.n)} Services × 10 endpoints (the objects as informers cache them, trackers, plan state of ${String(state.totals.chains)} chains)`;
  const busy = memory();
  say(
    `RSS right after the syncs, holding ${held}: ${busy.text}; ${baseline.toFixed(0)} MiB before any Service (node + modules, ${RUNTIME})`,
  );
  figure('nftables-proxy-rss-10k-after-syncs', busy.rss, 'MiB');
  const idle = await settle(busy.heapTotal);
  say(
    `RSS of the idle proxy ${(idle.ms / 1000).toFixed(0)} s later (V8's memory reducer has given back the young generation and compacted): ${idle.text}  ` +
      verdict(idle.rss, 150, 'the informer caches, trackers and plan state on top of the baseline'),
  );
  figure('nftables-proxy-rss-10k', idle.rss, 'MiB', 150);
  await backend.deleteTable(ref);
}

async function child(): Promise<void> {
  const v = await new RealNftBackend(execer, 'IPv4').availability();
  say(`nft ${v.version ?? '?'} in network namespace ${process.env.SVCNET_NFT_BENCH_NS ?? '?'}`);
  await fullSync(1000, '1k');
  await fullSync(LARGE, '10k', 15_000);
}

function usable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const t of ['ip', 'nft'])
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return `no ${t}`;
  return undefined;
}

/** This file bundled to plain JavaScript (as `npm run build` bundles the CLI), in a temp folder. */
async function compiledSelf(): Promise<{ file: string; remove: () => void }> {
  const esbuild = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-nftbench-'));
  const file = join(dir, 'nftables.bench.mjs');
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

/** Runs the bench in a fresh network namespace (see the file header). */
export async function run(): Promise<void> {
  const why = usable();
  if (why !== undefined) {
    say(`nftables bench skipped: ${why} (needs root, ip and nft)`);
    return Promise.resolve();
  }
  const ns = `svcnet-nftbench-${String(process.pid)}`;
  spawnSync('ip', ['netns', 'del', ns]);
  if (spawnSync('ip', ['netns', 'add', ns]).status !== 0)
    throw new Error(`ip netns add ${ns} failed`);
  const cleanup = (): void => {
    spawnSync('ip', ['netns', 'del', ns]);
  };
  process.once('exit', cleanup);
  const compiled = await compiledSelf();
  try {
    const self = fileURLToPath(import.meta.url);
    for (const flag of [CHILD_FLAG, PARTIALS_FLAG]) {
      const script = flag === PARTIALS_FLAG ? compiled.file : self;
      const execArgv = flag === PARTIALS_FLAG ? ['--expose-gc'] : process.execArgv;
      const args = [...execArgv, script, flag, ...(JSON_OUT ? ['--json'] : [])];
      const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, ...args], {
        stdio: 'inherit',
        env: { ...process.env, SVCNET_NFT_BENCH_NS: ns },
      });
      if (r.status !== 0) throw new Error(`nftables bench child: exit ${String(r.status)}`);
    }
  } finally {
    cleanup();
    compiled.remove();
  }
  return Promise.resolve();
}

if (process.argv.includes(CHILD_FLAG)) await child();
if (process.argv.includes(PARTIALS_FLAG)) await partials();
