// `npm run bench -- nftables [--json]`: the nftables mode against the real kernel, in a
// network namespace this bench creates (`svcnet-nftbench-<pid>`, deleted after; never the
// namespace it runs in). The bench re-runs itself inside that namespace (as the proxy runs
// inside its node's), so `nft` is started directly. Workload: Services × 10 endpoints
// (ClusterIP, every 10th NodePort, 2 of 10 endpoints local), planned by proxy/nftables'
// planner. Figures: full sync of 1k and 10k Services (plan + apply through RealNftBackend:
// cache-free encoding, parts of ~1k Services), then in a second process, as a proxy: the light
// read-back, add one Service and change one endpoint at 10k (median of 5 partial syncs, ours
// and the peer alternating), and that process's RSS at the end. The peer in the same run
// is what kube-proxy does: the same transactions rendered as plain `nft -f -` text, one
// transaction. At 1k both rulesets are compared (`nft list ruleset` must be identical).
// Needs root and nft; otherwise it says so and measures nothing.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { endpoint, service as serviceOf, slice as sliceOf } from '../src/kube/testing.js';
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
import type { NftPlanState, NftablesPlan } from '../src/proxy/nftables/plan.js';

const JSON_OUT = process.argv.includes('--json');
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

function ip(base: number, i: number): string {
  return `${String(base)}.${String((i >> 16) & 255)}.${String((i >> 8) & 255)}.${String(i & 255)}`;
}

function service(i: number): Service {
  return serviceOf(`ns${String(i % 100)}/svc${String(i)}`, {
    clusterIP: ip(172, i + 1),
    ports: [
      {
        name: 'http',
        port: 80,
        protocol: 'TCP',
        ...(i % 10 === 0 ? { nodePort: 30000 + (i % 2000) } : {}),
      },
    ],
    ...(i % 10 === 0 ? { type: 'NodePort' as const } : {}),
  });
}

function slice(i: number, salt = 0): EndpointSlice {
  return sliceOf(
    `ns${String(i % 100)}/svc${String(i)}`,
    Array.from({ length: ENDPOINTS }, (_, e) =>
      endpoint(ip(10, i * ENDPOINTS + e + salt), { nodeName: `node-${String(e % 5)}` }),
    ),
  );
}

/** n Services; the trackers are fed as a proxy's informers feed them (not timed). */
class Workload {
  n: number;
  constructor(n: number) {
    this.n = n;
  }
  track(): TrackedObjects {
    const services = Array.from({ length: this.n }, (_, i) => service(i));
    const slices = Array.from({ length: this.n }, (_, i) => slice(i));
    return trackObjects(services, slices, 'IPv4', OPTIONS.nodeName, true);
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
  const read = await timeAsync(() => backend.readTable(ref, { rules: false }));
  say(
    `read back at 10k without rules (a full sync's diff base): ${read.ms.toFixed(0)} ms, ` +
      `${String(read.value?.chains.size ?? 0)} chains, ${String(read.value?.sets.get('service-ips')?.elements.size ?? 0)} service-ips elements`,
  );
  figure('nftables-kernel-read-table-10k', read.ms, 'ms');
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
    t.services.update(undefined, service(i));
    t.endpoints.update(undefined, slice(i));
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
    const i = 17 + k * 997;
    t.endpoints.update(slice(i), slice(i, 1_000_000 + k));
  });
  figure('nftables-kernel-change-endpoint-10k', median(change.ours), 'ms');
  figure('nftables-peer-change-endpoint-10k', median(change.peer), 'ms');
  say(
    '  change one endpoint: dropping its stale hairpin elements takes a `delete element`, for which nft 1.0.6 first downloads every chain and set (README-speed.md)',
  );
  gc();
  gc();
  const rss = process.memoryUsage().rss / 2 ** 20;
  const heap = process.memoryUsage().heapUsed / 2 ** 20;
  say(
    `RSS of this process holding ${String(w.n)} Services × 10 endpoints (trackers + plan state of ${String(state.totals.chains)} chains, after the syncs): ` +
      `${rss.toFixed(0)} MiB (heap ${heap.toFixed(0)} MiB; ${baseline.toFixed(0)} MiB before any Service: node + tsx + modules)  ` +
      verdict(
        rss,
        150,
        'node with the tsx loader starts at the baseline shown; the rest is the trackers and plan state',
      ),
  );
  figure('nftables-proxy-rss-10k', rss, 'MiB', 150);
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
  try {
    const self = fileURLToPath(import.meta.url);
    for (const flag of [CHILD_FLAG, PARTIALS_FLAG]) {
      const args = [...process.execArgv, self, flag, ...(JSON_OUT ? ['--json'] : [])];
      const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, ...args], {
        stdio: 'inherit',
        env: { ...process.env, SVCNET_NFT_BENCH_NS: ns },
      });
      if (r.status !== 0) throw new Error(`nftables bench child: exit ${String(r.status)}`);
    }
  } finally {
    cleanup();
  }
  return Promise.resolve();
}

if (process.argv.includes(CHILD_FLAG)) await child();
if (process.argv.includes(PARTIALS_FLAG)) await partials();
