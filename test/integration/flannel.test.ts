// `svcnet flannel` as flanneld runs: one agent per node namespace, each a child process
// watching a real `svcnet apiserver`. Three nodes sit on separate /24 segments behind a router
// namespace (node i: 192.168.i.2, router 192.168.i.1), so only the VXLAN overlay can carry
// pod traffic between them; each node has one "pod" namespace on a veth (10.244.i.2, gateway
// 10.244.i.1). Checks: pod-to-pod across nodes fails before the agents and works after;
// node 1's uplink carries UDP 8472 (an iptables counter rule); flannel.1 is `vxlan id 1 …
// dstport 8472` with one FDB entry per other node and the Nodes carry flannel's annotations;
// a deleted flannel.1 is back within 5 s and traffic resumes; a deleted Node's route,
// neighbour and FDB entries leave the other nodes. Then host-gw on one shared segment, and
// the bad-input exits. Nodes 1 and 2 read net-conf.json from a file, node 3 from the
// kube-flannel-cfg ConfigMap. Namespaces are `svcnet-fl-t<pid>-…`, swept at start, removed after.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { node as wireNode } from '../../src/kube/testing.js';
import { runCli } from './lib/cli.js';
import { skipOrFail } from './lib/prereq.js';
import { nsExec, sh, skipReason, sweep, waitFor } from './lib/proxy-lab.js';
import { LiveApiServer } from './lib/proxy-live.js';

const MAIN = resolve(import.meta.dirname, '../../src/cli/main.ts');
const STEM = 'svcnet-fl-t';
const PREFIX = `${STEM}${process.pid}-`;
const API_IP = '10.99.0.1';
const ROUTER = `${PREFIX}router`;
const NET_CONF = '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":1,"Port":8472}}';
const POD_SERVER =
  "require('node:http').createServer((q,s)=>s.end('pod '+process.argv[1])).listen(8080,'0.0.0.0')";

/** How long an agent may take to start: client-node alone loads in 30 s under load here. */
const AGENT_START_MS = 240_000;
const skip = skipOrFail(skipReason(['ip', 'bridge', 'iptables', 'iptables-restore', 'curl']));

function ok(ns: string, cmd: string, args: string[]): boolean {
  try {
    nsExec(ns, cmd, args);
    return true;
  } catch {
    return false;
  }
}

function curl(fromPod: string, ip: string): string | undefined {
  try {
    return nsExec(fromPod, 'curl', ['-s', '--max-time', '2', `http://${ip}:8080/`]);
  } catch {
    return undefined;
  }
}

