#!/usr/bin/env node
// The package's `svcnet-cni` command: the CNI plugin bundle, build/cni/svcnet-cni (made by
// `npm run build`, shipped in the package). In a checkout it runs the TypeScript source
// through tsx instead, so it never runs a stale bundle of edited source.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const bundle = join(__dirname, '..', 'build', 'cni', 'svcnet-cni');
const source = join(__dirname, '..', 'src', 'cli', 'svcnet-cni.ts');
function runBundle() {
  if (existsSync(bundle)) {
    require(bundle);
    return;
  }
  process.stderr.write('svcnet-cni: build/cni/svcnet-cni is missing: run `npm run build`\n');
  process.exit(1);
}

if (existsSync(source)) {
  import('tsx/esm/api').then(
    ({ register }) => {
      register();
      return import(pathToFileURL(source).href).catch((e) => {
        process.stderr.write(`svcnet-cni: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exit(1);
      });
    },
    // a checkout without devDependencies: the bundle, if it was built
    runBundle,
  );
} else runBundle();
