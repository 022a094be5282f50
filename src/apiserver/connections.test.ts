import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionTracker, defaultMaxConnections } from './connections.js';

function setup(maxConnections: number) {
  const clock = { now: 0 };
  const tracker = new ConnectionTracker(
    { maxConnections, firstRequestTimeoutMs: 10_000 },
    { now: () => clock.now },
  );
  const closed: string[] = [];
  const sock = (name: string) => ({
    destroy: () => {
      closed.push(name);
    },
  });
  return { clock, tracker, closed, sock };
}

describe('ConnectionTracker', () => {
  it('sheds the longest-idle unauthenticated connection before any authenticated one', () => {
    const { tracker, closed, sock, clock } = setup(3);
    tracker.accept('a', sock('a'));
    tracker.begin('a', true);
    tracker.end('a');
    clock.now = 1;
    tracker.accept('x', sock('x'));
    tracker.accept('y', sock('y'));
    assert.equal(tracker.accept('z', sock('z')), true);
    assert.deepEqual(closed, ['x']);
    assert.equal(tracker.accept('w', sock('w')), true);
    assert.deepEqual(closed, ['x', 'y']);
    // Only z, w (unauthenticated, idle) and a (authenticated, idle) remain: z goes next.
    tracker.accept('v', sock('v'));
    assert.deepEqual(closed, ['x', 'y', 'z']);
    assert.deepEqual(tracker.stats(), { open: 3, active: 0, shed: 3, refused: 0, expired: 0 });
  });

  it('sheds authenticated idle connections only when no unauthenticated one is idle', () => {
    const { tracker, closed, sock } = setup(2);
    tracker.accept('a', sock('a'));
    tracker.begin('a', true);
    tracker.end('a');
    tracker.accept('b', sock('b'));
    tracker.begin('b', false);
    tracker.accept('c', sock('c'));
    assert.deepEqual(closed, ['a']);
  });

  it('never sheds a connection with a request in flight; refuses the new one instead', () => {
    const { tracker, closed, sock } = setup(2);
    tracker.accept('watch', sock('watch'));
    tracker.begin('watch', true);
    tracker.accept('slow', sock('slow'));
    tracker.begin('slow', false);
    assert.equal(tracker.accept('new', sock('new')), false);
    assert.deepEqual(closed, ['new']);
    assert.equal(tracker.stats().refused, 1);
    tracker.end('slow');
    assert.equal(tracker.accept('new2', sock('new2')), true);
    assert.deepEqual(closed, ['new', 'slow']);
  });

  it('closes connections that start no request within the deadline', () => {
    const { tracker, closed, sock, clock } = setup(100);
    tracker.accept('early', sock('early'));
    clock.now = 5_000;
    tracker.accept('late', sock('late'));
    tracker.accept('talks', sock('talks'));
    tracker.begin('talks', false);
    tracker.end('talks');
    clock.now = 10_000;
    assert.equal(tracker.sweep(), 1);
    assert.deepEqual(closed, ['early']);
    clock.now = 15_000;
    assert.equal(tracker.sweep(), 1);
    assert.deepEqual(closed, ['early', 'late']);
    assert.equal(tracker.stats().expired, 2);
    assert.equal(tracker.stats().open, 1);
  });

  it('ignores a close event of a socket no longer registered under its key', () => {
    const { tracker, sock } = setup(10);
    const old = sock('old');
    tracker.accept('k', old);
    tracker.forget('k', old);
    tracker.accept('k', sock('new'));
    tracker.forget('k', old);
    assert.equal(tracker.stats().open, 1);
  });

  it('derives the default cap from the open-file limit', () => {
    assert.equal(defaultMaxConnections(20_000), 18_976);
    assert.equal(defaultMaxConnections(256), 64);
    assert.equal(defaultMaxConnections(Infinity), 1_000_000);
  });
});