/** A test cluster: the router, nodes, pods and the processes started in them. */
class Cluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'svcnet-flannel-'));
  readonly procs: ChildProcess[] = [];
  readonly agents = new Map<string, { proc: ChildProcess; log: string }>();
  readonly namespaces: string[] = [];

  addNs(name: string): string {
    sh('ip', ['netns', 'add', name]);
    this.namespaces.push(name);
    nsExec(name, 'ip', ['link', 'set', 'lo', 'up']);
    nsExec(name, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    return name;
  }

  /** A veth from `a` (name `aIf`, address `aCidr`) to `b`. */
  veth(a: string, aIf: string, aCidr: string | undefined, b: string, bIf: string): void {
    nsExec(a, 'ip', ['link', 'add', aIf, 'type', 'veth', 'peer', 'name', bIf, 'netns', b]);
    if (aCidr !== undefined) nsExec(a, 'ip', ['addr', 'add', aCidr, 'dev', aIf]);
    nsExec(a, 'ip', ['link', 'set', aIf, 'up']);
  }

  /** The pod namespace of node `i`: 10.244.i.2/24 via the node's 10.244.i.1, an HTTP server. */
  addPod(node: string, i: number): string {
    const pod = this.addNs(`${PREFIX}pod${i}`);
    this.veth(node, 'veth0', `10.244.${i}.1/24`, pod, 'eth0');
    nsExec(pod, 'ip', ['addr', 'add', `10.244.${i}.2/24`, 'dev', 'eth0']);
    nsExec(pod, 'ip', ['link', 'set', 'eth0', 'up']);
    nsExec(pod, 'ip', ['route', 'add', 'default', 'via', `10.244.${i}.1`]);
    const p = spawn('ip', ['netns', 'exec', pod, process.execPath, '-e', POD_SERVER, String(i)], {
      stdio: 'ignore',
    });
    this.procs.push(p);
    return pod;
  }

  startAgent(ns: string, node: string, kubeconfig: string, extra: string[] = []): void {
    const confFile = join(this.dir, 'net-conf.json');
    writeFileSync(confFile, NET_CONF);
    const argv = [
      ...['ip', 'netns', 'exec', ns, process.execPath, '--import', 'tsx', MAIN, 'flannel'],
      ...['--kubeconfig', kubeconfig, '--node', node],
      // node-3 reads net-conf.json from the ConfigMap kube-system/kube-flannel-cfg.
      ...(node === 'node-3' ? [] : ['--net-conf', confFile]),
      ...['--subnet-file', join(this.dir, `${node}.env`), '--ip-masq', ...extra],
    ];
    const proc = spawn(argv[0] ?? 'ip', argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: resolve(import.meta.dirname, '../..'),
    });
    const entry = { proc, log: '' };
    proc.stderr.on('data', (d: Buffer) => {
      entry.log += d.toString();
    });
    this.agents.set(node, entry);
  }

  /** Waits until every agent logged 'Flannel running'; the ms it took. */
  async waitRunning(timeoutMs: number): Promise<number> {
    return waitFor(
      () => [...this.agents.values()].every((a) => a.log.includes('Flannel running')),
      timeoutMs,
      'every agent running',
    ).catch((e: unknown) => {
      this.dumpLogs();
      throw e;
    });
  }

  dumpLogs(): void {
    for (const [n, a] of this.agents) process.stderr.write(`--- agent ${n}\n${a.log}\n`);
  }

  async stopAgents(): Promise<void> {
    for (const { proc } of this.agents.values()) {
      if (proc.exitCode !== null || proc.signalCode !== null) continue;
      const gone = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await gone;
    }
    this.agents.clear();
  }

  async destroy(): Promise<void> {
    await this.stopAgents();
    for (const p of this.procs) p.kill('SIGKILL');
    for (const ns of this.namespaces.reverse()) sh('ip', ['netns', 'del', ns]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Our wire Node (the API's JSON) as client-node's model class, which has the same shape. */
function nodeObject(name: string, podCIDR: string): k8s.V1Node {
  return wireNode(name, { podCIDR }) as unknown as k8s.V1Node;
}

/** UDP packets to port 8472 counted leaving the node's eth0 (the counter rule's packets). */
function vxlanPackets(ns: string): number {
  const out = nsExec(ns, 'iptables', ['-w', '5', '-t', 'filter', '-vxnL', 'OUTPUT']);
  const line = out.split('\n').find((l) => l.includes('udp dpt:8472'));
  return Number(line?.trim().split(/\s+/)[0] ?? 0);
}

function fdbEntries(ns: string): { mac: string; dst?: string }[] {
  return (
    JSON.parse(nsExec(ns, 'bridge', ['-j', 'fdb', 'show', 'dev', 'flannel.1'])) as {
      mac: string;
      dst?: string;
    }[]
  ).filter((e) => e.dst !== undefined);
}

/** Everything of the peer at 10.244.3.0 / 192.168.3.2 that node `ns` holds. */
function entriesOfNode3(ns: string): string {
  const routes = nsExec(ns, 'ip', ['route', 'show', '10.244.3.0/24']);
  const neigh = nsExec(ns, 'ip', ['neigh', 'show', 'dev', 'flannel.1', '10.244.3.0']);
  const fdb = fdbEntries(ns).filter((e) => e.dst === '192.168.3.2');
  return [routes.trim(), neigh.trim(), ...fdb.map((e) => `fdb ${e.mac}`)].join(' ').trim();
}

describe('svcnet flannel: VXLAN overlay across three segments, host-gw on one', { skip }, () => {
  const c = new Cluster();
  let api: LiveApiServer;
  let core: k8s.CoreV1Api;
  const nodes: string[] = [];
  const pods: string[] = [];

  before(async () => {
    sweep(STEM);
    c.addNs(ROUTER);
    // The API server listens in the test's namespace; the router reaches it over a veth.
    const testIf = `flt${process.pid % 100000}`;
    sh('ip', ['link', 'add', testIf, 'type', 'veth', 'peer', 'name', 'api', 'netns', ROUTER]);
    sh('ip', ['addr', 'add', `${API_IP}/30`, 'dev', testIf]);
    sh('ip', ['link', 'set', testIf, 'up']);
    sh('ip', ['route', 'add', '192.168.0.0/16', 'via', '10.99.0.2']);
    nsExec(ROUTER, 'ip', ['addr', 'add', '10.99.0.2/30', 'dev', 'api']);
    nsExec(ROUTER, 'ip', ['link', 'set', 'api', 'up']);
    for (const i of [1, 2, 3]) {
      const node = c.addNs(`${PREFIX}node${i}`);
      c.veth(ROUTER, `seg${i}`, `192.168.${i}.1/24`, node, 'eth0');
      nsExec(node, 'ip', ['addr', 'add', `192.168.${i}.2/24`, 'dev', 'eth0']);
      nsExec(node, 'ip', ['link', 'set', 'eth0', 'up']);
      nsExec(node, 'ip', ['route', 'add', 'default', 'via', `192.168.${i}.1`]);
      nodes.push(node);
      pods.push(c.addPod(node, i));
    }
    api = new LiveApiServer(16443, { host: API_IP });
    await api.start();
    core = api.client().core;
    const cm = new k8s.V1ConfigMap();
    cm.metadata = new k8s.V1ObjectMeta();
    cm.metadata.name = 'kube-flannel-cfg';
    cm.data = { 'net-conf.json': NET_CONF };
    await core.createNamespacedConfigMap({ namespace: 'kube-system', body: cm });
    for (const i of [1, 2, 3])
      await core.createNode({ body: nodeObject(`node-${i}`, `10.244.${i}.0/24`) });
    const n1 = nodes[0] ?? '';
    nsExec(n1, 'iptables', [
      '-w',
      '5',
      '-A',
      'OUTPUT',
      '-o',
      'eth0',
      '-p',
      'udp',
      '--dport',
      '8472',
    ]);
  });

  after(async () => {
    await c.destroy();
    await api.stop();
    api.remove();
    spawnSync('ip', ['link', 'del', `flt${process.pid % 100000}`]);
  });

  test('pods on different segments do not reach each other without the overlay', () => {
    assert.equal(curl(pods[0] ?? '', '10.244.3.2'), undefined);
  });

  test("with an agent per node, pod 1 reaches pod 3 over UDP 8472 on node 1's uplink", async () => {
    nodes.forEach((ns, i) => {
      c.startAgent(ns, `node-${i + 1}`, api.kubeconfig);
    });
    const before = vxlanPackets(nodes[0] ?? '');
    // Loading the client library alone takes tens of seconds on a loaded machine.
    const up = await c.waitRunning(AGENT_START_MS);
    const ms = await waitFor(
      () => curl(pods[0] ?? '', '10.244.3.2') === 'pod 3',
      20_000,
      'pod 1 -> pod 3 over flannel',
    ).catch((e: unknown) => {
      c.dumpLogs();
      throw e;
    });
    process.stderr.write(
      `flannel: agents running after ${up} ms; pod 1 -> pod 3 reachable ${ms} ms later\n`,
    );
    assert.equal(curl(pods[1] ?? '', '10.244.1.2'), 'pod 1');
    assert.ok(vxlanPackets(nodes[0] ?? '') > before, 'UDP 8472 packets left node 1 on eth0');
  });

  test('flannel.1 is vxlan id 1 dstport 8472 with an FDB entry per other node; Nodes are annotated; subnet.env written', async () => {
    for (const ns of nodes) {
      const link = nsExec(ns, 'ip', ['-d', 'link', 'show', 'flannel.1']);
      assert.match(link, /vxlan id 1 .*dstport 8472/);
      assert.match(link, /mtu 1450/);
      assert.equal(fdbEntries(ns).length, 2, `${ns}: ${JSON.stringify(fdbEntries(ns))}`);
    }
    const n3 = await core.readNode({ name: 'node-3' });
    const ann = n3.metadata?.annotations ?? {};
    assert.equal(ann['flannel.alpha.coreos.com/backend-type'], 'vxlan');
    assert.equal(ann['flannel.alpha.coreos.com/public-ip'], '192.168.3.2');
    assert.equal(ann['flannel.alpha.coreos.com/kube-subnet-manager'], 'true');
    const mac = nsExec(nodes[2] ?? '', 'cat', ['/sys/class/net/flannel.1/address']).trim();
    assert.deepEqual(JSON.parse(ann['flannel.alpha.coreos.com/backend-data'] ?? ''), {
      VNIType: 1,
      VtepMAC: mac,
    });
    assert.equal(
      readFileSync(join(c.dir, 'node-3.env'), 'utf8'),
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
    );
  });

  test('ip link del flannel.1 on node 3: back within 5 s, traffic resumes', async () => {
    const n3 = nodes[2] ?? '';
    nsExec(n3, 'ip', ['link', 'del', 'flannel.1']);
    const ms = await waitFor(
      () => ok(n3, 'ip', ['link', 'show', 'flannel.1']),
      5000,
      'flannel.1 re-created on node 3',
    );
    process.stderr.write(`flannel: flannel.1 re-created ${ms} ms after ip link del\n`);
    await waitFor(() => curl(pods[0] ?? '', '10.244.3.2') === 'pod 3', 10_000, 'traffic resumes');
  });

  test('deleting Node node-3 removes its route, neighbour and FDB entries from nodes 1 and 2', async () => {
    for (const ns of nodes.slice(0, 2)) assert.notEqual(entriesOfNode3(ns), '');
    await core.deleteNode({ name: 'node-3' });
    for (const ns of nodes.slice(0, 2))
      await waitFor(() => entriesOfNode3(ns) === '', 10_000, `${ns} forgets node 3`);
    // The others keep working.
    assert.equal(curl(pods[0] ?? '', '10.244.2.2'), 'pod 2');
  });

  test("host-gw: two nodes on one segment route each other's podCIDR via the node IP", async () => {
    await c.stopAgents();
    const sw = c.addNs(`${PREFIX}switch`);
    nsExec(sw, 'ip', ['link', 'add', 'br0', 'type', 'bridge']);
    nsExec(sw, 'ip', ['link', 'set', 'br0', 'up']);
    c.veth(ROUTER, 'seg10', '192.168.10.1/24', sw, 'up0');
    const gwNodes: string[] = [];
    const gwPods: string[] = [];
    for (const [k, i] of [
      [1, 11],
      [2, 12],
    ] as const) {
      const node = c.addNs(`${PREFIX}gw${k}`);
      c.veth(sw, `p${k}`, undefined, node, 'eth0');
      nsExec(sw, 'ip', ['link', 'set', `p${k}`, 'master', 'br0']);
      nsExec(node, 'ip', ['addr', 'add', `192.168.10.${k + 1}/24`, 'dev', 'eth0']);
      nsExec(node, 'ip', ['link', 'set', 'eth0', 'up']);
      nsExec(node, 'ip', ['route', 'add', 'default', 'via', '192.168.10.1']);
      gwNodes.push(node);
      gwPods.push(c.addPod(node, i));
      await core.createNode({ body: nodeObject(`gw-${k}`, `10.244.${i}.0/24`) });
    }
    nsExec(sw, 'ip', ['link', 'set', 'up0', 'master', 'br0']);
    nsExec(sw, 'ip', ['link', 'set', 'up0', 'up']);
    gwNodes.forEach((ns, k) => {
      c.startAgent(ns, `gw-${k + 1}`, api.kubeconfig, ['--backend', 'host-gw']);
    });
    await c.waitRunning(AGENT_START_MS);
    await waitFor(() => curl(gwPods[0] ?? '', '10.244.12.2') === 'pod 12', 20_000, 'host-gw');
    assert.match(
      nsExec(gwNodes[0] ?? '', 'ip', ['route', 'show', '10.244.12.0/24']),
      /10\.244\.12\.0\/24 via 192\.168\.10\.3 dev eth0/,
    );
    assert.ok(!ok(gwNodes[0] ?? '', 'ip', ['link', 'show', 'flannel.1']), 'no VXLAN device');
  });
});

describe('svcnet flannel: bad input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-flannel-bad-'));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  for (const [what, conf, field] of [
    ['bad CIDR', '{"Network":"10.244.0.0/40"}', 'Network: invalid IPv4 CIDR "10.244.0.0/40"'],
    [
      'unknown backend',
      '{"Network":"10.244.0.0/16","Backend":{"Type":"udp"}}',
      'Backend.Type: unsupported backend "udp"',
    ],
  ] as const)
    test(`an invalid net-conf.json (${what}) exits 2 naming the field`, async () => {
      const file = join(dir, `${what.replace(' ', '-')}.json`);
      writeFileSync(file, conf);
      const run = await runCli(
        ['flannel', '--kubeconfig', '/nonexistent', '--node', 'n1', '--net-conf', file],
        { timeoutMs: 60_000 },
      );
      assert.equal(run.code, 2, run.stderr);
      assert.ok(run.stderr.includes(`svcnet flannel: ${file}: ${field}`), run.stderr);
    });
});
