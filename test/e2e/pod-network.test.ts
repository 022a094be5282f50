// The lab's pod networks on a live lab (`lab up --pod-network`), in the network that
// SVCNET_E2E_POD_NETWORK names (flannel when unset: the default kindnet is what every other
// suite runs on). flannel: each node's flannel.1 is `vxlan id 1 … dstport 8472` with one FDB
// entry per other node, the Nodes carry flannel's annotations, pod-to-pod across nodes leaves
// the sender's uplink as UDP 8472, and fails while the receiver's flannel.1 is gone and its
// agent stopped (nodes are on isolated hub ports: nothing else carries pod traffic), then works
// again once the agent is let go and recreates it. flannel-host-gw: no flannel.1, each node routes the
// others' podCIDRs via their node IPs. kubenet: cbr0 holds the podCIDR's gateway with the Pods'
// veths on it, nodes route no podCIDR, and pod-to-pod across nodes crosses the hub's route.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { skipOrFail } from '../integration/lib/prereq.js';
import { E2E_POD_NETWORK, E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';

const skip = skipOrFail(e2eSkipReason());
const NET = E2E_POD_NETWORK === 'kindnet' ? 'flannel' : E2E_POD_NETWORK;
const NS = 'podnet';

describe(`pod network ${NET} in a live lab`, { skip }, () => {
  let lab: E2eLab;
  /** Two Pods: a on the first worker, b on the second. */
  const ip = { a: '', b: '' };
  let worker = '';
  let worker2 = '';

  before(async () => {
    lab = await E2eLab.up('pn', 3, 240_000, { podNetwork: NET });
    worker = lab.nodes[1]?.name ?? '';
    worker2 = lab.nodes[2]?.name ?? '';
    await lab.createNamespace(NS);
    await lab.apply([
      netexecPod(NS, 'a', { node: worker }),
      netexecPod(NS, 'b', { node: worker2 }),
    ]);
    await lab.podsReady(NS, ['a', 'b']);
    ip.a = await lab.podIP(NS, 'a');
    ip.b = await lab.podIP(NS, 'b');
  });
  after(async () => {
    await lab.down();
  });

  /** curl from Pod a to Pod b's hostname endpoint; the exit code and body. */
  async function aToB(): Promise<{ code: number; body: string }> {
    return lab.curl(`${NS}/a`, `http://${ip.b}:8080/hostname`, 2);
  }

  /** The packets of the counter rule `spec` in `chain` of the node or hub `where`. */
  async function counted(where: string, chain: string, match: string): Promise<number> {
    const out = (await lab.exec(where, ['iptables', '-w', '5', '-vxnL', chain])).stdout;
    const line = out.split('\n').find((l) => l.includes(match));
    return Number(line?.trim().split(/\s+/)[0] ?? NaN);
  }

  test('lab status records the pod network', () => {
    assert.equal(lab.lab.state.plan.podNetwork, NET);
  });

  if (NET === 'flannel') {
    test('flannel.1 is vxlan id 1 dstport 8472 with one FDB entry per other node', async () => {
      for (const n of lab.nodes) {
        const link = (await lab.exec(n.name, ['ip', '-d', 'link', 'show', 'flannel.1'])).stdout;
        assert.match(link, /vxlan id 1 /, n.name);
        assert.match(link, /dstport 8472/, n.name);
        const fdb = await eventually(`${n.name}'s FDB`, async () => {
          const out = await lab.exec(n.name, ['bridge', 'fdb', 'show', 'dev', 'flannel.1']);
          const dsts = out.stdout.split('\n').filter((l) => / dst \d/.test(l));
          return dsts.length === lab.nodes.length - 1 ? dsts : undefined;
        });
        for (const other of lab.nodes.filter((o) => o !== n))
          assert.ok(
            fdb.some((l) => l.includes(` dst ${other.ip} `)),
            `${n.name} FDB entry for ${other.name}`,
          );
      }
    });

    test("the Nodes carry flannel's annotations", async () => {
      for (const n of lab.nodes) {
        const ann = (await lab.client.get('Node', '', n.name))?.metadata?.annotations ?? {};
        assert.equal(ann['flannel.alpha.coreos.com/backend-type'], 'vxlan');
        assert.equal(ann['flannel.alpha.coreos.com/public-ip'], n.ip);
        const data = JSON.parse(ann['flannel.alpha.coreos.com/backend-data'] ?? '{}') as {
          VNIType?: number;
          VtepMAC?: string;
        };
        assert.equal(data.VNIType, 1);
        assert.match(data.VtepMAC ?? '', /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
      }
    });

    test("cross-node pod traffic leaves the sender's uplink as UDP 8472", async () => {
      const rule = ['OUTPUT', '-o', 'eth0', '-p', 'udp', '--dport', '8472'];
      await lab.exec(worker, ['iptables', '-w', '5', '-I', ...rule]);
      try {
        const before = await counted(worker, 'OUTPUT', 'udp dpt:8472');
        const r = await aToB();
        assert.equal(r.code, 0, 'a reaches b');
        assert.equal(r.body, 'b');
        assert.ok((await counted(worker, 'OUTPUT', 'udp dpt:8472')) > before, 'UDP 8472 left eth0');
      } finally {
        await lab.exec(worker, ['iptables', '-w', '5', '-D', ...rule]);
      }
    });

    test('without the overlay pods cannot cross nodes; the agent brings it back', async () => {
      // The agent is worker2's Pod of the kube-flannel DaemonSet.
      const pid = await lab.daemonPodPid('kube-system', 'app=flannel', worker2);
      // Stopped, not killed: the node agent would restart a container that exits.
      await lab.exec(worker2, ['kill', '-STOP', String(pid)]);
      try {
        await lab.exec(worker2, ['ip', 'link', 'del', 'flannel.1']);
        const r = await aToB();
        assert.notEqual(r.code, 0, `a must not reach b without b's flannel.1 (got ${r.body})`);
      } finally {
        await lab.exec(worker2, ['kill', '-CONT', String(pid)]);
      }
      await eventually('a to reach b again', async () => (await aToB()).body === 'b', 30_000);
    });
  }

  if (NET === 'flannel-host-gw') {
    test('host-gw: no flannel.1; each node routes the others podCIDRs via their node IPs', async () => {
      for (const n of lab.lab.state.plan.nodes) {
        const links = (await lab.exec(n.name, ['ip', '-o', 'link', 'show'])).stdout;
        assert.doesNotMatch(links, /flannel\.1/, n.name);
        const routes = await eventually(`${n.name}'s host-gw routes`, async () => {
          const out = (await lab.exec(n.name, ['ip', 'route', 'show'])).stdout;
          return lab.lab.state.plan.nodes.every(
            (o) => o === n || out.includes(`${o.podCIDR} via ${o.ip} dev eth0`),
          )
            ? out
            : undefined;
        });
        assert.ok(routes);
      }
      assert.equal((await aToB()).body, 'b');
    });
  }

  if (NET === 'kubenet') {
    test("cbr0 holds each node's podCIDR gateway and the Pods' veths", async () => {
      for (const n of lab.lab.state.plan.nodes) {
        const addr = (await lab.exec(n.name, ['ip', '-o', '-4', 'addr', 'show', 'dev', 'cbr0']))
          .stdout;
        assert.ok(
          addr.includes(` ${n.podCIDR.replace(/\.0\/24$/, '.1/24')} `),
          `${n.name}: ${addr}`,
        );
      }
      for (const n of [worker, worker2]) {
        const ports = (await lab.exec(n, ['ip', '-o', 'link', 'show', 'master', 'cbr0'])).stdout;
        assert.ok(ports.trim().split('\n').length >= 1, `${n} has Pods on cbr0`);
      }
    });

    test('cross-node pod traffic goes via the hub: nodes route no podCIDR, the hub does', async () => {
      const via = (await lab.exec(worker, ['ip', 'route', 'get', ip.b])).stdout;
      assert.match(via, / via 172\.18\.0\.1 dev eth0/, 'the node sends it to the hub');
      const b = lab.lab.state.plan.nodes[2];
      const hubRoute = (await lab.exec('hub', ['ip', 'route', 'show', b?.podCIDR ?? ''])).stdout;
      assert.match(hubRoute, new RegExp(`via ${(b?.ip ?? '').replace(/\./g, '\\.')} dev br0`));
      const rule = ['FORWARD', '-s', ip.a, '-d', ip.b, '-p', 'tcp', '--dport', '8080'];
      await lab.exec('hub', ['iptables', '-w', '5', '-I', ...rule]);
      try {
        const r = await aToB();
        assert.equal(r.body, 'b');
        assert.ok((await counted('hub', 'FORWARD', `${ip.a} `)) > 0, 'the hub forwarded it');
      } finally {
        await lab.exec('hub', ['iptables', '-w', '5', '-D', ...rule]);
      }
    });
  }
});
