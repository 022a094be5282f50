import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inLbPool, lbPoolAddresses, lbPoolCIDRs, parseLbPool } from './lb-pool.js';

test('a range and a CIDR give their addresses in order', () => {
  const r = parseLbPool('172.18.255.200-172.18.255.203');
  assert.deepEqual(lbPoolAddresses(r), [
    '172.18.255.200',
    '172.18.255.201',
    '172.18.255.202',
    '172.18.255.203',
  ]);
  assert.equal(lbPoolAddresses(parseLbPool('10.0.0.0/30')).length, 4);
  assert.ok(inLbPool(r, '172.18.255.203'));
  assert.ok(!inLbPool(r, '172.18.255.204'));
  assert.ok(!inLbPool(r, 'not-an-ip'));
});

test('the covering CIDRs are exact and fewest', () => {
  assert.deepEqual(lbPoolCIDRs(parseLbPool('10.0.0.0/24')), ['10.0.0.0/24']);
  assert.deepEqual(lbPoolCIDRs(parseLbPool('10.0.0.1-10.0.0.6')), [
    '10.0.0.1/32',
    '10.0.0.2/31',
    '10.0.0.4/31',
    '10.0.0.6/32',
  ]);
  assert.deepEqual(lbPoolCIDRs(parseLbPool('10.0.0.9-10.0.0.9')), ['10.0.0.9/32']);
});

test('bad pools are refused naming the flag', () => {
  assert.throws(
    () => parseLbPool('10.0.0.9-10.0.0.1'),
    /--lb-pool: the range ends before it starts/,
  );
  assert.throws(() => parseLbPool('10.0.0.0/8'), /--lb-pool: holds more than 4096 addresses/);
  assert.throws(() => parseLbPool('nope'), /--lb-pool: must be an IPv4 CIDR or range START-END/);
});
