// `svcnet proxy` as an operator runs it: a child process inside a node namespace, watching a
// real `svcnet apiserver` (child process of the test) through its kubeconfig. Services and
// EndpointSlices are written through the API. Checks ClusterIP spreading, endpoint removal
// within 2 s, REJECT after deletion, NodePort source IP per externalTrafficPolicy, the
// health-check node port and healthz seen from outside the node, and that restarting the
// API server leaves the node's rules in place and the proxy reconnects, and that SIGTERM ends
// the proxy with exit 0 and its rules left in place, as kube-proxy.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { endpoint, service, slice } from '../../src/kube/testing.js';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import { CLIENT_IP, NODE_IP, ProxyLab, nsExec, skipReason, waitFor } from './lib/proxy-lab.js';
import { LiveApiServer, LiveProxy, linkApiNetwork } from './lib/proxy-live.js';
import { skipOrFail } from './lib/prereq.js';

const NODE = 'node-live';
const PORT = 8080;
const skip = skipOrFail(skipReason(['ip', 'iptables-restore', 'curl', 'conntrack']));

function serviceObj(
  name: string,
  clusterIP: string,
  extra: Partial<NonNullable<Service['spec']>> = {},
): Service {
  return service(name, {
    clusterIP,
    ports: [{ name: 'p', port: PORT, targetPort: PORT, protocol: 'TCP' }],
    ...extra,
  });
}

function sliceObj(svc: string, ips: string[], nodeName = NODE): EndpointSlice {
  return slice(
    svc,
    ips.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName })),
    {
      name: `${svc}-live`,
      ports: [{ name: 'p', port: PORT, protocol: 'TCP' }],
      metadata: {
        annotations: {
          'endpoints.kubernetes.io/last-change-trigger-time': new Date().toISOString(),
        },
      },
    },
  );
}

