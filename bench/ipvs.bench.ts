// `npm run bench -- ipvs [--json]`: the IPVS mode's IpvsProxier driving the real ipvsadm,
// ipset, iptables-restore and ip, in a network namespace this bench creates (one per size,
// `svcnet-ipvsbench-<pid>-<n>`, deleted after; never the namespace it runs in). The kernel of
// the machine this was written on has no ip_vs: there the bench re-runs itself inside the VM
// of the VM test tier (Debian's kernel under qemu TCG, scripts/vm/run.ts), under the shared
// lock `flock /tmp/svcnet-vm.lock`. Under TCG every instruction is emulated: the figures are
// many times a real node's; compare them with each other, not with other benches.
// Workload: bench/workload.ts (Services × 10 endpoints, ClusterIP, every 10th a NodePort on
// one node address, 2 of 10 endpoints local). Figures per size (1k, and BENCH_IPVS_LARGE
// when set): the first (full) sync; a full sync with everything already in place (what every
// syncPeriod costs: read back and reconcile); a partial sync after one endpoint of one
// Service changed (median of 5); a partial sync adding one Service (median of 3). At 1k,
// also `ipvsadm -R` itself: the whole table in one batch, in 10 chunks, and one ipvsadm exec
// per command (a few timed, the rest extrapolated). Without --json it prints where each
// sync's time went (plan and bookkeeping, ipset, ipvsadm read/-R, iptables, ip).
// Needs root, ipvsadm, ipset, iptables and ip; without ip_vs, qemu and the VM tier's kernel.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RealIptables, commandsFor } from '../src/netfilter/iptables/backend.js';
import { detectIptablesVariant } from '../src/netfilter/iptables/variant.js';
import type { IpsetOperation } from '../src/netfilter/ipset/render.js';
import type { IpvsOperation, IpvsService, VirtualServerId } from '../src/netfilter/ipvs/model.js';
import { renderRestore } from '../src/netfilter/ipvs/render.js';
import { RealExecer } from '../src/os/exec.js';
import { RealIp } from '../src/os/ip.js';
import { ProxyHealth } from '../src/proxy/healthz.js';
import { RealIpvsKernel } from '../src/proxy/ipvs/kernel.js';
import type { IpvsKernel } from '../src/proxy/ipvs/kernel.js';
import { DEFAULT_IPVS_OPTIONS } from '../src/proxy/ipvs/options.js';
import type { IpvsProxierOptions } from '../src/proxy/ipvs/options.js';
import { IpvsProxier } from '../src/proxy/ipvs/proxier.js';
import { reconcileIpvs } from '../src/proxy/ipvs/reconcile.js';
import { ProxyMetrics } from '../src/proxy/metrics.js';
import type { SyncReport } from '../src/proxy/proxier.js';
import { realClock } from '../src/util/clock.js';
import { benchService, benchSlice } from './workload.js';

const JSON_OUT = process.argv.includes('--json');
const CHILD_FLAG = '--ipvs-bench-child';
const IN_VM_FLAG = '--ipvs-bench-in-vm';
const ENDPOINTS = 10;
const NODE_IP = '192.0.2.10';
const project = resolve(fileURLToPath(import.meta.url), '..', '..');

/** `--name=N` from argv, else `fallback`. */
function numberArg(name: string, fallback: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : Number(a.slice(name.length + 3));
}

/**
 * A second, larger size (BENCH_IPVS_LARGE=N or --large=N; default none). Under TCG 5k does
 * not finish: its first sync's `ipset restore` (~20k lines) outruns the 60 s exec timeout.
 */
const LARGE = numberArg('large', Number(process.env.BENCH_IPVS_LARGE ?? 0));

const OPTIONS: IpvsProxierOptions = {
  ...DEFAULT_IPVS_OPTIONS,
  nodeName: 'node-1',
  nodeIP: NODE_IP,
  localDetector: { mode: 'ClusterCIDR', cidr: '10.0.0.0/8' },
  nodePortIPs: [NODE_IP],
  localAddresses: ['127.0.0.1', NODE_IP],
};

