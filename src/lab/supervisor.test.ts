import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderKubeconfig } from '../apiserver/daemon.js';
import { createServingCert } from '../apiserver/x509.js';
import { hostKubeconfig, kubeconfigCA } from './supervisor.js';
import { certFingerprint } from './run.js';

test('the host kubeconfig names the lab and points at the loopback forwarder', () => {
  const cluster = renderKubeconfig('https://172.18.0.2:6443', 'tok');
  const host = hostKubeconfig(cluster, 'https://127.0.0.1:40000', 'dev');
  assert.match(host, /server: https:\/\/127\.0\.0\.1:40000\n/);
  assert.doesNotMatch(host, /172\.18\.0\.2/);
  assert.match(host, /current-context: dev\n/);
  assert.match(host, /token: tok\n/);
  assert.doesNotMatch(host, /\bsvcnet\b/);
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
