// FakeClock's two ways of moving time: advance (async, promise callbacks run between
// timers) and advanceSync (no yielding); timers fire in due order, intervals re-arm, clears
// stick, sleep resolves on time. realClock's sleep resolves and its timers are cancellable.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAKE_CLOCK_START, FakeClock, realClock } from './clock.js';

test('advanceSync fires due timers in time order, then creation order; clears stick', () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push('b@20'), 20);
  clock.setTimeout(() => fired.push('a@10'), 10);
  clock.setTimeout(() => fired.push('c@20'), 20);
  const gone = clock.setTimeout(() => fired.push('never'), 5);
  clock.clearTimeout(gone);
  clock.advanceSync(19);
  assert.deepEqual(fired, ['a@10']);
  assert.equal(clock.now(), 19);
  clock.advanceSync(1);
  assert.deepEqual(fired, ['a@10', 'b@20', 'c@20']);
  assert.equal(clock.pendingTimers(), 0);
});

test('a timer sees the time it was due; one set while firing fires in the same advance', () => {
  const clock = new FakeClock(0);
  const seen: number[] = [];
  clock.setTimeout(() => {
    seen.push(clock.now());
    clock.setTimeout(() => seen.push(clock.now()), 5);
  }, 10);
  clock.advanceSync(100);
  assert.deepEqual(seen, [10, 15]);
  assert.equal(clock.now(), 100);
});

test('intervals re-arm every period until cleared', () => {
  const clock = new FakeClock(0);
  let n = 0;
  const h = clock.setInterval(() => n++, 1000);
  clock.advanceSync(999);
  assert.equal(n, 0);
  clock.advanceSync(2001);
  assert.equal(n, 3);
  assert.equal(clock.nextTimerAt(), 4000);
  clock.clearInterval(h);
  clock.advanceSync(10_000);
  assert.equal(n, 3);
});

test('advance lets async work started by one timer finish before the next fires', async () => {
  const clock = new FakeClock();
  assert.equal(clock.now(), FAKE_CLOCK_START);
  const log: string[] = [];
  clock.setTimeout(() => {
    void (async () => {
      await Promise.resolve();
      log.push('first done');
    })();
  }, 10);
  clock.setTimeout(() => log.push('second'), 10);
  await clock.advance(10);
  assert.deepEqual(log, ['first done', 'second']);
});

test('sleep resolves when the clock reaches it', async () => {
  const clock = new FakeClock(0);
  let woke = false;
  const p = clock.sleep(50).then(() => (woke = true));
  await clock.advance(49);
  assert.equal(woke, false);
  await clock.advance(1);
  await p;
  assert.equal(woke, true);
});

test('realClock: sleep resolves, a cleared timer never fires', async () => {
  let fired = false;
  const h = realClock.setTimeout(() => (fired = true), 1);
  realClock.clearTimeout(h);
  realClock.clearTimeout(undefined);
  await realClock.sleep(5);
  assert.equal(fired, false);
  assert.ok(Math.abs(realClock.now() - Date.now()) < 1000);
});