function figure(name: string, value: number, unit: string, target?: number): void {
  if (!JSON_OUT) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'ipvs', figure: name, value: Number(value.toFixed(1)), unit, ...(target !== undefined ? { target } : {}) })}\n`,
  );
}

function say(line: string): void {
  if (!JSON_OUT) process.stdout.write(`${line}\n`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function sizeName(n: number): string {
  return n % 1000 === 0 ? `${String(n / 1000)}k` : String(n);
}

/** Runs a command, throwing with its stderr when it fails. */
function sh(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 1 << 28 });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: exit ${String(r.status)}: ${r.stderr}`);
  return r.stdout;
}

/** Milliseconds spent in each kernel call of the wrapped IpvsKernel. */
class TimedKernel implements IpvsKernel {
  readonly family;
  readonly ms = new Map<string, number>();
  private readonly inner: IpvsKernel;

  constructor(inner: IpvsKernel) {
    this.inner = inner;
    this.family = inner.family;
  }

  private async timed<T>(what: string, f: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await f();
    } finally {
      this.ms.set(what, (this.ms.get(what) ?? 0) + performance.now() - t);
    }
  }

  readIpvs(): Promise<IpvsService[]> {
    return this.timed('ipvsadm -L (read back)', () => this.inner.readIpvs());
  }
  readConnections(ids: readonly VirtualServerId[]): Promise<IpvsService[]> {
    return this.timed('ipvsadm -L (counters)', () => this.inner.readConnections(ids));
  }
  applyIpvs(ops: readonly IpvsOperation[]): Promise<void> {
    return this.timed(`ipvsadm -R`, () => this.inner.applyIpvs(ops));
  }
  readIpsets(): Promise<Map<string, ReadonlySet<string>>> {
    return this.timed('ipset save', () => this.inner.readIpsets());
  }
  applyIpsets(ops: readonly IpsetOperation[]): Promise<void> {
    return this.timed('ipset restore', () => this.inner.applyIpsets(ops));
  }
  applyIptables(text: string): Promise<void> {
    return this.timed('iptables-restore', () => this.inner.applyIptables(text));
  }

  /** `what 12 ms, …` since the last call, and resets. */
  breakdown(total: number): string {
    const spent = [...this.ms.values()].reduce((a, b) => a + b, 0);
    const parts = [...this.ms].map(([k, v]) => `${k} ${v.toFixed(0)} ms`);
    this.ms.clear();
    return [...parts, `plan, ip and bookkeeping ${(total - spent).toFixed(0)} ms`].join(', ');
  }
}

/** A proxier on the real tools in this namespace, fed the first `n` Services (not synced). */
async function proxierOf(n: number, kernel: TimedKernel) {
  const registry = new Registry();
  const reports: SyncReport[] = [];
  const proxier = new IpvsProxier({
    nodeName: OPTIONS.nodeName,
    clock: realClock,
    log: pino({ level: 'silent' }),
    metrics: new ProxyMetrics(registry),
    health: new ProxyHealth(realClock, 60_000, ['IPv4']),
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    // Partial syncs stay partial for the whole run; full ones are made on purpose.
    fullSyncPeriodMs: 24 * 3_600_000,
    ip: new RealIp(new RealExecer()),
    families: [{ family: 'IPv4', kernel }],
    optionsFor: () => OPTIONS,
  });
  proxier.onSync((r) => reports.push(...r));
  for (let i = 0; i < n; i++) {
    proxier.onServiceUpdate(benchService(i));
    proxier.onEndpointSliceUpdate(benchSlice(i, ENDPOINTS));
  }
  proxier.setServicesSynced();
  proxier.setEndpointSlicesSynced();
  return Promise.resolve({ proxier, reports });
}

/** One sync: wall ms, and whether it was full. */
async function timedSync(
  p: Awaited<ReturnType<typeof proxierOf>>,
  kernel: TimedKernel,
  label: string,
): Promise<{ ms: number; fullSync: boolean }> {
  const t = performance.now();
  await p.proxier.syncProxyRules();
  const ms = performance.now() - t;
  const fullSync = p.reports.at(-1)?.fullSync ?? false;
  say(
    `  ${label}: ${ms.toFixed(0)} ms (${fullSync ? 'full' : 'partial'}; ${kernel.breakdown(ms)})`,
  );
  return { ms, fullSync };
}

