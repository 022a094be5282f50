import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError, ValidationError } from '../errors.js';
import {
  DAEMON_PROXY_MODES,
  defaultKubeProxyConfig,
  parseKubeProxyConfiguration,
  requireBuiltProxyMode,
  resolveProxyConfig,
} from './config.js';
import { parseDuration } from '../util/duration.js';

const HEAD = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n';

function errorsOf(text: string): string[] {
  try {
    parseKubeProxyConfiguration(text, 'kp.yaml');
  } catch (e) {
    assert.ok(e instanceof ValidationError);
    assert.equal(e.code, 'INVALID_INPUT');
    return e.errors.map((x) => `${x.field}: ${x.message}`);
  }
  assert.fail('expected a ValidationError');
}

test('an empty configuration gets kube-proxy defaults', () => {
  const c = parseKubeProxyConfiguration(HEAD, 'kp.yaml');
  assert.deepEqual(c, defaultKubeProxyConfig());
  assert.equal(c.mode, 'iptables');
  assert.equal(c.iptables.masqueradeBit, 14);
  assert.equal(c.iptables.localhostNodePorts, true);
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.minSyncPeriodMs, 1_000);
  assert.equal(c.detectLocalMode, 'ClusterCIDR');
  assert.deepEqual(c.nodePortAddresses, []);
  assert.equal(c.conntrack.maxPerCore, 32768);
  assert.equal(c.conntrack.min, 131072);
  assert.equal(c.conntrack.tcpEstablishedTimeoutMs, 24 * 3600_000);
  assert.equal(c.healthzBindAddress, '0.0.0.0:10256');
  assert.equal(c.metricsBindAddress, '127.0.0.1:10249');
});

test('a typical configuration is read', () => {
  const c = parseKubeProxyConfiguration(
    `${HEAD}mode: iptables
clusterCIDR: 10.244.0.0/16,fd00:10:244::/56
iptables: {masqueradeBit: 15, masqueradeAll: true, localhostNodePorts: false, syncPeriod: 1m0s, minSyncPeriod: 250ms}
nodePortAddresses: [primary, 192.168.0.0/16]
detectLocalMode: BridgeInterface
detectLocal: {bridgeInterface: cbr0}
conntrack: {tcpBeLiberal: true, maxPerCore: 0, udpTimeout: 30s}
featureGates: {SomeGate: true}
`,
    'kp.yaml',
  );
  assert.deepEqual(c.clusterCIDRs, ['10.244.0.0/16', 'fd00:10:244::/56']);
  assert.equal(c.iptables.masqueradeBit, 15);
  assert.equal(c.syncPeriodMs, 60_000);
  assert.equal(c.minSyncPeriodMs, 250);
  assert.deepEqual(c.nodePortAddresses, ['primary', '192.168.0.0/16']);
  assert.equal(c.detectLocal.bridgeInterface, 'cbr0');
  assert.equal(c.conntrack.tcpBeLiberal, true);
  assert.equal(c.conntrack.udpTimeoutMs, 30_000);
  assert.deepEqual(c.featureGates, { SomeGate: true });
});

test('every bad or unknown field is named', () => {
  const cases: [string, string[]][] = [
    [
      'apiVersion: v1\nkind: KubeProxyConfiguration\n',
      ['apiVersion: must be kubeproxy.config.k8s.io/v1alpha1, got "v1"'],
    ],
    [`${HEAD}iptables: {masqueradBit: 14}\n`, ['iptables.masqueradBit: unknown field']],
    [`${HEAD}bogus: 1\nmode: 7\n`, ['bogus: unknown field', 'mode: must be a string, got 7']],
    [
      `${HEAD}iptables: {masqueradeBit: 40, syncPeriod: soon}\n`,
      ['iptables.syncPeriod: must be a duration such as "30s" or "1m0s", got "soon"'],
    ],
    [`${HEAD}iptables: {masqueradeBit: 40}\n`, ['iptables.masqueradeBit: must be 0-31, got 40']],
    [
      `${HEAD}mode: userspace\n`,
      ['mode: must be one of iptables, nftables, ipvs, kernelspace, got "userspace"'],
    ],
    [
      `${HEAD}clusterCIDR: 10.0.0.0/8,10.1.0.0/16\n`,
      ['clusterCIDR: has two IPv4 CIDRs: "10.0.0.0/8,10.1.0.0/16"'],
    ],
    [
      `${HEAD}detectLocalMode: InterfaceNamePrefix\n`,
      ['detectLocal.interfaceNamePrefix: required when detectLocalMode is InterfaceNamePrefix'],
    ],
    [
      `${HEAD}nodePortAddresses: [10.0.0.0/33]\n`,
      ['nodePortAddresses[0]: must be a CIDR or one of primary, localhost, all, got "10.0.0.0/33"'],
    ],
    [
      `${HEAD}healthzBindAddress: "0.0.0.0"\n`,
      ['healthzBindAddress: must be IP:port (e.g. 0.0.0.0:10256), got "0.0.0.0"'],
    ],
    [`${HEAD}conntrack: {min: -1}\n`, ['conntrack.min: must not be negative, got -1']],
    [`${HEAD}mode: [\n`, ['invalid YAML']],
  ];
  for (const [text, want] of cases) {
    const got = errorsOf(text);
    for (const w of want)
      assert.ok(
        got.some((g) => g.includes(w)),
        `${JSON.stringify(text)}: ${got.join(' | ')}`,
      );
  }
});

