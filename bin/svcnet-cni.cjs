#!/usr/bin/env node
// The package's `svcnet-cni` command: the CNI plugin bundle (build/cni/svcnet-cni, made by
// `npm run build` and shipped in the package); in a checkout that was never built, the
// TypeScript source through tsx.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const bundle = join(__dirname, '..', 'build', 'cni', 'svcnet-cni');
const source = join(__dirname, '..', 'src', 'cli', 'svcnet-cni.ts');
if (existsSync(bundle)) {
  require(bundle);
} else if (existsSync(source)) {
  import('tsx/esm/api')
    .then(({ register }) => {
      register();
      return import(require('node:url').pathToFileURL(source).href);
    })
    .catch((e) => {
      process.stderr.write(`svcnet-cni: not built (npm run build): ${e.message}\n`);
      process.exit(1);
    });
} else {
  process.stderr.write('svcnet-cni: build/cni/svcnet-cni is missing: reinstall the package\n');
  process.exit(1);
}
