// Work queue semantics (dedupe, re-run of keys added while processing, exponential backoff on
// an injected clock) and write expectations.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../kube/types.js';
import { Expectations, reachedResourceVersion } from './expectations.js';
import { FakeClock } from '../util/clock.js';
import { WorkQueue } from './workqueue.js';

describe('WorkQueue', () => {
  test('a key is queued once however often it is added', () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.len(), 2);
    assert.equal(q.tryGet(), 'a');
    assert.equal(q.tryGet(), 'b');
    assert.equal(q.tryGet(), undefined);
  });

  test('a key added while being processed runs again after done, not concurrently', () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add('a');
    const k = q.tryGet();
    q.add('a');
    assert.equal(q.tryGet(), undefined, 'not handed out twice at once');
    q.done(k!);
    assert.equal(q.tryGet(), 'a');
  });

  test('rate-limited retries back off exponentially on the injected clock; forget resets', () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock, baseDelayMs: 10, maxDelayMs: 40 });
    const retryAfter = (): number => {
      q.addRateLimited('a');
      let waited = 0;
      while (q.tryGet() === undefined) {
        clock.advanceSync(1);
        waited += 1;
        assert.ok(waited < 1000);
      }
      q.done('a');
      return waited;
    };
    assert.deepEqual([retryAfter(), retryAfter(), retryAfter(), retryAfter()], [10, 20, 40, 40]);
    assert.equal(q.numRequeues('a'), 4);
    q.forget('a');
    assert.equal(retryAfter(), 10);
  });

  test('get waits for a key and resolves undefined after shutdown', async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    const pending = q.get();
    q.add('x');
    assert.equal(await pending, 'x');
    const waiting = q.get();
    q.shutdown();
    assert.equal(await waiting, undefined);
  });

  test('trigger time is when the key was first queued', () => {
    const clock = new FakeClock(1000);
    const q = new WorkQueue({ clock });
    q.add('a');
    clock.advanceSync(500);
    q.add('a');
    assert.equal(q.tryGet(), 'a');
    assert.equal(q.takeTriggerTime('a'), 1000);
  });
});

describe('Expectations', () => {
  const store = new Map<string, KubeObject>();
  const lookup = (_k: string, ns: string, n: string): KubeObject | undefined =>
    store.get(`${ns}/${n}`);

  test('waits until the cache shows created objects at the written resourceVersion', () => {
    const e = new Expectations(10_000);
    e.expect(
      'rs',
      [{ kind: 'Pod', namespace: 'd', name: 'p1', want: 'present', resourceVersion: '12' }],
      0,
    );
    assert.equal(typeof e.check('rs', lookup, 100), 'number');
    store.set('d/p1', { metadata: { name: 'p1', resourceVersion: '11' } });
    assert.equal(e.check('rs', lookup, 100), 9900);
    store.set('d/p1', { metadata: { name: 'p1', resourceVersion: '13' } });
    assert.equal(e.check('rs', lookup, 100), true);
  });

  test('deletions are met by absence or a deletionTimestamp; deadlines expire', () => {
    const e = new Expectations(1000);
    store.set('d/p2', { metadata: { name: 'p2' } });
    e.expect('rs', [{ kind: 'Pod', namespace: 'd', name: 'p2', want: 'gone' }], 0);
    assert.notEqual(e.check('rs', lookup, 10), true);
    store.set('d/p2', { metadata: { name: 'p2', deletionTimestamp: 'x' } });
    assert.equal(e.check('rs', lookup, 10), true);
    e.expect('x', [{ kind: 'Pod', namespace: 'd', name: 'never', want: 'present' }], 0);
    assert.equal(e.check('x', lookup, 1000), true);
  });

  test('resourceVersions compare numerically when they are numbers', () => {
    assert.equal(reachedResourceVersion('100', '99'), true);
    assert.equal(reachedResourceVersion('99', '100'), false);
    assert.equal(reachedResourceVersion('abc', 'abc'), true);
    assert.equal(reachedResourceVersion(undefined, '1'), false);
  });
});