test('Go durations', () => {
  assert.equal(parseDuration('1h2m3.5s'), 3_723_500);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration('15m'), 900_000);
  assert.equal(parseDuration('10'), undefined);
  assert.equal(parseDuration(''), undefined);
});

// The `config.conf` key of the kube-proxy ConfigMap kubeadm writes (kind clusters too): every
// field present, unset ones as zero values or null.
const KUBEADM_CONFIG = readFileSync(
  join(import.meta.dirname, 'testdata', 'kubeadm-config.conf'),
  'utf8',
);

test("kubeadm's and kind's config.conf loads with kube-proxy's defaulting of zero values", () => {
  const c = parseKubeProxyConfiguration(KUBEADM_CONFIG, 'config.conf');
  const d = defaultKubeProxyConfig();
  assert.equal(c.mode, 'iptables');
  assert.equal(c.syncPeriodMs, 30_000, 'syncPeriod: 0s means 30s');
  assert.equal(c.minSyncPeriodMs, 1_000);
  assert.equal(c.configSyncPeriodMs, 15 * 60_000, 'configSyncPeriod: 0s means 15m');
  assert.equal(c.iptables.masqueradeBit, 14, 'masqueradeBit: null means 14');
  assert.equal(c.iptables.localhostNodePorts, true);
  assert.equal(c.detectLocalMode, 'ClusterCIDR');
  assert.deepEqual(c.clusterCIDRs, ['10.244.0.0/16']);
  assert.equal(c.healthzBindAddress, d.healthzBindAddress);
  assert.equal(c.metricsBindAddress, d.metricsBindAddress);
  assert.equal(c.clientConnection.qps, 5);
  assert.equal(c.clientConnection.burst, 10);
  assert.equal(c.clientConnection.contentType, 'application/vnd.kubernetes.protobuf');
  assert.equal(c.clientConnection.kubeconfig, '/var/lib/kube-proxy/kubeconfig.conf');
  // maxPerCore 0 is kube-proxy's "leave nf_conntrack_max alone", not a zero to default.
  assert.equal(c.conntrack.maxPerCore, 0);
  assert.equal(c.conntrack.min, 131072);
  assert.equal(c.conntrack.tcpEstablishedTimeoutMs, 24 * 3600_000);
  assert.equal(c.oomScoreAdj, -999);
  assert.equal(requireBuiltProxyMode(c.mode, 'config.conf: mode'), 'iptables');
});

test('mode "" means iptables; a mode not built yet is a clear error, never a fallback', () => {
  const empty = KUBEADM_CONFIG.replace('mode: iptables', 'mode: ""');
  assert.equal(parseKubeProxyConfiguration(empty, 'config.conf').mode, 'iptables');
  for (const mode of ['ipvs']) {
    const c = parseKubeProxyConfiguration(
      KUBEADM_CONFIG.replace('mode: iptables', `mode: ${mode}`),
      'config.conf',
    );
    assert.equal(c.mode, mode);
    assert.throws(
      () => requireBuiltProxyMode(c.mode, 'config.conf: mode'),
      (e: unknown) =>
        e instanceof SvcnetError &&
        e.code === 'INVALID_INPUT' &&
        e.message ===
          `config.conf: mode: proxy mode "${mode}" is not built yet (svcnet implements iptables, nftables only)`,
    );
  }
});

test('negative periods are still rejected; zero ones are defaulted', () => {
  assert.deepEqual(errorsOf(`${HEAD}iptables: {syncPeriod: -1s}\nconfigSyncPeriod: -5m\n`), [
    'iptables.syncPeriod: must not be negative, got "-1s"',
    'configSyncPeriod: must not be negative, got "-5m"',
  ]);
  const c = parseKubeProxyConfiguration(
    `${HEAD}syncPeriod: 0s\niptables: {syncPeriod: 45s}\n`,
    'kp',
  );
  assert.equal(c.syncPeriodMs, 45_000, 'a zero top-level period falls back to the mode one');
});

