// StoreKubeClient gives the controllers real API semantics: 409 on a stale resourceVersion
// and on duplicate names, generateName, generation, spec/status separation, graceful pod
// deletion, uid preconditions, owner cascade, merge patch, label selectors (set-based
// included), binding, watch-fed informers, and KubeApiErrors as the HTTP client raises them.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isConflict, isNotFound, KubeApiError } from '../kube/api-client.js';
import type { Pod } from '../kube/types.js';
import { NAMESPACES } from './resources.js';
import { StoreKubeClient } from './store-kube-client.js';
import { newTestApi } from './testing.js';

const podSpec = { containers: [{ name: 'c', image: 'nginx' }] };

function newClient(): StoreKubeClient {
  const api = newTestApi();
  return new StoreKubeClient(api.store, { now: api.now });
}

describe('StoreKubeClient', () => {
  test('update with a stale resourceVersion is a 409 Conflict', async () => {
    const c = newClient();
    const svc = await c.create('Service', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { ports: [{ port: 80 }] },
    });
    const v1 = await c.update('Service', { ...svc, spec: { ...svc.spec, ports: [{ port: 81 }] } });
    assert.notEqual(v1.metadata?.resourceVersion, svc.metadata?.resourceVersion);
    assert.equal(v1.metadata?.generation, 2);
    await assert.rejects(
      c.update('Service', { ...svc, spec: { ...svc.spec, ports: [{ port: 82 }] } }),
      (e) => isConflict(e) && e instanceof KubeApiError && e.reason === 'Conflict',
    );
  });

  test('create of an existing name is a 409; generateName makes unique names', async () => {
    const c = newClient();
    await c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec });
    await assert.rejects(
      c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec }),
      (e) => isConflict(e) && e instanceof KubeApiError && e.reason === 'AlreadyExists',
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

  test('invalid objects and missing namespaces are rejected as the API server does', async () => {
    const c = newClient();
    await assert.rejects(
      c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: { containers: [] } }),
      (e) => e instanceof KubeApiError && e.status === 422 && e.code === 'INVALID_INPUT',
    );
    await assert.rejects(
      c.create('Pod', { metadata: { name: 'p', namespace: 'nowhere' }, spec: podSpec }),
      (e) => isNotFound(e),
    );
    // A field of the wrong type is refused by the schema check, as the HTTP edge refuses it.
    await assert.rejects(
      c.create('Pod', {
        metadata: {
          name: 'p',
          namespace: 'default',
          labels: 5 as unknown as Record<string, string>,
        },
        spec: podSpec,
      }),
      (e) => e instanceof KubeApiError && e.status === 422 && e.message.includes('metadata.labels'),
    );
  });

  test('update ignores status; updateStatus changes only status', async () => {
    const c = newClient();
    const p = await c.create('Pod', {
      metadata: { name: 'p', namespace: 'default' },
      spec: podSpec,
    });
    const u = await c.update('Pod', { ...p, status: { phase: 'Running' } });
    assert.equal(u.status?.phase, 'Pending');
    const s = await c.updateStatus('Pod', {
      ...u,
      spec: { containers: [] },
      status: { phase: 'Running' },
    });
    assert.equal(s.status?.phase, 'Running');
    assert.equal(s.spec?.containers.length, 1);
  });

  test('deleting a bound pod is graceful; grace 0 removes it; uid preconditions hold', async () => {
    const c = newClient();
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
    const c = newClient();
    const rs = await c.create('ReplicaSet', {
      metadata: { name: 'rs', namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: podSpec },
      },
    });
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
    assert.deepEqual(await c.list('Pod'), []);
  });

  test('merge patch follows RFC 7386 and bumps generation on spec changes', async () => {
    const c = newClient();
    await c.create('Service', {
      metadata: { name: 'web', namespace: 'default', labels: { a: '1', b: '2' } },
      spec: { ports: [{ port: 80 }] },
    });
    const p = await c.patch('Service', 'default', 'web', {
      metadata: { labels: { a: null, c: '3' } },
      spec: { ports: [{ port: 81 }] },
    });
    assert.deepEqual(p.metadata?.labels, { b: '2', c: '3' });
    assert.equal(p.spec?.ports?.[0]?.port, 81);
    assert.equal(p.metadata.generation, 2);
    await assert.rejects(c.patch('Service', 'default', 'nope', {}), (e) => isNotFound(e));
  });

  test('informers follow the store; bind sets nodeName once', async () => {
    const c = newClient();
    const inf = c.informer('Pod');
    const seen: string[] = [];
    inf.addHandlers({
      onAdd: (p) => seen.push(`add ${p.metadata?.name ?? ''}`),
      onUpdate: (_, p) => seen.push(`update ${p.metadata?.name ?? ''} ${p.spec?.nodeName ?? ''}`),
      onDelete: (p) => seen.push(`delete ${p.metadata?.name ?? ''}`),
    });
    await inf.start();
    await c.create('Pod', { metadata: { name: 'p', namespace: 'default' }, spec: podSpec });
    await c.bind('default', 'p', 'n1');
    await assert.rejects(c.bind('default', 'p', 'n2'), (e) => isConflict(e));
    const bound = await c.get('Pod', 'default', 'p');
    assert.equal(bound?.spec?.nodeName, 'n1');
    assert.equal(bound.status?.conditions?.find((x) => x.type === 'PodScheduled')?.status, 'True');
    await c.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0 });
    assert.deepEqual(seen, ['add p', 'update p n1', 'update p n1', 'delete p']);
    assert.deepEqual(inf.list(), []);
    // A stopped informer no longer follows the store.
    await inf.stop();
    await c.create('Pod', { metadata: { name: 'q', namespace: 'default' }, spec: podSpec });
    assert.deepEqual(inf.list(), []);
    assert.equal(seen.length, 4);
  });

  test('list filters by namespace and by equality- and set-based label selectors', async () => {
    const c = newClient();
    for (const ns of ['x', 'y']) c.store.create(NAMESPACES, undefined, { metadata: { name: ns } });
    const pod = (name: string, namespace: string, app: string) =>
      c.create('Pod', { metadata: { name, namespace, labels: { app } }, spec: podSpec });
    await pod('a', 'x', 'web');
    await pod('b', 'y', 'web');
    await pod('c', 'x', 'db');
    const names = async (o: Parameters<StoreKubeClient['list']>[1]) =>
      (await c.list('Pod', o)).map((p) => p.metadata?.name).sort();
    assert.deepEqual(await names({ namespace: 'x' }), ['a', 'c']);
    assert.deepEqual(await names({ labelSelector: 'app=web' }), ['a', 'b']);
    assert.deepEqual(await names({ namespace: 'x', labelSelector: 'app!=web' }), ['c']);
    assert.deepEqual(await names({ labelSelector: 'app in (db,cache)' }), ['c']);
    await assert.rejects(
      c.list('Pod', { labelSelector: 'app in (' }),
      (e) => e instanceof KubeApiError && e.status === 400,
    );
  });
});
