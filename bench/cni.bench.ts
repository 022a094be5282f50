// `npm run bench -- cni [--json]`: CNI ADD/DEL latency per Pod, three ways in one run on one
// machine: the `svcnet-cni` binary (the esbuild bundle, Node start-up included) and the
// reference ptp + host-local (containernetworking-plugins, /usr/lib/cni), each started in a
// node namespace with nsenter exactly as a runtime would, and svcnet-cni in-process through
// CniRuntime — the lab agent's path — in a child process in that node namespace
// (bench/cni-inprocess.ts). 100 Pods attached then detached one at a time per way; p50/p99
// per way and operation; `node -e 0` in the same namespace as the floor of any Node binary.
// Needs root; builds and removes its own namespaces (`svcnet-cni-<pid>-bench-…`). The
// commands and the load average are printed (stderr with --json): a shared machine is noisy.
// Goals (issue #21): binary ADD p50 ≤ 2× the reference's; in-process ADD p50 ≤ 10 ms.

import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RealExecer, type Execer } from '../src/os/exec.js';
import {
  cniSkipReason,
  NetnsLab,
  netnsPath,
  pluginDir,
  REFERENCE_DIR,
  tempDir,
} from '../test/integration/lib/cni-lab.js';

const PODS = 100;
const JSON_OUT = process.argv.includes('--json');
const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'cni-inprocess.ts');

function pct(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? NaN;
}

/** Human text: stdout, or stderr when stdout carries the JSON figures. */
function say(text: string): void {
  (JSON_OUT ? process.stderr : process.stdout).write(`${text}\n`);
}

function figure(name: string, value: number, target?: number, limit?: string): void {
  if (!JSON_OUT) return;
  const missed = target !== undefined && value > target;
  process.stdout.write(
    `${JSON.stringify({ bench: 'cni', figure: name, value: Number(value.toFixed(1)), unit: 'ms', ...(target !== undefined ? { target: Number(target.toFixed(1)) } : {}), ...(missed && limit ? { note: `missed: ${limit}` } : {}) })}\n`,
  );
}

interface Timings {
  readonly add: number[];
  readonly del: number[];
}

/** Prints one way's lines and figures (`suffix` '' for the binary); returns ADD p50. */
function report(name: string, suffix: string, t: Timings, target?: number, limit?: string): number {
  const out: Record<string, number> = {};
  for (const op of ['add', 'del'] as const) {
    const s = [...t[op]].sort((a, b) => a - b);
    const p50 = pct(s, 50);
    const p99 = pct(s, 99);
    out[op] = p50;
    say(
      `${name.padEnd(22)} ${op.toUpperCase().padEnd(4)} p50 ${p50.toFixed(1).padStart(7)} ms   p99 ${p99.toFixed(1).padStart(7)} ms   (n=${s.length})`,
    );
    figure(`cni-${op}-p50${suffix}`, p50, op === 'add' ? target : undefined, limit);
    figure(`cni-${op}-p99${suffix}`, p99);
  }
  return out.add ?? NaN;
}

