// `lab up` with 3 nodes × 10 Pods (target: 10 s) and with 3 × 100 (target: 30 s, all of it
// in 2 GiB, ≤ 10 MiB per Pod beyond the 3 × 10 lab): `lab up --pods-per-node N`'s Deployment,
// timed until every Pod is Ready, every EndpointSlice current and every proxy has programmed
// its rules (what `svcnet lab up` waits for). Memory is the resident set of every process of
// the lab (its PID namespace: supervisor, API server, controllers, agents, the pod hosts that
// serve the netexec Pods, proxies and DNS), and CPU time is split by role. With --json:
// lab-30-up, lab-30-rss, lab-300-up, lab-300-rss, lab-rss-per-pod. Needs root;
// the lab is torn down at the end. SVCNET_BENCH_CNI=reference uses the reference plugins;
// SVCNET_BENCH_POD_NETWORK=flannel|flannel-host-gw|kubenet measures that pod network;
// SVCNET_BENCH_TIMEOUT_S gives `lab up` longer than 300 s (a machine busy with other work).

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { labDown, labUp } from '../src/lab/lab.js';
import { ensureLabBinaries } from '../src/lab/binaries.js';
import { podsPerNodeObjects } from '../src/lab/pods-per-node.js';
import { POD_NETWORKS, type LabPodNetwork } from '../src/lab/topology.js';

const NODES = 3;
/** SVCNET_BENCH_CNI=reference measures the lab over Debian's reference plugins instead. */
const CNI = process.env.SVCNET_BENCH_CNI === 'reference' ? 'reference' : 'svcnet';
const POD_NETWORK: LabPodNetwork =
  POD_NETWORKS.find((n) => n === process.env.SVCNET_BENCH_POD_NETWORK) ?? 'kindnet';

interface LabUsage {
  mib: number;
  processes: number;
  /** CPU seconds by role; a process's waited-for children (CNI plugins, ip, iptables) count for it. */
  cpu: Map<string, number>;
}

/** What a process is in the lab, from its command line. */
function roleOf(cmdline: string): string {
  const words = cmdline.split('\0');
  const i = words.findIndex((w) => w.endsWith('main.mjs'));
  const sub = i >= 0 ? words.slice(i + 1, i + 3).join(' ') : '';
  if (sub.startsWith('lab supervise')) return 'supervisor';
  if (sub.startsWith('lab agent')) return 'agents (+CNI, ip)';
  if (sub.startsWith('lab forward')) return 'supervisor';
  if (sub.startsWith('lab pod-host')) return 'Pod servers';
  if (sub.startsWith('netexec')) return 'Pod servers';
  if (sub.startsWith('dns')) return 'DNS Pods';
  if (sub.startsWith('proxy')) return 'proxies (+iptables)';
  if (sub.startsWith('apiserver')) return 'apiserver';
  if (sub.startsWith('controller')) return 'controller';
  if (sub.startsWith('flannel')) return 'flannel agents';
  return 'other (nsenter, ip netns exec)';
}

