// `svcnet trace -f MANIFESTS --routes FILE`: the hop to each endpoint read from node-a's
// routing dumps — flannel's VXLAN (one file with markers), kindnet's gateway routes and the
// local bridge (one dump per file) — in the tree and in --json with its source; without
// --routes the hop comes from the manifests' Nodes and EndpointSlices; a bad dump exits 2
// naming the file and line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const main = join(import.meta.dirname, 'main.ts');

function svcnet(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', main, ...args], { encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Two endpoints: one on node-a (whose rules are walked), one on node-b. */
const MANIFESTS = `apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {podCIDR: 10.244.1.0/24}
status: {addresses: [{type: InternalIP, address: 172.18.0.2}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
spec: {podCIDR: 10.244.2.0/24}
status: {addresses: [{type: InternalIP, address: 172.18.0.4}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.0.20
  ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
- addresses: [10.244.1.7]
  nodeName: node-a
  targetRef: {kind: Pod, name: web-a}
- addresses: [10.244.2.9]
  nodeName: node-b
  targetRef: {kind: Pod, name: web-b}
ports: [{name: http, port: 8080, protocol: TCP}]
`;

const FLANNEL_DUMP = `# node-a, flannel vxlan
# ip route
default via 172.18.0.1 dev eth0
10.244.1.0/24 dev cni0 proto kernel scope link src 10.244.1.1
10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink
172.18.0.0/16 dev eth0 proto kernel scope link src 172.18.0.2
# ip neigh
10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT
# bridge fdb show
aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
# ip -d link show
4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default
    link/ether 22:6a:ac:21:4f:9e brd ff:ff:ff:ff:ff:ff promiscuity 0
    vxlan id 1 local 172.18.0.2 dev eth0 srcport 0 0 dstport 8472 nolearning ttl auto ageing 300
5: cni0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP mode DEFAULT group default
    link/ether e6:89:b9:a3:1a:ec brd ff:ff:ff:ff:ff:ff promiscuity 0
    bridge forward_delay 1500 hello_time 200
`;

interface JsonHop {
  source: string;
  kind?: string;
  node?: string;
  summary: string;
  vni?: number;
  port?: number;
  remotes?: string[];
  toNode?: string;
  toNodeIP?: string;
}

function hops(stdout: string): Map<string, JsonHop | undefined> {
  const doc = JSON.parse(stdout) as { outcomes: { dnat?: string; hop?: JsonHop }[] };
  return new Map(doc.outcomes.map((o) => [o.dnat ?? '', o.hop]));
}

test('svcnet trace --routes: the hop from the node routing dumps, else from the objects', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-routes-'));
  try {
    const manifests = join(dir, 'web.yaml');
    writeFileSync(manifests, MANIFESTS);
    const flannel = join(dir, 'flannel.txt');
    writeFileSync(flannel, FLANNEL_DUMP);
    const base = ['trace', '-f', manifests, '--node', 'node-a', '--src', '10.244.1.5'];
    const args = [...base, '--dst', '10.96.0.20:80'];

    const json = svcnet([...args, '--routes', flannel, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const h = hops(json.stdout);
    const remote = h.get('10.244.2.9:8080');
    assert.equal(remote?.source, 'routes');
    assert.equal(remote.node, 'node-a');
    assert.equal(remote.kind, 'vxlan');
    assert.equal(remote.vni, 1);
    assert.equal(remote.port, 8472);
    assert.deepEqual(remote.remotes, ['172.18.0.4']);
    const local = h.get('10.244.1.7:8080');
    assert.equal(local?.kind, 'local-link');
    assert.equal(local.summary, 'dev cni0: the local bridge, the Pod is on this node');

    const text = svcnet([...args, '--routes', flannel, '--brief']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /hop \(from node-a's routes\): via flannel\.1, next hop 10\.244\.2\.0 \(aa:bb:cc:dd:ee:ff\): encapsulated in VXLAN id 1 to 172\.18\.0\.4 UDP 8472\n\s+route: 10\.244\.2\.0\/24 via 10\.244\.2\.0 dev flannel\.1 onlink \(line 5\)/,
    );

    // kindnet: `ip route` alone in one file, detected without a marker.
    const kindnet = join(dir, 'kindnet-routes');
    writeFileSync(
      kindnet,
      '10.244.2.0/24 via 172.18.0.4 dev eth0\n10.244.1.7 dev veth1 scope host\n',
    );
    const k = hops(svcnet([...args, '--routes', kindnet, '--json']).stdout);
    assert.equal(k.get('10.244.2.9:8080')?.summary, 'via 172.18.0.4 dev eth0');
    assert.equal(k.get('10.244.1.7:8080')?.kind, 'local-link');

    // No --routes: the objects place the endpoint on node-b, at its InternalIP and podCIDR.
    const objects = hops(svcnet([...args, '--json']).stdout).get('10.244.2.9:8080');
    assert.equal(objects?.source, 'objects');
    assert.equal(objects.toNode, 'node-b');
    assert.equal(objects.toNodeIP, '172.18.0.4');

    // A blackhole route: the packet is dropped there, the route named.
    const blackhole = join(dir, 'blackhole');
    writeFileSync(blackhole, '# ip route\nblackhole 10.244.2.0/24\n');
    const b = svcnet([...args, '--routes', blackhole, '--brief']);
    assert.match(b.stdout, /dropped by the blackhole route 10\.244\.2\.0\/24/);

    const bad = join(dir, 'bad');
    writeFileSync(
      bad,
      '# ip route\ndefault via 172.18.0.1 dev eth0\n10.244.2.0/24 via 172.18.0.400 dev eth0\n',
    );
    const failed = svcnet([...args, '--routes', bad]);
    assert.equal(failed.code, 2);
    assert.match(
      failed.stderr,
      /--routes .*bad: line 3: ip route: via: not an IP address: "172\.18\.0\.400"/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
