// Long-lived and interactive child processes (the Execer in exec.ts is for commands that run
// to completion with captured output): starting a detached daemon whose output goes to a log
// file, and running a command attached to the caller's terminal. Kept in src/os with the other
// process seams.

import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';

const osSignals: Partial<Record<string, number>> = constants.signals;

/**
 * Starts `cmd` detached from this process (own session), stdout+stderr appended to logFile.
 * With `lifeline`, its stdin is a pipe this process holds open until it exits (however it
 * exits), so the child can tell when its starter is gone.
 */
export function spawnDetached(
  cmd: string,
  args: readonly string[],
  logFile: string,
  env?: Readonly<Record<string, string>>,
  lifeline = false,
): number {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, [...args], {
      detached: true,
      stdio: [lifeline ? 'pipe' : 'ignore', fd, fd],
      env: env ? { ...process.env, ...env } : process.env,
    });
    child.unref();
    // The pipe must not keep this process alive; it closes when this process ends.
    (child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null)?.unref?.();
    if (child.pid === undefined) throw new Error(`${cmd}: could not be started`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Runs `cmd` with the caller's stdin/stdout/stderr; resolves with its exit code. */
export function runAttached(cmd: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

export interface ManagedProcess {
  readonly pid: number;
  /** Resolves with the exit code (128+n for a signal) when the process ends. */
  readonly exited: Promise<number>;
  signal(sig: NodeJS.Signals): void;
}

/** Where a started process's output goes: descriptors this process holds (it may close them after). */
export interface ProcessOutput {
  readonly stdout: number;
  readonly stderr: number;
  /** More descriptors the child inherits (as fd 3, 4, …), e.g. to keep a pipe's read end open. */
  readonly keep?: readonly number[];
}

/**
 * Starts a long-running child whose stdout and stderr are appended to logFile (or go to the
 * given descriptors). The caller owns it: only `signal` on this handle ends it (never by name).
 */
export function startProcess(
  cmd: string,
  args: readonly string[],
  output: string | ProcessOutput,
  env?: Readonly<Record<string, string>>,
): ManagedProcess {
  const fd = typeof output === 'string' ? openSync(output, 'a') : undefined;
  try {
    const out = typeof output === 'string' ? { stdout: fd, stderr: fd, keep: [] } : output;
    const child = spawn(cmd, [...args], {
      stdio: ['ignore', out.stdout, out.stderr, ...(out.keep ?? [])],
      env: env ? { ...process.env, ...env } : process.env,
    });
    const pid = child.pid;
    if (pid === undefined) throw new Error(`${cmd}: could not be started`);
    const exited = new Promise<number>((resolve) => {
      child.on('exit', (code, sig) => {
        resolve(code ?? (sig ? 128 + (osSignals[sig] ?? 0) : 1));
      });
    });
    return {
      pid,
      exited,
      signal: (sig) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(sig);
      },
    };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Resolves on the first SIGTERM or SIGINT. Keeps the event loop alive meanwhile (a pending
 * signal listener alone does not), so a daemon's main can simply await it.
 */
export function waitForTermination(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const stop = (sig: NodeJS.Signals): void => {
      clearInterval(keepAlive);
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve(sig);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

/**
 * Calls `onSignal` on every SIGTERM and SIGINT until the returned function is called (a
 * daemon's graceful shutdown, where a second signal means "now"). While installed, these
 * signals no longer end the process: the caller does.
 */
export function onTerminationSignals(onSignal: (sig: NodeJS.Signals) => void): () => void {
  const handler = (sig: NodeJS.Signals): void => {
    onSignal(sig);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}

/** The process is gone: no such pid, or a zombie nobody has reaped yet. */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/**
 * A handle on a process this one did not start but now owns (e.g. a Pod server a previous
 * agent started): signals go to its pid, and its end is noticed by polling.
 */
export function adoptProcess(pid: number, pollMs = 250): ManagedProcess {
  const exited = new Promise<number>((resolve) => {
    const t = setInterval(() => {
      if (!processGone(pid)) return;
      clearInterval(t);
      resolve(0);
    }, pollMs);
  });
  return {
    pid,
    exited,
    signal: (sig) => {
      signalPid(pid, sig);
    },
  };
}

/** Sends a signal to a pid this process owns; a process already gone is not an error. */
export function signalPid(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}
