// Reader of the data directory format svcnet used before SQLite storage (`snapshot.json` +
// `wal.jsonl`), for the one-time migration in sqlite-storage.ts. Both files are streamed in
// 1 MiB chunks, never read whole: the snapshot array is split into its elements by a byte
// scanner (JSON's structural characters are ASCII, so UTF-8 needs no decoding to find them)
// and each element is parsed alone; the log is split at newlines. A torn last log record (the
// process killed mid-write) is dropped and reported; anything else unreadable is an error
// naming the file and line. It writes nothing.

import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import type { StoredObject } from './object.js';

const CHUNK = 1 << 20;

export const LEGACY_SNAPSHOT = 'snapshot.json';
export const LEGACY_WAL = 'wal.jsonl';

export interface LegacyState {
  readonly rv: number;
  /** Objects by `resource\u0000key`. */
  readonly objects: Map<string, { resource: string; key: string; object: StoredObject }>;
  /** What was dropped, for the log: `wal.jsonl:LINE: torn record (N bytes) dropped`. */
  readonly warnings: string[];
}

/** True when DIR holds data in the old format. */
export function hasLegacyData(dir: string): boolean {
  return existsSync(join(dir, LEGACY_SNAPSHOT)) || existsSync(join(dir, LEGACY_WAL));
}

/** Yields a file in chunks; nothing when it does not exist. */
function* chunks(path: string): Generator<Buffer> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) return;
      yield Buffer.from(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

function keyOf(o: StoredObject): string {
  const ns = o.metadata.namespace;
  const name = o.metadata.name ?? '';
  return ns === undefined || ns === '' ? name : `${ns}/${name}`;
}

function invalid(where: string, what: string, cause?: unknown): SvcnetError {
  return new SvcnetError(
    'INVALID_INPUT',
    `${where}: ${what}; the old data directory cannot be migrated as it is: repair or remove the file (objects in it are then lost) and start again`,
    cause !== undefined ? { cause } : undefined,
  );
}

const PREFIX = /^\s*\{\s*"rv"\s*:\s*(\d+)\s*,\s*"objects"\s*:\s*\[/;

/** Streams the elements of snapshot.json's `objects` array. */
function* snapshotObjects(
  path: string,
  onRV: (rv: number) => void,
): Generator<{ resource: string; object: StoredObject }> {
  let head = Buffer.alloc(0);
  let started = false;
  let parts: Buffer[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let done = false;
  let index = 0;
  for (let chunk of chunks(path)) {
    if (done) {
      if (chunk.toString('latin1').trim() !== '') break;
      continue;
    }
    if (!started) {
      head = Buffer.concat([head, chunk]);
      const m = PREFIX.exec(head.subarray(0, 256).toString('latin1'));
      if (!m) {
        if (head.length < 256) continue;
        throw invalid(path, 'not a svcnet snapshot (want {"rv":N,"objects":[...]})');
      }
      onRV(Number(m[1]));
      started = true;
      chunk = head.subarray(m[0].length);
    }
    let start = depth > 0 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (b === 0x5c) escaped = true;
        else if (b === 0x22) inString = false;
        continue;
      }
      if (b === 0x22) inString = true;
      else if (b === 0x7b || b === 0x5b) {
        if (depth === 0) start = i;
        depth++;
      } else if (b === 0x7d || b === 0x5d) {
        if (depth === 0) {
          if (b === 0x5d) {
            done = true;
            break;
          }
          throw invalid(path, `unexpected "}" after element ${index}`);
        }
        depth--;
        if (depth === 0) {
          parts.push(chunk.subarray(start, i + 1));
          const text = Buffer.concat(parts).toString('utf8');
          parts = [];
          start = -1;
          let el: { resource?: unknown; object?: unknown };
          try {
            el = JSON.parse(text) as typeof el;
          } catch (e) {
            throw invalid(path, `objects[${index}]: not valid JSON`, e);
          }
          if (typeof el.resource !== 'string' || typeof el.object !== 'object' || !el.object)
            throw invalid(path, `objects[${index}]: want {"resource":..., "object":{...}}`);
          index++;
          yield { resource: el.resource, object: el.object as StoredObject };
        }
      }
    }
    if (!done && depth > 0 && start >= 0) parts.push(chunk.subarray(start));
  }
  if (started && !done) throw invalid(path, `truncated after ${index} objects`);
}

type WalLine =
  | { rv: number; op: 'put'; r: string; k: string; o: StoredObject }
  | { rv: number; op: 'delete'; r: string; k: string };

function parseWalLine(text: string): WalLine | undefined {
  try {
    const v = JSON.parse(text) as Partial<WalLine>;
    if (typeof v.rv !== 'number' || typeof v.r !== 'string' || typeof v.k !== 'string')
      return undefined;
    if (v.op === 'put' && typeof v.o === 'object') return v as WalLine;
    if (v.op === 'delete') return v as WalLine;
    return undefined;
  } catch {
    return undefined;
  }
}

/** Streams wal.jsonl's records; a bad last record is reported through onTorn, not yielded. */
function* walRecords(
  path: string,
  onTorn: (line: number, bytes: number) => void,
): Generator<WalLine> {
  let rest: Buffer[] = [];
  let line = 0;
  let pending: { text: string; line: number } | undefined;
  const take = function* (text: string, n: number): Generator<WalLine> {
    // Each record is checked once the next one is known to exist, so only the last can be torn.
    if (pending) {
      const rec = parseWalLine(pending.text);
      if (!rec) throw invalid(`${path}:${pending.line}`, 'not a valid log record');
      yield rec;
    }
    pending = { text, line: n };
  };
  for (const chunk of chunks(path)) {
    let from = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, from)) {
      rest.push(chunk.subarray(from, nl));
      const text = Buffer.concat(rest).toString('utf8');
      rest = [];
      from = nl + 1;
      line++;
      if (text.trim() !== '') yield* take(text, line);
    }
    if (from < chunk.length) rest.push(chunk.subarray(from));
  }
  const tail = Buffer.concat(rest).toString('utf8');
  if (tail.trim() !== '') yield* take(tail, line + 1);
  if (pending) {
    const rec = parseWalLine(pending.text);
    if (rec) yield rec;
    else onTorn(pending.line, Buffer.byteLength(pending.text));
  }
}

/** Reads an old-format data directory into its final state. */
export function readLegacyDataDir(dir: string): LegacyState {
  const objects = new Map<string, { resource: string; key: string; object: StoredObject }>();
  const warnings: string[] = [];
  let rv = 0;
  const snapPath = join(dir, LEGACY_SNAPSHOT);
  for (const { resource, object } of snapshotObjects(snapPath, (n) => (rv = n))) {
    const key = keyOf(object);
    objects.set(`${resource}\u0000${key}`, { resource, key, object });
  }
  const walPath = join(dir, LEGACY_WAL);
  for (const rec of walRecords(walPath, (line, bytes) =>
    warnings.push(`${walPath}:${line}: torn last record (${bytes} bytes) dropped`),
  )) {
    const k = `${rec.r}\u0000${rec.k}`;
    if (rec.op === 'put') objects.set(k, { resource: rec.r, key: rec.k, object: rec.o });
    else objects.delete(k);
    rv = Math.max(rv, rec.rv);
  }
  return { rv, objects, warnings };
}
