// Long-lived and interactive child processes (the Execer in exec.ts is for commands that run
// to completion with captured output): starting a detached daemon whose output goes to a log
// file, and running a command attached to the caller's terminal. Kept in src/os with the other
// process seams.

import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

/** Starts `cmd` detached from this process (own session), stdout+stderr appended to logFile. */
export function spawnDetached(
  cmd: string,
  args: readonly string[],
  logFile: string,
  env?: Readonly<Record<string, string>>,
): number {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd, [...args], {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: env ? { ...process.env, ...env } : process.env,
    });
    child.unref();
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
