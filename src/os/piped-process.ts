// A child process with its stdin, stdout and stderr as pipes the caller streams: what the
// node agent's exec and port-forward run (`kubectl exec`'s command in a Pod, a relay into a
// Pod's network namespace). Not for commands run to completion (the Execer) nor daemons
// (process.ts). The child leads its own process group, so `kill` reaches what it started.

import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** A running child with piped stdio. */
export interface PipedProcess {
  /** Absent when started without stdin (then it reads /dev/null). */
  readonly stdin: Writable | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Resolves with the exit code (128+n for signal n) once the process ended and its output closed. */
  readonly exited: Promise<number>;
  /** Sends SIGKILL to the child's process group (no-op once it exited). */
  kill(): void;
}

/** Starts a child with piped stdio; the environment extends this process's. */
export type StartPiped = (
  argv: readonly [string, ...string[]],
  env: Readonly<Record<string, string>>,
  withStdin: boolean,
) => PipedProcess;

const SIGNALS: Partial<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** The real StartPiped, on node:child_process spawn (no shell). */
export const startPiped: StartPiped = (argv, env, withStdin) => {
  const [cmd, ...args] = argv;
  const child = spawn(cmd, args, {
    stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    detached: true,
  });
  let done = false;
  const exited = new Promise<number>((resolve) => {
    child.once('error', () => {
      done = true;
      resolve(127);
    });
    child.once('close', (code, sig) => {
      done = true;
      resolve(code ?? 128 + (sig === null ? 0 : (SIGNALS[sig] ?? 0)));
    });
  });
  return {
    stdin: child.stdin ?? undefined,
    stdout: child.stdout as Readable,
    stderr: child.stderr as Readable,
    exited,
    kill: () => {
      if (done || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    },
  };
};
