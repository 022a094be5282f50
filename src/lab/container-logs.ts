// The kubelet's `GET /containerLogs/NS/POD/CONTAINER` for a lab node: the run log of the
// container (container-log-files.ts), the lines PodLogOptions ask for (cri-log.ts:
// tailLines, sinceSeconds/sinceTime, timestamps, limitBytes, previous), and with follow=true
// the lines written after, read every FOLLOW_POLL_MS from the file (and its successor when it
// rotates) until the run ends, the client goes, the budget is spent or the Pod's logs are
// removed. Errors are the kubelet's words with a 400, which the API server passes on.

import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { ContainerLogs } from './container-log-capture.js';
import { findPodLogDir, rotatedPath, runLogPath, runsOf } from './container-log-files.js';
import {
  ByteBudget,
  parseCriText,
  parseLogOptions,
  renderCriLine,
  selectCriLines,
  type LogOptions,
} from './cri-log.js';
import type { KubeletTarget } from './kubelet-server.js';

/** How often a follower looks for new lines. */
export const FOLLOW_POLL_MS = 250;

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${text}\n`);
}

function readText(path: string): string {
  try {
    return readRest({ fd: openSync(path, 'r'), pos: 0 }, true);
  } catch {
    return '';
  }
}

/** Reads from `at.pos` to the end of file, advancing it; closes the fd when `close`. */
function readRest(at: { fd: number; pos: number }, close = false): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(64 * 1024);
  try {
    for (;;) {
      const n = readSync(at.fd, buf, 0, buf.length, at.pos);
      if (n === 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
      at.pos += n;
    }
  } finally {
    if (close) closeSync(at.fd);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Whole lines of `text` after the carried-over part, and the unfinished rest. */
function wholeLines(carry: string, text: string): { lines: string; rest: string } {
  const all = carry + text;
  const cut = all.lastIndexOf('\n') + 1;
  return { lines: all.slice(0, cut), rest: all.slice(cut) };
}

/** The run log a request is for, or the kubelet's error text. */
function runFor(
  logs: ContainerLogs,
  target: KubeletTarget,
  previous: boolean,
): { path: string } | { error: string } {
  const c = target.container ?? '';
  const podDir = findPodLogDir(logs.root, target.namespace, target.pod);
  const dir = podDir === undefined ? undefined : join(podDir, c);
  const runs = dir === undefined ? [] : runsOf(dir);
  const run = runs[runs.length - (previous ? 2 : 1)];
  if (dir === undefined || run === undefined)
    return {
      error: previous
        ? `previous terminated container "${c}" in pod "${target.pod}" not found`
        : `container "${c}" in pod "${target.pod}" is waiting to start: ContainerCreating`,
    };
  return { path: runLogPath(dir, run) };
}

/** The containerLogs handler of a lab node's kubelet API. */
export function containerLogsHandler(
  logs: ContainerLogs,
  pollMs = FOLLOW_POLL_MS,
  now: () => number = Date.now,
): (target: KubeletTarget, req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (target, _req, res) => {
    let opts: LogOptions;
    try {
      opts = parseLogOptions(target.query, now());
    } catch (e) {
      plain(res, 400, e instanceof Error ? e.message : String(e));
      return;
    }
    const run = runFor(logs, target, opts.previous);
    if ('error' in run) {
      plain(res, 400, run.error);
      return;
    }
    const { path } = run;
    const live = logs.isLive(path);
    let at: { fd: number; pos: number };
    try {
      at = { fd: openSync(path, 'r'), pos: 0 };
    } catch {
      plain(res, 400, `container "${target.container ?? ''}" in pod "${target.pod}": log gone`);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    const budget = new ByteBudget(opts.limitBytes);
    const first = wholeLines('', readText(rotatedPath(path)) + readRest(at));
    const send = (text: string): void => {
      const lines = parseCriText(text);
      const out = lines.map((l) => renderCriLine(l, opts.timestamps)).join('');
      if (out !== '') res.write(budget.take(out));
    };
    const shown = selectCriLines(parseCriText(first.lines), opts);
    const text = shown.map((l) => renderCriLine(l, opts.timestamps)).join('');
    if (text !== '') res.write(budget.take(text));
    if (!opts.follow || opts.previous || budget.spent || !live) {
      closeSync(at.fd);
      res.end();
      return;
    }
    await follow(logs, path, at, first.rest, send, () => budget.spent, res, pollMs);
  };
}

/** Streams what is appended to `path` until the run ends, the client goes or `done()`. */
async function follow(
  logs: ContainerLogs,
  path: string,
  start: { fd: number; pos: number },
  carry: string,
  send: (text: string) => void,
  done: () => boolean,
  res: ServerResponse,
  pollMs: number,
): Promise<void> {
  let at = start;
  let rest = carry;
  let ino = fstatSync(at.fd).ino;
  const client = { gone: false };
  res.once('close', () => {
    client.gone = true;
  });
  const take = (): boolean => {
    const got = wholeLines(rest, readRest(at));
    rest = got.rest;
    if (got.lines !== '') send(got.lines);
    return got.lines !== '';
  };
  try {
    for (;;) {
      // Whether the run was live is read before the file: a last line written meanwhile is
      // then still read before the follower ends.
      const wasLive = logs.isLive(path);
      const read = take();
      if (client.gone || done()) break;
      const st = statSync(path, { throwIfNoEntry: false });
      if (st === undefined) break; // the Pod's logs were removed
      if (st.ino !== ino) {
        // Rotated: what reached the old file after the last read, then the new file.
        take();
        closeSync(at.fd);
        at = { fd: openSync(path, 'r'), pos: 0 };
        ino = fstatSync(at.fd).ino;
        rest = '';
        continue;
      }
      if (!wasLive && !read) break;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  } finally {
    closeSync(at.fd);
    if (!client.gone) res.end();
  }
}
