// DNS benchmark (`npm run bench -- dns`): dnsperf (Debian) on loopback against svcnet dns
// and, in the same run, against NSD serving an equivalent static zone (the AXFR of our own
// index, so both answer the same names: 85 % A hits, 5 % SRV hits, 10 % NXDOMAIN shaped like
// search-path misses). NSD runs from a temp dir on a loopback port with rate limiting off and
// is killed by PID. Then memory with 10,000 Services and 50,000 endpoints indexed, and the
// index update rate. Prints QPS, latency and the ratio; skips what needs missing tools.
// Knobs: DNS_BENCH_SECONDS (default 10), DNS_BENCH_CLIENTS (8), DNS_BENCH_OUTSTANDING (200).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealExecer } from '../src/os/exec.js';
import { RecordIndex } from '../src/dns/record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from '../src/dns/resolve.js';
import { DnsHandler, DnsServer } from '../src/dns/server.js';
import { zoneTransfer } from '../src/dns/transfer.js';
import { formatRecord } from '../src/dns/wire.js';
import { endpoint, service as serviceOf, slice as sliceOf } from '../src/kube/testing.js';
import type { EndpointSlice, Service } from '../src/kube/types.js';
import { freePort } from '../src/util/free-port.js';

const execer = new RealExecer();
const seconds = Number(process.env.DNS_BENCH_SECONDS ?? 10);
const clients = Number(process.env.DNS_BENCH_CLIENTS ?? 8);
const outstanding = Number(process.env.DNS_BENCH_OUTSTANDING ?? 200);

function service(i: number, ns: string): Service {
  const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
  return serviceOf(`${ns}/svc${i}`, { clusterIP: ip, clusterIPs: [ip] });
}

function slice(i: number, ns: string, endpoints: number): EndpointSlice {
  return sliceOf(
    `${ns}/svc${i}`,
    Array.from({ length: endpoints }, (_, k) =>
      endpoint(`10.${64 + ((i >> 12) & 63)}.${(i >> 4) & 255}.${((i & 15) << 4) | (k & 15)}`, {
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: `svc${i}-pod-${k}` },
        nodeName: `node-${k}`,
      }),
    ),
    { name: `svc${i}-abcde` },
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
  avgLatencyMs: number;
  lostPct: number;
  raw: string;
}

async function dnsperf(port: number, queryFile: string): Promise<PerfResult> {
  const res = await execer.run({
    cmd: 'dnsperf',
    args: [
      '-s',
      '127.0.0.1',
      '-p',
      String(port),
      '-d',
      queryFile,
      '-l',
      String(seconds),
      '-c',
      String(clients),
      '-q',
      String(outstanding),
      '-T',
      '1',
    ],
    timeoutMs: (seconds + 30) * 1000,
  });
  const qps = Number(/Queries per second:\s+([\d.]+)/.exec(res.stdout)?.[1] ?? 0);
  const lat = Number(/Average Latency \(s\):\s+([\d.]+)/.exec(res.stdout)?.[1] ?? 0);
  const lost = Number(/Queries lost:\s+\d+ \(([\d.]+)%\)/.exec(res.stdout)?.[1] ?? 0);
  return { qps, avgLatencyMs: lat * 1000, lostPct: lost, raw: res.stdout };
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

async function qpsBench(): Promise<void> {
  if (!(await has('dnsperf', ['-h']))) {
    process.stdout.write(
      'dnsperf not installed (apt-get install -y dnsperf): QPS benchmark skipped\n',
    );
    return;
  }
  const SERVICES = 1000;
  const index = new RecordIndex();
  for (let i = 0; i < SERVICES; i++) {
    index.upsertService(service(i, 'bench'));
    index.upsertEndpointSlice(slice(i, 'bench', 3));
  }
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-dnsbench-'));
  const queries = join(dir, 'queries.txt');
  writeFileSync(queries, queryMix(20_000, SERVICES));
  const handler = new DnsHandler({ index, config: DEFAULT_RESOLVER_CONFIG, isSynced: () => true });
  const server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
  await server.listen();
  let ours: PerfResult | undefined;
  let nsd: PerfResult | undefined;
  try {
    ours = await dnsperf(server.port, queries);
  } finally {
    await server.close();
  }
  process.stdout.write(
    `svcnet dns : ${ours.qps.toFixed(0)} QPS, avg latency ${ours.avgLatencyMs.toFixed(3)} ms, lost ${ours.lostPct}% ` +
      `(1 Node ${process.version} process; dnsperf -c ${clients} -q ${outstanding} -T 1 -l ${seconds}, same 2 cores)\n`,
  );
  if (await has('nsd', ['-v'])) {
    nsd = await runNsd(dir, index, queries);
    if (nsd)
      process.stdout.write(
        `NSD        : ${nsd.qps.toFixed(0)} QPS, avg latency ${nsd.avgLatencyMs.toFixed(3)} ms, lost ${nsd.lostPct}% (server-count 1, rrl off)\n` +
          `ratio svcnet/NSD: ${(ours.qps / nsd.qps).toFixed(2)}   target: >= 100000 QPS and >= 0.5 x NSD\n`,
      );
  } else {
    process.stdout.write('nsd not installed (apt-get install -y nsd): comparison skipped\n');
  }
  rmSync(dir, { recursive: true, force: true });
}

async function runNsd(
  dir: string,
  index: RecordIndex,
  queries: string,
): Promise<PerfResult | undefined> {
  const zone = zoneTransfer(index, DEFAULT_RESOLVER_CONFIG, 'cluster.local.').slice(0, -1);
  writeFileSync(join(dir, 'cluster.local.zone'), `${zone.map(formatRecord).join('\n')}\n`);
  const port = await freePort();
  const pidfile = join(dir, 'nsd.pid');
  writeFileSync(
    join(dir, 'nsd.conf'),
    [
      'server:',
      `  ip-address: 127.0.0.1@${port}`,
      '  server-count: 1',
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
      } catch {
        // already gone
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
  process.stdout.write(
    `index: ${stats.services} Services, ${stats.addresses} endpoints: heap +${(after - before).toFixed(1)} MB ` +
      `(${(((after - before) * 2 ** 20) / (stats.services + stats.addresses)).toFixed(0)} B per object), ` +
      `RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB (was ${rssBefore.toFixed(0)}); ` +
      `built in ${buildMs.toFixed(0)} ms; 10,000 slice updates in ${updateMs.toFixed(0)} ms ` +
      `(${((10_000 / updateMs) * 1000).toFixed(0)}/s)${(globalThis as { gc?: unknown }).gc ? '' : ' [run with --expose-gc for exact heap figures]'}\n`,
  );
}

export async function run(): Promise<void> {
  await qpsBench();
  memoryBench();
}
