// The in-process half of `npm run bench -- cni` (bench/cni.bench.ts starts it inside the
// bench's node namespace with nsenter; not a bench file of its own): attaches and detaches
// the given Pod namespaces one at a time through CniRuntime with svcnet-cni in-process —
// the lab node agent's path (src/lab/node-agent-main.ts): same conflist shape, file result
// cache, host-local files — and prints the per-call times as one JSON line on stdout.
//   node --import tsx bench/cni-inprocess.ts <config.json> <workdir> <netns path>…

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessSvcnetCni } from '../src/cni/in-process.js';
import { inProcessPluginDeps } from '../src/cni/in-process-netlink.js';
import { FileResultCache } from '../src/cni/runtime/cache.js';
import { parseConflist } from '../src/cni/runtime/parse-conflist.js';
import { CniRuntime, type Attachment } from '../src/cni/runtime/runtime.js';
import { RealExecer } from '../src/os/exec.js';

const [configFile = '', work = '', ...netns] = process.argv.slice(2);
const execer = new RealExecer();
const rt = new CniRuntime({
  execer,
  cniPath: [],
  cache: new FileResultCache(join(work, 'cni-cache')),
  inProcess: new Map([['svcnet-cni', inProcessSvcnetCni(inProcessPluginDeps(execer))]]),
});
const conflist = parseConflist(readFileSync(configFile, 'utf8'), 'bench network');
const att = (i: number): Attachment => ({
  containerId: `bench${String(i)}`,
  netns: netns[i] ?? '',
  ifName: 'eth0',
  conflist,
});
const add: number[] = [];
const del: number[] = [];
for (let i = 0; i < netns.length; i++) {
  const t0 = performance.now();
  await rt.add(att(i));
  add.push(performance.now() - t0);
}
for (let i = 0; i < netns.length; i++) {
  const t0 = performance.now();
  await rt.del(att(i));
  del.push(performance.now() - t0);
}
process.stdout.write(`${JSON.stringify({ add, del })}\n`);
