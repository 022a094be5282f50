// FakeKubeClient behaves like an API server where the controllers depend on it: 409 on stale
// resourceVersion and duplicate names, generateName, generation, spec/status separation,
// graceful pod deletion, uid preconditions, owner cascade, merge patch, label selectors.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FakeKubeClient,
  isConflict,
  isNotFound,
  mergePatch,
  parseEqualitySelector,
} from './api-client.js';
import type { Pod } from './types.js';

const podSpec = { containers: [{ name: 'c' }] };

describe('FakeKubeClient', () => {
  test('update with a stale resourceVersion is a 409 Conflict', async () => {
    const c = new FakeKubeClient();
    const svc = await c.create('Service', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { ports: [{ port: 80 }] },
    });
    const v1 = await c.update('Service', { ...svc, spec: { ports: [{ port: 81 }] } });
    assert.notEqual(v1.metadata?.resourceVersion, svc.metadata?.resourceVersion);
    assert.equal(v1.metadata?.generation, 2);
    await assert.rejects(c.update('Service', { ...svc, spec: { ports: [{ port: 82 }] } }), (e) =>
      isConflict(e),
    );
  });

  test('create of an existing name is a 409; generateName makes unique names', async () => {
    const c = new FakeKubeClient();
    await c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec });
    await assert.rejects(
      c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec }),
      (e) => isConflict(e),
    );
    const a = await c.create('Pod', {
      metadata: { generateName: 'web-', namespace: 'default' },
      spec: podSpec,
    });
    const b = await c.create('Pod', {
      metadata: { generateName: 'web-', namespace: 'default' },
      spec: podSpec,
    });
    assert.match(a.metadata?.name ?? '', /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.notEqual(a.metadata?.name, b.metadata?.name);
  });

  test('update ignores status; updateStatus changes only status', async () => {
    const c = new FakeKubeClient();
    const p = await c.create('Pod', {
      metadata: { name: 'p', namespace: 'default' },
      spec: podSpec,
    });
    const u = await c.update('Pod', { ...p, status: { phase: 'Running' } });
    assert.equal(u.status?.phase, undefined);
    const s = await c.updateStatus('Pod', {
      ...u,
      spec: { containers: [] },
      status: { phase: 'Running' },
    });
    assert.equal(s.status?.phase, 'Running');
    assert.equal(s.spec?.containers.length, 1);
  });

  test('deleting a bound pod is graceful; grace 0 removes it; uid preconditions hold', async () => {
    const c = new FakeKubeClient({ now: () => Date.parse('2026-01-01T00:00:00Z') });
    const p: Pod = await c.create('Pod', {
      metadata: { name: 'p', namespace: 'default' },
      spec: { ...podSpec, nodeName: 'n1' },
    });
    await c.delete('Pod', 'default', 'p');
    const term = await c.get('Pod', 'default', 'p');
    assert.equal(term?.metadata?.deletionTimestamp, '2026-01-01T00:00:30Z');
    await assert.rejects(
      c.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0, uid: 'other' }),
      (e) => isConflict(e),
    );
    await c.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0, uid: p.metadata?.uid ?? '' });
    assert.equal(await c.get('Pod', 'default', 'p'), undefined);
    await assert.rejects(c.delete('Pod', 'default', 'p'), (e) => isNotFound(e));
  });

  test('deleting an owner deletes its dependents', async () => {
    const c = new FakeKubeClient();
    const rs = await c.create('ReplicaSet', { metadata: { name: 'rs', namespace: 'default' } });
    await c.create('Pod', {
      metadata: {
        name: 'child',
        namespace: 'default',
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            name: 'rs',
            uid: rs.metadata?.uid ?? '',
            controller: true,
          },
        ],
      },
      spec: podSpec,
    });
    await c.delete('ReplicaSet', 'default', 'rs');
    assert.deepEqual(c.all('Pod'), []);
  });

  test('watch sees every change; bind sets nodeName once', async () => {
    const c = new FakeKubeClient();
    const seen: string[] = [];
    c.watch((ev) => seen.push(`${ev.type} ${ev.kind} ${ev.object.metadata?.name ?? ''}`));
    await c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec });
    await c.bind('default', 'p', 'n1');
    await assert.rejects(c.bind('default', 'p', 'n2'), (e) => isConflict(e));
    assert.equal((await c.get('Pod', 'default', 'p'))?.spec?.nodeName, 'n1');
    assert.deepEqual(seen, ['ADDED Pod p', 'MODIFIED Pod p']);
  });

  test('list filters by namespace and equality label selector', async () => {
    const c = new FakeKubeClient();
    await c.create('Pod', {
      metadata: { name: 'a', namespace: 'x', labels: { app: 'web' } },
      spec: podSpec,
    });
    await c.create('Pod', {
      metadata: { name: 'b', namespace: 'y', labels: { app: 'web' } },
      spec: podSpec,
    });
    await c.create('Pod', {
      metadata: { name: 'c', namespace: 'x', labels: { app: 'db' } },
      spec: podSpec,
    });
    const names = async (o: Parameters<FakeKubeClient['list']>[1]) =>
      (await c.list('Pod', o)).map((p) => p.metadata?.name).sort();
    assert.deepEqual(await names({ namespace: 'x' }), ['a', 'c']);
    assert.deepEqual(await names({ labelSelector: 'app=web' }), ['a', 'b']);
    assert.deepEqual(await names({ namespace: 'x', labelSelector: 'app!=web' }), ['c']);
  });
});

describe('helpers', () => {
  test('mergePatch follows RFC 7386', () => {
    assert.deepEqual(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { b: { c: null, e: 4 }, f: [1] }), {
      a: 1,
      b: { d: 3, e: 4 },
      f: [1],
    });
  });

  test('parseEqualitySelector handles =, ==, !=, exists and !exists', () => {
    const m = parseEqualitySelector('a=1,b==2,c!=3,d,!e');
    assert.equal(m({ a: '1', b: '2', d: '' }), true);
    assert.equal(m({ a: '1', b: '2', c: '3', d: '' }), false);
    assert.equal(m({ a: '1', b: '2', d: '', e: '' }), false);
    assert.equal(m({ a: '1', b: '2' }), false);
  });
});