/** The proxier's figures at `n` Services (this namespace is fresh). */
async function syncs(n: number): Promise<void> {
  const size = sizeName(n);
  const execer = new RealExecer();
  const { variant } = await detectIptablesVariant(execer);
  const iptables = new RealIptables(execer, 'IPv4', commandsFor('IPv4', variant));
  const kernel = new TimedKernel(new RealIpvsKernel(execer, 'IPv4', iptables));
  say(`${size} Services × ${String(ENDPOINTS)} endpoints (iptables ${variant}):`);
  const p = await proxierOf(n, kernel);
  const first = await timedSync(p, kernel, 'first sync');
  figure(`ipvs-vm-full-sync-${size}`, first.ms, 'ms');
  const vs = Number(sh('sh', ['-c', 'ipvsadm -S -n | grep -c "^-A"']).trim());
  const rs = Number(sh('sh', ['-c', 'ipvsadm -S -n | grep -c "^-a"']).trim());
  say(`  kernel: ${String(vs)} virtual servers, ${String(rs)} real servers`);
  if (!first.fullSync || vs < n) throw new Error('the first sync did not program every Service');

  // A restarted proxier on the same kernel: a full sync that finds everything in place.
  const again = await proxierOf(n, kernel);
  const resync = await timedSync(again, kernel, 'full sync, nothing to change');
  figure(`ipvs-vm-full-resync-${size}`, resync.ms, 'ms');

  const partial: number[] = [];
  for (let k = 0; k < 5; k++) {
    const i = (k * 97 + 13) % n;
    // Salt 1 shifts the slice's addresses by one: one endpoint leaves, one comes.
    again.proxier.onEndpointSliceUpdate(benchSlice(i, ENDPOINTS, 1));
    const r = await timedSync(again, kernel, `one endpoint of svc${String(i)} changed`);
    if (r.fullSync) throw new Error('expected a partial sync');
    partial.push(r.ms);
  }
  figure(`ipvs-vm-partial-sync-${size}`, median(partial), 'ms');
  const added: number[] = [];
  for (let k = 0; k < 3; k++) {
    again.proxier.onServiceUpdate(benchService(n + k));
    again.proxier.onEndpointSliceUpdate(benchSlice(n + k, ENDPOINTS));
    added.push((await timedSync(again, kernel, `svc${String(n + k)} added`)).ms);
  }
  figure(`ipvs-vm-partial-add-service-${size}`, median(added), 'ms');
  say(
    `  partial syncs: one endpoint ${median(partial).toFixed(0)} ms, one Service added ${median(added).toFixed(0)} ms (medians)`,
  );
  if (n === 1000) restoreShapes(again.proxier);
}

/** `ipvsadm -R` of the whole table: one batch, 10 chunks, one exec per command. */
function restoreShapes(proxier: IpvsProxier): void {
  const plan = proxier.lastPlan('IPv4');
  if (plan === undefined) return;
  const ops = reconcileIpvs(new Map(), plan.virtualServers, {
    family: 'IPv4',
    excludeCIDRs: [],
    connections: () => 0,
    initialSync: true,
  });
  const lines = renderRestore(ops)
    .split('\n')
    .filter((l) => l !== '');
  const time = (f: () => void): number => {
    sh('ipvsadm', ['-C']);
    const t = performance.now();
    f();
    return performance.now() - t;
  };
  const batch = time(() => sh('ipvsadm', ['-R'], `${lines.join('\n')}\n`));
  const chunk = Math.ceil(lines.length / 10);
  const chunks = time(() => {
    for (let i = 0; i < lines.length; i += chunk)
      sh('ipvsadm', ['-R'], `${lines.slice(i, i + chunk).join('\n')}\n`);
  });
  const sample = 50;
  const each = time(() => {
    for (const line of lines.slice(0, sample)) sh('ipvsadm', line.split(' '));
  });
  const perCommand = each / sample;
  say(
    `  ipvsadm -R of ${String(lines.length)} commands: one batch ${batch.toFixed(0)} ms, 10 chunks ${chunks.toFixed(0)} ms; one exec per command ${perCommand.toFixed(1)} ms each (${String(sample)} timed) ≈ ${((perCommand * lines.length) / 1000).toFixed(0)} s for all`,
  );
  figure('ipvs-vm-ipvsadm-restore-1k', batch, 'ms');
  figure('ipvs-vm-ipvsadm-restore-1k-10-chunks', chunks, 'ms');
  figure('ipvs-vm-ipvsadm-per-command', perCommand, 'ms');
  sh('ipvsadm', ['-C']);
}

