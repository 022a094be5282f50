// `npm run bench -- datapath [--json]`: the data-path cost of the rules (KEP-3866's curve):
// the connect time of a new TCP connection to a Service as the number of Services grows, in
// iptables mode (the legacy backend) and in nftables mode, against the real kernel. Per size
// and mode the bench builds fresh namespaces (`svcnet-dpbench-<pid>-<k>-node` and `-pod`,
// deleted after, also on a failure or Ctrl-C; never the namespace it runs in): a node
// namespace joined by a veth pair to a pod namespace whose whole endpoint range 10.0.0.0/16
// is local (an AnyIP route on lo), where a node:net server listens on 0.0.0.0:8080, so every
// endpoint of every Service is a real, answering address. The rules are what `svcnet render
// --mode iptables|nftables` prints for the shared workload (workload.ts: ClusterIP
// 172.x.y.z:80, every tenth a NodePort) with 2 endpoints per Service (to keep load times
// sane), planned by the proxy's own planners and loaded in one `iptables-legacy-restore
// --noflush --counters` (then kube-proxy's jump rules) or one `nft -f -`. A client, a
// separate Node process in the node namespace (locally generated traffic: nat OUTPUT →
// KUBE-SERVICES, or nftables' nat-output hook), opens fresh connections (each a new
// conntrack entry, a new source port) round-robin to: the Service whose KUBE-SERVICES rule
// comes first, the one that comes last (iptables' list is linear: the worst case; nftables
// looks both up in one verdict map), and an endpoint directly (traffic to no Service still
// walks the whole list in iptables mode), timing net.connect → 'connect' with
// process.hrtime. A no-rules baseline (same topology, no Services, hence no conntrack
// either) runs first. Figures, in µs, the minimum (the least noisy on a shared machine), p50
// and p99 of ROUNDS connections each after WARMUP rounds:
// datapath-connect-{min,p50,p99}-{first,last,direct}-<size>-<mode>, datapath-connect-*-baseline,
// and datapath-load-<size>-<mode> (ms, the one restore or nft -f). A size/mode whose load
// does not finish within BENCH_DP_TIMEOUT_S (default 300 s) is reported as missed, with what
// limited it. Knobs: BENCH_DP_SIZES (default 1000,5000,10000,30000), BENCH_DP_MODES (default
// iptables,nftables), BENCH_DP_ROUNDS (default 500). Needs root, ip, iptables-legacy-restore
// and nft; otherwise it says so and measures nothing.

import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { EndpointSlice, Service } from '../src/kube/types.js';
import { renderTransaction } from '../src/netfilter/nftables/render.js';
import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import type { IptablesProxierOptions } from '../src/proxy/iptables/options.js';
import { planFromObjects } from '../src/proxy/iptables/plan-objects.js';
import { DEFAULT_NFTABLES_OPTIONS } from '../src/proxy/nftables/options.js';
import type { NftablesProxierOptions } from '../src/proxy/nftables/options.js';
import { planNftablesFromObjects } from '../src/proxy/nftables/plan-objects.js';
import { NO_NFACCT } from '../src/proxy/proxier-options.js';
import { benchService, benchSlice } from './workload.js';

type Mode = 'iptables' | 'nftables';

const JSON_OUT = process.argv.includes('--json');
const SIZES = (process.env.BENCH_DP_SIZES ?? '1000,5000,10000,30000').split(',').map(Number);
const MODE_NAMES = (process.env.BENCH_DP_MODES ?? 'iptables,nftables').split(',');
const isMode = (m: string): m is Mode => m === 'iptables' || m === 'nftables';
const MODES = MODE_NAMES.filter(isMode);
const ROUNDS = Number(process.env.BENCH_DP_ROUNDS ?? 500);
const WARMUP = 20;
const TIMEOUT_MS = Number(process.env.BENCH_DP_TIMEOUT_S ?? 300) * 1000;
const ENDPOINTS = 2;
/** The veth pair's /30: the node end, the pod end. */
const NODE_IP = '192.168.77.1';
const POD_IP = '192.168.77.2';
/** Every endpoint address benchSlice(i, 2, 1) hands out is in here (60k at 30k Services). */
const ENDPOINT_RANGE = '10.0.0.0/16';
const ENDPOINT_PORT = 8080;

