// The programs the lab runs: the svcnet CLI for its components and Pods, and the svcnet-cni
// plugin for its node agents. Run from source (`node --import tsx src/cli/main.ts`), every
// process would compile the TypeScript again: about a second of CPU each, with ten or more per
// node. So the lab runs esbuild bundles: a Pod's server starts in about 0.3 s.
//
// Where they live (build outputs never share a folder):
//   dist/           tsc output (`npm run build`), what the package's `svcnet` bin runs
//   build/lab/      the lab bundle: main.mjs plus its chunks
//   build/cni/      the svcnet-cni plugin bundle, named as CNI_PATH lookups expect
// `npm run build` (and so `npm pack`, through prepack) makes all three. In a checkout (src/
// present) `lab up` rebuilds the two bundles when a source file is newer (about 3 s); in an
// installed package (no src/) it runs the bundles the package ships and never writes there.

import { chmodSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';
import { SvcnetError } from '../errors.js';

export interface LabBinaries {
  /** argv prefix that runs the svcnet CLI. */
  readonly self: readonly string[];
  /** Directory holding `svcnet-cni`, for CNI_PATH. */
  readonly cniBinDir: string;
}

/** The repository (or package) root: src/lab/, dist/lab/ and build/lab/ sit two levels below it. */
export function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/** Paths of the two bundles under a root. */
export function bundlePaths(root: string): {
  labDir: string;
  main: string;
  cniDir: string;
  cni: string;
} {
  const labDir = join(root, 'build', 'lab');
  const cniDir = join(root, 'build', 'cni');
  return { labDir, main: join(labDir, 'main.mjs'), cniDir, cni: join(cniDir, 'svcnet-cni') };
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

/** What stays a runtime import: esbuild (only used here) and native addons (better-sqlite3, koffi). */
const EXTERNAL = ['esbuild', 'better-sqlite3', 'koffi'];

/**
 * What both bundles share: one self-contained file set for the Node this package requires.
 * Whitespace and syntax are minified (identifiers are kept, so stack traces and logs stay
 * readable): less text for each of the lab's processes to read and compile at start.
 */
const NODE_BUNDLE = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  minifyWhitespace: true,
  minifySyntax: true,
} as const;

/** Bundles the lab CLI (`build/lab/`) and/or the CNI plugin (`build/cni/`) from `<root>/src`. */
export async function buildBundles(
  root = packageRoot(),
  which: 'all' | 'lab' | 'cni' = 'all',
): Promise<void> {
  const src = join(root, 'src');
  const p = bundlePaths(root);
  const esbuild = await import('esbuild');
  const bundles: { dir: string; options: BuildOptions }[] = [];
  if (which !== 'cni')
    bundles.push({
      dir: p.labDir,
      options: {
        entryPoints: [join(src, 'cli', 'main.ts')],
        splitting: true,
        format: 'esm',
        outdir: p.labDir,
        outExtension: { '.js': '.mjs' },
        banner: { js: REQUIRE_BANNER },
        external: EXTERNAL,
      },
    });
  if (which !== 'lab')
    bundles.push({
      dir: p.cniDir,
      options: { entryPoints: [join(src, 'cli', 'svcnet-cni.ts')], format: 'cjs', outfile: p.cni },
    });
  await Promise.all(
    bundles.map(({ dir, options }) => {
      // Chunk names carry content hashes: start empty so old chunks do not pile up. A running
      // lab is unaffected: its processes loaded their chunks at start, and new ones start from
      // the new main.mjs.
      rmSync(dir, { recursive: true, force: true });
      return esbuild.build({ ...NODE_BUNDLE, ...options });
    }),
  );
  if (which !== 'lab') {
    chmodSync(p.cni, 0o755);
    // The package is "type": "module"; the plugin file has no extension, so mark its folder CommonJS.
    writeFileSync(join(p.cniDir, 'package.json'), '{ "type": "commonjs" }\n');
  }
}

/**
 * The bundles the lab runs. In a checkout (src/ present) they are rebuilt first when missing
 * or older than a source file; in an installed package they must be there (prepack builds
 * them): a package missing them throws NOT_FOUND rather than writing into the install.
 */
export async function ensureLabBinaries(root = packageRoot()): Promise<LabBinaries> {
  const p = bundlePaths(root);
  const src = join(root, 'src');
  const present = existsSync(p.main) && existsSync(p.cni);
  if (existsSync(join(src, 'cli', 'main.ts'))) {
    const fresh =
      present && Math.min(statSync(p.main).mtimeMs, statSync(p.cni).mtimeMs) > newestMtime(src);
    if (!fresh) await buildBundles(root);
  } else if (!present)
    throw new SvcnetError(
      'NOT_FOUND',
      `lab: the package at ${root} has no lab bundles (${p.main}, ${p.cni}); reinstall a tarball made by \`npm pack\` (its prepack builds them)`,
    );
  return { self: [process.execPath, p.main], cniBinDir: p.cniDir };
}
