// CNI ADD/DEL latency per Pod: 100 Pods attached and detached one at a time by svcnet-cni
// (the esbuild bundle, Node start-up included) and by the reference ptp plugin
// (containernetworking-plugins) in the same run, each plugin started in a node namespace
// with nsenter exactly as a runtime would. Needs root; builds and removes its own
// namespaces (`svcnet-cni-<pid>-bench-…`); prints p50/p99 per plugin and operation.

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../src/os/exec.js';
import {
  cniSkipReason,
  NetnsLab,
  netnsPath,
  pluginDir,
  REFERENCE_DIR,
  tempDir,
} from '../test/integration/lib/cni-lab.js';

const PODS = 100;

function pct(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? NaN;
}

function line(name: string, op: string, ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  return `${name.padEnd(12)} ${op.padEnd(4)} p50 ${pct(s, 50).toFixed(1).padStart(7)} ms   p99 ${pct(s, 99).toFixed(1).padStart(7)} ms   (n=${s.length})`;
}

/** Runs the benchmark (see the file header); prints a skip message when it cannot run. */
export async function run(): Promise<void> {
  const skip = cniSkipReason({ reference: true });
  if (skip) {
    process.stdout.write(`skipped: ${skip}\n`);
    return;
  }
  const execer = new RealExecer();
  const lab = new NetnsLab('bench', execer);
  await lab.sweep();
  const bin = await pluginDir();
  const work = await tempDir('bench');
  try {
    const node = await lab.add('node');
    const pods: string[] = [];
    for (let i = 0; i < PODS; i++) pods.push(await lab.add(`p${i}`));
    const plugins = [
      { name: 'svcnet-cni', binary: join(bin, 'svcnet-cni'), octet: 1 },
      { name: 'ref ptp', binary: join(REFERENCE_DIR, 'ptp'), octet: 2 },
    ];
    for (const p of plugins) {
      const config = JSON.stringify({
        cniVersion: '1.0.0',
        name: `bench-${p.octet}`,
        type: 'ptp',
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: `10.250.${p.octet}.0/24` }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(work.dir, 'ipam'),
        },
      });
      const call = async (command: 'ADD' | 'DEL', i: number): Promise<number> => {
        const t0 = process.hrtime.bigint();
        const res = await execer.run({
          cmd: 'nsenter',
          args: [`--net=${netnsPath(node)}`, p.binary],
          env: {
            CNI_COMMAND: command,
            CNI_CONTAINERID: `bench${i}`,
            CNI_NETNS: netnsPath(pods[i] ?? ''),
            CNI_IFNAME: 'eth0',
            CNI_PATH: `${bin}:${REFERENCE_DIR}`,
            CNI_ARGS: '',
          },
          stdin: config,
        });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (res.code !== 0)
          throw new Error(`${p.name} ${command} pod ${i}: ${res.stdout}${res.stderr}`);
        return ms;
      };
      const adds: number[] = [];
      const dels: number[] = [];
      for (let i = 0; i < PODS; i++) adds.push(await call('ADD', i));
      for (let i = 0; i < PODS; i++) dels.push(await call('DEL', i));
      process.stdout.write(`${line(p.name, 'ADD', adds)}\n${line(p.name, 'DEL', dels)}\n`);
    }
  } finally {
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  }
}
