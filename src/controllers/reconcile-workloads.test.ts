// Scenarios for the workload reconcilers (ReplicaSet, Deployment, StatefulSet), the scheduler
// and the fake kubelet: scaling up and down, which pods go first, template hashes, rolling
// over to a new ReplicaSet, StatefulSet ordering, spreading, and IP allocation.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Deployment, Pod, ReplicaSet, StatefulSet } from '../kube/types.js';
import type { Operation } from './operations.js';
import { podTemplateHash, reconcileDeployment } from './reconcile-deployment.js';
import { reconcileKubelet } from './reconcile-kubelet.js';
import { rankForDeletion, reconcileReplicaSet } from './reconcile-replicaset.js';
import { reconcileScheduler } from './reconcile-scheduler.js';
import { reconcileStatefulSet } from './reconcile-statefulset.js';
import { node, pod } from '../kube/testing.js';
import { applyToStore } from './test-builders.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');
const template = {
  metadata: { labels: { app: 'web' } },
  spec: { containers: [{ name: 'nginx', image: 'nginx:1.25', ports: [{ containerPort: 80 }] }] },
};

function rs(replicas: number, status?: ReplicaSet['status']): ReplicaSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name: 'web-abc', namespace: 'default', uid: 'rs-uid', generation: 2 },
    spec: { replicas, selector: { matchLabels: { app: 'web' } }, template },
    ...(status !== undefined ? { status } : {}),
  };
}

const ops = (list: Operation[], op: Operation['op']): Operation[] =>
  list.filter((o) => o.op === op);

describe('reconcileReplicaSet', () => {
  test('scales up from zero: creates pods from the template owned by the ReplicaSet', () => {
    const out = reconcileReplicaSet({ replicaSet: rs(3), pods: [], now: NOW });
    const creates = ops(out, 'create');
    assert.equal(creates.length, 3);
    const p = (creates[0] as { object: Pod }).object;
    assert.equal(p.metadata?.generateName, 'web-abc-');
    assert.deepEqual(p.metadata.labels, { app: 'web' });
    assert.deepEqual(p.metadata.ownerReferences?.[0], {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'web-abc',
      uid: 'rs-uid',
      controller: true,
      blockOwnerDeletion: true,
    });
    assert.equal(p.spec?.containers[0]?.image, 'nginx:1.25');
    const status = (ops(out, 'updateStatus')[0] as { object: ReplicaSet }).object.status;
    assert.deepEqual(status, {
      replicas: 0,
      fullyLabeledReplicas: 0,
      readyReplicas: 0,
      availableReplicas: 0,
      observedGeneration: 2,
    });
  });

  test('counts only its own live pods; terminating pods are replaced', () => {
    const owner = rs(3);
    const pods = [
      pod('web-abc-1', { owner }),
      pod('web-abc-2', { owner, terminating: true }),
      pod('stranger', {}),
    ];
    const out = reconcileReplicaSet({ replicaSet: owner, pods, now: NOW });
    assert.equal(ops(out, 'create').length, 2);
  });

  test('scales down deleting unscheduled, then not-ready, then newest pods first', () => {
    const owner = rs(2);
    const pods = [
      pod('old-ready', { owner, created: '2026-01-01T00:00:00Z' }),
      pod('new-ready', { owner, created: '2026-01-01T00:05:00Z' }),
      pod('notready', { owner, ready: false }),
      pod('unscheduled', { owner, node: null, ip: null }),
    ];
    const out = reconcileReplicaSet({ replicaSet: owner, pods, now: NOW });
    assert.deepEqual(
      ops(out, 'delete').map((o) => (o as { name: string }).name),
      ['unscheduled', 'notready'],
    );
    assert.deepEqual(
      rankForDeletion(pods.slice(0, 2)).map((p) => p.metadata?.name),
      ['new-ready', 'old-ready'],
    );
  });

  test('status counts ready and available pods; an unchanged status is not written', () => {
    const owner = rs(2);
    const pods = [pod('a', { owner }), pod('b', { owner, ready: false })];
    const out = reconcileReplicaSet({ replicaSet: owner, pods, now: NOW });
    const status = (ops(out, 'updateStatus')[0] as { object: ReplicaSet }).object.status;
    assert.deepEqual(status, {
      replicas: 2,
      fullyLabeledReplicas: 2,
      readyReplicas: 1,
      availableReplicas: 1,
      observedGeneration: 2,
    });
    assert.deepEqual(reconcileReplicaSet({ replicaSet: rs(2, status), pods, now: NOW }), []);
  });
});

function deployment(replicas: number, image = 'nginx:1.25'): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', uid: 'dep-uid', generation: 1 },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        ...template,
        spec: { containers: [{ name: 'nginx', image, ports: [{ containerPort: 80 }] }] },
      },
    },
  };
}

