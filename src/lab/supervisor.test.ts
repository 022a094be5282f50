import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderKubeconfig } from '../apiserver/daemon.js';
import { createServingCert } from '../apiserver/x509.js';
import { hostKubeconfig, kubeconfigCA } from './supervisor.js';
import { certFingerprint } from './run.js';
import { dnsAddon } from './addons.js';
import { planLab } from './topology.js';
import { parseDuration } from '../util/duration.js';

test('the host kubeconfig names the lab and points at the loopback forwarder', () => {
  const cluster = renderKubeconfig('https://172.18.0.2:6443', 'tok');
  const host = hostKubeconfig(cluster, 'https://127.0.0.1:40000', 'dev');
  assert.match(host, /server: https:\/\/127\.0\.0\.1:40000\n/);
  assert.doesNotMatch(host, /172\.18\.0\.2/);
  assert.match(host, /current-context: dev\n/);
  assert.match(host, /token: tok\n/);
  assert.doesNotMatch(host, /\bsvcnet\b/);
});

test('the DNS addon is kube-dns at the plan address, served by svcnet dns Pods', () => {
  const [svc, deploy] = dnsAddon(planLab({ nodes: 2 })) as [
    { spec: { clusterIP: string; selector: Record<string, string> } },
    { spec: { template: { spec: { dnsPolicy: string; containers: { command: string[] }[] } } } },
  ];
  assert.equal(svc.spec.clusterIP, '10.96.0.10');
  assert.deepEqual(svc.spec.selector, { 'k8s-app': 'kube-dns' });
  assert.deepEqual(deploy.spec.template.spec.containers[0]?.command, ['svcnet', 'dns']);
  assert.equal(deploy.spec.template.spec.dnsPolicy, 'Default');
});

test('a deleted DNS Pod has time for its lameduck before the agent would SIGKILL it', () => {
  const [, deploy] = dnsAddon(planLab({ nodes: 2 })) as [
    unknown,
    {
      spec: {
        template: {
          spec: { terminationGracePeriodSeconds: number; containers: { args: string[] }[] };
        };
      };
    },
  ];
  const pod = deploy.spec.template.spec;
  const args = pod.containers[0]?.args ?? [];
  const lameduckMs = parseDuration(args[args.indexOf('--lameduck') + 1] ?? '');
  assert.equal(lameduckMs, 5000, "kubeadm's lameduck 5s, given explicitly");
  assert.ok(
    pod.terminationGracePeriodSeconds * 1000 >= lameduckMs + 10_000,
    `grace ${String(pod.terminationGracePeriodSeconds)} s leaves room after the lameduck`,
  );
});

test("the run's API server identity is the fingerprint of the kubeconfig's CA; none is an error", () => {
  const { cert } = createServingCert(['127.0.0.1']);
  const kc = hostKubeconfig(
    renderKubeconfig('https://172.18.0.2:6443', 'tok', cert),
    'https://127.0.0.1:1',
    'dev',
  );
  assert.equal(kubeconfigCA(kc, '/s/kubeconfig'), certFingerprint(cert));
  assert.throws(
    () => kubeconfigCA(renderKubeconfig('http://127.0.0.1:1', 'tok'), '/s/kubeconfig'),
    {
      code: 'INVALID_INPUT',
      message: /^\/s\/kubeconfig: clusters\[0\]\.cluster\.certificate-authority-data: missing/,
    },
  );
});
