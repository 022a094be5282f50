import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../util/ip.js';
import { parsePluginConfig } from './parse-config.js';
import { planBridgeGateway, type PodAddress } from './plan-link.js';
import { CniError } from './types.js';

function cfg(extra: Record<string, unknown> = {}) {
  return parsePluginConfig(
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'br',
      type: 'bridge',
      isGateway: true,
      ipam: { type: 'host-local', ranges: [[{ subnet: '10.1.0.0/24' }]] },
      ...extra,
    }),
    'ADD',
  );
}

function pod(ip: string, prefix: number, gw: string): PodAddress {
  const a = parseIP(ip);
  const g = parseIP(gw);
  assert.ok(a && g);
  return { ip: a, prefix, gateway: g };
}

const V4 = pod('10.1.0.2', 24, '10.1.0.1');
const V6 = pod('fd00:1::2', 64, 'fd00:1::1');

test('bridge gateway: nothing to do when the bridge is bare or already has it', () => {
  assert.deepEqual(planBridgeGateway(cfg(), [], [V4]), []);
  assert.deepEqual(planBridgeGateway(cfg(), [{ local: '10.1.0.1', prefixlen: 24 }], [V4]), []);
  assert.deepEqual(
    planBridgeGateway(cfg({ isGateway: false }), [{ local: '10.9.0.1', prefixlen: 24 }], [V4]),
    [],
  );
});

test('bridge gateway: another IPv4 address fails naming forceAddress, or is removed with it', () => {
  const have = [{ local: '10.9.0.1', prefixlen: 24 }];
  assert.throws(
    () => planBridgeGateway(cfg(), have, [V4]),
    (e: unknown) =>
      e instanceof CniError &&
      e.cniCode === 999 &&
      /bridge cni0 already has address 10\.9\.0\.1\/24, different from the gateway 10\.1\.0\.1\/24; set "forceAddress": true/.test(
        e.message,
      ),
  );
  assert.deepEqual(planBridgeGateway(cfg({ forceAddress: true }), have, [V4]), [
    { op: 'addrDel', cidr: '10.9.0.1/24', dev: 'cni0' },
  ]);
});

test('bridge gateway: IPv6 keeps link-local and other subnets, conflicts only when overlapping', () => {
  const have = [
    { local: 'fe80::1', prefixlen: 64 },
    { local: 'fd00:2::1', prefixlen: 64 },
  ];
  assert.deepEqual(planBridgeGateway(cfg(), have, [V6]), []);
  assert.throws(
    () => planBridgeGateway(cfg(), [{ local: 'fd00:1::9', prefixlen: 64 }], [V6]),
    /forceAddress/,
  );
});
