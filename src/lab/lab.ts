// The client side of `svcnet lab up|down|status|exec`: starts the supervisor in its sandbox,
// waits for it to report ready, and finds it again from its state directory
// (/run/svcnet/lab/<name>/: unshare.pid, state.json, lab.log). A state directory whose
// supervisor is dead is a leftover of a crashed run and is swept by the next `lab up`.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { runAttached, spawnDetached } from '../os/process.js';
import { isAlive, sandboxCommand, sandboxInitPid } from './sandbox.js';
import { STATE_FILE, type LabState } from './supervisor.js';

export const LAB_ROOT = process.env.SVCNET_LAB_ROOT ?? '/run/svcnet/lab';

export function stateDirOf(name: string): string {
  return join(LAB_ROOT, name);
}

export interface RunningLab {
  readonly unsharePid: number;
  readonly initPid: number;
  readonly state: LabState;
  readonly stateDir: string;
}

function readPid(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(stateDir, 'unshare.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function readState(stateDir: string): LabState | undefined {
  try {
    return JSON.parse(readFileSync(join(stateDir, STATE_FILE), 'utf8')) as LabState;
  } catch {
    return undefined;
  }
}

/** The running lab of that name, or undefined (a dead one's leftovers are swept). */
export function findLab(name: string): RunningLab | undefined {
  const stateDir = stateDirOf(name);
  if (!existsSync(stateDir)) return undefined;
  const unsharePid = readPid(stateDir);
  const initPid = unsharePid === undefined ? undefined : sandboxInitPid(unsharePid);
  const state = readState(stateDir);
  if (
    unsharePid === undefined ||
    initPid === undefined ||
    !isAlive(unsharePid) ||
    state === undefined
  ) {
    rmSync(stateDir, { recursive: true, force: true });
    return undefined;
  }
  return { unsharePid, initPid, state, stateDir };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface UpOptions {
  readonly name: string;
  readonly nodes: number;
  /** How to re-invoke this CLI (node + its flags + script), e.g. from process.argv. */
  readonly self: readonly string[];
  readonly timeoutMs?: number;
}

/** Starts the lab and waits until it is ready; throws with the log's tail if it fails. */
export async function labUp(opts: UpOptions): Promise<RunningLab> {
  if (process.getuid?.() !== 0)
    throw new SvcnetError(
      'INVALID_INPUT',
      'lab up: must run as root (it creates network namespaces)',
    );
  const existing = findLab(opts.name);
  if (existing)
    throw new SvcnetError(
      'CONFLICT',
      `lab ${opts.name} is already running (pid ${existing.unsharePid}); run \`svcnet lab down\` first`,
    );
  const stateDir = stateDirOf(opts.name);
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, 'lab.log');
  const { cmd, args } = sandboxCommand([
    ...opts.self,
    'lab',
    'supervise',
    '--name',
    opts.name,
    '--nodes',
    String(opts.nodes),
    '--state-dir',
    stateDir,
  ]);
  const pid = spawnDetached(cmd, args, logFile);
  writeFileSync(join(stateDir, 'unshare.pid'), `${pid}\n`);
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const state = readState(stateDir);
    if (state?.status === 'ready') {
      const initPid = sandboxInitPid(pid);
      if (initPid !== undefined) return { unsharePid: pid, initPid, state, stateDir };
    }
    const failed = state?.status === 'failed' || !isAlive(pid);
    if (failed || Date.now() > deadline) {
      const log = existsSync(logFile)
        ? readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')
        : '';
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      rmSync(stateDir, { recursive: true, force: true });
      throw new SvcnetError(
        'INTERNAL',
        `lab ${opts.name} failed to start${state?.error ? `: ${state.error}` : failed ? '' : ' (timed out)'}\n${log}`,
      );
    }
    await sleep(50);
  }
}

/** Stops the lab: SIGTERM to the supervisor, then SIGKILL after the grace period. */
export async function labDown(name: string, graceMs = 10_000): Promise<boolean> {
  const lab = findLab(name);
  if (!lab) return false;
  process.kill(lab.initPid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(lab.unsharePid) && Date.now() < deadline) await sleep(50);
  if (isAlive(lab.unsharePid)) process.kill(lab.unsharePid, 'SIGKILL');
  while (isAlive(lab.unsharePid)) await sleep(20);
  rmSync(lab.stateDir, { recursive: true, force: true });
  return true;
}

/** Network namespace of a node (by name or netns) in a running lab. */
export function resolveTarget(lab: RunningLab, target: string): string {
  const node = lab.state.plan.nodes.find((n) => n.name === target || n.netns === target);
  if (node) return node.netns;
  if (target === lab.state.plan.hubNetns) return target;
  const known = lab.state.plan.nodes.map((n) => n.name).join(', ');
  throw new SvcnetError(
    'INVALID_INPUT',
    `lab exec: no node or pod named ${JSON.stringify(target)} (nodes: ${known})`,
  );
}

/**
 * Runs a command inside a lab namespace, attached to the terminal; returns its exit code. It
 * joins the sandbox's PID namespace too, so anything it leaves running dies with the lab.
 */
export async function labExec(
  name: string,
  target: string,
  argv: readonly string[],
): Promise<number> {
  const lab = findLab(name);
  if (!lab) throw new SvcnetError('NOT_FOUND', `lab ${name} is not running`);
  if (argv.length === 0)
    throw new SvcnetError('INVALID_INPUT', 'lab exec: missing command after --');
  const netns = resolveTarget(lab, target);
  return runAttached('nsenter', [
    '-t',
    String(lab.initPid),
    '-m',
    '-p',
    '--',
    'ip',
    'netns',
    'exec',
    netns,
    ...argv,
  ]);
}
