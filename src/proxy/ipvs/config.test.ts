import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '../../errors.js';
import { parseKubeProxyConfiguration, resolveProxyConfig } from '../config.js';
import type { ProxyConfigFlags } from '../config.js';

const HEAD = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n';

function errorsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (e) {
    assert.ok(e instanceof ValidationError);
    return e.errors.map((x) => `${x.field}: ${x.message}`);
  }
  assert.fail('expected a ValidationError');
}

const parse = (text: string) => parseKubeProxyConfiguration(`${HEAD}${text}`, 'kp.yaml');

test('the ipvs section: kube-proxy defaults (sync 30s, min 0, rr, timeouts kept)', () => {
  const c = parse('mode: ipvs\n');
  assert.deepEqual(c.ipvs, {
    scheduler: '',
    syncPeriodMs: 30_000,
    minSyncPeriodMs: 0,
    excludeCIDRs: [],
    strictARP: false,
    tcpTimeoutMs: 0,
    tcpFinTimeoutMs: 0,
    udpTimeoutMs: 0,
  });
  // In ipvs mode the runner takes the ipvs periods, not the iptables ones (1s minimum).
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.minSyncPeriodMs, 0);
  const d = resolveProxyConfig({}, c, 'h');
  assert.equal(d.mode, 'ipvs');
  assert.equal(d.minSyncPeriodMs, 0);
});

test("kubeadm's config.conf with mode ipvs loads (its ipvs section is all zero values)", () => {
  const kubeadm = readFileSync(join(import.meta.dirname, '..', 'testdata', 'kubeadm-config.conf'));
  const c = parseKubeProxyConfiguration(
    kubeadm.toString().replace('mode: iptables', 'mode: ipvs'),
    'config.conf',
  );
  assert.equal(c.ipvs.syncPeriodMs, 30_000);
  assert.deepEqual(c.ipvs.excludeCIDRs, []);
});

test('every ipvs field is read; the ipvs periods drive the sync runner', () => {
  const c = parse(
    [
      'mode: ipvs',
      'iptables: {syncPeriod: 10s, minSyncPeriod: 2s}',
      'ipvs:',
      '  syncPeriod: 1m',
      '  minSyncPeriod: 5s',
      '  scheduler: wrr',
      '  excludeCIDRs: ["10.1.2.3/16", "fd00::/64"]',
      '  strictARP: true',
      '  tcpTimeout: 900s',
      '  tcpFinTimeout: 2m',
      '  udpTimeout: 300s',
      '',
    ].join('\n'),
  );
  assert.deepEqual(c.ipvs, {
    scheduler: 'wrr',
    syncPeriodMs: 60_000,
    minSyncPeriodMs: 5_000,
    excludeCIDRs: ['10.1.0.0/16', 'fd00::/64'],
    strictARP: true,
    tcpTimeoutMs: 900_000,
    tcpFinTimeoutMs: 120_000,
    udpTimeoutMs: 300_000,
  });
  const d = resolveProxyConfig({}, c, 'h');
  assert.equal(d.syncPeriodMs, 60_000);
  assert.equal(d.minSyncPeriodMs, 5_000);
  assert.equal(d.ipvs.scheduler, 'wrr');
  // The same file in iptables mode runs on the iptables periods.
  const ipt = resolveProxyConfig({ proxyMode: 'iptables' }, c, 'h');
  assert.equal(ipt.syncPeriodMs, 60_000, 'top-level/mode periods of the file as resolved');
  const iptFile = parse('iptables: {syncPeriod: 10s, minSyncPeriod: 2s}\nipvs: {syncPeriod: 1m}\n');
  assert.equal(resolveProxyConfig({}, iptFile, 'h').syncPeriodMs, 10_000);
  const asIpvs = resolveProxyConfig({ proxyMode: 'ipvs' }, iptFile, 'h');
  assert.equal(asIpvs.syncPeriodMs, 60_000, '--proxy-mode ipvs takes the ipvs section');
  assert.equal(asIpvs.minSyncPeriodMs, 0);
});

