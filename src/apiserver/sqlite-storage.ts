// `--data-dir` storage: one SQLite database (`DIR/storage.db`, through better-sqlite3) in the
// spirit of k3s's kine. Every revision is a row (resourceVersion = rowid, resource, key, type,
// value as JSON); a row is marked `superseded` by the revision that replaced or deleted it,
// so the current object of every key is the row not superseded, and compaction deletes the
// rows superseded at or before the watch window's floor. WAL journal mode, synchronous=FULL
// by default: a commit is on disk when `commit()` returns. The store (store.ts) calls
// `admit()` per write operation (the quota: past `quotaBytes` only deletions are admitted,
// like etcd's NOSPACE alarm) and `commit()` per group of operations, one transaction each.
// Start-up streams the rows in resourceVersion order into the objects and the retained
// revisions. A data directory in the old format (snapshot.json + wal.jsonl) is migrated on
// first open. better-sqlite3 is a native module, loaded only when a data dir is used.

import { mkdirSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock } from '../util/clock.js';
import {
  LEGACY_SNAPSHOT,
  LEGACY_WAL,
  hasLegacyData,
  readLegacyDataDir,
} from './legacy-data-dir.js';
import type { StoredObject } from './object.js';
import { ApiError } from './status.js';
import type { LoadedRevision, Revision, StoreBackend } from './store.js';

export const DB_FILE = 'storage.db';
const SCHEMA_VERSION = '1';
const TYPES = ['ADDED', 'MODIFIED', 'DELETED'] as const;

export interface SqliteStorageOptions {
  /** Past this many bytes in use, writes other than deletions get 507 (default 2 GiB). */
  readonly quotaBytes?: number;
  /** SQLite's `synchronous` (default FULL: every commit is fsync'd). */
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
  /** Warnings (a dropped torn record, a migration). */
  readonly warn?: (message: string) => void;
  /** Time of the revisions' creation (history age); default the wall clock. */
  readonly clock?: Pick<Clock, 'now'>;
}

export interface LoadedStorage {
  readonly rv: number;
  /** Oldest resourceVersion a watch may resume from. */
  readonly floor: number;
  readonly objects: { resource: string; object: StoredObject }[];
  readonly revisions: LoadedRevision[];
}

/** A row as `raw()` gives it: rv, resource, name, type, superseded, created, value. */
type Row = [number, string, string, number, number | null, number, string];

type Database = BetterSqlite3.Database;
type Statement = BetterSqlite3.Statement;

