// The DaemonSet's template history: a revision per template named after its hash, the
// current one numbered highest (a template that comes back is renumbered, as `rollout undo`
// needs), revisions worn by Pods kept, the rest pruned to revisionHistoryLimit.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ControllerRevision, DaemonSet, Pod } from '../kube/types.js';
import { pod } from '../kube/testing.js';
import { describeOperation } from './operations.js';
import type { Operation } from './operations.js';
import {
  daemonSetRevisionObject,
  reconcileDaemonSetHistory,
} from './reconcile-daemonset-history.js';

function ds(image = 'svcnet:1', limit?: number): DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kube-proxy', namespace: 'kube-system', uid: 'ds-uid' },
    spec: {
      selector: { matchLabels: { 'k8s-app': 'kube-proxy' } },
      ...(limit !== undefined ? { revisionHistoryLimit: limit } : {}),
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: { containers: [{ name: 'kube-proxy', image }] },
      },
    },
  };
}

function revision(hash: string, n: number, owner = ds()): ControllerRevision {
  const r = daemonSetRevisionObject(owner, hash, n);
  return { ...r, metadata: { ...r.metadata, uid: `uid-${hash}` } };
}

function wearing(hash: string): Pod {
  return pod(`kube-system/kube-proxy-${hash}`, {
    owner: ds(),
    labels: { 'k8s-app': 'kube-proxy', 'controller-revision-hash': hash },
  });
}

const lines = (ops: Operation[]): string[] =>
  ops.map((o) => {
    const r = (o as { object?: ControllerRevision }).object;
    return `${describeOperation(o)}${r === undefined ? '' : ` #${String(r.revision)}`}`;
  });

test('the first template gets revision 1, owned, labelled and holding the patch that restores it', () => {
  const ops = reconcileDaemonSetHistory(ds(), 'aaa', [], []);
  assert.deepEqual(lines(ops), ['create ControllerRevision kube-system/kube-proxy-aaa #1']);
  const created = ops[0];
  assert.ok(created?.op === 'create');
  const r = created.object as ControllerRevision;
  assert.deepEqual(r.metadata?.labels, {
    'k8s-app': 'kube-proxy',
    'controller-revision-hash': 'aaa',
  });
  assert.deepEqual(
    r.metadata.ownerReferences?.map(
      (o) => `${o.kind}/${o.name} controller=${String(o.controller)}`,
    ),
    ['DaemonSet/kube-proxy controller=true'],
  );
  assert.deepEqual(r.data, {
    spec: {
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: { containers: [{ name: 'kube-proxy', image: 'svcnet:1' }] },
        $patch: 'replace',
      },
    },
  });
});

test('a new template gets max+1; an up-to-date history needs no write', () => {
  const have = [revision('aaa', 1), revision('bbb', 2)];
  assert.deepEqual(lines(reconcileDaemonSetHistory(ds('svcnet:3'), 'ccc', have, [])), [
    'create ControllerRevision kube-system/kube-proxy-ccc #3',
  ]);
  assert.deepEqual(reconcileDaemonSetHistory(ds(), 'bbb', have, []), []);
});

test('a template that comes back (rollout undo) has its old revision renumbered to max+1', () => {
  const have = [revision('aaa', 1), revision('bbb', 2)];
  assert.deepEqual(lines(reconcileDaemonSetHistory(ds(), 'aaa', have, [])), [
    'update ControllerRevision kube-system/kube-proxy-aaa #3',
  ]);
});

test('old revisions beyond revisionHistoryLimit go, oldest first; those Pods still wear stay', () => {
  const have = [1, 2, 3, 4, 5].map((n) => revision(`h${String(n)}`, n));
  const ops = reconcileDaemonSetHistory(ds('svcnet', 1), 'h5', have, [wearing('h1')]);
  // h5 is current and h1 is worn; of h2..h4 one may stay: h4, the newest.
  assert.deepEqual(lines(ops), [
    'delete ControllerRevision kube-system/kube-proxy-h2',
    'delete ControllerRevision kube-system/kube-proxy-h3',
  ]);
  assert.equal(reconcileDaemonSetHistory(ds(), 'h5', have, []).length, 0, 'default limit 10');
});

test("another owner's revisions are neither counted nor pruned; a deleting DaemonSet writes none", () => {
  const other: DaemonSet = {
    ...ds(),
    metadata: { ...ds().metadata, name: 'flannel', uid: 'other' },
  };
  const theirs = [revision('x1', 7, other), revision('x2', 8, other)];
  assert.deepEqual(lines(reconcileDaemonSetHistory(ds('svcnet', 0), 'aaa', theirs, [])), [
    'create ControllerRevision kube-system/kube-proxy-aaa #1',
  ]);
  const deleting = { ...ds(), metadata: { ...ds().metadata, deletionTimestamp: 'now' } };
  assert.deepEqual(reconcileDaemonSetHistory(deleting, 'aaa', [], []), []);
});
