#!/usr/bin/env node
// The package's `svcnet` command. In an installed package (no src/) it runs the tsc build,
// dist/cli/main.js, which prepack made. In a checkout (`npm link`, or right after `npm ci`)
// it runs the TypeScript source through tsx, so it never runs a stale build of edited source.
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli/main.js', import.meta.url);
const source = new URL('../src/cli/main.ts', import.meta.url);
let tsx;
if (existsSync(source)) {
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    // a checkout without devDependencies: fall back to the build
  }
}
if (tsx !== undefined) {
  tsx.register();
  await import(source.href);
} else if (existsSync(built)) {
  await import(built.href);
} else {
  process.stderr.write('svcnet: dist/cli/main.js is missing: run `npm ci && npm run build`\n');
  process.exit(1);
}
