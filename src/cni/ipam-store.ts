// Reservation storage for the built-in IPAM: the file store keeps host-local's on-disk
// layout (`<dataDir>/<network>/<ip>` holding "containerID\r\nifname", and
// `last_reserved_ip.<set>`), serialised by a lock file per network so concurrent ADDs from
// separate plugin processes never hand out one address twice; the memory store is its Fake.
// Decisions come from plan-ipam.ts; this file only reads state and applies changes.

import * as fsSync from 'node:fs';
import * as fsAsync from 'node:fs/promises';
import { join } from 'node:path';
import { parseIP, formatIP } from '../util/ip.js';
import type { IpamChange, IpamState, Reservation } from './plan-ipam.js';
import { CniError, CniErrorCode } from './types.js';

export interface IpamStore {
  /**
   * Runs `fn` on the network's current state while holding its exclusive lock, applies the
   * returned changes, and returns `value`. Throws CniError 11 (try again later) when the lock
   * cannot be taken in time; errors from `fn` propagate and no change is applied.
   */
  update<T>(
    dataDir: string,
    network: string,
    fn: (state: IpamState) => { value: T; changes: readonly IpamChange[] },
  ): Promise<T>;
}

const LAST_RESERVED = 'last_reserved_ip.';
/** Our lock file (host-local uses flock on `lock`, which Node cannot take). */
export const LOCK_FILE = '.svcnet-cni.lock';

function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return !isErrno(e, 'ESRCH');
  }
}

/** The file calls the store makes. */
interface StoreFs {
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
  writeFile(path: string, data: string, opts?: { flag: 'wx' }): Promise<void>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<{ mtimeMs: number }>;
  rm(path: string, opts: { force: true }): Promise<void>;
  unlink(path: string): Promise<void>;
}

