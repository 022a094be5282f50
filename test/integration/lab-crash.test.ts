// `lab up` after a crashed lab, for real and under CPU load (issue 25): the next run never
// waits on, reports or talks to the dead run's components. Cycles of `lab up` → SIGKILL of
// the sandbox → `lab up` → `lab down` with a bounded busy loop on every core beside them, and
// a foreign process listening on the dead lab's old API port while the next lab starts.
// SVCNET_LAB_STRESS_CYCLES sets the number of cycles (3 by default). The 20-cycle stress run
// outlasts the integration runner's 10-minute limit per file, so it runs the file directly:
//   SVCNET_LAB_STRESS_CYCLES=20 unshare --net sh -c 'ip link set lo up; exec node --import tsx \
//     --test --test-reporter=spec test/integration/lab-crash.test.ts'
// Needs root, unshare, nsenter and ip; skips with the reason otherwise.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { processStartTime } from '../../src/lab/run.js';

const root = process.getuid?.() === 0;
const tools = ['unshare', 'nsenter', 'ip', 'kubectl'].every(
  (t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0,
);
const skip = !root ? 'needs root' : !tools ? 'needs unshare, nsenter, ip and kubectl' : false;

const CYCLES = Number(process.env.SVCNET_LAB_STRESS_CYCLES ?? '3');
const labRoot = mkdtempSync(join(tmpdir(), 'svcnet-lab-crash-'));
const env = { ...process.env, SVCNET_LAB_ROOT: labRoot };
const cli = [...process.execArgv, join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts')];
const names: string[] = [];
/** Every sandbox (unshare pid, start time) a test saw, to make sure none outlives the file. */
const sandboxes: { pid: number; startTime: string }[] = [];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The svcnet CLI, without blocking this process (a listener here must keep accepting). */
function svcnet(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...cli, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

interface RunFile {
  runId: string;
  supervisor: { pid: number; startTime: string };
}
interface StateFile {
  runId: string;
  status: string;
  apiServer?: string;
}

function readRun(name: string): RunFile {
  return JSON.parse(readFileSync(join(labRoot, name, 'run.json'), 'utf8')) as RunFile;
}

function readState(name: string): StateFile {
  return JSON.parse(readFileSync(join(labRoot, name, 'state.json'), 'utf8')) as StateFile;
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

const running = (p: { pid: number; startTime: string }): boolean =>
  processStartTime(p.pid) === p.startTime;

/** Brings a lab up; returns its run and the API port it reported. */
async function up(name: string, nodes: number): Promise<{ run: RunFile; port: number; out: Run }> {
  const out = await svcnet('lab', 'up', '--name', name, '--nodes', String(nodes));
  assert.equal(out.code, 0, out.stderr);
  const run = readRun(name);
  sandboxes.push(run.supervisor);
  const state = readState(name);
  assert.equal(state.runId, run.runId);
  assert.equal(state.status, 'ready');
  const port = Number(/:(\d+)$/.exec(state.apiServer ?? '')?.[1]);
  // What `lab up` said it waited on is this run's API server.
  assert.match(out.stderr, new RegExp(`\\(API server https://127\\.0\\.0\\.1:${String(port)}\\)`));
  assert.match(out.stdout, new RegExp(`lab ${name} is up`));
  assert.equal(
    out.stdout.match(new RegExp(`^  ${name}-\\S+ +(control-plane|worker) `, 'gm'))?.length,
    nodes,
  );
  return { run, port, out };
}

/** SIGKILL of the sandbox (its `unshare`), as the OOM killer or a crash would; waits until it is gone. */
async function crash(run: RunFile): Promise<void> {
  process.kill(run.supervisor.pid, 'SIGKILL');
  assert.ok(await until(() => !running(run.supervisor), 10_000), 'the sandbox must die');
}

async function down(name: string, run: RunFile): Promise<void> {
  const d = await svcnet('lab', 'down', '--name', name);
  assert.equal(d.code, 0, d.stderr);
  assert.equal(d.stdout.trim(), `lab ${name} removed`);
  assert.ok(!running(run.supervisor), 'lab down leaves no supervisor');
  assert.ok(!existsSync(join(labRoot, name)), 'lab down removes the state folder');
}

/** A busy loop on every core that ends by itself after `ms` (and is killed by pid at the end). */
function cpuLoad(ms: number): ChildProcess[] {
  const loop = `const end = Date.now() + ${String(ms)}; while (Date.now() < end) {}`;
  return Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ['-e', loop], { stdio: 'ignore' }),
  );
}

after(async () => {
  if (!skip) for (const n of names) await svcnet('lab', 'down', '--name', n);
  for (const s of sandboxes) if (running(s)) process.kill(s.pid, 'SIGKILL');
  rmSync(labRoot, { recursive: true, force: true });
});

test(
  "a foreign listener on the dead lab's API port: the next lab up succeeds and never talks to it",
  { skip },
  async () => {
    const name = `lidf${String(process.pid)}`;
    names.push(name);
    const first = await up(name, 1);
    await crash(first.run);
    // The dead run's state still names the old port; something else now listens there.
    assert.equal(readState(name).runId, first.run.runId);
    const conns: Socket[] = [];
    const foreign = createServer((s) => {
      conns.push(s);
      s.on('error', () => undefined);
      s.end(
        'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"kind":"NodeList","items":[]}',
      );
    });
    // The killed sandbox's forwarder may hold the port until the kernel has torn its PID
    // namespace down, a moment after the supervisor itself is gone: retry while it is in use.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await new Promise<void>((resolve, reject) => {
          foreign.once('error', reject);
          foreign.listen(first.port, '127.0.0.1', () => {
            foreign.off('error', reject);
            resolve();
          });
        });
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    try {
      const second = await up(name, 2);
      assert.notEqual(second.run.runId, first.run.runId);
      assert.notEqual(second.port, first.port);
      assert.match(second.out.stderr, new RegExp(`swept leftovers of dead lab\\(s\\): ${name}`));
      assert.doesNotMatch(
        second.out.stderr + second.out.stdout,
        new RegExp(`:${String(first.port)}\\b`),
      );
      // status, kubeconfig, exec and kubectl all reach the new run only.
      const status = await svcnet('lab', 'status', '--name', name);
      assert.equal(status.code, 0, status.stderr);
      assert.match(
        status.stdout,
        new RegExp(`API server https://127\\.0\\.0\\.1:${String(second.port)},`),
      );
      const kc = await svcnet('lab', 'kubeconfig', '--name', name);
      assert.equal(kc.code, 0, kc.stderr);
      assert.match(
        kc.stdout,
        new RegExp(`server: https://127\\.0\\.0\\.1:${String(second.port)}\\n`),
      );
      const exec = await svcnet('lab', 'exec', '--name', name, `${name}-worker`, '--', 'true');
      assert.equal(exec.code, 0, exec.stderr);
      const kubectl = spawnSync(
        'kubectl',
        ['--kubeconfig', join(labRoot, name, 'kubeconfig'), 'get', 'nodes', '-o', 'name'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.equal(kubectl.stdout.trim().split('\n').length, 2, kubectl.stderr);
      assert.equal(conns.length, 0, 'nothing may connect to the foreign listener');
      await down(name, second.run);
    } finally {
      foreign.close();
      for (const s of conns) s.destroy();
    }
  },
);

test(
  `${String(CYCLES)} cycles of lab up, SIGKILL, lab up, lab down under CPU load`,
  { skip, timeout: CYCLES * 300_000 },
  async (t) => {
    const name = `lids${String(process.pid)}`;
    names.push(name);
    const load = cpuLoad(CYCLES * 120_000);
    const times: number[] = [];
    const failures: string[] = [];
    try {
      for (let i = 1; i <= CYCLES; i++) {
        const t0 = Date.now();
        try {
          const first = await up(name, 2);
          await crash(first.run);
          const second = await up(name, 1);
          assert.notEqual(second.run.runId, first.run.runId);
          assert.notEqual(second.port, first.port);
          await down(name, second.run);
        } catch (e) {
          failures.push(`cycle ${String(i)}: ${e instanceof Error ? e.message : String(e)}`);
          await svcnet('lab', 'down', '--name', name);
        }
        times.push(Date.now() - t0);
        t.diagnostic(`cycle ${String(i)}: ${String(times.at(-1))} ms`);
      }
    } finally {
      for (const p of load) p.kill('SIGKILL');
    }
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    t.diagnostic(
      `cycles ${String(CYCLES)}, failures ${String(failures.length)}, ms per cycle: mean ${mean.toFixed(0)}, min ${String(Math.min(...times))}, max ${String(Math.max(...times))}`,
    );
    assert.deepEqual(failures, []);
  },
);