/** The ReplicaSet the first pass over `d` creates, with all its replicas available. */
function rolledOut(d: Deployment): ReplicaSet[] {
  const rss = applyToStore<ReplicaSet>(
    'ReplicaSet',
    [],
    reconcileDeployment({ deployment: d, replicaSets: [], now: 't' }),
  );
  const n = d.spec?.replicas ?? 0;
  rss[0]!.status = { replicas: n, readyReplicas: n, availableReplicas: n };
  return rss;
}

describe('reconcileDeployment', () => {
  test('pod-template-hash is stable, template-sensitive and uses the safe alphabet', () => {
    const h = podTemplateHash(deployment(1).spec?.template);
    assert.equal(h, podTemplateHash(structuredClone(deployment(5).spec?.template)));
    assert.notEqual(h, podTemplateHash(deployment(1, 'nginx:1.26').spec?.template));
    assert.notEqual(h, podTemplateHash(deployment(1).spec?.template, 1));
    assert.match(h, /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
  });

  test('creates the ReplicaSet <name>-<hash> with the hash label in labels, selector and template', () => {
    const d = deployment(3);
    const out = reconcileDeployment({
      deployment: d,
      replicaSets: [],
      now: '2026-01-01T00:00:00Z',
    });
    const created = (ops(out, 'create')[0] as { object: ReplicaSet }).object;
    const hash = podTemplateHash(d.spec?.template);
    assert.equal(created.metadata?.name, `web-${hash}`);
    assert.equal(created.spec?.replicas, 3);
    assert.equal(created.metadata.labels?.['pod-template-hash'], hash);
    assert.equal(created.spec.selector?.matchLabels?.['pod-template-hash'], hash);
    assert.equal(created.spec.template?.metadata?.labels?.['pod-template-hash'], hash);
    assert.equal(created.metadata.annotations?.['deployment.kubernetes.io/revision'], '1');
    assert.equal(created.metadata.ownerReferences?.[0]?.uid, 'dep-uid');
  });

  test('scaling the Deployment scales its ReplicaSet; status sums the ReplicaSets', () => {
    const d = deployment(3);
    let rss = rolledOut(d);
    const scaled = deployment(2);
    const out = reconcileDeployment({ deployment: scaled, replicaSets: rss, now: 't' });
    const upd = (ops(out, 'update')[0] as { object: ReplicaSet }).object;
    assert.equal(upd.spec?.replicas, 2);
    const st = (ops(out, 'updateStatus')[0] as { object: Deployment }).object.status;
    assert.equal(st?.replicas, 3);
    assert.equal(st.readyReplicas, 3);
    assert.equal(st.updatedReplicas, 3);
    rss = applyToStore('ReplicaSet', rss, out);
    rss[0]!.status = { replicas: 2, readyReplicas: 2, availableReplicas: 2 };
    const done = reconcileDeployment({ deployment: scaled, replicaSets: rss, now: 't' });
    const st2 = (ops(done, 'updateStatus')[0] as { object: Deployment }).object.status;
    assert.deepEqual(
      [st2?.replicas, st2?.readyReplicas, st2?.availableReplicas, st2?.updatedReplicas],
      [2, 2, 2, 2],
    );
    assert.equal(st2?.conditions?.find((c) => c.type === 'Available')?.status, 'True');
    assert.equal(
      st2.conditions.find((c) => c.type === 'Progressing')?.reason,
      'NewReplicaSetAvailable',
    );
    // Converged: nothing more to write.
    const settled = { ...scaled, status: st2 };
    assert.deepEqual(reconcileDeployment({ deployment: settled, replicaSets: rss, now: 't2' }), []);
  });

  test('a template change rolls over: new ReplicaSet, old one scaled down as the new one becomes available', () => {
    const v1 = deployment(2);
    let rss = rolledOut(v1);
    const v2 = deployment(2, 'nginx:1.26');
    const step1 = reconcileDeployment({ deployment: v2, replicaSets: rss, now: 't' });
    const created = (ops(step1, 'create')[0] as { object: ReplicaSet }).object;
    assert.equal(created.metadata?.annotations?.['deployment.kubernetes.io/revision'], '2');
    assert.equal(ops(step1, 'update').length, 0, 'old RS stays up while nothing new is available');
    rss = applyToStore('ReplicaSet', rss, step1);
    const newer = rss.find((r) => r.metadata?.name === created.metadata?.name)!;
    newer.status = { replicas: 2, readyReplicas: 1, availableReplicas: 1 };
    const step2 = reconcileDeployment({ deployment: v2, replicaSets: rss, now: 't' });
    assert.deepEqual(
      ops(step2, 'update').map((o) => (o as { object: ReplicaSet }).object.spec?.replicas),
      [1],
    );
    newer.status = { replicas: 2, readyReplicas: 2, availableReplicas: 2 };
    const step3 = reconcileDeployment({ deployment: v2, replicaSets: rss, now: 't' });
    assert.deepEqual(
      ops(step3, 'update').map((o) => (o as { object: ReplicaSet }).object.spec?.replicas),
      [0],
    );
  });
});

function sts(replicas: number, policy?: 'Parallel'): StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'db', namespace: 'default', uid: 'sts-uid', generation: 1 },
    spec: {
      replicas,
      serviceName: 'db-headless',
      selector: { matchLabels: { app: 'db' } },
      template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db' }] } },
      ...(policy !== undefined ? { podManagementPolicy: policy } : {}),
    },
  };
}

