// The forwarder cache on an injected clock: served TTLs count down with time, capped at
// maxTtl, and the entry expires exactly when its TTL runs out.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as dnsPacket from 'dns-packet';
import { FakeClock } from '../util/clock.js';
import { DnsCache } from './cache.js';

const question = { name: 'www.example.com', type: 'A' as const };
const query = dnsPacket.encode({ type: 'query', id: 7, questions: [question] });
const response = dnsPacket.encode({
  type: 'response',
  id: 1,
  flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
  questions: [question],
  answers: [{ name: 'www.example.com', type: 'A', ttl: 300, data: '192.0.2.7' }],
});
const questionEnd = dnsPacket.encodingLength({ type: 'query', questions: [question] });

function ttlOf(wire: Buffer | undefined): number | undefined {
  const a = wire ? dnsPacket.decode(wire).answers?.[0] : undefined;
  return a && a.type !== 'OPT' ? a.ttl : undefined;
}

test('cached answers age with the clock, capped at maxTtl, and expire on time', async () => {
  const clock = new FakeClock();
  const cache = new DnsCache({ maxTtl: 30, clock });
  assert.equal(cache.put('k', response), 'success');
  assert.equal(ttlOf(cache.get('k', query, questionEnd)), 30, 'capped at maxTtl');
  await clock.advance(12_500);
  assert.equal(ttlOf(cache.get('k', query, questionEnd)), 18);
  await clock.advance(17_499);
  assert.equal(ttlOf(cache.get('k', query, questionEnd)), 1, 'still there 1 ms before expiry');
  await clock.advance(1);
  assert.equal(cache.get('k', query, questionEnd), undefined, 'expired');
  assert.equal(cache.size('success'), 0);
});
