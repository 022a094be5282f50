// waitForTermination: a daemon's life ends at the first SIGINT or SIGTERM, which it names, and
// no listener is left behind (so a second signal during shutdown ends the process as usual).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitForTermination } from './process.js';

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
