// The tracer's hop from a node's real routing state: two node namespaces on one segment
// (192.168.77.2 and .3), each with flannel's VXLAN device (`flannel.1`, VNI 1, UDP 8472,
// learning off), a cni0 bridge for its own podCIDR and, for the other node, what flanneld
// programs — `10.244.J.0/24 via 10.244.J.0 dev flannel.1 onlink`, a permanent neighbour with
// the peer's VTEP MAC and an FDB entry sending that MAC to the peer's public IP. A ping over
// the overlay proves the state is real; then node 1's state is dumped with the real `ip` and
// `bridge` (the lab's live read, collectRoutingDump) and traced: the hop to a Pod of node 2
// names flannel.1, VXLAN id 1, the peer's public IP and port 8472 — as `ip route get` picks
// the route — and one of node 1's own Pods is on cni0; `svcnet trace --routes` prints the
// same. Namespaces are `svcnet-trr-t<pid>-…`, swept at start, removed after.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { collectRoutingDump, type DumpRunner } from '../../src/trace/routes/collect.js';
import { parseRoutingDump } from '../../src/trace/routes/dump.js';
import { routeHopOf } from '../../src/trace/routes/hop.js';
import { runCli } from './lib/cli.js';
import { skipOrFail } from './lib/prereq.js';
import { nsExec, sh, skipReason, sweep } from './lib/proxy-lab.js';

const STEM = 'svcnet-trr-t';
const PREFIX = `${STEM}${String(process.pid)}-`;
const PUBLIC = ['', '192.168.77.2', '192.168.77.3'];
const skip = skipOrFail(skipReason(['ip', 'bridge', 'ping']));

