// Loading network configuration lists from disk the way libcni/go-cni do: a directory's
// `.conflist`, `.conf` and `.json` files in lexical order, `.conflist` files preferred, legacy
// single-plugin files wrapped into a list; the network is picked by name or, as container
// runtimes do, the first file wins. Parsing and validation are in parse-conflist.ts.

import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { SvcnetError } from '../../errors.js';
import { parseConflist, type NetworkConfigList } from './parse-conflist.js';

const EXTENSIONS = ['.conflist', '.conf', '.json'];

/** Reads and parses one file (ValidationError names the file and every bad field). */
export async function loadConflist(path: string): Promise<NetworkConfigList> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new SvcnetError('NOT_FOUND', `network config ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return parseConflist(text, basename(path));
}

/**
 * The network named `name` from `dir` (or the first valid config when `name` is undefined).
 * Files that fail to parse are skipped when searching by name and reported when nothing
 * matches. Throws SvcnetError NOT_FOUND naming the directory.
 */
export async function loadNetwork(dir: string, name?: string): Promise<NetworkConfigList> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => EXTENSIONS.some((x) => f.endsWith(x))).sort();
  } catch (e) {
    throw new SvcnetError('NOT_FOUND', `network config dir ${dir}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  // .conflist files first, each group in lexical order (libcni's ConfFromDir ordering).
  files.sort(
    (a, b) =>
      Number(!a.endsWith('.conflist')) - Number(!b.endsWith('.conflist')) || a.localeCompare(b),
  );
  const problems: string[] = [];
  for (const f of files) {
    try {
      const list = await loadConflist(join(dir, f));
      if (name === undefined || list.name === name) return list;
    } catch (e) {
      problems.push((e as Error).message);
      if (name === undefined) throw e;
    }
  }
  throw new SvcnetError(
    'NOT_FOUND',
    `network config dir ${dir}: no network${name ? ` named "${name}"` : ''} among [${files.join(', ')}]${problems.length ? `; unreadable: ${problems.join('; ')}` : ''}`,
  );
}