test("the daemon's view of kubeadm's config.conf: default periods, the file's values", () => {
  const file = parseKubeProxyConfiguration(KUBEADM_CONFIG, 'config.conf');
  assert.equal(file.mode, 'iptables');
  assert.equal(file.clientConnection.kubeconfig, '/var/lib/kube-proxy/kubeconfig.conf');
  const c = resolveProxyConfig({}, file, 'host-a');
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.minSyncPeriodMs, 1_000);
  assert.equal(c.masqueradeBit, 14);
  assert.deepEqual(c.clusterCIDRs, ['10.244.0.0/16']);
  assert.equal(c.healthzBindAddress, '0.0.0.0:10256');
});

test('the canary is polled every sync period, as kube-proxy, unless --canary-interval says', () => {
  assert.equal(resolveProxyConfig({}, undefined, 'h').canaryIntervalMs, 30_000);
  const file = parseKubeProxyConfiguration(`${HEAD}iptables: {syncPeriod: 10s}\n`, 'kp.yaml');
  assert.equal(resolveProxyConfig({}, file, 'h').canaryIntervalMs, 10_000);
  assert.equal(resolveProxyConfig({ canaryInterval: '2s' }, file, 'h').canaryIntervalMs, 2_000);
});

test('the daemon mode: --proxy-mode wins over the file; nftables takes the nftables section', () => {
  const file = parseKubeProxyConfiguration(
    [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'mode: nftables',
      'iptables:',
      '  masqueradeBit: 10',
      'nftables:',
      '  masqueradeBit: 12',
      '  masqueradeAll: true',
      '',
    ].join('\n'),
    'kp.yaml',
  );
  assert.equal(resolveProxyConfig({}, undefined, 'h').mode, 'iptables');
  const nft = resolveProxyConfig({}, file, 'h');
  assert.equal(nft.mode, 'nftables');
  assert.equal(nft.masqueradeBit, 12);
  assert.equal(nft.masqueradeAll, true);
  const ipt = resolveProxyConfig({ proxyMode: 'iptables' }, file, 'h');
  assert.equal(ipt.mode, 'iptables');
  assert.equal(ipt.masqueradeBit, 10);
  assert.equal(ipt.masqueradeAll, false);
  assert.equal(resolveProxyConfig({ proxyMode: 'nftables' }, undefined, 'h').mode, 'nftables');
  assert.equal(resolveProxyConfig({ proxyMode: 'ipvs' }, undefined, 'h').mode, 'ipvs');
  assert.throws(
    () => resolveProxyConfig({ proxyMode: 'kernelspace' }, undefined, 'h'),
    (e: unknown) =>
      e instanceof ValidationError &&
      e.errors[0]?.field === '--proxy-mode' &&
      /"kernelspace" is not built yet/.test(e.errors[0].message),
  );
  assert.equal(requireBuiltProxyMode('nftables', '--proxy-mode', DAEMON_PROXY_MODES), 'nftables');
  assert.throws(
    () => requireBuiltProxyMode('kernelspace', '--proxy-mode', DAEMON_PROXY_MODES),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'INVALID_INPUT' &&
      e.message ===
        '--proxy-mode: proxy mode "kernelspace" is not built yet (svcnet implements iptables, nftables, ipvs only)',
  );
});

test('iptables.svcnetVariant (a svcnet extension) sets the backend; --iptables-variant wins', () => {
  const file = parseKubeProxyConfiguration(
    `${HEAD}iptables:\n  svcnetVariant: legacy\n`,
    'kp.yaml',
  );
  assert.equal(file.iptablesVariant, 'legacy');
  assert.equal(defaultKubeProxyConfig().iptablesVariant, 'auto');
  assert.equal(resolveProxyConfig({}, file, 'h').iptablesVariant, 'legacy');
  assert.equal(resolveProxyConfig({ iptablesVariant: 'nft' }, file, 'h').iptablesVariant, 'nft');
  assert.equal(resolveProxyConfig({ iptablesVariant: '' }, file, 'h').iptablesVariant, 'legacy');
  assert.equal(resolveProxyConfig({}, undefined, 'h').iptablesVariant, 'auto');
  const empty = `${HEAD}iptables:\n  svcnetVariant: ""\n`;
  assert.equal(parseKubeProxyConfiguration(empty, 'kp.yaml').iptablesVariant, 'auto');
  assert.deepEqual(errorsOf(`${HEAD}iptables:\n  svcnetVariant: nf_tables\n`), [
    'iptables.svcnetVariant: must be auto, legacy or nft, got "nf_tables"',
  ]);
  assert.deepEqual(errorsOf(`${HEAD}iptables:\n  variant: nft\n`), [
    'iptables.variant: unknown field',
  ]);
  assert.throws(
    () => resolveProxyConfig({ iptablesVariant: 'both' }, file, 'h'),
    /--iptables-variant: must be auto, legacy or nft, got "both"/,
  );
});
