// Running a few synchronous lines of JavaScript inside another network namespace: the calling
// thread enters the namespace with setns(2), runs the function, and returns to its own before
// anything else on the event loop can run. A socket belongs to the namespace it was created
// in for the rest of its life (net/core/sock.c: sock_net is set at creation), so a server
// whose listen() or bind() runs inside the window serves that namespace while this process
// stays where it is. That is how the lab's pod host (lab/pod-host.ts) serves every Pod of a
// node from one process. Node has no setns, so this calls libc's through koffi (an FFI
// package with prebuilt binaries); it is loaded on first use, so other commands never pay
// for it. setns(CLONE_NEWNET) moves only the calling thread (Linux 3.0+), and the window is
// synchronous, so libuv's thread pool and every other socket of the process stay in the
// process's own namespace. Not here: mount or UTS namespaces (the pod host needs neither),
// and anything asynchronous inside the window (rejected: it would run outside).

import { closeSync, openSync } from 'node:fs';
import { libc, type Libc } from './libc.js';

/** Runs synchronous code inside a network namespace. */
export interface NetnsEnterer {
  /**
   * Runs `fn` with the calling thread in the namespace at `path` (a /run/netns file or
   * /proc/PID/ns/net) and returns its result; the thread is back in its own namespace when
   * this returns or throws. Throws naming the path when the namespace cannot be entered, and
   * when `fn` returns a promise (what it awaits would run outside the namespace).
   */
  run<T>(path: string, fn: () => T): T;
}

/** CLONE_NEWNET from <linux/sched.h>: setns's nstype for a network namespace. */
const CLONE_NEWNET = 0x40000000;

function isPromiseLike(v: unknown): boolean {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** The real one: setns(2) through libc. Construct it once; it holds the thread's own namespace open. */
export class RealNetnsEnterer implements NetnsEnterer {
  private readonly libc: Libc;
  /** The namespace the thread returns to (opened at construction). */
  private readonly home: number;

  constructor() {
    this.libc = libc();
    this.home = openSync('/proc/thread-self/ns/net', 'r');
  }

  run<T>(path: string, fn: () => T): T {
    const fd = openSync(path, 'r');
    let out: T;
    try {
      if (this.libc.setns(fd, CLONE_NEWNET) !== 0)
        throw new Error(`setns ${path}: errno ${String(this.libc.errno())}`);
      try {
        out = fn();
      } finally {
        this.goHome(path);
      }
    } finally {
      closeSync(fd);
    }
    if (isPromiseLike(out))
      throw new Error(
        `netns ${path}: the function returned a promise; only synchronous work runs inside`,
      );
    return out;
  }

  /**
   * Runs `fn` with the calling thread in a new, empty network namespace (unshare(2)), then
   * returns to its own; the namespace lives on only if `fn` kept it (a bind mount of
   * /proc/thread-self/ns/net, or a socket). Same rules as `run`.
   */
  runInNew<T>(fn: () => T): T {
    if (this.libc.unshare(CLONE_NEWNET) !== 0)
      throw new Error(`unshare(CLONE_NEWNET): errno ${String(this.libc.errno())}`);
    let out: T;
    try {
      out = fn();
    } finally {
      this.goHome('a new namespace');
    }
    if (isPromiseLike(out))
      throw new Error(
        'new netns: the function returned a promise; only synchronous work runs inside',
      );
    return out;
  }

  /** Back to the thread's own namespace; failing that would leave every later socket in the Pod. */
  private goHome(from: string): void {
    if (this.libc.setns(this.home, CLONE_NEWNET) !== 0) {
      process.stderr.write(
        `setns back from ${from}: errno ${String(this.libc.errno())}: cannot go on\n`,
      );
      process.abort();
    }
  }

  close(): void {
    closeSync(this.home);
  }
}

/**
 * For tests without root: runs the function where the process is, and records the paths it
 * was asked to enter. Rejects promises as the real one does.
 */
export class FakeNetnsEnterer implements NetnsEnterer {
  readonly entered: string[] = [];

  run<T>(path: string, fn: () => T): T {
    this.entered.push(path);
    const out = fn();
    if (isPromiseLike(out))
      throw new Error(
        `netns ${path}: the function returned a promise; only synchronous work runs inside`,
      );
    return out;
  }
}
