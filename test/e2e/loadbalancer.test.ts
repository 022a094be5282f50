// The lab's LoadBalancer, seen from the lab's `outside` host (a client that is not a node): a
// `type: LoadBalancer` Service gets an EXTERNAL-IP from the pool within 2 s and answers there;
// externalTrafficPolicy Local keeps the client's address and sends traffic only to nodes with
// a local endpoint (the hub routes the LB IP by the healthCheckNodePort's answer);
// loadBalancerSourceRanges drop and admit the outside host; NodePorts answer it (and with
// Local, a node without a local endpoint does not); a deleted Service's address is free again.
// Modelled on sig-network's test/e2e/network/loadbalancer.go and service.go (source IP).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Service } from '../../src/kube/types.js';
import { RealExecer } from '../../src/os/exec.js';
import { OUTSIDE_IP } from '../../src/lab/topology.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'lb';
const hasKubectl = existsSync('/usr/bin/kubectl') || existsSync('/usr/local/bin/kubectl');

function lbService(name: string, spec: Partial<NonNullable<Service['spec']>> = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: NS, name },
    spec: {
      type: 'LoadBalancer',
      selector: { app: 'web' },
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      ...spec,
    },
  };
}

describe('LoadBalancer Services and the outside host', { skip }, () => {
  let lab: E2eLab;
  /** The node with the only backend, and one without any. */
  let withPod: { name: string; ip: string };
  let withoutPod: { name: string; ip: string };

  async function externalIP(name: string, timeoutMs = 10_000): Promise<string> {
    return eventually(
      `an EXTERNAL-IP for ${NS}/${name}`,
      async () => (await lab.service(NS, name))?.status?.loadBalancer?.ingress?.[0]?.ip,
      timeoutMs,
      50,
    );
  }

  /** The hub's route for an LB IP: the node IPs it sends it to ([] without a route). */
  async function routedTo(ip: string): Promise<string[]> {
    const r = await lab.exec('hub', ['ip', 'route', 'show', `${ip}/32`]);
    return [...r.stdout.matchAll(/via (\S+)/g)].map((m) => m[1] ?? '').sort();
  }

  before(async () => {
    // A lab of 3 nodes starts in 15-30 s on an idle machine; give a loaded one time.
    lab = await E2eLab.up('lb', 3, 300_000);
    const [, worker, worker2] = lab.nodes;
    if (!worker || !worker2) throw new Error('the lab has fewer than 3 nodes');
    withPod = worker;
    withoutPod = worker2;
    await lab.createNamespace(NS);
    await lab.apply([netexecPod(NS, 'web-1', { labels: { app: 'web' }, node: worker.name })]);
    await lab.podsReady(NS, ['web-1']);
  });
  after(async () => {
    await lab.down();
  });

  test('kubectl expose --type LoadBalancer: an EXTERNAL-IP within 2 s, answered from the outside host', async () => {
    const t0 = Date.now();
    if (hasKubectl) {
      const r = await new RealExecer().run({
        cmd: 'kubectl',
        args: [
          ...['--kubeconfig', lab.lab.state.kubeconfig ?? '', '-n', NS, 'expose', 'pod', 'web-1'],
          ...[
            '--type',
            'LoadBalancer',
            '--port',
            '80',
            '--target-port',
            '8080',
            '--name',
            'web-lb',
          ],
        ],
      });
      assert.equal(r.code, 0, r.stderr);
    } else await lab.apply([lbService('web-lb')]);
    // From the moment the Service exists (kubectl's own start is not the load balancer's).
    const created = Date.now();
    const ip = await externalIP('web-lb');
    const ms = Date.now() - created;
    assert.ok(ms < 2000, `EXTERNAL-IP ${String(ms)} ms after the Service was created`);
    assert.match(ip, /^172\.18\.255\.(2[0-4]\d|250)$/);
    const svc = await lab.service(NS, 'web-lb');
    assert.equal(svc?.status?.loadBalancer?.ingress?.[0]?.ipMode, 'VIP');
    // Cluster policy: every node receives it.
    assert.deepEqual(
      await eventually('the hub to route the LB IP to every node', async () => {
        const via = await routedTo(ip);
        return via.length === 3 ? via : undefined;
      }),
      lab.nodes.map((n) => n.ip).sort(),
    );
    const r = await eventually(`curl ${ip}/hostname from outside`, async () => {
      const c = await lab.curl('outside', `http://${ip}/hostname`, 2);
      return c.code === 0 ? c : undefined;
    });
    assert.equal(r.body, 'web-1');
    console.log(
      `EXTERNAL-IP ${ip} ${String(ms)} ms after the Service was created (${String(created - t0)} ms in ${hasKubectl ? 'kubectl expose' : 'the API create'})`,
    );
  });

  test('externalTrafficPolicy Local: only the node with the endpoint receives it, and the Pod sees the outside host', async () => {
    await lab.apply([lbService('web-local', { externalTrafficPolicy: 'Local' })]);
    const ip = await externalIP('web-local');
    assert.deepEqual(
      await eventually('the hub to route the LB IP to the node with the Pod only', async () => {
        const via = await routedTo(ip);
        return via.length === 1 ? via : undefined;
      }),
      [withPod.ip],
    );
    for (let i = 0; i < 10; i++) {
      const c = await lab.curl('outside', `http://${ip}/clientip`, 2);
      assert.equal(c.code, 0, `request ${String(i)}: curl exit ${String(c.code)}`);
      assert.equal(c.body.replace(/:\d+$/, ''), OUTSIDE_IP);
    }
  });

  test('NodePort from outside: answered; with Local, a node without a local endpoint does not answer', async () => {
    const cluster = await lab.service(NS, 'web-lb');
    const local = await lab.service(NS, 'web-local');
    const clusterPort = String(cluster?.spec?.ports?.[0]?.nodePort ?? 0);
    const localPort = String(local?.spec?.ports?.[0]?.nodePort ?? 0);
    for (const n of lab.nodes) {
      const c = await lab.curl('outside', `http://${n.ip}:${clusterPort}/hostname`, 2);
      assert.equal(c.code, 0, `NodePort ${clusterPort} on ${n.name}: curl exit ${String(c.code)}`);
      assert.equal(c.body, 'web-1');
    }
    const ok = await lab.curl('outside', `http://${withPod.ip}:${localPort}/clientip`, 2);
    assert.equal(ok.code, 0);
    assert.equal(ok.body.replace(/:\d+$/, ''), OUTSIDE_IP);
    const dropped = await lab.curl('outside', `http://${withoutPod.ip}:${localPort}/clientip`, 2);
    assert.notEqual(dropped.code, 0, `${withoutPod.name} answered: ${dropped.body}`);
  });

  test('loadBalancerSourceRanges: excluding the outside host drops it, including it lets it in', async () => {
    await lab.apply([lbService('web-ranges', { loadBalancerSourceRanges: ['10.99.0.0/16'] })]);
    const ip = await externalIP('web-ranges');
    await eventually('the hub to route the LB IP', async () => (await routedTo(ip)).length === 3);
    // Before its proxy has the LB IP's rules, a node would route the packet back to the hub.
    for (const n of lab.nodes)
      await eventually(`the proxy on ${n.name} to program ${ip}`, async () =>
        (await lab.proxyRules(n.name)).includes(ip),
      );
    const dropped = await lab.curl('outside', `http://${ip}/hostname`, 2);
    assert.equal(
      dropped.code,
      28,
      `expected a timeout (dropped), got curl exit ${String(dropped.code)}`,
    );
    await lab.apply([
      lbService('web-ranges', { loadBalancerSourceRanges: ['10.99.0.0/16', `${OUTSIDE_IP}/32`] }),
    ]);
    const r = await eventually('the outside host to be let in', async () => {
      const c = await lab.curl('outside', `http://${ip}/hostname`, 2);
      return c.code === 0 ? c : undefined;
    });
    assert.equal(r.body, 'web-1');
  });

  test('deleting the Service releases its address: a new Service can have it', async () => {
    const ip = await externalIP('web-lb');
    await lab.deleteObject('Service', NS, 'web-lb');
    await eventually('the hub to drop the route', async () => (await routedTo(ip)).length === 0);
    await lab.apply([lbService('web-again', { loadBalancerIP: ip })]);
    assert.equal(await externalIP('web-again'), ip);
  });
});
