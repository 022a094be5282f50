import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSubnetEnv, renderSubnetEnv } from './subnet-env.js';

test('subnet.env: the gateway address of the node subnet, the MTU and IPMASQ', () => {
  assert.equal(
    renderSubnetEnv({ network: '10.244.0.0/16' }, '10.244.3.0/24', 1450, true),
    'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
  );
});

test('subnet.env: what the agent writes parses back (one format, one place)', () => {
  const text = renderSubnetEnv({ network: '10.244.0.0/16' }, '10.244.3.0/24', 1450, false);
  assert.deepEqual(parseSubnetEnv(`# written by flanneld\n${text}FLANNEL_IPV6_NETWORK=\n`, 'f'), {
    env: {
      network: '10.244.0.0/16',
      subnet: '10.244.3.0/24',
      gateway: '10.244.3.1',
      mtu: 1450,
      ipMasq: false,
    },
    problems: [],
  });
});

test('subnet.env: every missing or bad variable is named', () => {
  const r = parseSubnetEnv(
    'FLANNEL_NETWORK=10.244.0.0/33\nFLANNEL_MTU=9x\nFLANNEL_IPMASQ=yes\n',
    '/run/flannel/subnet.env',
  );
  assert.deepEqual(r.problems, [
    '/run/flannel/subnet.env: FLANNEL_SUBNET: missing',
    '/run/flannel/subnet.env: FLANNEL_NETWORK: not a CIDR: "10.244.0.0/33"',
    '/run/flannel/subnet.env: FLANNEL_MTU: must be an integer 576-65535, got "9x"',
    '/run/flannel/subnet.env: FLANNEL_IPMASQ: must be true or false, got "yes"',
  ]);
});
