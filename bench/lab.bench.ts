// `lab up` with 3 nodes × 10 Pods (target: under 10 s): a Deployment of 30 netexec Pods
// applied with the lab, timed until every Pod is Ready, every EndpointSlice current and every
// proxy has programmed its rules (what `svcnet lab up -f` waits for). Memory is the resident
// set of every process of the lab (its PID namespace: supervisor, API server, controllers,
// agents, proxies, DNS and the 30 Pod servers), and CPU time is split by role. Needs root;
// the lab is torn down at the end. SVCNET_BENCH_CNI=reference uses the reference plugins;
// SVCNET_BENCH_POD_NETWORK=flannel|flannel-host-gw|kubenet measures that pod network;
// SVCNET_BENCH_TIMEOUT_S gives `lab up` longer than 300 s (a machine busy with other work).

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { service as serviceOf } from '../src/kube/testing.js';
import type { KubeObject } from '../src/kube/types.js';
import { labDown, labUp } from '../src/lab/lab.js';
import { ensureLabBinaries } from '../src/lab/binaries.js';
import { POD_NETWORKS, type LabPodNetwork } from '../src/lab/topology.js';

const NODES = 3;
const PODS = 30;
/** SVCNET_BENCH_CNI=reference measures the lab over Debian's reference plugins instead. */
const CNI = process.env.SVCNET_BENCH_CNI === 'reference' ? 'reference' : 'svcnet';
const POD_NETWORK: LabPodNetwork =
  POD_NETWORKS.find((n) => n === process.env.SVCNET_BENCH_POD_NETWORK) ?? 'kindnet';

function deployment(replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'bench', namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'bench' } },
      template: {
        metadata: { labels: { app: 'bench' } },
        spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80 }] }] },
      },
    },
  } as KubeObject;
}

function service(): KubeObject {
  return serviceOf('bench', { selector: { app: 'bench' }, ports: [{ port: 80 }] });
}

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

/** Runs the benchmark (see the file header); prints a skip message when it cannot run. */
export async function run(): Promise<void> {
  const tools = ['unshare', 'nsenter', 'ip', 'iptables-restore', 'curl'];
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (process.getuid?.() !== 0 || missing.length > 0) {
    process.stdout.write(
      `skipped: ${missing.length > 0 ? `needs ${missing.join(', ')}` : 'needs root'}\n`,
    );
    return;
  }
  await ensureLabBinaries(); // bundling is a one-off, not part of `lab up`
  const name = `bench${String(process.pid)}`.slice(0, 20);
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const t0 = performance.now();
  const up = await labUp({
    name,
    nodes: NODES,
    cni: CNI,
    podNetwork: POD_NETWORK,
    objects: [service(), deployment(PODS)],
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
  const verdict = total < 10_000 ? 'met' : 'MISSED';
  process.stdout.write(
    [
      `lab up, ${String(NODES)} nodes x ${String(PODS / NODES)} Pods (+2 DNS Pods), pod network ${POD_NETWORK}, cni ${CNI}, load ${load}`,
      `  components up      ${(up.timings.components / 1000).toFixed(1)} s`,
      `  all Pods serving   ${(total / 1000).toFixed(1)} s   (target < 10 s: ${verdict})`,
      `  memory             ${mem.mib.toFixed(0)} MiB RSS in ${String(mem.processes)} processes (${(mem.mib / mem.processes).toFixed(0)} MiB each)`,
      `  CPU of the lab      ${cpuTotal.toFixed(1)} s (on ${String(availableParallelism())} cores):`,
      ...cpuLines,
      `  lab down           ${(down / 1000).toFixed(1)} s`,
      '',
    ].join('\n'),
  );
}