function stsPod(
  set: StatefulSet,
  i: number,
  o: { ready?: boolean; terminating?: boolean } = {},
): Pod {
  return pod(`db-${i}`, { owner: { ...set, kind: 'StatefulSet' }, labels: { app: 'db' }, ...o });
}

describe('reconcileStatefulSet', () => {
  const names = (out: Operation[], op: 'create' | 'delete'): string[] =>
    ops(out, op).map((o) =>
      o.op === 'create' ? (o.object.metadata?.name ?? '') : o.op === 'delete' ? o.name : '',
    );

  test('creates only the first missing ordinal, with hostname, subdomain and labels', () => {
    const set = sts(3);
    const out = reconcileStatefulSet({ statefulSet: set, pods: [], now: NOW });
    assert.deepEqual(names(out, 'create'), ['db-0']);
    const p = (ops(out, 'create')[0] as { object: Pod }).object;
    assert.equal(p.spec?.hostname, 'db-0');
    assert.equal(p.spec.subdomain, 'db-headless');
    assert.equal(p.metadata?.labels?.['statefulset.kubernetes.io/pod-name'], 'db-0');
    assert.equal(p.metadata.labels['apps.kubernetes.io/pod-index'], '0');
    assert.match(p.metadata.labels['controller-revision-hash'] ?? '', /^db-/);
  });

  test('waits for the previous pod to be Ready before creating the next', () => {
    const set = sts(3);
    const notReady = reconcileStatefulSet({
      statefulSet: set,
      pods: [stsPod(set, 0, { ready: false })],
      now: NOW,
    });
    assert.deepEqual(names(notReady, 'create'), []);
    const ready = reconcileStatefulSet({ statefulSet: set, pods: [stsPod(set, 0)], now: NOW });
    assert.deepEqual(names(ready, 'create'), ['db-1']);
    const two = reconcileStatefulSet({
      statefulSet: set,
      pods: [stsPod(set, 0), stsPod(set, 1)],
      now: NOW,
    });
    assert.deepEqual(names(two, 'create'), ['db-2']);
    // A gap at 0 is refilled first.
    const gap = reconcileStatefulSet({
      statefulSet: set,
      pods: [stsPod(set, 1), stsPod(set, 2)],
      now: NOW,
    });
    assert.deepEqual(names(gap, 'create'), ['db-0']);
  });

  test('scales down from the highest ordinal, one at a time', () => {
    const set = sts(1);
    const pods = [stsPod(set, 0), stsPod(set, 1), stsPod(set, 2)];
    assert.deepEqual(names(reconcileStatefulSet({ statefulSet: set, pods, now: NOW }), 'delete'), [
      'db-2',
    ]);
    const terminating = [stsPod(set, 0), stsPod(set, 1), stsPod(set, 2, { terminating: true })];
    assert.deepEqual(
      names(reconcileStatefulSet({ statefulSet: set, pods: terminating, now: NOW }), 'delete'),
      [],
      'waits for db-2 to go',
    );
    const next = [stsPod(set, 0), stsPod(set, 1)];
    assert.deepEqual(
      names(reconcileStatefulSet({ statefulSet: set, pods: next, now: NOW }), 'delete'),
      ['db-1'],
    );
  });

  test('Parallel creates and deletes all at once', () => {
    const set = sts(3, 'Parallel');
    assert.deepEqual(
      names(reconcileStatefulSet({ statefulSet: set, pods: [], now: NOW }), 'create'),
      ['db-0', 'db-1', 'db-2'],
    );
    const down = sts(0, 'Parallel');
    assert.deepEqual(
      names(
        reconcileStatefulSet({
          statefulSet: down,
          pods: [stsPod(down, 0), stsPod(down, 1)],
          now: NOW,
        }),
        'delete',
      ),
      ['db-1', 'db-0'],
    );
  });

  test('status reports replicas and readiness', () => {
    const set = sts(2);
    const out = reconcileStatefulSet({
      statefulSet: set,
      pods: [stsPod(set, 0), stsPod(set, 1, { ready: false })],
      now: NOW,
    });
    const st = (ops(out, 'updateStatus')[0] as { object: StatefulSet }).object.status;
    assert.equal(st?.replicas, 2);
    assert.equal(st.readyReplicas, 1);
    assert.equal(st.availableReplicas, 1);
  });
});