/** Memory, process count and CPU of the processes in the PID namespace of `pid`. */
function labUsage(pid: number): LabUsage {
  const ns = readlinkSync(`/proc/${String(pid)}/ns/pid`);
  const tick = 100; // USER_HZ
  const usage: LabUsage = { mib: 0, processes: 0, cpu: new Map() };
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readlinkSync(`/proc/${e}/ns/pid`) !== ns) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${e}/status`, 'utf8'));
      usage.mib += Number(m?.[1] ?? 0) / 1024;
      usage.processes++;
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime, stime, cutime, cstime are fields 14-17 (1-based), i.e. 11-14 after the name.
      const ticks = [11, 12, 13, 14].reduce((a, k) => a + Number(f[k] ?? 0), 0);
      const role = roleOf(readFileSync(`/proc/${e}/cmdline`, 'utf8'));
      usage.cpu.set(role, (usage.cpu.get(role) ?? 0) + ticks / tick);
    } catch {
      // gone meanwhile
    }
  }
  return usage;
}

/** One lab of `perNode` netexec Pods per node: up time, memory and CPU, then torn down. */
async function measure(perNode: number): Promise<{ upMs: number; mib: number }> {
  const name = `bench${String(process.pid)}`.slice(0, 20);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const t0 = performance.now();
  const up = await labUp({
    name,
    nodes: NODES,
    cni: CNI,
    podNetwork: POD_NETWORK,
    objects: podsPerNodeObjects(perNode, NODES),
    lifeline: true,
    timeoutMs: Number(process.env.SVCNET_BENCH_TIMEOUT_S ?? 300) * 1000,
  });
  const total = performance.now() - t0;
  const mem = labUsage(up.initPid);
  const cpuTotal = [...mem.cpu.values()].reduce((a, b) => a + b, 0);
  const cpuLines = [...mem.cpu]
    .sort((a, b) => b[1] - a[1])
    .map(([role, sec]) => `    ${role.padEnd(32)} ${sec.toFixed(1)} s`);
  const t1 = performance.now();
  await labDown(name);
  const down = performance.now() - t1;
  const target = TARGET_UP_MS[perNode];
  const verdict = target === undefined ? '' : total <= target ? 'met' : 'MISSED';
  say(
    [
      `lab up, ${String(NODES)} nodes x ${String(perNode)} Pods (+2 DNS Pods), pod network ${POD_NETWORK}, cni ${CNI}, load ${load}`,
      `  command: npm run bench -- lab (labUp with podsPerNodeObjects(${String(perNode)}, ${String(NODES)}), as svcnet lab up --pods-per-node ${String(perNode)})`,
      `  components up      ${(up.timings.components / 1000).toFixed(1)} s`,
      `  all Pods serving   ${(total / 1000).toFixed(1)} s${target === undefined ? '' : `   (target <= ${String(target / 1000)} s: ${verdict})`}`,
      `  memory             ${mem.mib.toFixed(0)} MiB RSS in ${String(mem.processes)} processes (${(mem.mib / mem.processes).toFixed(0)} MiB each)`,
      `  CPU of the lab      ${cpuTotal.toFixed(1)} s (on ${String(availableParallelism())} cores):`,
      ...cpuLines,
      `  lab down           ${(down / 1000).toFixed(1)} s`,
      '',
    ].join('\n'),
  );
  return { upMs: total, mib: mem.mib };
}

/** Up-time targets by Pods per node: 3 × 10 in 10 s (#19), 3 × 100 in 30 s (#21). */
const TARGET_UP_MS: Readonly<Record<number, number>> = { 10: 10_000, 100: 30_000 };
/** 3 × 100 Pods: everything the lab runs in 2 GiB, and at most 10 MiB per Pod beyond 3 × 10. */
const TARGET_300_MIB = 2048;
const TARGET_MIB_PER_POD = 10;

const JSON_OUT = process.argv.includes('--json');

/** Text goes to stdout, or to stderr when stdout carries the JSON figures. */
function say(text: string): void {
  (JSON_OUT ? process.stderr : process.stdout).write(`${text}\n`);
}

function figure(name: string, value: number, unit: string, target?: number): void {
  if (!JSON_OUT) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'lab', figure: name, value: Math.round(value), unit, ...(target !== undefined ? { target } : {}) })}\n`,
  );
}

/**
 * Runs the benchmark (see the file header): 3 × 10 Pods, then 3 × 100 (SVCNET_BENCH_LAB_SIZES
 * picks, e.g. `10`); prints a skip message when it cannot run.
 */
export async function run(): Promise<void> {
  const tools = ['unshare', 'nsenter', 'ip', 'iptables-restore', 'curl'];
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (process.getuid?.() !== 0 || missing.length > 0) {
    say(`skipped: ${missing.length > 0 ? `needs ${missing.join(', ')}` : 'needs root'}`);
    return;
  }
  await ensureLabBinaries(); // bundling is a one-off, not part of `lab up`
  const sizes = (process.env.SVCNET_BENCH_LAB_SIZES ?? '10,100').split(',').map(Number);
  const results = new Map<number, { upMs: number; mib: number }>();
  for (const perNode of sizes) {
    const r = await measure(perNode);
    results.set(perNode, r);
    const pods = perNode * NODES;
    figure(`lab-${String(pods)}-up`, r.upMs, 'ms', TARGET_UP_MS[perNode]);
    figure(`lab-${String(pods)}-rss`, r.mib, 'MiB', pods === 300 ? TARGET_300_MIB : undefined);
  }
  const small = results.get(10);
  const big = results.get(100);
  if (small !== undefined && big !== undefined) {
    const perPod = (big.mib - small.mib) / (300 - 30);
    say(
      `  memory per Pod beyond 3 x 10: ${perPod.toFixed(2)} MiB (target <= ${String(TARGET_MIB_PER_POD)})`,
    );
    if (JSON_OUT)
      process.stdout.write(
        `${JSON.stringify({ bench: 'lab', figure: 'lab-rss-per-pod', value: Number(perPod.toFixed(2)), unit: 'MiB', target: TARGET_MIB_PER_POD })}\n`,
      );
  }
}
