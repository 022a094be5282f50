// Tests of `svcnet proxy` configuration resolution: defaults, config file, flags winning,
// and every bad flag reported at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ValidationError } from '../errors.js';
import { parseKubeProxyConfiguration, resolveProxyConfig } from '../proxy/config.js';

test('defaults are kube-proxy defaults', () => {
  const c = resolveProxyConfig({}, undefined, 'host-a');
  assert.equal(c.nodeName, 'host-a');
  assert.equal(c.minSyncPeriodMs, 1000);
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.healthzBindAddress, '0.0.0.0:10256');
  assert.equal(c.metricsBindAddress, '127.0.0.1:10249');
  assert.equal(c.masqueradeBit, 14);
  assert.deepEqual(c.families, ['IPv4']);
});

test('config file values apply; explicit flags win; dual-stack from clusterCIDR', () => {
  const file = parseKubeProxyConfiguration(
    [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'hostnameOverride: Node-X',
      'clusterCIDR: 10.244.0.0/16,fd00:10:244::/56',
      'metricsBindAddress: 0.0.0.0:10249',
      'iptables:',
      '  minSyncPeriod: 250ms',
      '  masqueradeAll: true',
      '',
    ].join('\n'),
    'kp.yaml',
  );
  const c = resolveProxyConfig(
    { iptablesMinSyncPeriod: '0s', healthzBindAddress: '127.0.0.1:0' },
    file,
    'host-a',
  );
  assert.equal(c.nodeName, 'node-x');
  assert.equal(c.minSyncPeriodMs, 0);
  assert.equal(c.masqueradeAll, true);
  assert.equal(c.metricsBindAddress, '0.0.0.0:10249');
  assert.equal(c.healthzBindAddress, '127.0.0.1:0');
  assert.deepEqual(c.families, ['IPv4', 'IPv6']);
});

test('every bad flag is reported, naming the flag', () => {
  assert.throws(
    () =>
      resolveProxyConfig(
        {
          clusterCidr: '10.0.0.0/33',
          iptablesSyncPeriod: 'soon',
          detectLocalMode: 'Magic',
          iptablesMasqueradeBit: '40',
        },
        undefined,
        'h',
      ),
    (e: unknown) => {
      assert.ok(e instanceof ValidationError);
      assert.deepEqual(
        e.errors.map((x) => x.field),
        [
          '--cluster-cidr',
          '--detect-local-mode',
          '--iptables-masquerade-bit',
          '--iptables-sync-period',
        ],
      );
      return true;
    },
  );
});
