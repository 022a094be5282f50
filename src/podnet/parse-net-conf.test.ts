import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ValidationError } from '../errors.js';
import { parseNetConf } from './parse-net-conf.js';

test('net-conf.json: flannel defaults (SubnetLen 24, vxlan VNI 1 port 8472) and host-gw', () => {
  assert.deepEqual(parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}', 'f'), {
    network: '10.244.0.0/16',
    subnetLen: 24,
    enableIPv4: true,
    backend: { type: 'vxlan', vni: 1, port: 8472, mtu: 0 },
  });
  assert.deepEqual(
    parseNetConf(
      '{"Network":"10.244.0.0/16","SubnetLen":24,"EnableIPv4":true,"Backend":{"Type":"vxlan","VNI":4,"Port":4789}}',
      'f',
    ).backend,
    { type: 'vxlan', vni: 4, port: 4789, mtu: 0 },
  );
  // Port 0 is flannel's "the kernel's default".
  assert.deepEqual(
    parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","Port":0}}', 'f').backend,
    parseNetConf('{"Network":"10.244.0.0/16"}', 'f').backend,
  );
  assert.deepEqual(
    parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}', 'f').backend,
    { type: 'host-gw' },
  );
  // --backend wins over Backend.Type.
  assert.deepEqual(
    parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}', 'f', 'host-gw').backend,
    { type: 'host-gw' },
  );
});

test('net-conf.json: every bad field is named, in one error', () => {
  const cases: [string, string][] = [
    ['{"Network":"10.244.0.0/33"}', 'nc.json: Network: invalid IPv4 CIDR "10.244.0.0/33"'],
    ['{"Backend":{"Type":"vxlan"}}', 'nc.json: Network: required'],
    [
      '{"Network":"10.244.0.0/16","Backend":{"Type":"udp"}}',
      'nc.json: Backend.Type: unsupported backend "udp" (vxlan, host-gw)',
    ],
    [
      '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":-1,"Port":70000}}',
      'nc.json: Backend.VNI: must be an integer 0-16777215\nnc.json: Backend.Port: must be an integer 0-65535',
    ],
    [
      '{"Network":"10.244.0.0/16","SubnetLen":16}',
      "nc.json: SubnetLen: must be longer than the Network's prefix /16",
    ],
    [
      '{"Network":"10.244.0.0/16","EnableIPv4":"yes"}',
      'nc.json: EnableIPv4: must be true or false',
    ],
    ['{"Network":', 'nc.json: not valid JSON: '],
    ['[]', 'nc.json: must be a JSON object'],
  ];
  for (const [text, want] of cases)
    assert.throws(
      () => parseNetConf(text, 'nc.json'),
      (e: unknown) => {
        assert.ok(e instanceof ValidationError, text);
        assert.equal(e.code, 'INVALID_INPUT');
        assert.ok(e.message.startsWith(want), `${text}: ${e.message}`);
        return true;
      },
    );
});