test('bad ipvs values name their field (checked in ipvs mode, as kube-proxy does)', () => {
  const bad = [
    'ipvs:',
    '  syncPeriod: 5s',
    '  minSyncPeriod: 10s',
    '  scheduler: fancy',
    '  excludeCIDRs: ["10.0.0.0/8", "nope", "1.2.3.4"]',
    '  tcpTimeout: -1s',
    '  udpTimeout: -2s',
    '',
  ].join('\n');
  assert.deepEqual(
    errorsOf(() => parse(`mode: ipvs\n${bad}`)),
    [
      'ipvs.scheduler: must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq (or empty for rr), got "fancy"',
      'ipvs.syncPeriod: must be greater than or equal to ipvs.minSyncPeriod',
      'ipvs.excludeCIDRs[1]: must be a CIDR, got "nope"',
      'ipvs.excludeCIDRs[2]: must be a CIDR, got "1.2.3.4"',
      'ipvs.tcpTimeout: must not be negative',
      'ipvs.udpTimeout: must not be negative',
    ],
  );
  assert.deepEqual(
    errorsOf(() => parse('mode: ipvs\nipvs: {syncPeriod: -1s, minSyncPeriod: -1s}\n')),
    ['ipvs.syncPeriod: must be greater than 0', 'ipvs.minSyncPeriod: must not be negative'],
  );
  assert.deepEqual(
    errorsOf(() => parse('ipvs: {strictARP: "yes", excludeCIDRs: "a"}\n')),
    [
      'ipvs.strictARP: must be true or false, got "yes"',
      'ipvs.excludeCIDRs: must be a list of strings, got "a"',
    ],
  );
  // Another mode does not check the ipvs values (kube-proxy validates them in ipvs mode) ...
  const file = parse(`mode: iptables\n${bad}`);
  // ... but running it in ipvs mode does, naming the file's fields.
  const errs = errorsOf(() => resolveProxyConfig({ proxyMode: 'ipvs' }, file, 'h'));
  assert.equal(
    errs[0],
    'ipvs.scheduler: must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq (or empty for rr), got "fancy"',
  );
  assert.equal(errs.length, 6);
});

test('the --ipvs-* flags win over the file, and bad ones name the flag', () => {
  const file = parse(
    'mode: ipvs\nipvs: {scheduler: sh, syncPeriod: 1m, excludeCIDRs: [10.0.0.0/8]}\n',
  );
  const flags: ProxyConfigFlags = {
    ipvsScheduler: 'lc',
    ipvsSyncPeriod: '45s',
    ipvsMinSyncPeriod: '2s',
    ipvsExcludeCidrs: '192.168.0.0/16, fd00::/8',
    ipvsStrictArp: true,
    ipvsTcpTimeout: '15m',
    ipvsTcpfinTimeout: '30s',
    ipvsUdpTimeout: '1m',
    iptablesSyncPeriod: '5s',
    iptablesMinSyncPeriod: '1s',
  };
  const c = resolveProxyConfig(flags, file, 'h');
  assert.deepEqual(c.ipvs, {
    scheduler: 'lc',
    syncPeriodMs: 45_000,
    minSyncPeriodMs: 2_000,
    excludeCIDRs: ['192.168.0.0/16', 'fd00::/8'],
    strictARP: true,
    tcpTimeoutMs: 900_000,
    tcpFinTimeoutMs: 30_000,
    udpTimeoutMs: 60_000,
  });
  assert.equal(c.syncPeriodMs, 45_000, 'ipvs mode ignores --iptables-sync-period');
  assert.equal(c.minSyncPeriodMs, 2_000);
  assert.equal(resolveProxyConfig({ ipvsStrictArp: 'false' }, file, 'h').ipvs.strictARP, false);
  // In iptables mode the ipvs flags do not drive the runner.
  const ipt = resolveProxyConfig({ ...flags, proxyMode: 'iptables' }, file, 'h');
  assert.equal(ipt.syncPeriodMs, 5_000);
  assert.deepEqual(
    errorsOf(() =>
      resolveProxyConfig(
        {
          ipvsScheduler: 'xx',
          ipvsSyncPeriod: 'soon',
          ipvsMinSyncPeriod: '2m',
          ipvsExcludeCidrs: '10.0.0.0/8,bogus',
          ipvsStrictArp: 'maybe',
          ipvsUdpTimeout: '-1s',
        },
        file,
        'h',
      ),
    ),
    [
      '--ipvs-strict-arp: must be true or false, got "maybe"',
      '--ipvs-sync-period: must be a duration like 1s, 500ms or 1h30m, got "soon"',
      '--ipvs-udp-timeout: must be a duration like 1s, 500ms or 1h30m, got "-1s"',
      '--ipvs-scheduler: must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq (or empty for rr), got "xx"',
      'ipvs.syncPeriod: must be greater than or equal to --ipvs-min-sync-period',
      '--ipvs-exclude-cidrs: must be a CIDR, got "bogus"',
    ],
  );
});
