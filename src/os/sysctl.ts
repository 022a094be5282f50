// The `Sysctl` boundary: reading and writing /proc/sys keys of the namespace this process
// runs in (network sysctls are per network namespace). RealSysctl uses the files; FakeSysctl
// keeps a map. Keys use dots, as sysctl(8) does: `net.ipv4.ip_forward`.

import { readFile, writeFile } from 'node:fs/promises';
import { SvcnetError } from '../errors.js';

export interface Sysctl {
  /** Writes `value`; throws SvcnetError EXEC_FAILED naming the key when it cannot. */
  set(key: string, value: string): Promise<void>;
  /** Reads the value (trimmed); undefined when the key does not exist. */
  get(key: string): Promise<string | undefined>;
}

function pathOf(key: string): string {
  if (!/^[a-z0-9_.-]+$/i.test(key) || key.includes('..'))
    throw new SvcnetError('INVALID_INPUT', `sysctl: bad key "${key}"`);
  return `/proc/sys/${key.replaceAll('.', '/')}`;
}

export class RealSysctl implements Sysctl {
  async set(key: string, value: string): Promise<void> {
    try {
      await writeFile(pathOf(key), value);
    } catch (e) {
      throw new SvcnetError('EXEC_FAILED', `sysctl ${key}=${value}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  async get(key: string): Promise<string | undefined> {
    try {
      return (await readFile(pathOf(key), 'utf8')).trim();
    } catch {
      return undefined;
    }
  }
}

export class FakeSysctl implements Sysctl {
  readonly values = new Map<string, string>();

  set(key: string, value: string): Promise<void> {
    pathOf(key);
    this.values.set(key, value);
    return Promise.resolve();
  }

  get(key: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(key));
  }
}
