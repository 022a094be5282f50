// `lab up` with 3 nodes × 10 Pods (target: under 10 s): a Deployment of 30 netexec Pods
// applied with the lab, timed until every Pod is Ready, every EndpointSlice current and every
// proxy has programmed its rules (what `svcnet lab up -f` waits for). Memory is the resident
// set of every process of the lab (its PID namespace: supervisor, API server, controllers,
// agents, proxies, DNS and the 30 Pod servers). Needs root; the lab is torn down at the end.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import type { KubeObject } from '../src/kube/types.js';
import { labDown, labUp } from '../src/lab/lab.js';
import { ensureLabBinaries } from '../src/lab/binaries.js';

const NODES = 3;
const PODS = 30;

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
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'bench', namespace: 'default' },
    spec: { selector: { app: 'bench' }, ports: [{ port: 80 }] },
  } as KubeObject;
}

/** Resident memory (MiB) and count of the processes in the PID namespace of `pid`. */
function labMemory(pid: number): { mib: number; processes: number } {
  const ns = readlinkSync(`/proc/${String(pid)}/ns/pid`);
  let kib = 0;
  let processes = 0;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readlinkSync(`/proc/${e}/ns/pid`) !== ns) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${e}/status`, 'utf8'));
      kib += Number(m?.[1] ?? 0);
      processes++;
    } catch {
      // gone meanwhile
    }
  }
  return { mib: kib / 1024, processes };
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
    cni: 'svcnet',
    objects: [service(), deployment(PODS)],
    lifeline: true,
    timeoutMs: 300_000,
  });
  const total = performance.now() - t0;
  const mem = labMemory(up.initPid);
  const t1 = performance.now();
  await labDown(name);
  const down = performance.now() - t1;
  const verdict = total < 10_000 ? 'met' : 'MISSED';
  process.stdout.write(
    [
      `lab up, ${String(NODES)} nodes x ${String(PODS / NODES)} Pods (+2 DNS Pods), load ${load}`,
      `  components up      ${(up.timings.components / 1000).toFixed(1)} s`,
      `  all Pods serving   ${(total / 1000).toFixed(1)} s   (target < 10 s: ${verdict})`,
      `  memory             ${mem.mib.toFixed(0)} MiB RSS in ${String(mem.processes)} processes (${(mem.mib / mem.processes).toFixed(0)} MiB each)`,
      `  lab down           ${(down / 1000).toFixed(1)} s`,
      '',
    ].join('\n'),
  );
}
