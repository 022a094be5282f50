// The live read through a scripted runner: every command runs once, in order, and its output
// lands under its marker so the one-file parser reads it back; a failing command is an
// EXEC_FAILED error naming the command and the node.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { ROUTING_DUMP_COMMANDS, collectRoutingDump, type DumpRunner } from './collect.js';
import { parseRoutingDump } from './dump.js';
import { routeHopOf } from './hop.js';

const OUTPUT: Readonly<Record<string, string>> = {
  'ip route show': '10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink \n',
  'ip -6 route show': 'fe80::/64 dev eth0 proto kernel metric 256 pref medium\n',
  'ip neigh show': '10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT \n',
  'bridge fdb show': 'aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent\n',
  'ip -d link show':
    '4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN\n    vxlan id 1 local 172.18.0.2 dev eth0 srcport 0 0 dstport 8472 nolearning \n',
};

test('collectRoutingDump: each command once, in order, read back as one marked file', async () => {
  const ran: string[] = [];
  const run: DumpRunner = (argv) => {
    const cmd = argv.join(' ');
    ran.push(cmd);
    return Promise.resolve({ code: 0, stdout: OUTPUT[cmd] ?? '', stderr: '' });
  };
  const text = await collectRoutingDump(run, 'node-a');
  assert.deepEqual(
    ran,
    ROUTING_DUMP_COMMANDS.map((a) => a.join(' ')),
  );
  assert.deepEqual(ran, Object.keys(OUTPUT));
  const h = routeHopOf(parseRoutingDump(text), '10.244.2.3');
  assert.equal(
    h?.summary,
    'via flannel.1, next hop 10.244.2.0 (aa:bb:cc:dd:ee:ff): encapsulated in VXLAN id 1 to 172.18.0.4 UDP 8472',
  );
});

test('collectRoutingDump: a failing command names itself and the node', async () => {
  const run: DumpRunner = (argv) =>
    Promise.resolve(
      argv[0] === 'bridge'
        ? { code: 127, stdout: '', stderr: 'nsenter: failed to execute bridge: No such file\n' }
        : { code: 0, stdout: '', stderr: '' },
    );
  await assert.rejects(
    collectRoutingDump(run, 'node-a'),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'EXEC_FAILED' &&
      e.message ===
        'bridge fdb show on node-a: exit 127: nsenter: failed to execute bridge: No such file',
  );
});
