// The small-file seam: read, write (atomically, parents created) and remove whole text files
// by absolute path. svcnet-cni's flannel type uses it for subnet.env and for the delegate
// configs it keeps per container. RealTextFiles is node:fs; MemoryTextFiles is the Fake (a
// map from path to text) for unit tests and dry runs. Not for large or streamed files.

import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface TextFiles {
  /** The file's text, or undefined when it does not exist; other failures throw. */
  read(path: string): Promise<string | undefined>;
  /** Replaces the file (write to a temporary sibling, then rename), creating parents. */
  write(path: string, text: string): Promise<void>;
  /** Removes the file; no error when it does not exist. */
  remove(path: string): Promise<void>;
  /** Names of the plain files directly in `dir`, sorted; empty when `dir` does not exist. */
  list(dir: string): Promise<string[]>;
}

function isNotFound(e: unknown): boolean {
  return e instanceof Error && 'code' in e && e.code === 'ENOENT';
}

export class RealTextFiles implements TextFiles {
  async read(path: string): Promise<string | undefined> {
    try {
      return await readFile(path, 'utf8');
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async write(path: string, text: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, path);
  }

  async remove(path: string): Promise<void> {
    await rm(path, { force: true });
  }

  async list(dir: string): Promise<string[]> {
    try {
      const entries = await readdir(dir, { withFileTypes: true });
      return entries
        .filter((e) => e.isFile())
        .map((e) => e.name)
        .sort();
    } catch (e) {
      if (isNotFound(e)) return [];
      throw e;
    }
  }
}

/** The Fake: files in a map, keyed by path. */
export class MemoryTextFiles implements TextFiles {
  readonly files = new Map<string, string>();

  constructor(initial: Readonly<Record<string, string>> = {}) {
    for (const [k, v] of Object.entries(initial)) this.files.set(k, v);
  }

  read(path: string): Promise<string | undefined> {
    return Promise.resolve(this.files.get(path));
  }

  write(path: string, text: string): Promise<void> {
    this.files.set(path, text);
    return Promise.resolve();
  }

  remove(path: string): Promise<void> {
    this.files.delete(path);
    return Promise.resolve();
  }

  list(dir: string): Promise<string[]> {
    const prefix = `${dir.replace(/\/+$/, '')}/`;
    return Promise.resolve(
      [...this.files.keys()]
        .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/'))
        .map((p) => p.slice(prefix.length))
        .sort(),
    );
  }
}
