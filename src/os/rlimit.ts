// The process's open-file limit (RLIMIT_NOFILE). Go's runtime raises the soft limit to the
// hard one at start (os/rlimit.go, Go 1.19+), so kube-apiserver and CoreDNS get every
// descriptor the hard limit allows. Node has no setrlimit, so `raiseNoFileLimit` reads
// /proc/self/limits and runs util-linux `prlimit --pid <self>` through the Execer seam:
// raising the soft limit up to the hard one needs no privilege. The lab and daemons call it
// once; a failure is reported, never fatal (the server then runs with the soft limit).

import { readFile } from 'node:fs/promises';
import { runChecked, type Execer } from './exec.js';

export interface NoFileLimit {
  readonly soft: number;
  readonly hard: number;
}

/** Parses the "Max open files" row of /proc/PID/limits (`unlimited` is Infinity). */
export function parseNoFileLimit(text: string): NoFileLimit | undefined {
  const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(text);
  if (!m) return undefined;
  const n = (v: string | undefined): number => (v === 'unlimited' ? Infinity : Number(v));
  return { soft: n(m[1]), hard: n(m[2]) };
}

/** The calling process's RLIMIT_NOFILE. */
export async function readNoFileLimit(pid: number | 'self' = 'self'): Promise<NoFileLimit> {
  const limit = parseNoFileLimit(await readFile(`/proc/${pid}/limits`, 'utf8'));
  if (!limit) throw new Error(`/proc/${pid}/limits: no "Max open files" row`);
  return limit;
}

export interface RaiseResult {
  readonly before: NoFileLimit;
  readonly after: NoFileLimit;
  /** Why the limit was not raised, when it was not. */
  readonly skipped?: string;
}

/**
 * Raises this process's soft RLIMIT_NOFILE to its hard limit. `read` and `pid` are for
 * tests. Throws ExecError when prlimit fails (missing, or refused).
 */
export async function raiseNoFileLimit(
  execer: Execer,
  read: () => Promise<NoFileLimit> = () => readNoFileLimit(),
  pid: number = process.pid,
): Promise<RaiseResult> {
  const before = await read();
  if (before.soft >= before.hard) return { before, after: before, skipped: 'soft = hard' };
  const hard = before.hard === Infinity ? 'unlimited' : String(before.hard);
  await runChecked(execer, {
    cmd: 'prlimit',
    args: ['--pid', String(pid), `--nofile=${hard}:${hard}`],
    timeoutMs: 5000,
  });
  return { before, after: await read() };
}
