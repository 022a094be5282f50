// The sysctl seam: read and write kernel parameters by their dotted names
// (`net.ipv4.conf.all.route_localnet`). RealSysctl reads and writes /proc/sys of the calling
// process's own network namespace (net.* keys are per-namespace), so a daemon started inside
// a namespace only ever changes that namespace. FakeSysctl keeps values in memory.

import { readFile, writeFile } from 'node:fs/promises';
import { SvcnetError } from '../errors.js';

export interface Sysctl {
  /** Current value, trimmed; throws NOT_FOUND when the key does not exist. */
  get(key: string): Promise<string>;
  /** Writes a value; throws NOT_FOUND / UNSUPPORTED (read-only here) on failure. */
  set(key: string, value: string): Promise<void>;
}

/** `net.ipv4.ip_forward` → `/proc/sys/net/ipv4/ip_forward`; rejects path tricks. */
export function sysctlPath(key: string, root = '/proc/sys'): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(key) || key.includes('..') || key.startsWith('.'))
    throw new SvcnetError('INVALID_INPUT', `sysctl ${key}: not a valid key`);
  return `${root}/${key.replace(/\./g, '/')}`;
}

function codeOf(e: unknown): string {
  return e instanceof Error && 'code' in e ? String(e.code) : '';
}

export class RealSysctl implements Sysctl {
  private readonly root: string;

  /** `root` is for tests; production uses /proc/sys. */
  constructor(root = '/proc/sys') {
    this.root = root;
  }

  async get(key: string): Promise<string> {
    try {
      return (await readFile(sysctlPath(key, this.root), 'utf8')).trim();
    } catch (e) {
      throw new SvcnetError('NOT_FOUND', `sysctl ${key}: cannot read (${codeOf(e)})`, {
        cause: e,
      });
    }
  }

  async set(key: string, value: string): Promise<void> {
    try {
      await writeFile(sysctlPath(key, this.root), `${value}\n`);
    } catch (e) {
      const code = codeOf(e);
      throw new SvcnetError(
        code === 'ENOENT' ? 'NOT_FOUND' : 'UNSUPPORTED',
        `sysctl ${key}=${value}: cannot write (${code})`,
        { cause: e },
      );
    }
  }
}

/** In-memory sysctls; keys not given to the constructor do not exist; `readOnly` keys refuse writes. */
export class FakeSysctl implements Sysctl {
  readonly values: Map<string, string>;
  readonly readOnly: Set<string>;
  readonly writes: { key: string; value: string }[] = [];

  constructor(values: Record<string, string> = {}, readOnly: readonly string[] = []) {
    this.values = new Map(Object.entries(values));
    this.readOnly = new Set(readOnly);
  }

  get(key: string): Promise<string> {
    const v = this.values.get(key);
    if (v === undefined)
      return Promise.reject(new SvcnetError('NOT_FOUND', `sysctl ${key}: no such key`));
    return Promise.resolve(v);
  }

  set(key: string, value: string): Promise<void> {
    if (!this.values.has(key))
      return Promise.reject(new SvcnetError('NOT_FOUND', `sysctl ${key}: no such key`));
    if (this.readOnly.has(key))
      return Promise.reject(new SvcnetError('UNSUPPORTED', `sysctl ${key}: read-only`));
    this.values.set(key, value);
    this.writes.push({ key, value });
    return Promise.resolve();
  }
}