/** Loads better-sqlite3 on first use (a native module: not part of the lab's bundle). */
function openDatabase(path: string): Database {
  const require = createRequire(import.meta.url);
  let ctor: typeof BetterSqlite3;
  try {
    ctor = require('better-sqlite3') as typeof BetterSqlite3;
  } catch (e) {
    throw new SvcnetError(
      'INTERNAL',
      `--data-dir needs the better-sqlite3 module (npm ci builds it; needs python3, make, g++): ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
  return new ctor(path);
}

/** The SQLite store of one data directory. */
export class SqliteStorage implements StoreBackend {
  readonly dir: string;
  /** The connection (tests inspect it and provoke storage failures through it). */
  readonly db: Database;
  private readonly quotaBytes: number;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly warn: (message: string) => void;
  private readonly json = new WeakMap<StoredObject, string>();
  private readonly insert: Statement;
  private readonly supersede: Statement;
  private readonly compact: Statement;
  private readonly setMeta: Statement;
  private readonly commitTx: (revisions: readonly Revision[], floor: number) => void;
  private usedBytes = 0;
  private pendingBytes = 0;
  private floor = 0;

  constructor(dir: string, opts: SqliteStorageOptions = {}) {
    this.dir = dir;
    this.quotaBytes = opts.quotaBytes ?? 2 * 1024 * 1024 * 1024;
    this.clock = opts.clock ?? realClock;
    this.warn = opts.warn ?? (() => undefined);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, DB_FILE);
    const db = openDatabase(path);
    this.db = db;
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
      // The -wal file is cut back to this after a checkpoint, so big values don't leave it big.
      db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
      db.exec(`
        CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS revisions (
          rv INTEGER PRIMARY KEY,
          resource TEXT NOT NULL,
          name TEXT NOT NULL,
          type INTEGER NOT NULL,
          superseded INTEGER,
          created INTEGER NOT NULL,
          value TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS revisions_current ON revisions (resource, name)
          WHERE superseded IS NULL;
        CREATE INDEX IF NOT EXISTS revisions_superseded ON revisions (superseded)
          WHERE superseded IS NOT NULL;
      `);
      const schema = this.meta('schema');
      if (schema === undefined) this.writeMeta('schema', SCHEMA_VERSION);
      else if (schema !== SCHEMA_VERSION)
        throw new SvcnetError(
          'INVALID_INPUT',
          `${path}: storage schema ${schema}, this svcnet reads ${SCHEMA_VERSION}`,
        );
    } catch (e) {
      db.close();
      throw e instanceof SvcnetError
        ? e
        : new SvcnetError(
            'INVALID_INPUT',
            `${path}: not a usable SQLite database: ${e instanceof Error ? e.message : String(e)}`,
            { cause: e },
          );
    }
    this.insert = db.prepare(
      'INSERT INTO revisions (rv, resource, name, type, superseded, created, value) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.supersede = db.prepare(
      'UPDATE revisions SET superseded = ? WHERE resource = ? AND name = ? AND superseded IS NULL',
    );
    this.compact = db.prepare('DELETE FROM revisions WHERE superseded <= ?');
    this.setMeta = db.prepare(
      'INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
    );
    this.commitTx = db.transaction((revisions: readonly Revision[], floor: number) => {
      const created = this.clock.now();
      for (const r of revisions) {
        this.supersede.run(r.rv, r.resource, r.key);
        this.insert.run(
          r.rv,
          r.resource,
          r.key,
          TYPES.indexOf(r.type),
          r.type === 'DELETED' ? r.rv : null,
          created,
          this.serialize(r.object),
        );
      }
      if (floor > this.floor) {
        this.compact.run(floor);
        this.setMeta.run('floor', String(floor));
      }
    });
    this.floor = Number(this.meta('floor') ?? '0');
    if (hasLegacyData(dir)) this.migrate();
    this.refreshUsage();
  }

  private meta(name: string): string | undefined {
    const row = this.db.prepare('SELECT value FROM meta WHERE name = ?').get(name) as
      { value: string } | undefined;
    return row?.value;
  }

  private writeMeta(name: string, value: string): void {
    this.db
      .prepare(
        'INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
      )
      .run(name, value);
  }

  private serialize(o: StoredObject): string {
    let text = this.json.get(o);
    if (text === undefined) {
      text = JSON.stringify(o);
      this.json.set(o, text);
    }
    return text;
  }

  private refreshUsage(): void {
    const pages = Number(this.db.pragma('page_count', { simple: true }));
    const free = Number(this.db.pragma('freelist_count', { simple: true }));
    const size = Number(this.db.pragma('page_size', { simple: true }));
    this.usedBytes = (pages - free) * size;
    this.pendingBytes = 0;
  }

  /** Bytes in use in the database (not counting free pages). */
  get used(): number {
    return this.usedBytes;
  }

  admit(revisions: readonly Revision[], deletion: boolean): number[] {
    const bytes = revisions.map((r) => this.serialize(r.object).length);
    const total = bytes.reduce((a, b) => a + b, 0);
    if (!deletion && this.usedBytes + this.pendingBytes + total > this.quotaBytes)
      throw ApiError.insufficientStorage(
        `etcdserver: mvcc: database space exceeded: ${DB_FILE} in ${this.dir} uses ${this.usedBytes + this.pendingBytes} bytes, this write needs ${total} more, --quota-backend-bytes is ${this.quotaBytes}; delete objects to free space (reads and deletions still work)`,
      );
    this.pendingBytes += total;
    return bytes;
  }

  commit(revisions: readonly Revision[], floor: number): void {
    try {
      this.commitTx(revisions, floor);
    } catch (e) {
      this.pendingBytes = 0;
      const msg = e instanceof Error ? e.message : String(e);
      if ((e as { code?: string }).code === 'SQLITE_FULL')
        throw ApiError.insufficientStorage(`storage: ${msg} (${join(this.dir, DB_FILE)})`);
      throw ApiError.internal(`storage: ${msg} (${join(this.dir, DB_FILE)})`);
    }
    if (floor > this.floor) this.floor = floor;
    this.refreshUsage();
  }

  /**
   * Streams every row, oldest first: the current objects, and the revisions after the
   * compaction floor with the object each replaced (for selector transitions in watches).
   */
  load(): LoadedStorage {
    const last = new Map<string, StoredObject>();
    const objects = new Map<string, { resource: string; object: StoredObject }>();
    const revisions: LoadedRevision[] = [];
    let rv = this.floor;
    const rows = this.db
      .prepare(
        'SELECT rv, resource, name, type, superseded, created, value FROM revisions ORDER BY rv',
      )
      .raw(true)
      .iterate() as IterableIterator<Row>;
    for (const [rowRV, resource, name, typeCode, superseded, created, value] of rows) {
      let object: StoredObject;
      try {
        object = JSON.parse(value) as StoredObject;
      } catch (e) {
        throw new SvcnetError(
          'INVALID_INPUT',
          `${join(this.dir, DB_FILE)}: revision ${rowRV} (${resource} ${name}): value is not JSON`,
          { cause: e },
        );
      }
      const k = `${resource}\u0000${name}`;
      const type = TYPES[typeCode] ?? 'MODIFIED';
      if (rowRV > this.floor)
        revisions.push({
          rv: rowRV,
          resource,
          key: name,
          type,
          object,
          prev: last.get(k),
          bytes: value.length,
          at: created,
        });
      if (type === 'DELETED') {
        last.delete(k);
        objects.delete(k);
      } else {
        last.set(k, object);
        if (superseded === null) objects.set(k, { resource, object });
      }
      if (rowRV > rv) rv = rowRV;
    }
    return { rv, floor: this.floor, objects: [...objects.values()], revisions };
  }

  /** Imports an old-format data directory (snapshot.json + wal.jsonl), then removes it. */
  private migrate(): void {
    if (this.meta('migrated') !== undefined) {
      // Killed after the import was committed, before the old files were gone.
      this.removeLegacy();
      return;
    }
    const existing = (this.db.prepare('SELECT count(*) AS n FROM revisions').get() as { n: number })
      .n;
    if (existing > 0)
      throw new SvcnetError(
        'INVALID_INPUT',
        `${this.dir}: holds both ${DB_FILE} and old-format ${LEGACY_SNAPSHOT}/${LEGACY_WAL}; move the old files away to start from ${DB_FILE}, or remove ${DB_FILE} to migrate them again`,
      );
    const state = readLegacyDataDir(this.dir);
    for (const w of state.warnings) this.warn(w);
    const created = this.clock.now();
    const used = new Set<number>();
    let next = state.rv;
    let top = state.rv;
    this.db.transaction(() => {
      for (const { resource, key, object } of state.objects.values()) {
        let rv = Number(object.metadata.resourceVersion);
        if (!Number.isInteger(rv) || rv <= 0 || used.has(rv)) {
          rv = ++next;
          object.metadata.resourceVersion = String(rv);
        }
        used.add(rv);
        top = Math.max(top, rv);
        this.insert.run(rv, resource, key, 0, null, created, JSON.stringify(object));
      }
      this.floor = Math.max(next, top);
      this.setMeta.run('floor', String(this.floor));
      this.setMeta.run('migrated', `${LEGACY_SNAPSHOT}+${LEGACY_WAL}`);
    })();
    this.removeLegacy();
    this.warn(
      `${this.dir}: migrated ${state.objects.size} objects (resourceVersion ${this.floor}) from ${LEGACY_SNAPSHOT} + ${LEGACY_WAL} to ${DB_FILE}; the old files are removed`,
    );
  }

  private removeLegacy(): void {
    for (const f of [LEGACY_WAL, LEGACY_SNAPSHOT]) {
      try {
        unlinkSync(join(this.dir, f));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