/** A service whose only endpoint is a Pod on node 2. */
const RULES = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
-A KUBE-SERVICES -m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A -m comment --comment "default/web:http -> 10.244.2.9:8080" -j KUBE-SEP-1
-A KUBE-SEP-1 -m comment --comment default/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.2.9:8080
COMMIT
`;

/** Runs a command in namespace `ns` as the lab's live read does (no shell). */
function runnerIn(ns: string): DumpRunner {
  return (argv) =>
    new Promise((resolve) => {
      const p = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      p.on('close', (code) => {
        resolve({ code, stdout, stderr });
      });
    });
}

function vtepMAC(ns: string): string {
  const links = JSON.parse(nsExec(ns, 'ip', ['-j', 'link', 'show', 'flannel.1'])) as {
    address: string;
  }[];
  return links[0]?.address ?? '';
}

describe(
  'trace hop from a node namespace with flannel.1, its FDB and onlink routes',
  { skip },
  () => {
    const node = (i: number): string => `${PREFIX}node${String(i)}`;
    const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-routes-'));
    const made: string[] = [];
    let dump = '';

    before(async () => {
      sweep(STEM);
      for (const i of [1, 2]) {
        sh('ip', ['netns', 'add', node(i)]);
        made.push(node(i));
        nsExec(node(i), 'ip', ['link', 'set', 'lo', 'up']);
      }
      // One segment: node 1's eth0 is a veth to node 2's eth0.
      nsExec(node(1), 'ip', [
        'link',
        'add',
        'eth0',
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        node(2),
      ]);
      for (const i of [1, 2]) {
        const ns = node(i);
        nsExec(ns, 'ip', ['addr', 'add', `${PUBLIC[i] ?? ''}/24`, 'dev', 'eth0']);
        nsExec(ns, 'ip', ['link', 'set', 'eth0', 'up']);
        // flanneld's device: VNI 1, UDP 8472, no learning, its subnet's .0 as a /32.
        nsExec(ns, 'ip', [
          ...['link', 'add', 'flannel.1', 'type', 'vxlan', 'id', '1'],
          ...['local', PUBLIC[i] ?? '', 'dev', 'eth0', 'dstport', '8472', 'nolearning'],
        ]);
        nsExec(ns, 'ip', ['addr', 'add', `10.244.${String(i)}.0/32`, 'dev', 'flannel.1']);
        nsExec(ns, 'ip', ['link', 'set', 'flannel.1', 'up']);
        // The node's own pods sit on cni0 (the flannel CNI's bridge).
        nsExec(ns, 'ip', ['link', 'add', 'cni0', 'type', 'bridge']);
        nsExec(ns, 'ip', ['addr', 'add', `10.244.${String(i)}.1/24`, 'dev', 'cni0']);
        nsExec(ns, 'ip', ['link', 'set', 'cni0', 'up']);
      }
      for (const [i, j] of [
        [1, 2],
        [2, 1],
      ] as const) {
        const ns = node(i);
        const peer = `10.244.${String(j)}.0`;
        const mac = vtepMAC(node(j));
        nsExec(ns, 'ip', ['route', 'add', `${peer}/24`, 'via', peer, 'dev', 'flannel.1', 'onlink']);
        nsExec(ns, 'ip', [
          'neigh',
          'replace',
          peer,
          'dev',
          'flannel.1',
          'lladdr',
          mac,
          'nud',
          'permanent',
        ]);
        nsExec(ns, 'bridge', [
          'fdb',
          'append',
          mac,
          'dev',
          'flannel.1',
          'dst',
          PUBLIC[j] ?? '',
          'self',
          'permanent',
        ]);
      }
      dump = await collectRoutingDump(runnerIn(node(1)), node(1));
    });

    after(() => {
      for (const ns of made.reverse()) sh('ip', ['netns', 'del', ns]);
      rmSync(dir, { recursive: true, force: true });
    });

    test("the overlay carries pod traffic: node 1 pings node 2's cni0 over flannel.1", () => {
      nsExec(node(1), 'ping', ['-c', '1', '-W', '3', '10.244.2.1']);
    });

    test('the hop to a Pod on node 2: via flannel.1, VXLAN id 1 to 192.168.77.3 UDP 8472', () => {
      const state = parseRoutingDump(dump);
      const h = routeHopOf(state, '10.244.2.9');
      assert.ok(h, dump);
      assert.equal(h.kind, 'vxlan', dump);
      assert.equal(h.dev, 'flannel.1');
      assert.equal(h.via, '10.244.2.0');
      assert.equal(h.neighbourMAC, vtepMAC(node(2)));
      assert.deepEqual(h.remotes, ['192.168.77.3']);
      assert.equal(h.vni, 1);
      assert.equal(h.port, 8472);
      assert.equal(h.local, '192.168.77.2');
      assert.deepEqual(h.notes, []);
      // The kernel picks the same route.
      const got = nsExec(node(1), 'ip', ['route', 'get', '10.244.2.9']);
      assert.match(got, /via 10\.244\.2\.0 dev flannel\.1/);
      // One of node 1's own Pods is on its bridge.
      const local = routeHopOf(state, '10.244.1.7');
      assert.equal(local?.kind, 'local-link');
      assert.equal(local.dev, 'cni0');
      assert.equal(local.bridge, true);
    });

    test("svcnet trace --routes with the dump: the outcome's hop, in text and JSON", async () => {
      const rules = join(dir, 'rules');
      const routes = join(dir, 'node1.routes');
      writeFileSync(rules, RULES);
      writeFileSync(routes, dump);
      const args = ['trace', '--rules', rules, '--routes', routes, '--node', 'node-1'];
      const pkt = ['--src', '10.244.1.5', '--dst', '10.96.0.20:80'];
      const text = await runCli([...args, ...pkt, '--brief']);
      assert.equal(text.code, 0, text.stderr);
      assert.match(
        text.stdout,
        /hop \(from node-1's routes\): via flannel\.1, next hop 10\.244\.2\.0 \([0-9a-f:]{17}\): encapsulated in VXLAN id 1 to 192\.168\.77\.3 UDP 8472/,
      );
      const json = await runCli([...args, ...pkt, '--json']);
      assert.equal(json.code, 0, json.stderr);
      const doc = JSON.parse(json.stdout) as {
        outcomes: { hop?: { source: string; kind: string } }[];
      };
      assert.deepEqual(
        doc.outcomes.map((o) => [o.hop?.source, o.hop?.kind]),
        [['routes', 'vxlan']],
      );
    });
  },
);
