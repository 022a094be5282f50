// Tests of the proxy health state (fake clock) and the healthz/livez HTTP answers on a
// loopback port: pending updates older than the timeout turn both unhealthy, a deleted or
// autoscaler-tainted Node turns only /healthz unhealthy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../util/clock.js';
import { ProxyHealth, formatGoTime, healthzHandler, isNodeEligible } from './healthz.js';
import { listenHttp } from './listen.js';

test('a queued update older than the timeout makes the proxy unhealthy until a sync', async () => {
  const clock = new FakeClock(0);
  const h = new ProxyHealth(clock, 60_000, ['IPv4', 'IPv6']);
  assert.equal(h.status().healthy, true, 'healthy before any change');
  h.queuedUpdate('IPv4');
  await clock.advance(30_000);
  h.queuedUpdate('IPv4'); // the oldest queued time is kept
  await clock.advance(30_001);
  const st = h.status();
  assert.equal(st.healthy, false);
  assert.equal(st.families.IPv4?.healthy, false);
  assert.equal(st.families.IPv6?.healthy, true);
  h.updated('IPv4');
  assert.equal(h.status().healthy, true);
  assert.equal(h.status().lastUpdated, 60_001);
});

test('node eligibility follows deletion and the autoscaler taint', () => {
  assert.equal(isNodeEligible(undefined), true);
  assert.equal(isNodeEligible({ metadata: { name: 'n' } }), true);
  assert.equal(
    isNodeEligible({ metadata: { name: 'n', deletionTimestamp: '2026-01-01T00:00:00Z' } }),
    false,
  );
  assert.equal(
    isNodeEligible({
      metadata: { name: 'n' },
      spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }] },
    }),
    false,
  );
});

test('formatGoTime prints like Go time.String in UTC', () => {
  assert.equal(
    formatGoTime(Date.UTC(2026, 0, 2, 3, 4, 5, 120)),
    '2026-01-02 03:04:05.12 +0000 UTC',
  );
  assert.equal(formatGoTime(Date.UTC(2026, 0, 2, 3, 4, 5)), '2026-01-02 03:04:05 +0000 UTC');
});

test('/healthz and /livez answer with kube-proxy JSON and status codes', async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const h = new ProxyHealth(clock, 1000, ['IPv4']);
  const codes: string[] = [];
  const srv = await listenHttp(
    { host: '127.0.0.1', port: 0 },
    healthzHandler(h, {
      onHealthz: (c) => codes.push(`healthz ${c}`),
      onLivez: (c) => codes.push(`livez ${c}`),
    }),
  );
  try {
    const get = async (path: string) => {
      const r = await fetch(`http://127.0.0.1:${srv.port}${path}`);
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const ok = await get('/healthz');
    assert.equal(ok.status, 200);
    assert.equal(ok.body.nodeEligible, true);
    assert.equal(ok.body.currentTime, '2026-01-01 00:00:00 +0000 UTC');
    assert.equal(ok.body.lastUpdated, ok.body.currentTime);
    h.syncNode({ metadata: { name: 'n', deletionTimestamp: '2026-01-01T00:00:00Z' } });
    assert.equal((await get('/healthz')).status, 503);
    assert.equal((await get('/livez')).status, 200, 'livez ignores node eligibility');
    h.queuedUpdate('IPv4');
    await clock.advance(1001);
    assert.equal((await get('/livez')).status, 503);
    assert.equal((await fetch(`http://127.0.0.1:${srv.port}/other`)).status, 404);
    assert.deepEqual(codes, ['healthz 200', 'healthz 503', 'livez 200', 'livez 503']);
  } finally {
    await srv.close();
  }
});
