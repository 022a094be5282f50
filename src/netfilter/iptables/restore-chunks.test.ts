import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkRestoreInput } from './restore-chunks.js';

const INPUT = [
  '*filter',
  ':KUBE-FORWARD - [0:0]',
  '-A KUBE-FORWARD -j ACCEPT',
  'COMMIT',
  '*nat',
  ':KUBE-SERVICES - [0:0]',
  ':KUBE-MARK-MASQ - [0:0]',
  ':KUBE-SVC-A - [0:0]',
  ':KUBE-SEP-A1 - [0:0]',
  ':KUBE-SEP-A2 - [0:0]',
  ':KUBE-SVC-OLD - [0:0]',
  '-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A',
  '-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000',
  '-A KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-A1',
  '-A KUBE-SVC-A -j KUBE-SEP-A2',
  '-A KUBE-SEP-A1 -s 10.0.0.1 -j KUBE-MARK-MASQ',
  '-A KUBE-SEP-A1 -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80',
  '-A KUBE-SEP-A2 -s 10.0.0.2 -j KUBE-MARK-MASQ',
  '-A KUBE-SEP-A2 -p tcp -m tcp -j DNAT --to-destination 10.0.0.2:80',
  '-X KUBE-SVC-OLD',
  '-I PREROUTING 1 -j KUBE-SERVICES',
  'COMMIT',
  '',
].join('\n');

test('an input within the limit is kept as it is', () => {
  assert.deepEqual(chunkRestoreInput(INPUT, 100), [INPUT]);
});

test('a larger input: every chain whole in one part, after the chains it jumps to, -X last', () => {
  const parts = chunkRestoreInput(INPUT, 3);
  assert.ok(parts.length > 2);
  for (const p of parts) assert.match(p, /^\*(filter|nat)\n[^]*\nCOMMIT\n$/);
  // Same lines overall (order aside).
  const body = (t: string) =>
    t
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('*') && l !== 'COMMIT')
      .sort();
  assert.deepEqual(body(parts.join('')), body(INPUT));
  const partOf = (line: string) => parts.findIndex((p) => p.split('\n').includes(line));
  // A chain's declaration and its rules in the same part.
  assert.equal(partOf(':KUBE-SVC-A - [0:0]'), partOf('-A KUBE-SVC-A -j KUBE-SEP-A2'));
  // Jump targets first: SEP before SVC before KUBE-SERVICES before the hook.
  assert.ok(partOf(':KUBE-MARK-MASQ - [0:0]') <= partOf(':KUBE-SEP-A1 - [0:0]'));
  assert.ok(partOf(':KUBE-SEP-A2 - [0:0]') <= partOf(':KUBE-SVC-A - [0:0]'));
  assert.ok(partOf(':KUBE-SVC-A - [0:0]') <= partOf(':KUBE-SERVICES - [0:0]'));
  assert.ok(partOf(':KUBE-SERVICES - [0:0]') <= partOf('-I PREROUTING 1 -j KUBE-SERVICES'));
  assert.equal(partOf('-X KUBE-SVC-OLD'), parts.length - 1);
});

test('input not in iptables-save shape is kept whole', () => {
  const odd = '-A X -j Y\n'.repeat(10);
  assert.deepEqual(chunkRestoreInput(odd, 3), [odd]);
});
