// Named pipes (FIFOs): the lab's node agent gives each container process a pair as its
// stdout and stderr and reads them, so the output reaches the container's log with a time
// on every line, and outlives an agent restart (the pipes are files, which the next agent
// opens again). Making one is libc's mkfifo, which Node does not offer: called through koffi,
// else the `mkfifo` command. Kept in src/os with the other process seams.

import { spawnSync } from 'node:child_process';
import { constants, openSync } from 'node:fs';
import { libcOrNull } from './libc.js';

/**
 * Creates a FIFO at `path` (mode 0600); throws naming the path when it cannot. Calls libc
 * directly when koffi loads (microseconds), else runs `mkfifo` (a process each).
 */
export function makeFifo(path: string): void {
  const libc = libcOrNull();
  if (libc !== null) {
    if (libc.mkfifo(path, 0o600) === 0) return;
    throw new Error(`mkfifo ${path}: errno ${String(libc.errno())}`);
  }
  const r = spawnSync('mkfifo', ['-m', '600', path], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0)
    throw new Error(`mkfifo ${path}: ${r.error?.message ?? r.stderr.trim()}`);
}

/** A read end that does not wait for a writer (O_NONBLOCK), for a net.Socket to read. */
export function openFifoReader(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
}

/** A blocking write end; a reader must be open already (else this would wait for one). */
export function openFifoWriter(path: string): number {
  return openSync(path, constants.O_WRONLY);
}

/**
 * A write end that never blocks (O_NONBLOCK), for a net.Socket to write: fails with ENXIO
 * when no reader has the FIFO open, rather than waiting for one.
 */
export function openFifoNonblockingWriter(path: string): number {
  return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
}
