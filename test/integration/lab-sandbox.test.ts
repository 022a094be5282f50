// The lab's leak-proof sandbox, for real: `lab up` builds nodes that reach each other,
// `kill -9` of the supervisor leaves no process and no network namespace behind, the next
// `lab up` sweeps the dead run's state, and `lab down` removes everything. Needs root,
// unshare, nsenter and ip; skips with the reason otherwise.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';

const root = process.getuid?.() === 0;
const skip = skipOrFail(
  !root
    ? 'needs root'
    : (missingToolsReason(['unshare', 'nsenter', 'ip', 'ping', 'curl']) ?? false),
);

const labRoot = mkdtempSync(join(tmpdir(), 'svcnet-lab-test-'));
const name = `t${process.pid}`;
const env = { ...process.env, SVCNET_LAB_ROOT: labRoot };
const cli = [...process.execArgv, join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts')];

function svcnet(...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...cli, ...args], {
    env,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** The sandbox's `unshare` process of the lab's current run (run.json). */
function pidOf(): number {
  const run = JSON.parse(readFileSync(join(labRoot, name, 'run.json'), 'utf8')) as {
    supervisor: { pid: number };
  };
  return run.supervisor.pid;
}

function initOf(unsharePid: number): number {
  return Number(
    execFileSync('cat', [`/proc/${unsharePid}/task/${unsharePid}/children`], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)[0],
  );
}

/** Processes (host view) whose `kind` namespace (net, pid, ...) is `inode`. */
function processesIn(kind: string, inode: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/${kind}`) === inode && alive(Number(entry)))
        found.push(Number(entry));
    } catch {
      // process gone or not ours to read
    }
  }
  return found;
}

const processesInNetns = (inode: string): number[] => processesIn('net', inode);

function alive(pid: number): boolean {
  try {
    const stat = execFileSync('cat', [`/proc/${pid}/stat`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return !/^\d+ \(.*\) Z/.test(stat); // a zombie is dead, only not yet reaped
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

/** Takes this file's lab down (only its own name, in its own lab root); quiet when none is up. */
function labDown(): void {
  svcnet('lab', 'down', '--name', name);
}

before(() => {
  if (!skip) labDown();
});

after(() => {
  if (!skip) labDown();
  rmSync(labRoot, { recursive: true, force: true });
});

test(
  'lab up builds routed nodes; kill -9 leaves nothing; the next up sweeps; down removes all',
  { skip },
  async (t) => {
    // A failure anywhere below must not leave this lab up for the next test.
    t.after(labDown);
    const up = svcnet(
      'lab',
      'up',
      '--name',
      name,
      '--nodes',
      '3',
      '-f',
      join(import.meta.dirname, '..', '..', 'examples', 'lab', 'client.yaml'),
    );
    assert.equal(up.code, 0, up.stderr);
    // The client Pod answers from its own namespace: Pods are part of what must not leak.
    const hostname = svcnet(
      'lab',
      'exec',
      '--name',
      name,
      'client',
      '--',
      'curl',
      '-s',
      '-m',
      '5',
      'http://127.0.0.1:8080/hostname',
    );
    assert.equal(hostname.stdout, 'client', hostname.stderr);
    assert.match(
      up.stdout,
      new RegExp(`${name}-worker2\\s+worker\\s+172\\.18\\.0\\.4\\s+10\\.244\\.2\\.0/24`),
    );

    // Nodes reach each other over the lab network, and the lab is invisible to the host's ip netns.
    const ping = svcnet(
      'lab',
      'exec',
      '--name',
      name,
      `${name}-worker`,
      '--',
      'ping',
      '-c1',
      '-W2',
      '172.18.0.4',
    );
    assert.equal(ping.code, 0, ping.stdout + ping.stderr);
    assert.doesNotMatch(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }), /node-|hub/);

    const unsharePid = pidOf();
    const initPid = initOf(unsharePid);
    const nodeNetns = execFileSync(
      'nsenter',
      [
        '-t',
        String(initPid),
        '-m',
        '-p',
        '--',
        'ip',
        'netns',
        'exec',
        'node-1',
        'readlink',
        '/proc/self/ns/net',
      ],
      { encoding: 'utf8' },
    ).trim();
    // Leave a process running in the node namespace (as a pod server would be) through the
    // lab's own exec, which joins the sandbox's PID namespace.
    const bg = svcnet(
      'lab',
      'exec',
      '--name',
      name,
      `${name}-worker`,
      '--',
      'sh',
      '-c',
      'sleep 600 >/dev/null 2>&1 &',
    );
    assert.equal(bg.code, 0, bg.stderr);
    assert.ok(
      await waitFor(() => processesInNetns(nodeNetns).length > 0, 2000),
      'the helper process should be in the node namespace',
    );

    const pidNs = readlinkSync(`/proc/${initPid}/ns/pid`);
    const mntNs = readlinkSync(`/proc/${initPid}/ns/mnt`);
    const labProcesses = processesIn('pid', pidNs).length;
    // Supervisor, API server, socket bridge, controller, 3 agents, 3 proxies, 2 DNS Pods, client.
    assert.ok(labProcesses >= 13, `only ${String(labProcesses)} processes in the lab`);
    assert.doesNotMatch(readFileSync('/proc/self/mountinfo', 'utf8'), /svcnet-lab/);

    process.kill(unsharePid, 'SIGKILL');
    assert.ok(
      await waitFor(() => !alive(initPid), 5000),
      'the supervisor must die with its sandbox',
    );
    assert.ok(
      await waitFor(() => processesInNetns(nodeNetns).length === 0, 5000),
      `processes left in the node namespace: ${processesInNetns(nodeNetns).join(' ')}`,
    );
    assert.ok(
      await waitFor(() => processesIn('pid', pidNs).length === 0, 5000),
      `processes left in the lab: ${processesIn('pid', pidNs).join(' ')}`,
    );
    // The sandbox's `unshare` holds the mount namespace until the kill lands on it too.
    assert.ok(
      await waitFor(() => processesIn('mnt', mntNs).length === 0, 5000),
      `the mount namespace (and its netns mounts) is gone; still in it: ${processesIn('mnt', mntNs).join(' ')}`,
    );

    // The dead run's state is swept by the next up.
    assert.ok(existsSync(join(labRoot, name)));
    const again = svcnet('lab', 'up', '--name', name, '--nodes', '2');
    assert.equal(again.code, 0, again.stderr);
    const down = svcnet('lab', 'down', '--name', name);
    assert.equal(down.code, 0, down.stderr);
    assert.ok(!existsSync(join(labRoot, name)));
    assert.equal(svcnet('lab', 'status', '--name', name).code, 1);
  },
);

test('lab exec names the known nodes when the target is unknown', { skip }, (t) => {
  t.after(labDown);
  const up = svcnet('lab', 'up', '--name', name, '--nodes', '1');
  assert.equal(up.code, 0, up.stderr);
  const r = svcnet('lab', 'exec', '--name', name, 'nope', '--', 'true');
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    new RegExp(`no node named "nope" and no pod default/nope \\(nodes: ${name}-control-plane;`),
  );
  svcnet('lab', 'down', '--name', name);
});
