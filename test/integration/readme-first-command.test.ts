// A newcomer's first minute, for real: clone the repository to a temporary folder, run the
// README's first command there exactly as written, as root, with a PATH that has no sudo,
// and see the curls from a Pod answered by the nginx Pods and the DNS name resolved; then
// `lab down` leaves nothing (no state folder, no lab process). The clone shares this
// checkout's node_modules (the test runs without network, so `npm ci` could not fetch), and
// the lab runs under a lab root of its own, so no other lab is ever touched.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasTool, missingToolsReason, skipOrFail } from './lib/prereq.js';
import { processStartTime, readRunRecord } from '../../src/lab/run.js';

const repo = join(import.meta.dirname, '..', '..');
/** What scripts/install-deps.sh checks for the lab, plus git for the clone. */
const TOOLS = [
  'git',
  'ip',
  'unshare',
  'nsenter',
  'iptables-restore',
  'nft',
  'conntrack',
  'nfacct',
  'curl',
  'dig',
  '/usr/lib/cni/ptp',
  '/usr/lib/cni/host-local',
];
const skip = skipOrFail(
  process.getuid?.() !== 0
    ? 'needs root (the README command starts the lab)'
    : (missingToolsReason(TOOLS) ?? false),
);

/** The first command of the README's first shell block. */
function readmeFirstCommand(readme: string): string {
  const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  return (
    block
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '' && !l.startsWith('#')) ?? ''
  );
}

/** A folder of links to every command on PATH except sudo: "a root shell without sudo". */
function pathWithoutSudo(dir: string): string {
  mkdirSync(dir);
  for (const d of (process.env.PATH ?? '').split(':')) {
    if (d === '' || !existsSync(d)) continue;
    for (const name of readdirSync(d)) {
      if (name === 'sudo' || existsSync(join(dir, name))) continue;
      symlinkSync(join(d, name), join(dir, name));
    }
  }
  return dir;
}

/** Pids of live processes whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmdline.includes(text) && !/^\d+ \(.*\) Z/.test(stat)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

test('the README names bash scripts/lab-demo.sh first', () => {
  assert.equal(
    readmeFirstCommand(readFileSync(join(repo, 'README.md'), 'utf8')),
    'bash scripts/lab-demo.sh',
  );
});

test(
  "a fresh clone: the README's first command, as root without sudo, answers the curls; lab down leaves nothing",
  { skip, timeout: 600_000 },
  async (t) => {
    const tmp = mkdtempSync(join(tmpdir(), 'svcnet-readme-'));
    const clone = join(tmp, 'svcnet');
    const labRoot = join(tmp, 'lab');
    const path = pathWithoutSudo(join(tmp, 'bin'));
    assert.ok(!hasToolIn(path, 'sudo'));
    const env = {
      ...process.env,
      PATH: path,
      SVCNET_LAB_ROOT: labRoot,
      npm_config_update_notifier: 'false',
    };
    const sh = (command: string) =>
      spawnSync('bash', ['-c', command], {
        cwd: clone,
        env,
        encoding: 'utf8',
        timeout: 480_000,
        maxBuffer: 16 * 1024 * 1024,
      });
    t.after(() => {
      sh('npm run -s svcnet -- lab down');
      rmSync(tmp, { recursive: true, force: true });
    });

    const cloned = spawnSync('git', ['clone', '--quiet', repo, clone], { encoding: 'utf8' });
    assert.equal(cloned.status, 0, cloned.stderr);
    symlinkSync(join(repo, 'node_modules'), join(clone, 'node_modules'));
    const command = readmeFirstCommand(readFileSync(join(clone, 'README.md'), 'utf8'));
    assert.equal(command, 'bash scripts/lab-demo.sh');

    const demo = sh(command);
    const out = demo.stdout;
    assert.equal(
      demo.status,
      0,
      `${command} exited ${String(demo.status)}:\n${demo.stderr}\n${out}`,
    );
    const curls = out.split('$ svcnet lab exec client -- curl')[1]?.split('$ svcnet')[0] ?? '';
    const answers = curls
      .split('\n')
      .slice(1)
      .map((l) => l.trim())
      .filter((l) => l !== '');
    assert.equal(answers.length, 6, `six curl answers expected:\n${out}`);
    for (const a of answers) assert.match(a, /^nginx-[a-z0-9]+-[a-z0-9]{5}$/, out);
    t.diagnostic(`curl answers: ${answers.join(' ')} (${String(new Set(answers).size)} Pods)`);
    assert.match(
      out,
      /\$ svcnet lab exec client -- dig \+short nginx-svc\.default\.svc\.cluster\.local\n10\.\d+\.\d+\.\d+\n/,
    );

    // The lab's run record names its sandbox (the supervisor's `unshare`) by pid.
    const pid = readRunRecord(join(labRoot, 'svcnet'))?.supervisor?.pid;
    assert.ok(pid !== undefined, 'the run record names the lab supervisor');
    assert.ok(processesMentioning(clone).length > 0, 'the lab runs from the clone');
    const down = sh('npm run -s svcnet -- lab down');
    assert.equal(down.status, 0, down.stderr);
    assert.match(down.stdout, /lab svcnet removed/);
    assert.deepEqual(readdirSync(labRoot), [], 'no lab state left');
    // Dead or a zombie not yet reaped by PID 1 (no start time): the supervisor is gone.
    const gone = (): boolean => processStartTime(pid) === undefined;
    for (let i = 0; i < 50 && !gone(); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(gone(), 'the lab supervisor is gone');
    assert.deepEqual(processesMentioning(clone), [], 'no process of the lab is left');
  },
);

function hasToolIn(dir: string, tool: string): boolean {
  const saved = process.env.PATH;
  process.env.PATH = dir;
  try {
    return hasTool(tool);
  } finally {
    process.env.PATH = saved;
  }
}
