// Where a lab node keeps its containers' logs, and the writer that keeps them bounded. As the
// kubelet's /var/log/pods: one directory per Pod instance (`NS_NAME_UID`), one per container
// in it, one file per run of the container (`0.log`, `1.log`, … counting restarts), in the
// CRI format (cri-log.ts). A file past CONTAINER_LOG_MAX_BYTES is rotated to `N.log.1` (the
// one before is dropped), so a container's log holds at most CONTAINER_LOG_MAX_FILES files;
// only the current run and the one before it (for `previous=true`) are kept. Not the capture
// of a process's output (container-log-capture.ts) nor the HTTP side (container-logs.ts).

import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../kube/types.js';
import { criLinesOf, formatCriLine, type LogStream } from './cri-log.js';

/** Size at which a container log file is rotated (the kubelet's containerLogMaxSize default). */
export const CONTAINER_LOG_MAX_BYTES = 10 * 1024 * 1024;
/** Files kept per container run, the current one included (the kubelet's default is 5). */
export const CONTAINER_LOG_MAX_FILES = 2;

/** The directory of one Pod instance's logs under the node's log root. */
export function podLogDir(root: string, pod: Pod): string {
  const m = pod.metadata;
  return join(root, `${m?.namespace ?? 'default'}_${m?.name ?? ''}_${m?.uid ?? ''}`);
}

/**
 * The log directory of the Pod called NS/NAME on this node, the newest if several instances
 * (uids) left one; undefined when there is none. Names hold no `_`, so the prefix is exact.
 */
export function findPodLogDir(root: string, namespace: string, name: string): string | undefined {
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return undefined;
  }
  const prefix = `${namespace}_${name}_`;
  let best: { dir: string; mtime: number } | undefined;
  for (const e of entries.filter((n) => n.startsWith(prefix))) {
    const dir = join(root, e);
    const mtime = statSync(dir, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (best === undefined || mtime > best.mtime) best = { dir, mtime };
  }
  return best?.dir;
}

/** The file of run `n` of a container whose logs are in `dir`. */
export function runLogPath(dir: string, n: number): string {
  return join(dir, `${String(n)}.log`);
}

/** The rotated file of a run's log. */
export function rotatedPath(path: string): string {
  return `${path}.1`;
}

/** The runs a container directory holds logs of, ascending. */
export function runsOf(dir: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries
    .map((n) => /^(\d+)\.log$/.exec(n)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** A run's log text, the rotated file first; '' for a file that is not there. */
export function readRunLog(path: string): string {
  let text = '';
  for (const p of [rotatedPath(path), path]) {
    try {
      text += readFileSync(p, 'utf8');
    } catch {
      // not rotated yet, or gone
    }
  }
  return text;
}

/**
 * Starts a new run's log for a container: the next number after those there, and all but
 * the run before it removed. Returns the new file's path (created empty).
 */
export function beginRunLog(containerDir: string): string {
  mkdirSync(containerDir, { recursive: true });
  const runs = runsOf(containerDir);
  const next = (runs[runs.length - 1] ?? -1) + 1;
  for (const n of runs.slice(0, -1)) {
    rmSync(runLogPath(containerDir, n), { force: true });
    rmSync(rotatedPath(runLogPath(containerDir, n)), { force: true });
  }
  const path = runLogPath(containerDir, next);
  closeSync(openSync(path, 'a'));
  return path;
}

/** Appends a container's output to its run log as CRI lines, rotating at maxBytes. */
export class CriLogWriter {
  private fd: number;
  private size: number;
  private readonly pending: Record<LogStream, string> = { stdout: '', stderr: '' };
  readonly path: string;
  private readonly now: () => number;
  private readonly maxBytes: number;

  constructor(path: string, now: () => number = Date.now, maxBytes = CONTAINER_LOG_MAX_BYTES) {
    this.path = path;
    this.now = now;
    this.maxBytes = maxBytes;
    this.fd = openSync(path, 'a');
    this.size = statSync(path).size;
  }

  /** A chunk of `stream`'s output; an unfinished last line waits for the next chunk. */
  write(stream: LogStream, chunk: string): void {
    const { text, pending } = criLinesOf(this.now(), stream, this.pending[stream], chunk);
    this.pending[stream] = pending;
    this.append(text);
  }

  /** The stream ended: its unfinished line goes out as a whole one. */
  endStream(stream: LogStream): void {
    const rest = this.pending[stream];
    this.pending[stream] = '';
    if (rest !== '') this.append(formatCriLine(this.now(), stream, true, rest));
  }

  close(): void {
    this.endStream('stdout');
    this.endStream('stderr');
    closeSync(this.fd);
  }

  private append(text: string): void {
    if (text === '') return;
    const bytes = Buffer.byteLength(text);
    if (this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    writeSync(this.fd, text);
    this.size += bytes;
  }

  private rotate(): void {
    closeSync(this.fd);
    if (existsSync(this.path)) renameSync(this.path, rotatedPath(this.path));
    this.fd = openSync(this.path, 'a');
    this.size = 0;
  }
}
