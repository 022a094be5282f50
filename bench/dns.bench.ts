// DNS benchmark (`npm run bench -- dns`): dnsperf (Debian) on loopback against `svcnet dns`
// and, in the same run, against NSD serving the same names (the AXFR of our own index as its
// zone file: 85 % A hits, 5 % SRV hits, 10 % NXDOMAIN shaped like search-path misses), each
// with 1 and with 2 processes (svcnet: --workers N, run as bench/dns-serve.ts, the daemon over
// FakeInformers; NSD: server-count N). Each server is measured twice: throughput (dnsperf
// as fast as it can, QPS) and latency (a 3 s run at a fixed DNS_BENCH_LATENCY_QPS with -v,
// p50/p99 of every query's latency). Every command is printed; NSD and the children are
// killed by PID. Then memory with 10,000 Services and 50,000 endpoints indexed, and the
// index update rate. With --json one line per figure: dns-qps-1, dns-qps-nsd-1, dns-qps-2,
// dns-qps-nsd-2 (target for svcnet: NSD's figure at the same count), dns-p99-*, the ratios.
// Knobs: DNS_BENCH_SECONDS (default 10), DNS_BENCH_CLIENTS (8), DNS_BENCH_OUTSTANDING (200),
// DNS_BENCH_LATENCY_QPS (20000). The machine may be shared: read the load average printed.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealExecer } from '../src/os/exec.js';
import { RecordIndex } from '../src/dns/record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from '../src/dns/resolve.js';
import { q, udp } from '../src/dns/client.js';
import { zoneTransfer } from '../src/dns/transfer.js';
import { formatRecord } from '../src/dns/wire.js';
import { freePort } from '../src/util/free-port.js';
import { benchCluster, benchService as service, benchSlice as slice } from './dns-objects.js';

const execer = new RealExecer();
const json = process.argv.includes('--json');
const seconds = Number(process.env.DNS_BENCH_SECONDS ?? 10);
const clients = Number(process.env.DNS_BENCH_CLIENTS ?? 8);
const outstanding = Number(process.env.DNS_BENCH_OUTSTANDING ?? 200);
const latencyQps = Number(process.env.DNS_BENCH_LATENCY_QPS ?? 20_000);
const SERVICES = 1000;

/** A human line: stdout, or stderr under --json (stdout is then only figures). */
function out(line: string): void {
  (json ? process.stderr : process.stdout).write(`${line}\n`);
}

