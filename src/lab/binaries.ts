// The programs the lab runs: the svcnet CLI for its components and Pods, and the svcnet-cni
// plugin for its node agents. Run from source (`node --import tsx src/cli/main.ts`), every
// process would compile the TypeScript again: about a second of CPU each, with ten or more per
// node. So `lab up` bundles both with esbuild into dist/lab/ first (about 3 s, skipped when
// the bundle is newer than every source file), and the lab runs the bundle: a Pod's server
// starts in about 0.3 s.

import { chmodSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface LabBinaries {
  /** argv prefix that runs the svcnet CLI. */
  readonly self: readonly string[];
  /** Directory holding `svcnet-cni`, for CNI_PATH. */
  readonly cniBinDir: string;
}

/** The repository (or package) root: src/lab/ or dist/lab/ sit two levels below it. */
export function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.test.ts')) continue;
    newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/** `import`/`require` of CommonJS dependencies inside an ESM bundle need a real `require`. */
const REQUIRE_BANNER =
  "import { createRequire as __svcnetCreateRequire } from 'node:module'; const require = __svcnetCreateRequire(import.meta.url);";

/** Bundles src/ into `<root>/dist/lab` unless it is up to date; returns how to run it. */
export async function ensureLabBinaries(root = packageRoot()): Promise<LabBinaries> {
  const src = join(root, 'src');
  const out = join(root, 'dist', 'lab');
  const main = join(out, 'main.mjs');
  const cni = join(out, 'cni', 'svcnet-cni');
  const fresh =
    existsSync(main) &&
    existsSync(cni) &&
    Math.min(statSync(main).mtimeMs, statSync(cni).mtimeMs) > newestMtime(src);
  if (!fresh) {
    // Chunk names carry content hashes: start empty so old chunks do not pile up. A running
    // lab is unaffected: its processes loaded their chunks at start, and new ones start from
    // the new main.mjs.
    rmSync(out, { recursive: true, force: true });
    const esbuild = await import('esbuild');
    await Promise.all([
      esbuild.build({
        entryPoints: [join(src, 'cli', 'main.ts')],
        bundle: true,
        splitting: true,
        platform: 'node',
        target: 'node20',
        format: 'esm',
        outdir: out,
        outExtension: { '.js': '.mjs' },
        banner: { js: REQUIRE_BANNER },
        // esbuild itself (used only here) stays a runtime import, and so does better-sqlite3,
        // a native module (loaded only with --data-dir) that esbuild cannot bundle.
        external: ['esbuild', 'better-sqlite3'],
        logLevel: 'warning',
      }),
      esbuild.build({
        entryPoints: [join(src, 'cli', 'svcnet-cni.ts')],
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        outfile: cni,
        logLevel: 'warning',
      }),
    ]);
    chmodSync(cni, 0o755);
    // The package is "type": "module"; the plugin file has no extension, so mark its folder CommonJS.
    writeFileSync(join(dirname(cni), 'package.json'), '{ "type": "commonjs" }\n');
  }
  return { self: [process.execPath, main], cniBinDir: dirname(cni) };
}