/** The child, inside its fresh namespace: a node address, a route to the pods, the syncs. */
async function child(): Promise<void> {
  sh('ip', ['link', 'set', 'lo', 'up']);
  sh('ip', ['link', 'add', 'eth0', 'type', 'dummy']);
  sh('ip', ['link', 'set', 'eth0', 'up']);
  sh('ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth0']);
  // ipvsadm refuses a real server without a route to it.
  sh('ip', ['route', 'add', '10.0.0.0/8', 'dev', 'eth0']);
  await syncs(numberArg('services', 1000));
}

function missingTool(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const t of ['ip', 'ipvsadm', 'ipset', 'iptables-restore'])
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return `no ${t}`;
  return undefined;
}

function hasIpvs(): boolean {
  return existsSync('/proc/net/ip_vs') || existsSync('/sys/module/ip_vs');
}

/** Each size in its own fresh namespace (this kernel has ip_vs). */
function inNamespaces(): void {
  const sizes = [1000, ...(LARGE > 0 ? [LARGE] : [])];
  for (const n of sizes) {
    const ns = `svcnet-ipvsbench-${String(process.pid)}-${String(n)}`;
    spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    sh('ip', ['netns', 'add', ns]);
    try {
      const args = [
        ...process.execArgv,
        fileURLToPath(import.meta.url),
        CHILD_FLAG,
        `--services=${String(n)}`,
        ...(JSON_OUT ? ['--json'] : []),
      ];
      const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, ...args], {
        stdio: 'inherit',
      });
      if (r.status !== 0)
        throw new Error(`ipvs bench child (${String(n)}): exit ${String(r.status)}`);
    } finally {
      spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    }
  }
}

/** Re-runs this bench inside the VM, one at a time on this machine (the shared lock). */
async function inVm(): Promise<void> {
  const command = [
    ...['/tmp/svcnet-vm.lock', process.execPath, '--import', 'tsx'],
    ...[join(project, 'scripts', 'vm', 'run.ts'), '--timeout', '3000', '--'],
    ...['node', '--import', 'tsx', 'bench/ipvs.bench.ts', IN_VM_FLAG, `--large=${String(LARGE)}`],
    ...(JSON_OUT ? ['--json'] : []),
  ];
  say(
    'no ip_vs in this kernel: running inside the VM (Debian kernel, qemu TCG software emulation; waiting for /tmp/svcnet-vm.lock)',
  );
  const status = await new Promise<number>((done, fail) => {
    const vm = spawn('flock', command, { cwd: project, stdio: ['ignore', 'pipe', 'inherit'] });
    let rest = '';
    const line = (l: string): void => {
      // With --json only the figures pass; the console's other lines are the VM's.
      if (!JSON_OUT || l.startsWith('{"bench":"ipvs"')) process.stdout.write(`${l}\n`);
    };
    vm.stdout.setEncoding('utf8');
    vm.stdout.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) line(l.replace(/\r$/, ''));
    });
    vm.on('error', fail);
    vm.on('close', (code) => {
      if (rest !== '') line(rest);
      done(code ?? 1);
    });
  });
  if (status !== 0) throw new Error(`ipvs bench in the VM: exit ${String(status)}`);
}

export async function run(): Promise<void> {
  const why = missingTool();
  if (why !== undefined) {
    say(`ipvs bench skipped: ${why} (needs root, ip, ipvsadm, ipset and iptables)`);
    return;
  }
  if (hasIpvs()) {
    if (process.argv.includes(IN_VM_FLAG))
      say(
        'inside the VM: Debian kernel under qemu TCG (software emulation: slow, compare relatively)',
      );
    inNamespaces();
    return;
  }
  if (process.argv.includes(IN_VM_FLAG)) throw new Error('no ip_vs inside the VM either');
  if (spawnSync('sh', ['-c', 'command -v qemu-system-x86_64']).status !== 0) {
    say('ipvs bench skipped: no ip_vs in this kernel and no qemu-system-x86_64 for the VM');
    return;
  }
  await inVm();
}

if (process.argv.includes(CHILD_FLAG)) await child();
if (process.argv.includes(IN_VM_FLAG)) await run();
