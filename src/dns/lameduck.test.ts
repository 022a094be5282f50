// The lameduck state machine on a FakeClock: not-ready from the first signal, stop only when
// the duration has passed, a second signal cutting it short, 0 disabling it, and a failing
// stop reported to every caller.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
import { LameduckShutdown, type ShutdownEvent } from './lameduck.js';

function machine(durationMs: number, stop?: () => Promise<void>) {
  const clock = new FakeClock();
  const events: ShutdownEvent[] = [];
  let stops = 0;
  const ld = new LameduckShutdown({
    durationMs,
    clock,
    stop:
      stop ??
      (() => {
        stops++;
        return Promise.resolve();
      }),
    onEvent: (e) => events.push(e),
  });
  return { clock, events, ld, stops: () => stops };
}

test('lameduck: not ready at once, keeps serving for the duration, then stops once', async () => {
  const { clock, events, ld, stops } = machine(5000);
  assert.equal(ld.phase, 'serving');
  assert.equal(ld.isShuttingDown(), false);
  let resolved = false;
  const done = ld.shutdown('SIGTERM').then(() => (resolved = true));
  assert.equal(ld.phase, 'lameduck');
  assert.equal(ld.isShuttingDown(), true);
  assert.deepEqual(events, [{ kind: 'lameduck', reason: 'SIGTERM', durationMs: 5000 }]);
  await clock.advance(4999);
  assert.equal(ld.phase, 'lameduck');
  assert.equal(stops(), 0, 'nothing closed before the duration');
  assert.equal(resolved, false);
  await clock.advance(1);
  await done;
  assert.equal(ld.phase, 'stopped');
  assert.equal(stops(), 1);
  assert.deepEqual(events.slice(1), [
    { kind: 'stopping', reason: 'SIGTERM', lameduckMs: 5000 },
    { kind: 'stopped' },
  ]);
  // Later signals change nothing and resolve with the same outcome.
  await ld.shutdown('SIGINT');
  assert.equal(stops(), 1);
  assert.equal(clock.pendingTimers(), 0);
});

test('lameduck: a second signal ends it at once', async () => {
  const { clock, events, ld, stops } = machine(5000);
  const first = ld.shutdown('SIGTERM');
  await clock.advance(1200);
  const second = ld.shutdown('SIGINT');
  assert.equal(second, first, 'the same promise');
  await second;
  assert.equal(stops(), 1);
  assert.equal(ld.phase, 'stopped');
  assert.deepEqual(events, [
    { kind: 'lameduck', reason: 'SIGTERM', durationMs: 5000 },
    { kind: 'cut-short', reason: 'SIGINT', remainingMs: 3800 },
    { kind: 'stopping', reason: 'SIGINT', lameduckMs: 1200 },
    { kind: 'stopped' },
  ]);
  assert.equal(clock.pendingTimers(), 0, 'the lameduck timer is gone');
});

test('lameduck 0: stops at once, without a lameduck phase', async () => {
  const { clock, events, ld, stops } = machine(0);
  await ld.shutdown('SIGTERM');
  assert.equal(stops(), 1);
  assert.equal(clock.pendingTimers(), 0);
  assert.deepEqual(events, [
    { kind: 'stopping', reason: 'SIGTERM', lameduckMs: 0 },
    { kind: 'stopped' },
  ]);
});

test('lameduck: a signal while stopping waits for the same stop', async () => {
  let finish: () => void = () => undefined;
  const { clock, ld } = machine(
    100,
    () =>
      new Promise<void>((r) => {
        finish = r;
      }),
  );
  const first = ld.shutdown('SIGTERM');
  await clock.advance(100);
  assert.equal(ld.phase, 'stopping');
  let late = false;
  const again = ld.shutdown('SIGTERM').then(() => (late = true));
  await flushMicrotasks();
  assert.equal(late, false, 'not resolved before stop finishes');
  finish();
  await Promise.all([first, again]);
  assert.equal(ld.phase, 'stopped');
});

test('lameduck: a failing stop rejects every caller and still ends stopped', async () => {
  const { clock, events, ld } = machine(10, () => Promise.reject(new Error('close failed')));
  const first = assert.rejects(ld.shutdown('SIGTERM'), /close failed/);
  await clock.advance(10);
  await first;
  await assert.rejects(ld.shutdown('SIGTERM'), /close failed/);
  assert.equal(ld.phase, 'stopped');
  assert.deepEqual(events.at(-1), { kind: 'stopped' });
});
