// `npm run build` step 2 (after tsc): the lab bundle (build/lab/) and the svcnet-cni plugin
// bundle (build/cni/), each in its own folder, apart from tsc's dist/. `npm run build:cni`
// runs it with `cni` to make only the plugin.
//   node --import tsx scripts/bundle.ts [all|lab|cni]

import { buildBundles, bundlePaths, packageRoot } from '../src/lab/binaries.js';

const which = process.argv[2] ?? 'all';
if (which !== 'all' && which !== 'lab' && which !== 'cni') {
  process.stderr.write(`bundle: expected all, lab or cni, got ${which}\n`);
  process.exit(2);
}
const root = packageRoot();
await buildBundles(root, which);
const p = bundlePaths(root);
if (which !== 'cni') process.stderr.write(`bundle: ${p.main}\n`);
if (which !== 'lab') process.stderr.write(`bundle: ${p.cni}\n`);
