import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flannelDelegate, parseFlannelConfig } from './parse-flannel.js';
import { CniError } from './types.js';

test('flannel: delegate built from subnet.env, merged with delegate and ipam as flannel does', () => {
  const f = parseFlannelConfig(
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'cbr0',
      type: 'flannel',
      ipam: { routes: [{ dst: '10.96.0.0/12' }], dataDir: '/ipam' },
      delegate: { bridge: 'flannel0', hairpinMode: true, ipMasq: true, ipam: { type: 'ignored' } },
    }),
  );
  assert.equal(f.subnetFile, '/run/flannel/subnet.env');
  assert.equal(f.dataDir, '/var/lib/cni/flannel');
  assert.deepEqual(
    flannelDelegate(f, {
      network: '10.244.0.0/16',
      subnet: '10.244.3.0/24',
      gateway: '10.244.3.1',
      mtu: 1450,
      ipMasq: true,
    }),
    {
      bridge: 'flannel0',
      hairpinMode: true,
      ipMasq: true,
      name: 'cbr0',
      cniVersion: '1.0.0',
      type: 'bridge',
      mtu: 1450,
      isGateway: true,
      ipam: {
        routes: [{ dst: '10.96.0.0/12' }, { dst: '10.244.0.0/16' }],
        dataDir: '/ipam',
        type: 'host-local',
        ranges: [[{ subnet: '10.244.3.0/24' }]],
      },
    },
  );
});

test('flannel config: every bad field named with code 7; an unsupported cniVersion is code 1', () => {
  assert.throws(
    () =>
      parseFlannelConfig(
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'bad name',
          type: 'flannel',
          dataDir: 7,
          delegate: { type: '' },
          ipam: { routes: {} },
        }),
      ),
    (e: unknown) => {
      assert.ok(e instanceof CniError);
      assert.equal(e.cniCode, 7);
      assert.match(e.message, /name: must match/);
      assert.match(e.message, /dataDir: must be an absolute path, got 7/);
      assert.match(e.message, /delegate\.type: must be a plugin name/);
      assert.match(e.message, /ipam\.routes: must be a list/);
      return true;
    },
  );
  assert.throws(
    () => parseFlannelConfig(JSON.stringify({ cniVersion: '9.9.9', name: 'f', type: 'flannel' })),
    (e: unknown) => e instanceof CniError && e.cniCode === 1,
  );
});
