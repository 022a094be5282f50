import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../util/clock.js';
import { startBootstrapLoop } from './bootstrap.js';
import { CONFIGMAPS, ENDPOINTS, ENDPOINTSLICES, NAMESPACES, SERVICES } from './resources.js';
import { newTestApi } from './testing.js';

const cfg = { advertiseAddress: '172.18.0.2', port: 6443, serviceIP: '10.96.0.1' };

describe('bootstrap reconcile loop', () => {
  it('recreates the kubernetes Service, its endpoints and the system namespaces within 10 s', async () => {
    const { store } = newTestApi();
    const clock = new FakeClock();
    const errors: unknown[] = [];
    const loop = startBootstrapLoop(store, cfg, { clock, onError: (e) => errors.push(e) });
    const svc = store.get(SERVICES, 'default', 'kubernetes');
    store.delete(SERVICES, 'default', 'kubernetes');
    store.delete(ENDPOINTS, 'default', 'kubernetes');
    store.delete(ENDPOINTSLICES, 'default', 'kubernetes');
    store.delete(NAMESPACES, undefined, 'kube-public');
    store.delete(NAMESPACES, undefined, 'default');
    assert.equal(store.tryGet(NAMESPACES, undefined, 'default'), undefined);

    await clock.advance(4999);
    assert.equal(store.tryGet(SERVICES, 'default', 'kubernetes'), undefined, 'not before a tick');
    await clock.advance(1);
    const back = store.get(SERVICES, 'default', 'kubernetes');
    assert.notEqual(back.metadata.uid, svc.metadata.uid, 'a new object');
    assert.deepEqual(back.spec, svc.spec, 'same ClusterIP and port');
    assert.ok(store.tryGet(NAMESPACES, undefined, 'default'));
    assert.ok(store.tryGet(NAMESPACES, undefined, 'kube-public'));
    assert.ok(store.tryGet(ENDPOINTS, 'default', 'kubernetes'));
    assert.deepEqual(
      (store.get(ENDPOINTSLICES, 'default', 'kubernetes').endpoints as unknown[]).length,
      1,
    );
    assert.deepEqual(errors, []);

    // a tick that finds everything in place writes nothing
    const rv = store.resourceVersion;
    await clock.advance(10_000);
    assert.equal(store.resourceVersion, rv);

    loop.stop();
    store.delete(SERVICES, 'default', 'kubernetes');
    await clock.advance(60_000);
    assert.equal(store.tryGet(SERVICES, 'default', 'kubernetes'), undefined, 'stopped');
  });

  it('reports a tick that fails (namespace still terminating) and recovers on a later one', async () => {
    const { store } = newTestApi();
    const clock = new FakeClock();
    const errors: string[] = [];
    const loop = startBootstrapLoop(store, cfg, {
      clock,
      onError: (e) => errors.push(e instanceof Error ? e.message : String(e)),
    });
    store.create(CONFIGMAPS, 'default', {
      metadata: { name: 'held', finalizers: ['example.com/hold'] },
    });
    store.delete(NAMESPACES, undefined, 'default');
    assert.equal(store.tryGet(SERVICES, 'default', 'kubernetes'), undefined);
    await clock.advance(5000);
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /being terminated/);
    const held = store.get(CONFIGMAPS, 'default', 'held');
    store.update(CONFIGMAPS, 'default', 'held', {
      ...held,
      metadata: { ...held.metadata, finalizers: [] },
    });
    assert.equal(store.tryGet(NAMESPACES, undefined, 'default'), undefined);
    await clock.advance(5000);
    assert.ok(store.tryGet(NAMESPACES, undefined, 'default'));
    assert.ok(store.tryGet(SERVICES, 'default', 'kubernetes'));
    loop.stop();
  });
});
