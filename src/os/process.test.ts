// waitForTermination: a daemon's life ends at the first SIGINT or SIGTERM, which it names, and
// no listener is left behind (so a second signal during shutdown ends the process as usual).
// onTerminationSignals: every signal reaches the handler (a lameduck's first and second)
// until it is removed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { onTerminationSignals, waitForTermination } from './process.js';

test('waitForTermination resolves with the first signal and removes both listeners', async () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const done = waitForTermination();
    assert.equal(process.listenerCount('SIGINT'), (before[0] ?? 0) + 1);
    assert.equal(process.listenerCount('SIGTERM'), (before[1] ?? 0) + 1);
    process.emit(signal, signal);
    assert.equal(await done, signal);
    assert.deepEqual([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')], before);
  }
});

test('onTerminationSignals hands every SIGTERM and SIGINT over until removed', () => {
  const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
  const seen: string[] = [];
  const off = onTerminationSignals((sig) => seen.push(sig));
  process.emit('SIGTERM', 'SIGTERM');
  process.emit('SIGINT', 'SIGINT');
  process.emit('SIGTERM', 'SIGTERM');
  assert.deepEqual(seen, ['SIGTERM', 'SIGINT', 'SIGTERM']);
  off();
  assert.deepEqual([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')], before);
});