const IPT_OPTIONS: IptablesProxierOptions = {
  ...DEFAULT_OPTIONS,
  nodeName: 'node-1',
  nodeIP: NODE_IP,
  localDetector: { mode: 'ClusterCIDR', cidr: ENDPOINT_RANGE },
  localAddresses: ['127.0.0.1', NODE_IP],
  nfacct: NO_NFACCT,
};

const NFT_OPTIONS: NftablesProxierOptions = {
  ...DEFAULT_NFTABLES_OPTIONS,
  nodeName: 'node-1',
  nodeIP: NODE_IP,
  localDetector: { mode: 'ClusterCIDR', cidr: ENDPOINT_RANGE },
  localAddresses: ['127.0.0.1', NODE_IP],
  serviceCIDRs: ['172.0.0.0/8'],
};

function figure(name: string, value: number, unit: string, note?: string): void {
  if (!JSON_OUT) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'datapath', figure: name, value: Number(value.toFixed(1)), unit, ...(note !== undefined ? { note } : {}) })}\n`,
  );
}

function say(line: string): void {
  if (!JSON_OUT) process.stdout.write(`${line}\n`);
}

function label(n: number): string {
  return n % 1000 === 0 ? `${String(n / 1000)}k` : String(n);
}

function pct(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

// ---- namespaces ----

/** Namespaces this process created and has not deleted yet (deleted on exit and signals). */
const live = new Set<string>();
/** Processes this bench started (the servers), killed by pid before their namespace goes. */
const children = new Set<ChildProcess>();

function sh(args: string[], input?: string, timeoutMs = 30_000): { ok: boolean; err: string } {
  const r = spawnSync(args[0] ?? '', args.slice(1), {
    input,
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 2 ** 20,
  });
  const err = r.error !== undefined ? r.error.message : (r.stderr || '').trim();
  return { ok: r.status === 0, err };
}

function must(args: string[]): void {
  const r = sh(args);
  if (!r.ok) throw new Error(`${args.join(' ')}: ${r.err}`);
}

function cleanup(): void {
  for (const c of children) if (c.pid !== undefined && c.exitCode === null) c.kill('SIGKILL');
  children.clear();
  for (const ns of live) spawnSync('ip', ['netns', 'del', ns]);
  live.clear();
}

let topologies = 0;

interface Topology {
  readonly node: string;
  readonly pod: string;
}

/** Node and pod namespaces, the veth between them, routes, and the server in the pod. */
async function topology(): Promise<Topology> {
  const base = `svcnet-dpbench-${String(process.pid)}-${String(topologies++)}`;
  const t = { node: `${base}-node`, pod: `${base}-pod` };
  for (const ns of [t.node, t.pod]) {
    spawnSync('ip', ['netns', 'del', ns]);
    must(['ip', 'netns', 'add', ns]);
    live.add(ns);
    must(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
  }
  must([
    'ip',
    '-n',
    t.node,
    'link',
    'add',
    'dp0',
    'type',
    'veth',
    'peer',
    'name',
    'dp1',
    'netns',
    t.pod,
  ]);
  must(['ip', '-n', t.node, 'addr', 'add', `${NODE_IP}/30`, 'dev', 'dp0']);
  must(['ip', '-n', t.pod, 'addr', 'add', `${POD_IP}/30`, 'dev', 'dp1']);
  must(['ip', '-n', t.node, 'link', 'set', 'dp0', 'up']);
  must(['ip', '-n', t.pod, 'link', 'set', 'dp1', 'up']);
  // ClusterIPs and endpoints both route to the pod end; in the pod every endpoint is local.
  must(['ip', '-n', t.node, 'route', 'add', 'default', 'via', POD_IP]);
  must(['ip', '-n', t.pod, 'route', 'add', 'local', ENDPOINT_RANGE, 'dev', 'lo']);
  await startServer(t.pod);
  return t;
}

const SERVER = `
const s = require('node:net').createServer((c) => { c.on('error', () => {}); c.destroy(); });
s.listen(${String(ENDPOINT_PORT)}, '0.0.0.0', () => process.stdout.write('READY\\n'));`;

async function startServer(ns: string): Promise<void> {
  const p = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', SERVER], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(p);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`server in ${ns}: not listening after 10 s`));
    }, 10_000);
    p.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('READY')) {
        clearTimeout(timer);
        resolve();
      }
    });
    p.once('exit', (c) => {
      clearTimeout(timer);
      reject(new Error(`server in ${ns}: exit ${String(c)}`));
    });
  });
}

/** Kills the server and deletes both namespaces (one topology lives at a time). */
function teardown(): void {
  cleanup();
}

// ---- the client ----

/** One target: a name and host:port; the client returns its connect times in µs. */
interface Target {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

// Plain CommonJS for `node -e`: argv[1] targets JSON, argv[2] rounds, argv[3] warm-up rounds.
const CLIENT = `
const net = require('node:net');
const targets = JSON.parse(process.argv[1]);
const rounds = Number(process.argv[2]);
const warm = Number(process.argv[3]);
function once(t) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const s = net.connect({ host: t.host, port: t.port });
    s.setTimeout(3000, () => { s.destroy(); reject(new Error(t.name + ' ' + t.host + ':' + t.port + ': timeout')); });
    s.once('error', (e) => reject(new Error(t.name + ' ' + t.host + ':' + t.port + ': ' + e.message)));
    s.once('connect', () => {
      const us = Number(process.hrtime.bigint() - t0) / 1000;
      s.setTimeout(0);
      s.once('close', () => resolve(us));
      s.destroy();
    });
  });
}
(async () => {
  const out = Object.fromEntries(targets.map((t) => [t.name, []]));
  for (let r = 0; r < warm + rounds; r++)
    for (const t of targets) {
      const us = await once(t);
      if (r >= warm) out[t.name].push(us);
    }
  process.stdout.write('RESULT ' + JSON.stringify(out) + '\\n');
})().catch((e) => { process.stderr.write(e.message + '\\n'); process.exit(1); });`;

function measure(ns: string, targets: readonly Target[]): Record<string, number[]> {
  const r = spawnSync(
    'ip',
    [
      'netns',
      'exec',
      ns,
      process.execPath,
      '-e',
      CLIENT,
      JSON.stringify(targets),
      String(ROUNDS),
      String(WARMUP),
    ],
    { encoding: 'utf8', timeout: 600_000, killSignal: 'SIGKILL', maxBuffer: 64 * 2 ** 20 },
  );
  const line = r.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (line === undefined)
    throw new Error(`client in ${ns}: ${r.stderr.trim() || `exit ${String(r.status)}`}`);
  return JSON.parse(line.slice(7)) as Record<string, number[]>;
}

// ---- the rules ----

interface Ruleset {
  /** What the one load command reads. */
  readonly text: string;
  /** The commands after it (iptables mode: kube-proxy's jumps from the built-in chains). */
  readonly after: string[][];
  /** ClusterIPs of the first and the last rule of KUBE-SERVICES (iptables' order). */
  readonly first: string;
  readonly last: string;
}

function workload(n: number): { services: Service[]; slices: EndpointSlice[] } {
  return {
    services: Array.from({ length: n }, (_, i) => benchService(i)),
    // Salt 1: endpoints 10.0.0.1, 10.0.0.2, … (no .0 address).
    slices: Array.from({ length: n }, (_, i) => benchSlice(i, ENDPOINTS, 1)),
  };
}

/** The first and last `-A KUBE-SERVICES … -d <ClusterIP>` in the iptables restore text. */
function serviceOrder(iptablesText: string): { first: string; last: string } {
  const ips = [
    ...iptablesText.matchAll(
      /^-A KUBE-SERVICES .*-d (\d+\.\d+\.\d+\.\d+)(?:\/32)? --dport 80 -j KUBE-SVC-/gm,
    ),
  ].map((m) => m[1] ?? '');
  const [first, last] = [ips[0], ips.at(-1)];
  if (first === undefined || last === undefined)
    throw new Error('no KUBE-SERVICES ClusterIP rule in the plan');
  return { first, last };
}

/** What `svcnet render --mode <mode>` prints for n Services (the proxy's own planners). */
function ruleset(mode: Mode, n: number): Ruleset {
  const { services, slices } = workload(n);
  const ipt = planFromObjects(services, slices, IPT_OPTIONS, 'IPv4').plan;
  const order = serviceOrder(ipt.text);
  if (mode === 'iptables')
    return {
      text: ipt.text,
      after: ipt.jumps.map((j) => [
        'iptables-legacy',
        '-t',
        j.table,
        '-I',
        j.sourceChain,
        ...j.args,
      ]),
      ...order,
    };
  const { plan } = planNftablesFromObjects(services, slices, NFT_OPTIONS, 'IPv4');
  return { text: renderTransaction(plan.transaction), after: [], ...order };
}

const LOADER: Record<Mode, string[]> = {
  iptables: ['iptables-legacy-restore', '--noflush', '--counters'],
  nftables: ['nft', '-f', '-'],
};

const LIMIT: Record<Mode, string> = {
  iptables: 'iptables-legacy-restore builds and copies the whole nat table blob',
  nftables:
    "one transaction: binding each Service's anonymous map walks the whole pending transaction " +
    'in the kernel, O(Services²); src/netfilter/nftables/README-speed.md',
};

/** Loads the ruleset in ns with one command; its time in ms, or why it failed. */
function load(ns: string, mode: Mode, r: Ruleset): { ms: number; failed?: string } {
  const t0 = performance.now();
  const res = sh(['ip', 'netns', 'exec', ns, ...LOADER[mode]], r.text, TIMEOUT_MS);
  const ms = performance.now() - t0;
  if (!res.ok) {
    const why =
      ms >= TIMEOUT_MS
        ? `not loaded within ${String(TIMEOUT_MS / 1000)} s (${LIMIT[mode]})`
        : res.err.split('\n').slice(0, 3).join(' ');
    return { ms, failed: `${LOADER[mode][0] ?? ''}: ${why}` };
  }
  for (const cmd of r.after) must(['ip', 'netns', 'exec', ns, ...cmd]);
  return { ms };
}

// ---- the runs ----

interface Row {
  readonly size: string;
  readonly mode: string;
  readonly loadMs?: number;
  readonly missed?: string;
  readonly us: Record<string, number[]>;
}

function report(row: Row, suffix: string): void {
  for (const [target, us] of Object.entries(row.us)) {
    figure(`datapath-connect-min-${target}-${suffix}`, Math.min(...us), 'us');
    for (const p of [50, 99])
      figure(`datapath-connect-p${String(p)}-${target}-${suffix}`, pct(us, p), 'us');
  }
}

async function baseline(): Promise<Row> {
  const t = await topology();
  try {
    const us = measure(t.node, [{ name: 'direct', host: '10.0.0.1', port: ENDPOINT_PORT }]);
    const row = { size: '0', mode: 'no rules', us };
    figure('datapath-connect-min-baseline', Math.min(...(us.direct ?? [])), 'us');
    for (const p of [50, 99])
      figure(`datapath-connect-p${String(p)}-baseline`, pct(us.direct ?? [], p), 'us');
    return row;
  } finally {
    teardown();
  }
}

async function sizeRun(mode: Mode, n: number): Promise<Row> {
  const l = label(n);
  const tPlan = performance.now();
  const r = ruleset(mode, n);
  const planMs = performance.now() - tPlan;
  const t = await topology();
  try {
    const loaded = load(t.node, mode, r);
    if (loaded.failed !== undefined) {
      figure(`datapath-load-${l}-${mode}`, loaded.ms, 'ms', loaded.failed);
      return { size: l, mode, missed: loaded.failed, us: {} };
    }
    figure(`datapath-load-${l}-${mode}`, loaded.ms, 'ms');
    say(
      `  ${l} Services × ${String(ENDPOINTS)} endpoints, ${mode}: planned in ${planMs.toFixed(0)} ms, ` +
        `${(r.text.length / 1e6).toFixed(1)} MB loaded in ${loaded.ms.toFixed(0)} ms; first ${r.first}, last ${r.last}`,
    );
    const us = measure(t.node, [
      { name: 'first', host: r.first, port: 80 },
      { name: 'last', host: r.last, port: 80 },
      { name: 'direct', host: '10.0.0.1', port: ENDPOINT_PORT },
    ]);
    const row = { size: l, mode, loadMs: loaded.ms, us };
    report(row, `${l}-${mode}`);
    return row;
  } finally {
    teardown();
  }
}

function cell(us: readonly number[] | undefined): string {
  if (us === undefined || us.length === 0) return '—';
  return `${Math.min(...us).toFixed(0)} / ${pct(us, 50).toFixed(0)} / ${pct(us, 99).toFixed(0)}`;
}

function table(rows: readonly Row[]): void {
  say('');
  say(
    `connect time, µs, min / p50 / p99 of ${String(ROUNDS)} new connections each (after ${String(WARMUP)} warm-up rounds)`,
  );
  say('| Services | mode | load (ms) | first Service | last Service | endpoint, no Service |');
  say('| -------- | ---- | --------- | ------------- | ------------ | -------------------- |');
  for (const r of rows) {
    const loadCell =
      r.missed !== undefined
        ? `missed: ${r.missed}`
        : r.loadMs !== undefined
          ? r.loadMs.toFixed(0)
          : '—';
    say(
      `| ${r.size} | ${r.mode} | ${loadCell} | ${cell(r.us.first)} | ${cell(r.us.last)} | ${cell(r.us.direct)} |`,
    );
  }
}

function usable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  const tools = [
    'ip',
    ...(MODES.includes('iptables') ? ['iptables-legacy-restore', 'iptables-legacy'] : []),
    ...(MODES.includes('nftables') ? ['nft'] : []),
  ];
  for (const tool of tools)
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `no ${tool}`;
  const bad = MODE_NAMES.find((m) => !isMode(m));
  if (bad !== undefined) return `BENCH_DP_MODES: unknown mode ${JSON.stringify(bad)}`;
  return undefined;
}

function version(args: string[]): string {
  return spawnSync(args[0] ?? '', args.slice(1), { encoding: 'utf8' }).stdout.trim();
}

const onSignal = (sig: NodeJS.Signals): void => {
  cleanup();
  process.kill(process.pid, sig);
};

/** Runs the bench (see the file header). */
export async function run(): Promise<void> {
  const why = usable();
  if (why !== undefined) {
    say(`datapath bench skipped: ${why} (needs root, ip, iptables-legacy-restore and nft)`);
    return;
  }
  say(
    `${version(['iptables-legacy', '--version'])} / ${version(['nft', '--version'])}; Linux ${version(['uname', '-r'])}; ` +
      `load average ${version(['cat', '/proc/loadavg'])} (a shared machine: absolute figures are noisy)`,
  );
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const rows: Row[] = [];
  try {
    rows.push(await baseline());
    for (const n of SIZES) for (const m of MODES) rows.push(await sizeRun(m, n));
  } finally {
    cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  table(rows);
}
