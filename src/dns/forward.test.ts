// The forwarder's deadlines on an injected clock: against a silent upstream each attempt
// times out after attemptTimeoutMs and the failover stops at two tries per upstream, with no
// real waiting (the sockets are real, on loopback; only time is fake).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
import { FakeUpstream } from './fake-upstream.js';
import { Forwarder } from './forward.js';
import { TYPE } from './wire.js';

/** Yields to I/O until `ok` holds (the query reaching the socket), without using time. */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await flushMicrotasks();
  assert.ok(ok(), 'condition never held');
}

test('a silent upstream: each attempt times out on the clock, then the lookup fails', async () => {
  const upstream = new FakeUpstream();
  await upstream.start();
  upstream.silent = true;
  const clock = new FakeClock();
  const forwarder = new Forwarder({
    upstreams: [{ host: '127.0.0.1', port: upstream.port }],
    attemptTimeoutMs: 2000,
    totalTimeoutMs: 5000,
    clock,
  });
  try {
    let settled = false;
    const result = forwarder.lookup('slow.example.net', TYPE.A).finally(() => {
      settled = true;
    });
    await until(() => upstream.received.length === 1 && clock.pendingTimers() === 1);
    await clock.advance(1999);
    assert.equal(settled, false, 'still waiting just before the attempt timeout');
    await clock.advance(1);
    await until(() => upstream.received.length === 2 && clock.pendingTimers() === 1);
    assert.equal(settled, false, 'the second attempt is under way');
    await clock.advance(2000);
    assert.equal(await result, undefined);
    assert.deepEqual(upstream.received, ['slow.example.net A', 'slow.example.net A']);
  } finally {
    forwarder.close();
    await upstream.stop();
  }
});