function figure(name: string, value: number, unit: string, target?: number): void {
  if (!json) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'dns', figure: name, value: Number(value.toFixed(3)), unit, ...(target !== undefined ? { target: Number(target.toFixed(3)) } : {}) })}\n`,
  );
}

async function has(cmd: string, args: string[]): Promise<boolean> {
  try {
    await execer.run({ cmd, args, timeoutMs: 5000 });
    return true;
  } catch {
    return false;
  }
}

interface PerfResult {
  qps: number;
  lostPct: number;
  p50Ms: number;
  p99Ms: number;
}

function dnsperfArgs(port: number, queryFile: string, extra: string[]): string[] {
  return ['-s', '127.0.0.1', '-p', String(port), '-d', queryFile, '-c', String(clients), ...extra];
}

async function dnsperfRun(args: string[], timeoutS: number): Promise<string> {
  out(`  $ dnsperf ${args.join(' ')}`);
  const res = await execer.run({ cmd: 'dnsperf', args, timeoutMs: (timeoutS + 30) * 1000 });
  return res.stdout;
}

/** Throughput, then latency at a fixed rate (verbose: one line per query with its latency). */
async function dnsperf(port: number, queryFile: string): Promise<PerfResult> {
  const tp = await dnsperfRun(
    dnsperfArgs(port, queryFile, ['-l', String(seconds), '-q', String(outstanding), '-T', '1']),
    seconds,
  );
  const qps = Number(/Queries per second:\s+([\d.]+)/.exec(tp)?.[1] ?? 0);
  const lost = Number(/Queries lost:\s+\d+ \(([\d.]+)%\)/.exec(tp)?.[1] ?? 0);
  const lat = await dnsperfRun(
    dnsperfArgs(port, queryFile, ['-l', '3', '-Q', String(latencyQps), '-T', '1', '-v']),
    3,
  );
  // Verbose lines: "> NOERROR name type 0.000123" (latency in seconds, last field).
  const ms = lat
    .split('\n')
    .filter((l) => l.startsWith('> '))
    .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)) * 1000)
    .filter((v) => Number.isFinite(v))
    .sort((a, b) => a - b);
  const pct = (p: number): number => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))] ?? 0;
  return { qps, lostPct: lost, p50Ms: pct(0.5), p99Ms: pct(0.99) };
}

function queryMix(n: number, services: number): string {
  const lines: string[] = [];
  let seed = 7;
  const rand = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed >>> 8;
  };
  for (let i = 0; i < n; i++) {
    const k = rand() % services;
    const r = rand() % 100;
    if (r < 85) lines.push(`svc${k}.bench.svc.cluster.local A`);
    else if (r < 90) lines.push(`_http._tcp.svc${k}.bench.svc.cluster.local SRV`);
    else lines.push(`svc${k}.bench.svc.bench.svc.cluster.local A`);
  }
  return `${lines.join('\n')}\n`;
}

/** `svcnet dns --workers N` (bench/dns-serve.ts) until the returned stop is called. */
async function startSvcnet(workers: number): Promise<{ port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const args = [
    '--import',
    'tsx',
    join(import.meta.dirname, 'dns-serve.ts'),
    String(port),
    String(workers),
    String(SERVICES),
  ];
  out(`  $ node ${args.join(' ')}`);
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      r();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    let text = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      if (text.includes('listening')) resolve();
    });
    void exited.then(() => {
      reject(new Error(`dns-serve exited: ${text}`));
    });
  });
  // Answering the bench's names (the workers have the index) before dnsperf starts.
  for (let i = 0; i < 100; i++) {
    const a = await udp(port, q('svc1.bench.svc.cluster.local'), 500);
    if (a && ((a[3] ?? 0) & 0xf) === 0 && (a[7] ?? 0) > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function qpsBench(): Promise<void> {
  if (!(await has('dnsperf', ['-h']))) {
    process.stdout.write(
      'dnsperf not installed (apt-get install -y dnsperf): QPS benchmark skipped\n',
    );
    return;
  }
  const hasNsd = await has('nsd', ['-v']);
  if (!hasNsd) out('nsd not installed (apt-get install -y nsd): comparison skipped');
  const index = new RecordIndex();
  const cluster = benchCluster(SERVICES);
  for (const s of cluster.services) index.upsertService(s);
  for (const s of cluster.slices) index.upsertEndpointSlice(s);
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-dnsbench-'));
  const queries = join(dir, 'queries.txt');
  writeFileSync(queries, queryMix(20_000, SERVICES));
  out(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )} (${process.version}, dnsperf -c ${clients} -q ${outstanding} -T 1 -l ${seconds}; latency at ${latencyQps} QPS)`,
  );
  try {
    for (const n of [1, 2]) {
      const ours = await startSvcnet(n);
      let mine: PerfResult;
      try {
        mine = await dnsperf(ours.port, queries);
      } finally {
        await ours.stop();
      }
      out(
        `svcnet dns --workers ${n}: ${mine.qps.toFixed(0)} QPS, lost ${mine.lostPct}%; at ${latencyQps} QPS p50 ${mine.p50Ms.toFixed(3)} ms, p99 ${mine.p99Ms.toFixed(3)} ms`,
      );
      const nsd = hasNsd ? await runNsd(dir, index, queries, n) : undefined;
      if (nsd) {
        out(
          `NSD server-count ${n}    : ${nsd.qps.toFixed(0)} QPS, lost ${nsd.lostPct}%; at ${latencyQps} QPS p50 ${nsd.p50Ms.toFixed(3)} ms, p99 ${nsd.p99Ms.toFixed(3)} ms`,
        );
        out(`ratio svcnet/NSD at ${n}: ${(mine.qps / nsd.qps).toFixed(2)} (goal >= 1.00)`);
      }
      figure(`dns-qps-${n}`, mine.qps, 'QPS', nsd?.qps);
      figure(`dns-p99-${n}`, mine.p99Ms, 'ms', nsd?.p99Ms);
      if (nsd) {
        figure(`dns-qps-nsd-${n}`, nsd.qps, 'QPS');
        figure(`dns-p99-nsd-${n}`, nsd.p99Ms, 'ms');
        figure(`dns-qps-ratio-${n}`, mine.qps / nsd.qps, 'ratio', 1);
      }
    }
  } finally {
    out(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runNsd(
  dir: string,
  index: RecordIndex,
  queries: string,
  servers: number,
): Promise<PerfResult | undefined> {
  const zone = zoneTransfer(index, DEFAULT_RESOLVER_CONFIG, 'cluster.local.').slice(0, -1);
  writeFileSync(join(dir, 'cluster.local.zone'), `${zone.map(formatRecord).join('\n')}\n`);
  const port = await freePort();
  const pidfile = join(dir, 'nsd.pid');
  rmSync(pidfile, { force: true });
  writeFileSync(
    join(dir, 'nsd.conf'),
    [
      'server:',
      `  ip-address: 127.0.0.1@${port}`,
      `  server-count: ${servers}`,
      '  username: ""',
      '  chroot: ""',
      `  zonesdir: "${dir}"`,
      `  pidfile: "${pidfile}"`,
      `  logfile: "${join(dir, 'nsd.log')}"`,
      `  xfrdfile: "${join(dir, 'xfrd.state')}"`,
      `  zonelistfile: "${join(dir, 'zone.list')}"`,
      '  database: ""',
      '  rrl-ratelimit: 0',
      '  rrl-whitelist-ratelimit: 0',
      '  verbosity: 0',
      'remote-control:',
      '  control-enable: no',
      'zone:',
      '  name: cluster.local',
      '  zonefile: cluster.local.zone',
      '',
    ].join('\n'),
  );
  out(`  $ nsd -c ${join(dir, 'nsd.conf')}   (server-count ${servers}, rrl off, zone = our AXFR)`);
  const start = await execer.run({
    cmd: 'nsd',
    args: ['-c', join(dir, 'nsd.conf')],
    timeoutMs: 30_000,
  });
  if (start.code !== 0) {
    process.stdout.write(`nsd failed to start: ${start.stderr}\n`);
    return undefined;
  }
  let pid = 0;
  for (let i = 0; i < 50 && pid === 0; i++) {
    try {
      pid = Number(readFileSync(pidfile, 'utf8').trim());
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    await new Promise((r) => setTimeout(r, 500));
    return await dnsperf(port, queries);
  } finally {
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
        // Gone (with its server-count children) before the next server is measured.
        for (let i = 0; i < 50; i++) {
          process.kill(pid, 0);
          await new Promise((r) => setTimeout(r, 100));
        }
      } catch {
        // gone
      }
    }
  }
}

function heapMB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

function memoryBench(): void {
  const before = heapMB();
  const rssBefore = process.memoryUsage().rss / 2 ** 20;
  const index = new RecordIndex();
  const t0 = performance.now();
  for (let i = 0; i < 10_000; i++) {
    const ns = `ns${i % 100}`;
    index.upsertService(service(i, ns));
    index.upsertEndpointSlice(slice(i, ns, 5));
  }
  const buildMs = performance.now() - t0;
  const after = heapMB();
  const stats = index.stats();
  const t1 = performance.now();
  for (let i = 0; i < 10_000; i++) index.upsertEndpointSlice(slice(i, `ns${i % 100}`, 5));
  const updateMs = performance.now() - t1;
  out(
    `index: ${stats.services} Services, ${stats.addresses} endpoints: heap +${(after - before).toFixed(1)} MB ` +
      `(${(((after - before) * 2 ** 20) / (stats.services + stats.addresses)).toFixed(0)} B per object), ` +
      `RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB (was ${rssBefore.toFixed(0)}); ` +
      `built in ${buildMs.toFixed(0)} ms; 10,000 slice updates in ${updateMs.toFixed(0)} ms ` +
      `(${((10_000 / updateMs) * 1000).toFixed(0)}/s)${(globalThis as { gc?: unknown }).gc ? '' : ' [run with --expose-gc for exact heap figures]'}`,
  );
}

export async function run(): Promise<void> {
  await qpsBench();
  memoryBench();
}
