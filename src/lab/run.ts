// The identity of one run of a lab. A lab's state folder (/run/svcnet/lab/<name>/) outlives a
// supervisor killed with SIGKILL, an OOM kill or a reboot, and a pid can be a zombie nobody
// reaped or belong to another process by now; so a run is named by a random run id and its
// processes by (pid, start time in clock ticks since boot), which together never repeat.
// `lab up` writes run.json (the run id and the starter's identity) into a fresh folder before
// it starts the supervisor, then adds the supervisor's identity. Every other file of the
// folder is trusted only once run.json says its run is alive, and state.json only when it
// carries that run's id. This file holds that check and the reading of /proc it needs; it
// decides nothing about what the lab does.

import { randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';

export const RUN_FILE = 'run.json';

/** A process, named so that a reused pid is not mistaken for it. */
export interface ProcessIdentity {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat: start time in clock ticks after boot. */
  readonly startTime: string;
}

export interface RunRecord {
  readonly runId: string;
  /** The `lab up` that created the folder: alive while it starts the supervisor. */
  readonly starter: ProcessIdentity;
  /** The sandbox's `unshare` process (host pid), once started. */
  readonly supervisor?: ProcessIdentity;
}

export function newRunId(): string {
  return randomBytes(12).toString('hex');
}

/**
 * Start time of the process a /proc/<pid>/stat line describes; undefined for a zombie (dead,
 * not yet reaped) or a line that is not one.
 */
export function statStartTime(stat: string): string | undefined {
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = stat.slice(close + 2).split(' ');
  const state = fields[0] ?? '';
  if (state === '' || state === 'Z' || state === 'X' || state === 'x') return undefined;
  const start = fields[19]; // field 22 overall; fields[0] is field 3
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

/** Start time of a live process; undefined when it is gone or a zombie. */
export function processStartTime(pid: number): string | undefined {
  try {
    return statStartTime(readFileSync(`/proc/${String(pid)}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

export function identify(pid: number): ProcessIdentity | undefined {
  const startTime = processStartTime(pid);
  return startTime === undefined ? undefined : { pid, startTime };
}

/** The same process is still running: same pid, same start time, not a zombie. */
export function isRunning(p: ProcessIdentity): boolean {
  return processStartTime(p.pid) === p.startTime;
}

/**
 * The run is alive: its supervisor runs, or (no supervisor recorded yet) its starter still
 * does, which is then about to start one.
 */
export function runAlive(run: RunRecord): boolean {
  return run.supervisor !== undefined ? isRunning(run.supervisor) : isRunning(run.starter);
}

function isIdentity(v: unknown): v is ProcessIdentity {
  const p = v as Partial<ProcessIdentity> | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    Number.isInteger(p.pid) &&
    (p.pid ?? 0) > 0 &&
    typeof p.startTime === 'string' &&
    /^\d+$/.test(p.startTime)
  );
}

/** Parses run.json; throws naming the file and field when it is not a run record. */
export function parseRunRecord(text: string, file: string): RunRecord {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new SvcnetError('INVALID_INPUT', `${file}: not JSON`, { cause: e });
  }
  const r = v as Partial<RunRecord> | null;
  const problems: string[] = [];
  if (typeof r !== 'object' || r === null) problems.push('not an object');
  else {
    if (typeof r.runId !== 'string' || !/^[0-9a-f]{8,64}$/.test(r.runId))
      problems.push('runId: must be hex');
    if (!isIdentity(r.starter)) problems.push('starter: must be {pid, startTime}');
    if (r.supervisor !== undefined && !isIdentity(r.supervisor))
      problems.push('supervisor: must be {pid, startTime}');
  }
  if (problems.length > 0)
    throw new SvcnetError('INVALID_INPUT', `${file}: ${problems.join('; ')}`);
  return r as RunRecord;
}

/** The folder's run record; undefined when there is none or it cannot be read as one. */
export function readRunRecord(stateDir: string): RunRecord | undefined {
  const file = join(stateDir, RUN_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return parseRunRecord(text, file);
  } catch {
    return undefined;
  }
}

/** Replaces run.json atomically: a reader sees the old record or the new one, never half. */
export function writeRunRecord(stateDir: string, run: RunRecord): void {
  const tmp = join(stateDir, `${RUN_FILE}.${run.runId}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(run, null, 2)}\n`);
  renameSync(tmp, join(stateDir, RUN_FILE));
}

/** SHA-256 fingerprint (as `openssl x509 -fingerprint -sha256` prints it) of a PEM certificate. */
export function certFingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}