/** A blocking call as a promise: its throw becomes a rejection. */
function blocking<A extends unknown[], R>(fn: (...a: A) => R): (...a: A) => Promise<R> {
  return (...a) => {
    try {
      return Promise.resolve(fn(...a));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  };
}

const ASYNC_FS: StoreFs = fsAsync;
const BLOCKING_FS: StoreFs = {
  mkdir: blocking((p: string, o: { recursive: true }) => fsSync.mkdirSync(p, o)),
  writeFile: blocking((p: string, d: string, o?: { flag: 'wx' }) => {
    fsSync.writeFileSync(p, d, o);
  }),
  readFile: blocking((p: string, e: 'utf8') => fsSync.readFileSync(p, e)),
  readdir: blocking((p: string) => fsSync.readdirSync(p)),
  stat: blocking((p: string) => fsSync.statSync(p)),
  rm: blocking((p: string, o: { force: true }) => {
    fsSync.rmSync(p, o);
  }),
  unlink: blocking((p: string) => {
    fsSync.unlinkSync(p);
  }),
};

/** Options for FileIpamStore (tests shorten the timeout). */
export interface FileIpamStoreOptions {
  /**
   * Blocking file calls: a dozen small calls through libuv's thread pool cost milliseconds
   * in a one-shot process (the svcnet-cni binary), and far more under load in a long-lived
   * one (the lab's agent, whose pool also serves its Pods' work) while the lock is held;
   * blocking, the whole update takes well under a millisecond. Same files either way.
   */
  readonly blocking?: boolean;
  readonly lockTimeoutMs?: number;
  /** A lock file older than this whose owner is gone is broken. */
  readonly staleLockMs?: number;
}

/**
 * The updates this process has under way, per lock file: one waits for the one before it,
 * instead of polling the lock file another ADD of the same process holds (the lab's agent
 * runs a node's ADDs concurrently in one process).
 */
const inProcess = new Map<string, Promise<unknown>>();

/** host-local compatible reservation files with an O_EXCL lock file per network. */
export class FileIpamStore implements IpamStore {
  private readonly lockTimeoutMs: number;
  private readonly staleLockMs: number;
  private readonly fs: StoreFs;

  constructor(opts: FileIpamStoreOptions = {}) {
    this.fs = opts.blocking === true ? BLOCKING_FS : ASYNC_FS;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 30_000;
    this.staleLockMs = opts.staleLockMs ?? 60_000;
  }

  async update<T>(
    dataDir: string,
    network: string,
    fn: (state: IpamState) => { value: T; changes: readonly IpamChange[] },
  ): Promise<T> {
    const dir = join(dataDir, network);
    try {
      await this.fs.mkdir(dir, { recursive: true });
    } catch (e) {
      throw new CniError(
        CniErrorCode.ioFailure,
        `IPAM: cannot create ${dir}: ${(e as Error).message}`,
      );
    }
    const lock = join(dir, LOCK_FILE);
    const before = inProcess.get(lock) ?? Promise.resolve();
    const mine = before.then(
      () => this.locked(dir, lock, fn),
      () => this.locked(dir, lock, fn),
    );
    inProcess.set(lock, mine);
    try {
      return await mine;
    } finally {
      if (inProcess.get(lock) === mine) inProcess.delete(lock);
    }
  }

  /** The update under the network's lock file (other processes: the binary, other agents). */
  private async locked<T>(
    dir: string,
    lock: string,
    fn: (state: IpamState) => { value: T; changes: readonly IpamChange[] },
  ): Promise<T> {
    await this.acquire(lock);
    try {
      const state = await this.read(dir);
      const { value, changes } = fn(state);
      await this.apply(dir, changes);
      return value;
    } finally {
      await this.fs.unlink(lock).catch(() => undefined);
    }
  }

  private async acquire(lock: string): Promise<void> {
    const deadline = Date.now() + this.lockTimeoutMs;
    let delay = 1;
    for (;;) {
      try {
        // O_EXCL create and write in one call; an empty file is one being written (breakIfStale).
        await this.fs.writeFile(lock, String(process.pid), { flag: 'wx' });
        return;
      } catch (e) {
        if (!isErrno(e, 'EEXIST'))
          throw new CniError(
            CniErrorCode.ioFailure,
            `IPAM: cannot create lock ${lock}: ${(e as Error).message}`,
          );
      }
      await this.breakIfStale(lock);
      if (Date.now() > deadline)
        throw new CniError(
          CniErrorCode.tryAgainLater,
          `IPAM: lock ${lock} is held by another process; try again later`,
        );
      await new Promise((r) => setTimeout(r, delay + Math.random() * delay));
      delay = Math.min(delay * 2, 20);
    }
  }

  /** Removes a lock whose owner died (crashed plugin) so the network does not wedge. */
  private async breakIfStale(lock: string): Promise<void> {
    try {
      const [text, st] = await Promise.all([this.fs.readFile(lock, 'utf8'), this.fs.stat(lock)]);
      const pid = Number.parseInt(text, 10);
      const old = Date.now() - st.mtimeMs > this.staleLockMs;
      // An empty file is a lock being written right now unless it is old.
      if (
        (Number.isInteger(pid) && pid > 0 && !pidAlive(pid)) ||
        (old && !(pid > 0 && pidAlive(pid))) ||
        (text === '' && old)
      )
        await this.fs.rm(lock, { force: true });
    } catch {
      // Gone already, or unreadable: the next attempt decides.
    }
  }

  private async read(dir: string): Promise<IpamState> {
    const reservations = new Map<string, Reservation>();
    const lastReserved = new Map<number, string>();
    let names: string[];
    try {
      names = await this.fs.readdir(dir);
    } catch (e) {
      throw new CniError(
        CniErrorCode.ioFailure,
        `IPAM: cannot read ${dir}: ${(e as Error).message}`,
      );
    }
    await Promise.all(
      names.map(async (name) => {
        if (name.startsWith(LAST_RESERVED)) {
          const idx = Number(name.slice(LAST_RESERVED.length));
          const text = (await this.fs.readFile(join(dir, name), 'utf8').catch(() => '')).trim();
          if (Number.isInteger(idx) && parseIP(text)) lastReserved.set(idx, text);
          return;
        }
        const ip = parseIP(name);
        if (!ip) return;
        const text = await this.fs.readFile(join(dir, name), 'utf8').catch(() => undefined);
        if (text === undefined) return;
        const [containerId = '', ifName = ''] = text.split(/\r?\n/).map((s) => s.trim());
        reservations.set(formatIP(ip), { containerId, ifName });
      }),
    );
    return { reservations, lastReserved };
  }

  private async apply(dir: string, changes: readonly IpamChange[]): Promise<void> {
    const done: string[] = [];
    try {
      for (const c of changes) {
        const path = join(dir, c.ip);
        if (c.op === 'reserve') {
          await this.fs.writeFile(path, `${c.owner.containerId}\r\n${c.owner.ifName}`, {
            flag: 'wx',
          });
          done.push(path);
          await this.fs.writeFile(join(dir, `${LAST_RESERVED}${c.setIndex}`), c.ip);
        } else {
          await this.fs.unlink(path).catch((e: unknown) => {
            if (!isErrno(e, 'ENOENT')) throw e;
          });
        }
      }
    } catch (e) {
      await Promise.all(done.map((p) => this.fs.unlink(p).catch(() => undefined)));
      throw new CniError(
        CniErrorCode.ioFailure,
        `IPAM: cannot update ${dir}: ${(e as Error).message}`,
      );
    }
  }
}

/** In-memory IpamStore with the same semantics (the Fake; also for dry runs). */
export class MemoryIpamStore implements IpamStore {
  private readonly networks = new Map<
    string,
    { reservations: Map<string, Reservation>; lastReserved: Map<number, string> }
  >();

  update<T>(
    dataDir: string,
    network: string,
    fn: (state: IpamState) => { value: T; changes: readonly IpamChange[] },
  ): Promise<T> {
    const key = join(dataDir, network);
    let net = this.networks.get(key);
    if (!net) {
      net = { reservations: new Map(), lastReserved: new Map() };
      this.networks.set(key, net);
    }
    try {
      const { value, changes } = fn({
        reservations: new Map(net.reservations),
        lastReserved: new Map(net.lastReserved),
      });
      for (const c of changes)
        if (c.op === 'reserve' && net.reservations.has(c.ip))
          throw new CniError(CniErrorCode.ioFailure, `IPAM: ${c.ip} is already reserved`);
      for (const c of changes) {
        if (c.op === 'reserve') {
          net.reservations.set(c.ip, c.owner);
          net.lastReserved.set(c.setIndex, c.ip);
        } else net.reservations.delete(c.ip);
      }
      return Promise.resolve(value);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /** Canonical dump: `ip containerId ifName` lines, sorted. */
  dump(dataDir: string, network: string): string[] {
    const net = this.networks.get(join(dataDir, network));
    return [...(net?.reservations ?? [])]
      .map(([ip, r]) => `${ip} ${r.containerId} ${r.ifName}`)
      .sort();
  }
}