describe('svcnet proxy against svcnet apiserver (child processes)', { skip }, () => {
  let lab: ProxyLab;
  let api: LiveApiServer;
  const proxy = new LiveProxy();

  before(async () => {
    lab = ProxyLab.create('svcnet-pxl');
    lab.addPod('pod-a', PORT);
    lab.addPod('pod-b', PORT);
    lab.addPod('pod-c', PORT);
    linkApiNetwork(lab);
    api = new LiveApiServer(20_000 + (process.pid % 20_000));
    await api.start();
    await lab.waitForPods(PORT);
    proxy.start(lab, api.kubeconfig, NODE);
    // The apiserver's own `kubernetes` Service shows the first sync happened.
    await waitFor(() => proxy.syncs() > 0, 60_000, 'first sync');
  });

  after(async () => {
    await proxy.stop();
    await api.stop();
    api.remove();
    lab.destroy();
  });

  // Our wire types are the API's JSON; client-node's model classes describe the same shape.
  const put = async (svc: Service, slice?: EndpointSlice) => {
    const { core, discovery } = api.client();
    await core.createNamespacedService({ namespace: 'default', body: svc as unknown as V1Service });
    if (slice)
      await discovery.createNamespacedEndpointSlice({
        namespace: 'default',
        body: slice as unknown as V1EndpointSlice,
      });
  };
  const replaceSlice = async (slice: EndpointSlice) => {
    const { discovery } = api.client();
    await discovery.replaceNamespacedEndpointSlice({
      name: slice.metadata?.name ?? '',
      namespace: 'default',
      body: slice as unknown as V1EndpointSlice,
    });
  };
  const pod = (i: number) => lab.pods[i]!;

  test('ClusterIP spreads over both backends, follows an endpoint removal within 2 s, then REJECTs', async () => {
    await put(serviceObj('web', '10.96.100.10'), sliceObj('web', [pod(0).ip, pod(1).ip]));
    await waitFor(
      () => lab.tryHttp(pod(2).ns, `10.96.100.10:${PORT}`) !== undefined,
      10_000,
      'ClusterIP answers',
    );
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const body = lab.tryHttp(pod(2).ns, `10.96.100.10:${PORT}`);
      if (body !== undefined) seen.add(body.split(' ')[0]!);
    }
    assert.deepEqual([...seen].sort(), ['pod-a', 'pod-b']);

    await replaceSlice(sliceObj('web', [pod(1).ip]));
    await waitFor(
      () => {
        for (let i = 0; i < 6; i++)
          if (lab.tryHttp(pod(2).ns, `10.96.100.10:${PORT}`)?.startsWith('pod-a') === true)
            return false;
        return true;
      },
      2000,
      'traffic only to pod-b within 2 s',
    );

    const { core, discovery } = api.client();
    await discovery.deleteNamespacedEndpointSlice({ name: 'web-live', namespace: 'default' });
    await waitFor(
      () => lab.httpExitCode(pod(2).ns, `10.96.100.10:${PORT}`, 3) === 7,
      3000,
      'REJECT without endpoints',
    );
    await core.deleteNamespacedService({ name: 'web', namespace: 'default' });
    await waitFor(
      () => !nsExec(lab.node, 'iptables-save', []).includes('10.96.100.10'),
      3000,
      'rules of the deleted Service gone',
    );
  });

  test('NodePort from outside: Local keeps the client address, Cluster masquerades; HC node port and healthz answer', async () => {
    await put(
      serviceObj('lb-local', '10.96.100.20', {
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32100,
        ports: [{ name: 'p', port: PORT, targetPort: PORT, protocol: 'TCP', nodePort: 30100 }],
      }),
      sliceObj('lb-local', [pod(0).ip]),
    );
    await put(
      serviceObj('np-cluster', '10.96.100.21', {
        type: 'NodePort',
        ports: [{ name: 'p', port: PORT, targetPort: PORT, protocol: 'TCP', nodePort: 30101 }],
      }),
      sliceObj('np-cluster', [pod(1).ip]),
    );
    await waitFor(
      () => lab.tryHttp(lab.client, `${NODE_IP}:30100`) !== undefined,
      10_000,
      'Local NodePort answers',
    );
    assert.match(
      lab.tryHttp(lab.client, `${NODE_IP}:30100`)!,
      new RegExp(`^pod-a ${CLIENT_IP.replace(/\./g, '\\.')}:`),
    );
    await waitFor(
      () => lab.tryHttp(lab.client, `${NODE_IP}:30101`) !== undefined,
      10_000,
      'Cluster NodePort answers',
    );
    const cluster = lab.tryHttp(lab.client, `${NODE_IP}:30101`)!;
    assert.match(cluster, /^pod-b /);
    assert.ok(!cluster.includes(CLIENT_IP), `Cluster policy masquerades (${cluster})`);

    const hc = () => {
      const out = nsExec(lab.client, 'curl', [
        '-s',
        '--max-time',
        '2',
        '-w',
        '\\n%{http_code}',
        `http://${NODE_IP}:32100/`,
      ]);
      const [body = '', code = ''] = out.split('\n');
      return { code, body };
    };
    await waitFor(() => hc().code === '200', 5000, 'HC node port 200');
    assert.deepEqual(JSON.parse(hc().body), {
      service: { namespace: 'default', name: 'lb-local' },
      localEndpoints: 1,
      serviceProxyHealthy: true,
    });
    await replaceSlice(sliceObj('lb-local', [pod(0).ip], 'elsewhere'));
    await waitFor(() => hc().code === '503', 5000, 'HC node port 503 without local endpoints');

    const healthz = nsExec(lab.client, 'curl', [
      '-s',
      '--max-time',
      '2',
      `http://${NODE_IP}:10256/healthz`,
    ]);
    const h = JSON.parse(healthz) as {
      nodeEligible: boolean;
      lastUpdated: string;
      currentTime: string;
    };
    assert.equal(h.nodeEligible, true);
    assert.match(h.currentTime, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    const metrics = nsExec(lab.node, 'curl', [
      '-s',
      '--max-time',
      '2',
      'http://127.0.0.1:10249/metrics',
    ]);
    assert.match(metrics, /^kubeproxy_sync_proxy_rules_last_timestamp_seconds \d/m);
    assert.match(
      metrics,
      /^kubeproxy_network_programming_duration_seconds_count\{ip_family="IPv4"\} [1-9]/m,
    );
    assert.equal(nsExec(lab.node, 'curl', ['-s', 'http://127.0.0.1:10249/proxyMode']), 'iptables');
  });

  test('restarting the API server keeps the node programmed; the proxy reconnects and follows new changes', async () => {
    await put(serviceObj('steady', '10.96.100.30'), sliceObj('steady', [pod(0).ip]));
    await waitFor(
      () => lab.tryHttp(pod(2).ns, `10.96.100.30:${PORT}`)?.startsWith('pod-a') === true,
      10_000,
      'steady answers',
    );
    await api.stop();
    await new Promise((r) => setTimeout(r, 2000));
    assert.match(
      lab.tryHttp(pod(2).ns, `10.96.100.30:${PORT}`) ?? '',
      /^pod-a/,
      'rules stay while the API is down',
    );
    await api.start();
    await replaceSlice(sliceObj('steady', [pod(1).ip]));
    await waitFor(
      () => lab.tryHttp(pod(2).ns, `10.96.100.30:${PORT}`, 1)?.startsWith('pod-b') === true,
      40_000,
      'change after restart programmed',
    );
  });

  // kube-proxy leaves its rules when it stops (only --cleanup removes them), so a proxy
  // restart or upgrade does not cut the node's Services off.
  test('SIGTERM: the proxy exits 0 and leaves its rules; the Service keeps answering without it', async () => {
    await put(serviceObj('after-exit', '10.96.100.40'), sliceObj('after-exit', [pod(0).ip]));
    await waitFor(
      () => lab.tryHttp(pod(2).ns, `10.96.100.40:${PORT}`)?.startsWith('pod-a') === true,
      10_000,
      'after-exit answers',
    );
    const code = await proxy.stop();
    assert.equal(code, 0, `exit code after SIGTERM; log:\n${proxy.log.slice(-2000)}`);
    const rules = nsExec(lab.node, 'iptables-save', []);
    assert.match(rules, /^:KUBE-SERVICES /m);
    assert.match(rules, /^-A KUBE-SERVICES -d 10\.96\.100\.40\/32 /m);
    assert.match(rules, /^-A (PREROUTING|OUTPUT) .*-j KUBE-SERVICES/m, 'the hooks stay too');
    assert.match(
      lab.tryHttp(pod(2).ns, `10.96.100.40:${PORT}`) ?? '',
      /^pod-a/,
      'the Service answers with the proxy gone',
    );
  });

  test('--cleanup removes every chain and hook the proxy created', async () => {
    await proxy.stop();
    const before = nsExec(lab.node, 'iptables-save', []);
    assert.match(before, /KUBE-SERVICES/);
    const out = nsExec(lab.node, process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'proxy',
      '--cleanup',
    ]);
    assert.match(out, /IPv4: removed \d+ chains, \d+ rules/);
    const after = nsExec(lab.node, 'iptables-save', []);
    assert.doesNotMatch(after, /KUBE-/);
  });
});
