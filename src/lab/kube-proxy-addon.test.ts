import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import type { ConfigMap, DaemonSet } from '../kube/types.js';
import { readDeployManifest } from './deploy-manifest.js';
import { kubeProxyObjects } from './kube-proxy-addon.js';
import { planLab } from './topology.js';
import { resolveProxyConfig, parseKubeProxyConfiguration } from '../proxy/config.js';

const manifest = readDeployManifest('kube-proxy.yaml');

function parts(objs: ReturnType<typeof kubeProxyObjects>): {
  conf: string;
  ds: DaemonSet;
  kinds: string[];
} {
  const cm = objs.find((o) => (o as { kind?: string }).kind === 'ConfigMap') as ConfigMap;
  const ds = objs.find((o) => (o as { kind?: string }).kind === 'DaemonSet') as DaemonSet;
  return {
    conf: cm.data?.['config.conf'] ?? '',
    ds,
    kinds: objs.map((o) => (o as { kind?: string }).kind ?? ''),
  };
}

test('the lab applies deploy/kube-proxy.yaml whole, with its mode, cluster CIDR and iptables backend in config.conf', () => {
  const { conf, ds, kinds } = parts(
    kubeProxyObjects(manifest, planLab({ nodes: 3 }), {
      proxyMode: 'iptables',
      iptablesVariant: 'legacy',
    }),
  );
  assert.deepEqual(kinds, [
    'ServiceAccount',
    'ClusterRole',
    'ClusterRoleBinding',
    'ConfigMap',
    'DaemonSet',
  ]);
  const file = parseKubeProxyConfiguration(conf, 'config.conf');
  const cfg = resolveProxyConfig({ hostnameOverride: 'svcnet-worker' }, file, 'host');
  assert.equal(cfg.mode, 'iptables');
  assert.deepEqual(cfg.clusterCIDRs, ['10.244.0.0/16']);
  assert.equal(cfg.iptablesVariant, 'legacy');
  // As the lab's proxies always did: NodePorts on every local address.
  assert.deepEqual(file.nodePortAddresses, []);
  assert.equal(cfg.minSyncPeriodMs, 1000);
  const c = ds.spec?.template?.spec?.containers[0];
  assert.deepEqual(c?.command?.slice(0, 4), [
    'svcnet',
    'proxy',
    '--config',
    '/var/lib/kube-proxy/config.conf',
  ]);
  assert.ok(c.command.includes('--hostname-override=$(NODE_NAME)'));
  assert.equal(c.readinessProbe?.periodSeconds, 1);
  assert.equal(ds.spec?.template?.spec?.hostNetwork, true);
});

test('dual-stack and nftables mode: both cluster CIDRs, the sync periods in the nftables section', () => {
  const { conf } = parts(
    kubeProxyObjects(manifest, planLab({ nodes: 2, ipFamily: 'dual' }), { proxyMode: 'nftables' }),
  );
  const raw = parse(conf) as {
    mode: string;
    nftables: { minSyncPeriod: string };
    iptables: Record<string, unknown>;
  };
  assert.equal(raw.mode, 'nftables');
  assert.equal(raw.nftables.minSyncPeriod, '1s');
  assert.equal(raw.iptables.svcnetVariant, undefined);
  const cfg = resolveProxyConfig({}, parseKubeProxyConfiguration(conf, 'config.conf'), 'host');
  assert.equal(cfg.mode, 'nftables');
  assert.deepEqual(cfg.clusterCIDRs, ['10.244.0.0/16', 'fd00:10:244::/56']);
});
