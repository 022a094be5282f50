import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePluginConfig } from './parse-config.js';
import { parseEnvironment, parseCniArgs } from './parse-request.js';
import { CniError } from './types.js';
import { highestCommonVersion } from './version.js';
import { kindnetConfig } from './test-configs.js';

function cniError(fn: () => unknown): CniError {
  try {
    fn();
  } catch (e) {
    if (e instanceof CniError) return e;
    throw e;
  }
  assert.fail('expected a CniError');
}

const good = kindnetConfig('1.1.0', '/run/ipam');

test('a kindnet-style config parses with host-local defaults', () => {
  const cfg = parsePluginConfig(JSON.stringify(good), 'ADD');
  assert.equal(cfg.mode, 'ptp');
  if (cfg.ipam?.kind !== 'builtin') return assert.fail('expected the built-in IPAM');
  const r = cfg.ipam.rangeSets[0]?.[0];
  assert.ok(r);
  assert.equal(r.rangeStart, 0x0af40101n);
  assert.equal(r.rangeEnd, 0x0af401fen, 'broadcast excluded');
  assert.equal(r.gateway?.value, 0x0af40101n);
  assert.deepEqual(cfg.ipam.routes, [{ dst: '0.0.0.0/0' }]);
});

test('bad configs get the spec codes and name every bad field', () => {
  const cases: [string, unknown, number, RegExp][] = [
    [
      'unknown version',
      { ...good, cniVersion: '2.0.0' },
      1,
      /incompatible CNI versions: config is "2\.0\.0", plugin supports \["0\.3\.0" .* "1\.1\.0"\]/,
    ],
    ['missing version', { ...good, cniVersion: undefined }, 7, /cniVersion: required/],
    ['missing ipam', { ...good, ipam: undefined }, 7, /network "kindnet": ipam: required/],
    [
      'bad subnet',
      { ...good, ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.0/33' }]] } },
      7,
      /ipam\.ranges\[0\]\[0\]\.subnet: not a CIDR: "10\.244\.1\.0\/33"/,
    ],
    [
      'host bits',
      { ...good, ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.5/24' }]] } },
      7,
      /not a network address \(did you mean 10\.244\.1\.0\/24\?\)/,
    ],
    [
      'too small',
      { ...good, ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.0/31' }]] } },
      7,
      /too small to allocate from/,
    ],
    [
      'gateway outside',
      {
        ...good,
        ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.1.0/24', gateway: '10.0.0.1' }]] },
      },
      7,
      /gateway: 10\.0\.0\.1 is outside subnet 10\.244\.1\.0\/24/,
    ],
    [
      'overlap',
      {
        ...good,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: '10.244.0.0/16' }]],
        },
      },
      7,
      /ipam\.ranges\[1\]\[0\]: overlaps ipam\.ranges\[0\]\[0\]/,
    ],
    ['bad mode', { ...good, mode: 'macvlan' }, 7, /mode: must be "ptp" or "bridge"/],
    [
      'bridge option in ptp',
      { ...good, hairpinMode: true },
      7,
      /hairpinMode: only valid with "mode": "bridge"/,
    ],
    ['bad name', { ...good, name: 'a/b' }, 7, /name: must match/],
  ];
  for (const [what, cfg, code, msg] of cases) {
    const e = cniError(() => parsePluginConfig(JSON.stringify(cfg), 'ADD'));
    assert.equal(e.cniCode, code, what);
    assert.match(e.message, msg, what);
  }
  assert.equal(cniError(() => parsePluginConfig('{', 'ADD')).cniCode, 6);
  const many = cniError(() =>
    parsePluginConfig(JSON.stringify({ ...good, mode: 'x', mtu: 5, ipMasq: 'yes' }), 'ADD'),
  );
  assert.equal(many.message.split('; ').length, 3, 'all field errors are reported at once');
});

test('other ipam types are delegated; GC reads either attachments key', () => {
  const cfg = parsePluginConfig(JSON.stringify({ ...good, ipam: { type: 'dhcp' } }), 'ADD');
  assert.deepEqual(cfg.ipam, { kind: 'delegate', type: 'dhcp' });
  const gcOld = parsePluginConfig(
    JSON.stringify({ ...good, 'cni.dev/attachments': [{ containerID: 'a', ifname: 'eth0' }] }),
    'GC',
  );
  const gcNew = parsePluginConfig(
    JSON.stringify({
      ...good,
      'cni.dev/valid-attachments': [{ containerID: 'a', ifname: 'eth0' }],
    }),
    'GC',
  );
  assert.deepEqual(gcOld.validAttachments, [{ containerID: 'a', ifname: 'eth0' }]);
  assert.deepEqual(gcNew.validAttachments, gcOld.validAttachments);
});

test('environment: required variables per command, container ID and ifname rules', () => {
  assert.equal(
    cniError(() => parseEnvironment({ CNI_COMMAND: 'ADD' })).message,
    'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing for ADD',
  );
  assert.equal(cniError(() => parseEnvironment({ CNI_COMMAND: 'FOO' })).cniCode, 4);
  const del = parseEnvironment({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' });
  assert.equal(del.netns, undefined, 'DEL may come without a netns');
  assert.equal(
    cniError(() =>
      parseEnvironment({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'bad/id', CNI_IFNAME: 'eth0' }),
    ).details,
    'bad/id',
  );
  assert.match(
    cniError(() =>
      parseEnvironment({
        CNI_COMMAND: 'DEL',
        CNI_CONTAINERID: 'c',
        CNI_IFNAME: 'a-very-long-ifname',
      }),
    ).message,
    /longer than 15/,
  );
  assert.equal(parseEnvironment({ CNI_COMMAND: 'STATUS', CNI_PATH: '/a:/b' }).path.length, 2);
  assert.equal(
    parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=web-0;FOO=bar').get('K8S_POD_NAME'),
    'web-0',
  );
  assert.match(cniError(() => parseCniArgs('FOO=bar')).message, /unknown args \[FOO\]/);
});

test('version negotiation picks the highest version everyone speaks', () => {
  const ref = ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0'];
  assert.equal(highestCommonVersion(['1.0.0', '1.1.0'], ['0.4.0', '1.0.0', '1.1.0'], ref), '1.0.0');
  assert.equal(highestCommonVersion(['1.1.0'], ['1.1.0'], ref), undefined);
  assert.equal(highestCommonVersion(['0.3.1', '1.1.0'], ['0.3.1', '1.1.0']), '1.1.0');
});
