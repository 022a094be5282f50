// The proxy programming a real kernel: a node namespace with pod namespaces running HTTP/UDP
// servers and an external client namespace (test/integration/lib/proxy-lab.ts). The proxy
// runs in-process against FakeInformers; its iptables-restore, iptables and conntrack calls
// run inside the node namespace. Checks what a user notices: load spreading over a
// ClusterIP, endpoint removal, REJECT for Services without endpoints, NodePort source-IP
// behaviour for both externalTrafficPolicy values, health-check node ports, stale UDP
// conntrack cleanup, and recovery after someone flushes the nat table.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ProxyLab, CLIENT_IP, NODE_IP, nsExec, skipReason, waitFor } from './lib/proxy-lab.js';
import { service, slice, startInProcessProxy } from './lib/proxy-driver.js';
import type { InProcessProxy } from './lib/proxy-driver.js';
import { skipOrFail } from './lib/prereq.js';

const NODE = 'node-a';
const PORT = 8080;
const skip = skipOrFail(skipReason(['ip', 'iptables-restore', 'curl', 'conntrack']));

describe('svcnet proxy programs a node (iptables mode)', { skip }, () => {
  let lab: ProxyLab;
  let proxy: InProcessProxy;

  before(async () => {
    lab = ProxyLab.create('svcnet-pxd');
    lab.addPod('pod-a', PORT);
    lab.addPod('pod-b', PORT);
    lab.addPod('pod-c', PORT);
    await lab.waitForPods(PORT);
    // The flush test below wants the canary polled every second, not every sync period.
    proxy = await startInProcessProxy(lab.node, NODE, { canaryIntervalMs: 1000 });
    await proxy.startInformers();
  });

  after(async () => {
    await proxy.stop();
    lab.destroy();
  });

  const podA = () => lab.pods[0]!;
  const podB = () => lab.pods[1]!;
  const podC = () => lab.pods[2]!;

  test('ClusterIP reaches both backends; a removed endpoint stops getting traffic within 2 s; no Service means REJECT', async () => {
    proxy.services.upsert(service('web', '10.96.0.10', PORT));
    proxy.slices.upsert(slice('web', PORT, [podA().ip, podB().ip], NODE));
    await waitFor(
      () => lab.tryHttp(podC().ns, `10.96.0.10:${PORT}`) !== undefined,
      15_000,
      'ClusterIP answers',
    );
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const body = lab.tryHttp(podC().ns, `10.96.0.10:${PORT}`);
      if (body !== undefined) seen.add(body.split(' ')[0]!);
    }
    assert.deepEqual([...seen].sort(), ['pod-a', 'pod-b']);

    proxy.slices.upsert(slice('web', PORT, [podB().ip], NODE));
    const elapsed = await waitFor(
      () => {
        for (let i = 0; i < 6; i++)
          if (lab.tryHttp(podC().ns, `10.96.0.10:${PORT}`)?.startsWith('pod-a') === true)
            return false;
        return true;
      },
      2000,
      'traffic only to pod-b',
    );
    assert.ok(elapsed <= 2000);

    proxy.services.delete('default/web');
    proxy.slices.delete('default/web-abc');
    proxy.services.upsert(service('empty', '10.96.0.11', PORT));
    await waitFor(
      () => lab.httpExitCode(podC().ns, `10.96.0.11:${PORT}`) === 7,
      3000,
      'REJECT (connection refused)',
    );
    const t0 = Date.now();
    assert.equal(lab.httpExitCode(podC().ns, `10.96.0.11:${PORT}`, 5), 7, 'refused, not timed out');
    assert.ok(Date.now() - t0 < 2000, 'REJECT answers at once');
    proxy.services.delete('default/empty');
  });

  test('NodePort: Cluster masquerades the client, Local keeps its address; health-check node port answers 200/503', async () => {
    proxy.services.upsert(service('np-cluster', '10.96.0.20', PORT, { nodePort: 30080 }));
    proxy.slices.upsert(slice('np-cluster', PORT, [podA().ip], NODE));
    proxy.services.upsert(
      service('np-local', '10.96.0.21', PORT, {
        nodePort: 30081,
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32001,
      }),
    );
    proxy.slices.upsert(slice('np-local', PORT, [podB().ip], NODE));
    await waitFor(
      () => lab.tryHttp(lab.client, `${NODE_IP}:30081`) !== undefined,
      15_000,
      'NodePort answers',
    );
    const local = lab.tryHttp(lab.client, `${NODE_IP}:30081`)!;
    assert.match(
      local,
      new RegExp(`^pod-b ${CLIENT_IP.replace(/\./g, '\\.')}:`),
      'Local keeps the client address',
    );
    const cluster = lab.tryHttp(lab.client, `${NODE_IP}:30080`);
    assert.ok(cluster !== undefined, 'Cluster NodePort answers');
    assert.match(cluster, /^pod-a /);
    assert.doesNotMatch(
      cluster,
      new RegExp(CLIENT_IP.replace(/\./g, '\\.')),
      'Cluster masquerades',
    );

    // The health-check server runs in this process (loopback), answering for np-local.
    const hc = async () => {
      const r = await fetch('http://127.0.0.1:32001/');
      return { status: r.status, body: (await r.json()) as { localEndpoints: number } };
    };
    await waitFor(
      async () => (await hc().catch(() => undefined))?.status === 200,
      3000,
      'HC node port 200',
    );
    assert.deepEqual((await hc()).body, {
      service: { namespace: 'default', name: 'np-local' },
      localEndpoints: 1,
      serviceProxyHealthy: true,
    });
    proxy.slices.upsert(slice('np-local', PORT, [podB().ip], 'other-node'));
    await waitFor(
      async () => (await hc()).status === 503,
      3000,
      'HC node port 503 without local endpoints',
    );
    assert.equal((await hc()).body.localEndpoints, 0);
    for (const n of ['np-cluster', 'np-local']) {
      proxy.services.delete(`default/${n}`);
      proxy.slices.delete(`default/${n}-abc`);
    }
  });

  test('UDP: a client with a fixed source port reaches the new backend after its old one is replaced', async () => {
    proxy.services.upsert(service('dns', '10.96.0.53', PORT, { protocol: 'UDP' }));
    proxy.slices.upsert(slice('dns', PORT, [podA().ip], NODE, { protocol: 'UDP' }));
    await waitFor(
      () => lab.udpRequest(podC().ns, '10.96.0.53', PORT, 5353) === 'pod-a',
      15_000,
      'UDP via pod-a',
    );
    // Keep the flow alive, then swap the backend.
    assert.equal(lab.udpRequest(podC().ns, '10.96.0.53', PORT, 5353), 'pod-a');
    proxy.slices.upsert(slice('dns', PORT, [podB().ip], NODE, { protocol: 'UDP' }));
    await waitFor(
      () => lab.udpRequest(podC().ns, '10.96.0.53', PORT, 5353) === 'pod-b',
      5000,
      'same source port now reaches pod-b',
    );
    proxy.services.delete('default/dns');
    proxy.slices.delete('default/dns-abc');
  });

  test('someone flushes the nat table: the rules are back within 5 s', async () => {
    proxy.services.upsert(service('flush', '10.96.0.30', PORT));
    proxy.slices.upsert(slice('flush', PORT, [podA().ip], NODE));
    await waitFor(
      () => lab.tryHttp(podC().ns, `10.96.0.30:${PORT}`) !== undefined,
      15_000,
      'service answers',
    );
    nsExec(lab.node, 'iptables', ['-t', 'nat', '-F']);
    assert.equal(lab.tryHttp(podC().ns, `10.96.0.30:${PORT}`, 1), undefined, 'flushed: no DNAT');
    const elapsed = await waitFor(
      () => lab.tryHttp(podC().ns, `10.96.0.30:${PORT}`, 1) !== undefined,
      5000,
      'rules restored',
    );
    assert.ok(elapsed < 5000);
    const save = nsExec(lab.node, 'iptables-save', ['-t', 'nat']);
    assert.match(
      save,
      /-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/,
    );
    proxy.services.delete('default/flush');
    proxy.slices.delete('default/flush-abc');
  });

  test('metrics and healthz report the syncs', async () => {
    const m = await (await fetch(`http://127.0.0.1:${proxy.daemon.metricsPort}/metrics`)).text();
    assert.match(m, /^kubeproxy_sync_proxy_rules_duration_seconds_count [1-9]\d*$/m);
    assert.match(
      m,
      /^kubeproxy_network_programming_duration_seconds_count\{ip_family="IPv4"\} [1-9]\d*$/m,
    );
    assert.match(
      m,
      /^kubeproxy_sync_proxy_rules_iptables_total\{table="nat",ip_family="IPv4"\} \d+$/m,
    );
    const h = await fetch(`http://127.0.0.1:${proxy.daemon.healthzPort}/healthz`);
    assert.equal(h.status, 200);
    const body = (await h.json()) as { nodeEligible: boolean };
    assert.equal(body.nodeEligible, true);
  });
});
