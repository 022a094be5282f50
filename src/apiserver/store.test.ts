import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFIGMAPS, DEPLOYMENTS, NAMESPACES, PODS, REPLICASETS, SERVICES } from './resources.js';
import { ApiError } from './status.js';
import type { WatchEvent } from './store.js';
import { newTestApi } from './testing.js';

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  assert.fail('expected an ApiError');
}

const pod = (name: string, labels: Record<string, string> = {}, extra: object = {}) => ({
  metadata: { name, labels },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
  ...extra,
});

describe('store metadata', () => {
  it('sets uid, creationTimestamp, generation and a growing resourceVersion; ignores client values', () => {
    const { store } = newTestApi();
    const before = store.resourceVersion;
    const cm = store.create(CONFIGMAPS, 'default', {
      metadata: { name: 'a', uid: 'mine', resourceVersion: '999', creationTimestamp: null },
      data: { k: 'v' },
    });
    assert.notEqual(cm.metadata.uid, 'mine');
    assert.equal(cm.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
    assert.equal(cm.metadata.generation, 1);
    assert.equal(cm.metadata.resourceVersion, String(before + 1));
    assert.equal(cm.kind, 'ConfigMap');
    assert.equal(cm.apiVersion, 'v1');
  });

  it('generateName builds a unique name with the upstream alphabet', () => {
    const { store } = newTestApi();
    const a = store.create(PODS, 'default', { ...pod(''), metadata: { generateName: 'web-' } });
    assert.match(a.metadata.name ?? '', /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('rejects a duplicate name with 409 AlreadyExists', () => {
    const { store } = newTestApi();
    store.create(PODS, 'default', pod('p'));
    const e = apiError(() => store.create(PODS, 'default', pod('p')));
    assert.equal(e.status, 409);
    assert.equal(e.reason, 'AlreadyExists');
    assert.equal(e.message, 'pods "p" already exists');
  });

  it('requires the namespace to exist', () => {
    const { store } = newTestApi();
    const e = apiError(() => store.create(PODS, 'nope', pod('p')));
    assert.equal(e.status, 404);
    assert.equal(e.message, 'namespaces "nope" not found');
  });

  it('optimistic concurrency: a stale resourceVersion is a 409 Conflict, none is unconditional', () => {
    const { store } = newTestApi();
    const d = store.create(CONFIGMAPS, 'default', { metadata: { name: 'c' }, data: { a: '1' } });
    const stale = { ...d, data: { a: '2' } };
    store.update(CONFIGMAPS, 'default', 'c', stale);
    const e = apiError(() =>
      store.update(CONFIGMAPS, 'default', 'c', { ...stale, data: { a: '3' } }),
    );
    assert.equal(e.status, 409);
    assert.equal(e.reason, 'Conflict');
    assert.match(
      e.message,
      /Operation cannot be fulfilled on configmaps "c": the object has been modified/,
    );
    const ok = store.update(CONFIGMAPS, 'default', 'c', {
      metadata: { name: 'c' },
      data: { a: '4' },
    });
    assert.deepEqual(ok.data, { a: '4' });
  });

  it('bumps generation on spec changes only and keeps status on main-resource writes', () => {
    const { store } = newTestApi();
    const d = store.create(DEPLOYMENTS, 'default', {
      metadata: { name: 'd' },
      spec: {
        selector: { matchLabels: { app: 'd' } },
        template: {
          metadata: { labels: { app: 'd' } },
          spec: { containers: [{ name: 'c', image: 'x' }] },
        },
      },
    });
    const withStatus = store.update(
      DEPLOYMENTS,
      'default',
      'd',
      { ...d, status: { replicas: 3 } },
      { subresource: 'status' },
    );
    assert.equal(withStatus.metadata.generation, 1);
    const labelled = store.update(DEPLOYMENTS, 'default', 'd', {
      ...withStatus,
      metadata: { ...withStatus.metadata, labels: { x: 'y' } },
      status: {},
    });
    assert.equal(labelled.metadata.generation, 1);
    assert.deepEqual(labelled.status, { replicas: 3 });
    const scaled = store.update(DEPLOYMENTS, 'default', 'd', {
      ...labelled,
      spec: { ...(labelled.spec as object), replicas: 5 },
    });
    assert.equal(scaled.metadata.generation, 2);
  });

  it('a no-op update keeps the resourceVersion and emits nothing', () => {
    const { store } = newTestApi();
    const c = store.create(CONFIGMAPS, 'default', { metadata: { name: 'c' }, data: { a: '1' } });
    const events: WatchEvent[] = [];
    store.watch(CONFIGMAPS, 'default', { resourceVersion: c.metadata.resourceVersion ?? '' }, (e) =>
      events.push(e),
    );
    const same = store.update(CONFIGMAPS, 'default', 'c', c);
    assert.equal(same.metadata.resourceVersion, c.metadata.resourceVersion);
    assert.equal(events.length, 0);
  });

  it('returns 422 with every field cause and stores nothing', () => {
    const { store } = newTestApi();
    const before = store.resourceVersion;
    const e = apiError(() =>
      store.create(SERVICES, 'default', {
        metadata: { name: 'bad' },
        spec: { ports: [{ port: 0 }, { port: 70000, name: 'b' }] },
      }),
    );
    assert.equal(e.status, 422);
    const fields = (e.details?.causes ?? []).map((c) => c.field);
    assert.ok(fields.includes('spec.ports[0].port'));
    assert.ok(fields.includes('spec.ports[1].port'));
    assert.ok(fields.includes('spec.ports[0].name'));
    assert.equal(store.tryGet(SERVICES, 'default', 'bad'), undefined);
    assert.equal(store.resourceVersion, before);
  });
});

describe('store list and watch', () => {
  it('lists with label and field selectors', () => {
    const { store } = newTestApi();
    store.create(PODS, 'default', pod('a', { app: 'web', tier: 'fe' }));
    store.create(PODS, 'default', pod('b', { app: 'web' }));
    store.create(PODS, 'default', pod('c', { app: 'db' }));
    const names = (sel: { labelSelector?: string; fieldSelector?: string }) =>
      store.list(PODS, 'default', sel).items.map((p) => p.metadata.name);
    assert.deepEqual(names({ labelSelector: 'app=web' }), ['a', 'b']);
    assert.deepEqual(names({ labelSelector: 'app in (web,db),!tier' }), ['b', 'c']);
    assert.deepEqual(names({ labelSelector: 'app!=web' }), ['c']);
    assert.deepEqual(names({ fieldSelector: 'metadata.name!=a,status.phase=Pending' }), ['b', 'c']);
    const e = apiError(() => store.list(PODS, 'default', { fieldSelector: 'spec.bogus=1' }));
    assert.equal(e.status, 400);
    assert.equal(e.message, 'field label not supported: spec.bogus');
  });

  it('pages with limit and continue', () => {
    const { store } = newTestApi();
    for (const n of ['a', 'b', 'c', 'd', 'e']) store.create(PODS, 'default', pod(n));
    const first = store.list(PODS, 'default', { limit: 2 });
    assert.deepEqual(
      first.items.map((p) => p.metadata.name),
      ['a', 'b'],
    );
    assert.equal(first.remainingItemCount, 3);
    const second = store.list(PODS, 'default', { limit: 2, continue: first.continue ?? '' });
    assert.deepEqual(
      second.items.map((p) => p.metadata.name),
      ['c', 'd'],
    );
    const last = store.list(PODS, 'default', { limit: 2, continue: second.continue ?? '' });
    assert.deepEqual(
      last.items.map((p) => p.metadata.name),
      ['e'],
    );
    assert.equal(last.continue, undefined);
  });

  it('resumes a watch from a resourceVersion, replaying what was missed', () => {
    const { store } = newTestApi();
    store.create(PODS, 'default', pod('a'));
    const rv = store.list(PODS, 'default').resourceVersion;
    store.create(PODS, 'default', pod('b'));
    store.delete(PODS, 'default', 'a');
    const events: string[] = [];
    store.watch(PODS, undefined, { resourceVersion: rv }, (e) =>
      events.push(`${e.type} ${e.object.metadata.name ?? ''}`),
    );
    store.create(PODS, 'default', pod('c'));
    assert.deepEqual(events, ['ADDED b', 'DELETED a', 'ADDED c']);
  });

  it('answers 410 Expired when the resourceVersion is older than the history', () => {
    const { store } = newTestApi({ historySize: 3 });
    const rv = store.list(PODS, 'default').resourceVersion;
    store.create(PODS, 'default', pod('first'));
    // the first event after a list must still be replayable
    store.watch(PODS, undefined, { resourceVersion: rv }, () => undefined).stop();
    for (const n of ['a', 'b', 'c', 'd']) store.create(PODS, 'default', pod(n));
    const e = apiError(() =>
      store.watch(PODS, undefined, { resourceVersion: rv }, () => undefined),
    );
    assert.equal(e.status, 410);
    assert.match(e.message, /^too old resource version: \d+ \(\d+\)$/);
  });

  it('emits ADDED and DELETED when objects start and stop matching a selector', () => {
    const { store } = newTestApi();
    const p = store.create(PODS, 'default', pod('a', { app: 'x' }));
    const events: string[] = [];
    store.watch(
      PODS,
      'default',
      { labelSelector: 'app=web', resourceVersion: p.metadata.resourceVersion ?? '' },
      (e) => events.push(e.type),
    );
    const v2 = store.update(PODS, 'default', 'a', {
      ...p,
      metadata: { ...p.metadata, labels: { app: 'web' } },
    });
    const v3 = store.update(PODS, 'default', 'a', {
      ...v2,
      metadata: { ...v2.metadata, labels: { app: 'web', v: '2' } },
    });
    store.update(PODS, 'default', 'a', {
      ...v3,
      metadata: { ...v3.metadata, labels: { app: 'db' } },
    });
    assert.deepEqual(events, ['ADDED', 'MODIFIED', 'DELETED']);
  });

  it('watch-list sends initial ADDEDs then the initial-events-end bookmark', () => {
    const { store } = newTestApi();
    store.create(PODS, 'default', pod('a'));
    const events: WatchEvent[] = [];
    store.watch(PODS, 'default', { sendInitialEvents: true, allowWatchBookmarks: true }, (e) =>
      events.push(e),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'BOOKMARK'],
    );
    assert.equal(events[1]?.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
    assert.equal(events[1].object.metadata.resourceVersion, String(store.resourceVersion));
  });
});

describe('store deletion', () => {
  it('finalizers keep an object terminating until the last one is removed', () => {
    const { store } = newTestApi();
    store.create(CONFIGMAPS, 'default', { metadata: { name: 'f', finalizers: ['example.com/x'] } });
    const events: string[] = [];
    store.watch(CONFIGMAPS, 'default', { resourceVersion: String(store.resourceVersion) }, (e) =>
      events.push(e.type),
    );
    const terminating = store.delete(CONFIGMAPS, 'default', 'f');
    assert.equal(terminating.metadata.deletionTimestamp, '2026-01-01T00:00:00Z');
    assert.ok(store.tryGet(CONFIGMAPS, 'default', 'f'));
    store.update(CONFIGMAPS, 'default', 'f', {
      ...terminating,
      metadata: { ...terminating.metadata, finalizers: [] },
    });
    assert.equal(store.tryGet(CONFIGMAPS, 'default', 'f'), undefined);
    assert.deepEqual(events, ['MODIFIED', 'DELETED']);
  });

  it('scheduled pods terminate gracefully; a grace-0 delete (the kubelet) removes them', () => {
    const { store, clock } = newTestApi();
    store.create(PODS, 'default', {
      ...pod('p'),
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x' }] },
    });
    store.create(PODS, 'default', pod('unscheduled'));
    const t = store.delete(PODS, 'default', 'p');
    assert.equal(t.metadata.deletionGracePeriodSeconds, 30);
    assert.equal(
      t.metadata.deletionTimestamp,
      new Date(clock.now + 30_000).toISOString().replace('.000Z', 'Z'),
    );
    store.delete(PODS, 'default', 'p', { gracePeriodSeconds: 0 });
    assert.equal(store.tryGet(PODS, 'default', 'p'), undefined);
    store.delete(PODS, 'default', 'unscheduled');
    assert.equal(store.tryGet(PODS, 'default', 'unscheduled'), undefined);
  });

  it('garbage-collects dependents in the background and orphans them on request', () => {
    const { store } = newTestApi();
    const spec = {
      selector: { matchLabels: { app: 'd' } },
      template: {
        metadata: { labels: { app: 'd' } },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      },
    };
    const d = store.create(DEPLOYMENTS, 'default', { metadata: { name: 'd' }, spec });
    const owner = (o: { metadata: { name?: string; uid?: string } }, kind: string) => ({
      apiVersion: 'apps/v1',
      kind,
      name: o.metadata.name ?? '',
      uid: o.metadata.uid ?? '',
      controller: true,
    });
    const rs = store.create(REPLICASETS, 'default', {
      metadata: { name: 'd-1', ownerReferences: [owner(d, 'Deployment')] },
      spec,
    });
    store.create(PODS, 'default', {
      ...pod('d-1-a', { app: 'd' }),
      metadata: { name: 'd-1-a', labels: { app: 'd' }, ownerReferences: [owner(rs, 'ReplicaSet')] },
    });
    store.delete(DEPLOYMENTS, 'default', 'd');
    assert.equal(store.tryGet(REPLICASETS, 'default', 'd-1'), undefined);
    assert.equal(store.tryGet(PODS, 'default', 'd-1-a'), undefined);

    const d2 = store.create(DEPLOYMENTS, 'default', { metadata: { name: 'e' }, spec });
    store.create(REPLICASETS, 'default', {
      metadata: { name: 'e-1', ownerReferences: [owner(d2, 'Deployment')] },
      spec,
    });
    store.delete(DEPLOYMENTS, 'default', 'e', { propagationPolicy: 'Orphan' });
    assert.equal(store.tryGet(REPLICASETS, 'default', 'e-1')?.metadata.ownerReferences, undefined);
  });

  it('deleting a namespace removes its contents and then the namespace', () => {
    const { store } = newTestApi();
    store.create(NAMESPACES, undefined, { metadata: { name: 'team' } });
    store.create(CONFIGMAPS, 'team', { metadata: { name: 'c' } });
    store.delete(NAMESPACES, undefined, 'team');
    assert.equal(store.tryGet(CONFIGMAPS, 'team', 'c'), undefined);
    assert.equal(store.tryGet(NAMESPACES, undefined, 'team'), undefined);
  });

  it('checks delete preconditions', () => {
    const { store } = newTestApi();
    store.create(CONFIGMAPS, 'default', { metadata: { name: 'c' } });
    const e = apiError(() =>
      store.delete(CONFIGMAPS, 'default', 'c', { preconditions: { uid: 'other' } }),
    );
    assert.equal(e.status, 409);
    assert.match(e.message, /Precondition failed: UID in precondition: other/);
  });
});

describe('store watch window', () => {
  it('answers 504 Too large resource version for a watch from the future', () => {
    const { store } = newTestApi();
    const future = store.resourceVersion + 10;
    const e = apiError(() =>
      store.watch(PODS, undefined, { resourceVersion: String(future) }, () => undefined),
    );
    assert.equal(e.status, 504);
    assert.equal(e.reason, 'Timeout');
    assert.equal(
      e.message,
      `Too large resource version: ${future}, current: ${store.resourceVersion}`,
    );
    assert.equal(e.details?.causes?.[0]?.reason, 'ResourceVersionTooLarge');
  });
});
