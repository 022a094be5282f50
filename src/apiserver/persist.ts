// `--data-dir` persistence: a snapshot (`snapshot.json`) plus a write-ahead log
// (`wal.jsonl`, one committed change per line, written synchronously before the API answers),
// replayed on start and compacted into a new snapshot on start and every `compactEvery`
// changes. A torn last line (the process killed mid-write) is ignored. The bearer token lives
// in `token` so restarted servers accept the clients of the previous run.

import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import type { StoredObject } from './object.js';
import type { Commit } from './store.js';

export interface LoadedState {
  readonly rv: number;
  readonly objects: { resource: string; object: StoredObject }[];
}

interface Snapshot {
  readonly rv: number;
  readonly objects: { resource: string; object: StoredObject }[];
}

type WalLine =
  | { rv: number; op: 'put'; r: string; k: string; o: StoredObject }
  | { rv: number; op: 'delete'; r: string; k: string };

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** A data directory: load once, then append commits; compacts itself. */
export class DataDir {
  readonly dir: string;
  private fd: number | undefined;
  private lines = 0;
  private readonly compactEvery: number;
  private readonly state = new Map<string, { resource: string; object: StoredObject }>();
  private rv = 0;

  constructor(dir: string, opts: { compactEvery?: number } = {}) {
    this.dir = dir;
    this.compactEvery = opts.compactEvery ?? 50_000;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Reads snapshot + log; call before `open()`. */
  load(): LoadedState {
    const snapText = readText(join(this.dir, 'snapshot.json'));
    if (snapText !== undefined) {
      let snap: Snapshot;
      try {
        snap = JSON.parse(snapText) as Snapshot;
      } catch (e) {
        throw new SvcnetError(
          'INVALID_INPUT',
          `${join(this.dir, 'snapshot.json')}: not valid JSON`,
          { cause: e },
        );
      }
      this.rv = snap.rv;
      for (const o of snap.objects) this.state.set(`${o.resource}\u0000${key(o.object)}`, o);
    }
    const wal = readText(join(this.dir, 'wal.jsonl')) ?? '';
    const lines = wal.split('\n');
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      let entry: WalLine;
      try {
        entry = JSON.parse(line) as WalLine;
      } catch (e) {
        if (i >= lines.length - 2) return; // torn tail write
        throw new SvcnetError(
          'INVALID_INPUT',
          `${join(this.dir, 'wal.jsonl')}:${i + 1}: not valid JSON`,
          { cause: e },
        );
      }
      this.applyLine(entry);
    });
    return { rv: this.rv, objects: [...this.state.values()] };
  }

  private applyLine(e: WalLine): void {
    const k = `${e.r}\u0000${e.k}`;
    if (e.op === 'put') this.state.set(k, { resource: e.r, object: e.o });
    else this.state.delete(k);
    this.rv = Math.max(this.rv, e.rv);
  }

  /** Writes a fresh snapshot and starts an empty log. */
  open(): void {
    this.compact();
  }

  private compact(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    const tmp = join(this.dir, 'snapshot.json.tmp');
    const snap: Snapshot = { rv: this.rv, objects: [...this.state.values()] };
    const fd = openSync(tmp, 'w', 0o600);
    writeSync(fd, JSON.stringify(snap));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, join(this.dir, 'snapshot.json'));
    this.fd = openSync(join(this.dir, 'wal.jsonl'), 'w', 0o600);
    this.lines = 0;
  }

  /** Appends one committed change (synchronously, before the API answers). */
  append(c: Commit): void {
    if (this.fd === undefined) throw new SvcnetError('INTERNAL', 'data dir is not open');
    const line: WalLine =
      c.op === 'put'
        ? { rv: c.rv, op: 'put', r: c.resource, k: c.key, o: c.object }
        : { rv: c.rv, op: 'delete', r: c.resource, k: c.key };
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
    this.applyLine(line);
    if (++this.lines >= this.compactEvery) this.compact();
  }

  close(): void {
    if (this.fd !== undefined) {
      fsyncSync(this.fd);
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  /** The stored token, or the given one written for next time. */
  token(generate: () => string): string {
    const path = join(this.dir, 'token');
    const cur = readText(path)?.trim();
    if (cur !== undefined && cur !== '') return cur;
    const t = generate();
    writeFileSync(path, `${t}\n`, { mode: 0o600 });
    return t;
  }
}

function key(o: StoredObject): string {
  const ns = o.metadata.namespace;
  const name = o.metadata.name ?? '';
  return ns === undefined || ns === '' ? name : `${ns}/${name}`;
}