describe('reconcileScheduler', () => {
  const nodes = [node('n1'), node('n2'), node('n3')];
  const pending = (n: number): Pod[] =>
    Array.from({ length: n }, (_, i) =>
      pod(`p${i}`, { node: null, ip: null, created: `2026-01-01T00:00:0${i}Z` }),
    );

  test('spreads pending pods evenly over schedulable nodes', () => {
    const r = reconcileScheduler({ pods: pending(6), nodes });
    const count = new Map<string, number>();
    for (const o of r.operations)
      if (o.op === 'bind') count.set(o.nodeName, (count.get(o.nodeName) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(count), { n1: 2, n2: 2, n3: 2 });
  });

  test('prefers the least-loaded node, counting existing pods', () => {
    const existing = [
      pod('x1', { node: 'n1' }),
      pod('x2', { node: 'n1' }),
      pod('x3', { node: 'n2' }),
    ];
    const r = reconcileScheduler({ pods: [...existing, ...pending(3)], nodes });
    assert.deepEqual(
      r.operations.map((o) => (o.op === 'bind' ? o.nodeName : '')),
      ['n3', 'n2', 'n3'],
    );
  });

  test('skips cordoned, NotReady and tainted nodes; reports pods with nowhere to go', () => {
    const notReady = node('n2');
    notReady.status!.conditions = [{ type: 'Ready', status: 'False' }];
    const tainted = node('n3');
    tainted.spec!.taints = [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }];
    const r = reconcileScheduler({
      pods: pending(2),
      nodes: [node('n1', { unschedulable: true }), notReady, tainted],
    });
    assert.deepEqual(r.operations, []);
    assert.deepEqual(r.unschedulable, ['default/p0', 'default/p1']);
    const tolerant = pending(1);
    tolerant[0]!.spec!.tolerations = [
      { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
    ];
    assert.deepEqual(
      reconcileScheduler({ pods: tolerant, nodes: [tainted] }).operations.map((o) =>
        o.op === 'bind' ? o.nodeName : '',
      ),
      ['n3'],
    );
  });
});

describe('reconcileKubelet', () => {
  const n = node('n1', { podCIDR: '10.244.1.0/24', ip: '172.18.0.3' });
  const bound = (name: string, extra: Parameters<typeof pod>[1] = {}): Pod => {
    const p = pod(name, { node: 'n1', ip: null, ready: false, phase: 'Pending', ...extra });
    return p;
  };

  test('marks bound pods Running and Ready with distinct IPs from the podCIDR', () => {
    const existing = pod('has-ip', { node: 'n1', ip: '10.244.1.2' });
    const r = reconcileKubelet({
      node: n,
      pods: [existing, bound('a'), bound('b')],
      now: '2026-01-01T00:00:00Z',
    });
    const updated = r.operations.map((o) => (o as { object: Pod }).object);
    assert.deepEqual(
      updated.map((p) => [p.metadata?.name, p.status?.podIP, p.status?.hostIP, p.status?.phase]),
      [
        ['a', '10.244.1.3', '172.18.0.3', 'Running'],
        ['b', '10.244.1.4', '172.18.0.3', 'Running'],
      ],
    );
    const st = updated[0]!.status!;
    assert.deepEqual(st.podIPs, [{ ip: '10.244.1.3' }]);
    for (const t of ['Ready', 'ContainersReady', 'PodScheduled', 'Initialized'])
      assert.equal(st.conditions?.find((c) => c.type === t)?.status, 'True', t);
    assert.equal(st.startTime, '2026-01-01T00:00:00Z');
    assert.deepEqual(
      st.containerStatuses?.map((c) => [c.name, c.ready]),
      [['c', true]],
    );
    // Once Running and Ready: nothing more to do.
    assert.deepEqual(reconcileKubelet({ node: n, pods: updated, now: 'later' }).operations, []);
  });

  test('finishes graceful deletions with grace period 0', () => {
    const r = reconcileKubelet({
      node: n,
      pods: [pod('bye', { node: 'n1', terminating: true })],
      now: 't',
    });
    assert.deepEqual(r.operations, [
      {
        op: 'delete',
        kind: 'Pod',
        namespace: 'default',
        name: 'bye',
        gracePeriodSeconds: 0,
        uid: 'pod-uid-bye',
      },
    ]);
  });

  test('a node without podCIDR leaves pods Pending with a warning', () => {
    const r = reconcileKubelet({ node: node('bare'), pods: [bound('a')], now: 't' });
    assert.deepEqual(r.operations, []);
    assert.match(r.warnings[0] ?? '', /Node bare: no spec.podCIDR/);
  });
});