function loadavg(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** `node -e 0` in the node namespace: the start-up floor of any plugin written for Node. */
async function nodeFloor(execer: Execer, node: string): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await execer.run({
      cmd: 'nsenter',
      args: [`--net=${node}`, 'env', '-u', 'NODE_EXTRA_CA_CERTS', process.execPath, '-e', '0'],
    });
    ms.push(performance.now() - t0);
  }
  return pct(
    ms.sort((a, b) => a - b),
    50,
  );
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
  say(`load average before: ${loadavg()}`);
  try {
    const node = netnsPath(await lab.add('node'));
    const pods: string[] = [];
    for (let i = 0; i < PODS; i++) pods.push(netnsPath(await lab.add(`p${i}`)));
    const ipam = (octet: number): Record<string, unknown> => ({
      type: 'host-local',
      ranges: [[{ subnet: `10.250.${octet}.0/24` }]],
      routes: [{ dst: '0.0.0.0/0' }],
      dataDir: join(work.dir, 'ipam'),
    });
    const config = (octet: number, type: string): string =>
      JSON.stringify({
        cniVersion: '1.0.0',
        name: `bench-${octet}`,
        ...(type === 'list' ? {} : { type }),
        ...(type === 'list'
          ? { plugins: [{ type: 'svcnet-cni', mode: 'ptp', mtu: 1500, ipam: ipam(octet) }] }
          : { ipam: ipam(octet) }),
      });
    const binaries = [
      { name: 'svcnet-cni (binary)', binary: join(bin, 'svcnet-cni'), octet: 1 },
      { name: 'ref ptp + host-local', binary: join(REFERENCE_DIR, 'ptp'), octet: 2 },
    ];
    const timings: Timings[] = [];
    for (const p of binaries) {
      const stdin = config(p.octet, 'ptp');
      say(
        `$ echo '${stdin}' | CNI_COMMAND=ADD|DEL CNI_CONTAINERID=bench<i> CNI_NETNS=${netnsPath(`${lab.prefix}p<i>`)} CNI_IFNAME=eth0 CNI_PATH=${bin}:${REFERENCE_DIR} nsenter --net=${node} ${p.binary}`,
      );
      const call = async (command: 'ADD' | 'DEL', i: number): Promise<number> => {
        const t0 = performance.now();
        const res = await execer.run({
          cmd: 'nsenter',
          args: [`--net=${node}`, p.binary],
          env: {
            CNI_COMMAND: command,
            CNI_CONTAINERID: `bench${i}`,
            CNI_NETNS: pods[i] ?? '',
            CNI_IFNAME: 'eth0',
            CNI_PATH: `${bin}:${REFERENCE_DIR}`,
            CNI_ARGS: '',
          },
          stdin,
        });
        const ms = performance.now() - t0;
        if (res.code !== 0)
          throw new Error(`${p.name} ${command} pod ${i}: ${res.stdout}${res.stderr}`);
        return ms;
      };
      const t: Timings = { add: [], del: [] };
      for (let i = 0; i < PODS; i++) t.add.push(await call('ADD', i));
      for (let i = 0; i < PODS; i++) t.del.push(await call('DEL', i));
      timings.push(t);
    }
    // In-process: the lab agent's CniRuntime with svcnet-cni as a function, in the node namespace.
    const listFile = join(work.dir, 'inprocess.conflist');
    await writeFile(listFile, config(3, 'list'));
    const childArgs = [
      `--net=${node}`,
      process.execPath,
      '--import',
      'tsx',
      CHILD,
      listFile,
      work.dir,
      ...pods,
    ];
    say(
      `$ nsenter ${childArgs.slice(0, 7).join(' ')} ${netnsPath(`${lab.prefix}p0`)} … (${PODS} Pods)`,
    );
    const res = await execer.run({ cmd: 'nsenter', args: childArgs, timeoutMs: 600_000 });
    if (res.code !== 0) throw new Error(`in-process child: ${res.stderr}${res.stdout}`);
    const inproc = JSON.parse(res.stdout.trim().split('\n').at(-1) ?? '{}') as Timings;
    const floor = await nodeFloor(execer, node);

    const [ours, ref] = timings;
    if (!ours || !ref) return;
    const refAdd = report(binaries[1]?.name ?? '', '-reference', ref);
    const oursAdd = report(
      binaries[0]?.name ?? '',
      '',
      ours,
      2 * refAdd,
      `Node.js start-up alone (node -e 0) is ${floor.toFixed(1)} ms here`,
    );
    const inAdd = report(
      'svcnet-cni (in-process)',
      '-inprocess',
      inproc,
      10,
      'the one ip exec per ADD (process creation on this machine) and the host-local files',
    );
    say(`node -e 0 (floor of a Node binary)     p50 ${floor.toFixed(1).padStart(7)} ms`);
    figure('cni-node-start-p50', floor);
    say(
      `binary ADD p50 ${(oursAdd / refAdd).toFixed(1)}x the reference (goal ≤ 2x: ${oursAdd <= 2 * refAdd ? 'met' : 'missed'}); in-process ADD p50 ${inAdd.toFixed(1)} ms (goal ≤ 10 ms: ${inAdd <= 10 ? 'met' : 'missed'})`,
    );
  } finally {
    say(`load average after: ${loadavg()}`);
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  }
}
