// Unit tests of the bounded-frequency runner with a fake clock: coalescing, minInterval
// (start to start), periodic runs, retry after failure, and serial execution.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../util/clock.js';
import { BoundedFrequencyRunner } from './runner.js';

function setup(
  opts: {
    min?: number;
    retry?: number;
    max?: number;
    /** How many runs fail, counting from the first. */
    failures?: number;
    durationMs?: number;
  } = {},
) {
  const clock = new FakeClock(0);
  const starts: number[] = [];
  const errors: unknown[] = [];
  let failures = opts.failures ?? 0;
  const fn = async (): Promise<void> => {
    starts.push(clock.now());
    if (opts.durationMs !== undefined) {
      await new Promise<void>((resolve) => clock.setTimeout(resolve, opts.durationMs ?? 0));
    }
    if (failures-- > 0) throw new Error('sync failed');
  };
  const runner = new BoundedFrequencyRunner(fn, {
    minIntervalMs: opts.min ?? 1000,
    retryIntervalMs: opts.retry ?? 30_000,
    maxIntervalMs: opts.max ?? 60_000,
    clock,
    onError: (e) => errors.push(e),
  });
  return { clock, runner, starts, errors };
}

test('nothing runs before start; a request made before start runs at start', async () => {
  const { clock, runner, starts } = setup();
  runner.run();
  await clock.advance(5000);
  assert.deepEqual(starts, []);
  runner.start();
  await clock.advance(0);
  assert.deepEqual(starts, [5000]);
});

test('a burst of requests coalesces and honours minInterval start to start', async () => {
  const { clock, runner, starts } = setup({ min: 1000 });
  runner.start();
  runner.run();
  await clock.advance(0);
  assert.deepEqual(starts, [0]);
  await clock.advance(100);
  runner.run();
  runner.run();
  runner.run();
  await clock.advance(800); // t=900: still inside minInterval
  assert.deepEqual(starts, [0]);
  await clock.advance(100); // t=1000
  assert.deepEqual(starts, [0, 1000]);
  await clock.advance(5000);
  assert.deepEqual(starts, [0, 1000], 'no request, no run before maxInterval');
});

test('minInterval 0 runs immediately after each request', async () => {
  const { clock, runner, starts } = setup({ min: 0 });
  runner.start();
  runner.run();
  await clock.advance(0);
  await clock.advance(10);
  runner.run();
  await clock.advance(0);
  assert.deepEqual(starts, [0, 10]);
});

test('runs periodically at maxInterval without requests', async () => {
  const { clock, runner, starts } = setup({ max: 30_000 });
  runner.start();
  await clock.advance(95_000);
  assert.deepEqual(starts, [30_000, 60_000, 90_000]);
});

test('a failed run is retried after retryInterval and the error is reported', async () => {
  const { clock, runner, starts, errors } = setup({ retry: 5000, max: 60_000, failures: 1 });
  runner.start();
  runner.run();
  await clock.advance(0);
  assert.equal(errors.length, 1);
  await clock.advance(4999);
  assert.deepEqual(starts, [0]);
  await clock.advance(1);
  assert.deepEqual(starts, [0, 5000]);
  assert.equal(errors.length, 1);
});

test('a request during a failed run is served at minInterval, not at the retry', async () => {
  const { clock, runner, starts } = setup({
    min: 1000,
    retry: 30_000,
    durationMs: 200,
    failures: 1,
  });
  runner.start();
  runner.run();
  await clock.advance(100);
  runner.run();
  await clock.advance(2000);
  assert.deepEqual(starts, [0, 1000]);
});

test('runs never overlap: a request during a long run waits for it to finish', async () => {
  const { clock, runner, starts } = setup({ min: 100, durationMs: 500 });
  runner.start();
  runner.run();
  await clock.advance(50);
  assert.equal(runner.isRunning(), true);
  runner.run();
  await clock.advance(400); // t=450: first run still going
  assert.deepEqual(starts, [0]);
  await clock.advance(60); // t=510: first finished at 500, second starts
  assert.deepEqual(starts, [0, 500]);
});

test('retryAfter schedules a run even without a request, and stop cancels everything', async () => {
  const { clock, runner, starts } = setup({ max: 60_000 });
  runner.start();
  runner.retryAfter(2000);
  await clock.advance(2000);
  assert.deepEqual(starts, [2000]);
  await runner.stop();
  runner.run();
  await clock.advance(120_000);
  assert.deepEqual(starts, [2000]);
});
