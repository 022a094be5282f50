// The runtime's result cache: the final ADD result of each attachment, kept until DEL so DEL
// and CHECK can hand it to plugins as prevResult and GC can find stale attachments. The file
// cache uses libcni's layout (`<dir>/<network>-<containerID>-<ifname>`, a `cniCacheV1` JSON
// document, written atomically); the memory cache is its Fake.

import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CniResult } from '../types.js';

export interface CachedAttachment {
  readonly kind: 'cniCacheV1';
  readonly containerId: string;
  readonly ifName: string;
  readonly networkName: string;
  readonly netns: string;
  /** The list config used at ADD, base64 (as libcni stores Go []byte). */
  readonly config: string;
  readonly cniArgs: readonly (readonly [string, string])[];
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  readonly result: CniResult;
}

export interface ResultCache {
  get(network: string, containerId: string, ifName: string): Promise<CachedAttachment | undefined>;
  put(entry: CachedAttachment): Promise<void>;
  delete(network: string, containerId: string, ifName: string): Promise<void>;
  /** Every cached attachment of `network`. */
  list(network: string): Promise<CachedAttachment[]>;
}

function fileName(network: string, containerId: string, ifName: string): string {
  return `${network}-${containerId}-${ifName}`;
}

function isEntry(v: unknown): v is CachedAttachment {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    e.kind === 'cniCacheV1' &&
    typeof e.containerId === 'string' &&
    typeof e.ifName === 'string' &&
    typeof e.networkName === 'string' &&
    typeof e.result === 'object'
  );
}

/** libcni-style cache files in one directory (e.g. /var/lib/cni/results). */
export class FileResultCache implements ResultCache {
  private readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  async get(
    network: string,
    containerId: string,
    ifName: string,
  ): Promise<CachedAttachment | undefined> {
    const path = join(this.dir, fileName(network, containerId, ifName));
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch {
      return undefined;
    }
    try {
      const v = JSON.parse(text) as unknown;
      if (isEntry(v)) return v;
    } catch {
      // fall through: an unreadable cache is dropped, as libcni does, so DEL can proceed.
    }
    await rm(path, { force: true });
    return undefined;
  }

  async put(entry: CachedAttachment): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const path = join(this.dir, fileName(entry.networkName, entry.containerId, entry.ifName));
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, JSON.stringify(entry));
    await rename(tmp, path);
  }

  async delete(network: string, containerId: string, ifName: string): Promise<void> {
    await rm(join(this.dir, fileName(network, containerId, ifName)), { force: true });
  }

  async list(network: string): Promise<CachedAttachment[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out: CachedAttachment[] = [];
    for (const n of names) {
      if (!n.startsWith(`${network}-`) || n.includes('.tmp-')) continue;
      try {
        const v = JSON.parse(await readFile(join(this.dir, n), 'utf8')) as unknown;
        if (isEntry(v) && v.networkName === network) out.push(v);
      } catch {
        // Skip unreadable entries.
      }
    }
    return out;
  }
}

/** In-memory ResultCache (the Fake). */
export class MemoryResultCache implements ResultCache {
  readonly entries = new Map<string, CachedAttachment>();

  get(network: string, containerId: string, ifName: string): Promise<CachedAttachment | undefined> {
    return Promise.resolve(this.entries.get(fileName(network, containerId, ifName)));
  }
  put(entry: CachedAttachment): Promise<void> {
    this.entries.set(fileName(entry.networkName, entry.containerId, entry.ifName), entry);
    return Promise.resolve();
  }
  delete(network: string, containerId: string, ifName: string): Promise<void> {
    this.entries.delete(fileName(network, containerId, ifName));
    return Promise.resolve();
  }
  list(network: string): Promise<CachedAttachment[]> {
    return Promise.resolve([...this.entries.values()].filter((e) => e.networkName === network));
  }
}
