// The node agent's hold on its containers' output. A container process's stdout and stderr
// are two FIFOs next to its run log (container-log-files.ts); the agent reads them and
// writes CRI lines with the time they arrived, as the container runtime does for the
// kubelet. The process also inherits a read end of each (fd 3 and 4, never read), so its
// writes never meet a closed pipe while the agent restarts: they wait in the pipe (64 KiB)
// until the next agent opens the FIFOs again (reattach, when it adopts the Pod). A run is
// live while its process may still write; `ended` tells followers (`kubectl logs -f`) when
// to stop. Init containers' output, captured whole by their exec, is written as one run.

import { closeSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { Pod } from '../kube/types.js';
import { makeFifo, openFifoReader, openFifoWriter } from '../os/fifo.js';
import type { ProcessOutput } from '../os/process.js';
import { beginRunLog, CriLogWriter, podLogDir, runLogPath, runsOf } from './container-log-files.js';
import type { LogStream } from './cri-log.js';

const STREAMS: readonly LogStream[] = ['stdout', 'stderr'];

/** After the process exited, how long its pipes are still read before the run is closed. */
const DRAIN_MS = 300;

/** The FIFO a run's stream is read from. */
function fifoPath(runLog: string, stream: LogStream): string {
  return `${runLog}.${stream}`;
}

/** A process's output prepared: hand `output` to startProcess, then call `spawned`. */
export interface Capture {
  readonly path: string;
  /** The run's FIFOs, for a writer that opens them itself (the pod host). */
  readonly fifos: { readonly stdout: string; readonly stderr: string };
  readonly output: ProcessOutput;
  /** Closes the agent's copies of the child's descriptors (call once the child has them). */
  spawned(): void;
}

interface LiveRun {
  readonly ended: Promise<void>;
  /** The run is over: close it and remove its FIFOs. */
  end(): void;
  /** This agent stops reading; the FIFOs stay for the next one. */
  detach(): void;
}

export class ContainerLogs {
  private readonly live = new Map<string, LiveRun>();
  /** The node's log root: one directory per Pod instance below it. */
  readonly root: string;
  private readonly now: () => number;

  constructor(root: string, now: () => number = Date.now) {
    this.root = root;
    this.now = now;
  }

  /**
   * A new run of `container`: its log file and FIFOs, read from now on. The Pod's other
   * containers (which the lab runs no process for) get an empty first run, so their logs
   * read as empty rather than waiting to start.
   */
  capture(pod: Pod, container: string): Capture {
    const podDir = podLogDir(this.root, pod);
    for (const c of pod.spec?.containers ?? [])
      if (c.name !== container && runsOf(join(podDir, c.name)).length === 0)
        beginRunLog(join(podDir, c.name));
    const path = beginRunLog(join(podDir, container));
    for (const s of STREAMS) makeFifo(fifoPath(path, s));
    this.attach(path);
    const writers = STREAMS.map((s) => openFifoWriter(fifoPath(path, s)));
    const keep = STREAMS.map((s) => openFifoReader(fifoPath(path, s)));
    return {
      path,
      fifos: { stdout: fifoPath(path, 'stdout'), stderr: fifoPath(path, 'stderr') },
      output: { stdout: writers[0] ?? -1, stderr: writers[1] ?? -1, keep },
      spawned: () => {
        for (const fd of [...writers, ...keep]) closeSync(fd);
      },
    };
  }

  /**
   * Reads again the run a previous agent started for `container`, if its FIFOs are there;
   * returns its log path.
   */
  reattach(pod: Pod, container: string): string | undefined {
    const dir = join(podLogDir(this.root, pod), container);
    const last = runsOf(dir).pop();
    if (last === undefined) return undefined;
    const path = runLogPath(dir, last);
    if (this.live.has(path)) return path;
    try {
      this.attach(path);
    } catch {
      return undefined; // no FIFOs: the run ended while no agent was reading
    }
    return path;
  }

  /** The run's process exited: read what is left in its pipes, then close the run. */
  exited(path: string): void {
    const run = this.live.get(path);
    if (run !== undefined)
      setTimeout(() => {
        run.end();
      }, DRAIN_MS).unref();
  }

  /** The run may still be written to. */
  isLive(path: string): boolean {
    return this.live.has(path);
  }

  /** Resolves when the run is closed (at once for one that is not live). */
  ended(path: string): Promise<void> {
    return this.live.get(path)?.ended ?? Promise.resolve();
  }

  /** An init container's run: its whole output, stamped now. */
  writeInit(pod: Pod, container: string, output: string): void {
    const w = new CriLogWriter(beginRunLog(join(podLogDir(this.root, pod), container)), this.now);
    w.write('stdout', output);
    w.close();
  }

  /** The agent stops: its runs are left to the next agent, which reattaches them. */
  detachAll(): void {
    for (const run of [...this.live.values()]) run.detach();
  }

  /** The Pod's logs go (its sandbox was removed): live runs are closed first. */
  remove(pod: Pod): void {
    const dir = podLogDir(this.root, pod);
    for (const [path, run] of this.live) if (path.startsWith(`${dir}/`)) run.end();
    rmSync(dir, { recursive: true, force: true });
  }

  private attach(path: string): void {
    const fds = STREAMS.map((s) => openFifoReader(fifoPath(path, s)));
    const writer = new CriLogWriter(path, this.now);
    let resolveEnded: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
    let open = STREAMS.length;
    let closed = false;
    const close = (removeFifos: boolean): void => {
      if (closed) return;
      closed = true;
      for (const s of sockets) s.destroy();
      this.live.delete(path);
      try {
        writer.close();
      } catch {
        // the Pod's directory went first
      }
      if (removeFifos) for (const s of STREAMS) rmSync(fifoPath(path, s), { force: true });
      resolveEnded();
    };
    const end = (): void => {
      close(true);
    };
    const sockets = STREAMS.map((stream, i) => {
      const sock = new Socket({ fd: fds[i] ?? -1, readable: true, writable: false });
      sock.setEncoding('utf8');
      sock.on('data', (d: string) => {
        if (!closed) writer.write(stream, d);
      });
      sock.once('close', () => {
        if (!closed) writer.endStream(stream);
        if (--open === 0) end();
      });
      sock.on('error', () => undefined);
      return sock;
    });
    this.live.set(path, {
      ended,
      end,
      detach: () => {
        close(false);
      },
    });
  }
}
