#!/usr/bin/env node
// The package's `svcnet` command. Runs the tsc build (dist/cli/main.js) when there is one
// (an installed package always has it: prepack builds it); in a checkout that was never built
// it runs the TypeScript source through tsx, so `npm link` works right after `npm ci`.
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli/main.js', import.meta.url);
const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(built)) {
  await import(built.href);
} else if (existsSync(source)) {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write('svcnet: not built and tsx is missing: run `npm ci && npm run build`\n');
    process.exit(1);
  }
  register();
  await import(source.href);
} else {
  process.stderr.write('svcnet: dist/cli/main.js is missing: reinstall the package\n');
  process.exit(1);
}
