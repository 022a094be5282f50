import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  canonicalIP,
  cidrContains,
  parseCIDR,
  parseIP,
  parseIPSloppy,
  formatCIDR,
  cidrAddress,
  formatIP,
} from './ip.js';

test('lenient parsing reads leading-zero IPv4 octets as decimal and prints canonically', () => {
  assert.equal(parseIP('010.001.002.003'), undefined);
  assert.equal(canonicalIP('010.001.002.003'), '10.1.2.3');
  assert.equal(canonicalIP('FD00:0:0::0001'), 'fd00::1');
  assert.equal(parseIPSloppy('256.1.1.1'), undefined);
  assert.equal(parseIPSloppy(' 1.2.3.4'), undefined);
  assert.equal(parseIPSloppy('fe80::1%eth0'), undefined);
});

test('CIDR parsing clears host bits and containment is per family', () => {
  const c = parseCIDR('10.244.1.7/24');
  assert.ok(c);
  assert.equal(formatCIDR(c), '10.244.1.0/24');
  assert.ok(cidrContains(c, parseIP('10.244.1.200')!));
  assert.ok(!cidrContains(c, parseIP('10.244.2.1')!));
  assert.ok(!cidrContains(c, parseIP('::1')!));
  assert.equal(parseCIDR('10.0.0.0/33'), undefined);
  const v6 = parseCIDR('fd00:10:96::/112')!;
  assert.equal(formatIP(cidrAddress(v6, 10n)!), 'fd00:10:96::a');
  assert.equal(cidrAddress(v6, 65536n), undefined);
});
