// The DaemonSet reconciler: one bound pod per eligible node (nodeSelector, taints and the
// control-plane taint), failed and surplus pods replaced, status counts, RollingUpdate by
// maxUnavailable and OnDelete; then the whole controller on the in-memory cluster (three
// Nodes, the fake kubelet): pods created, a deleted pod recreated, and a `rollout restart`
// (a template annotation) replacing every pod one node at a time.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DaemonSet, DaemonSetStatus, Node, Pod } from '../kube/types.js';
import { node, pod } from '../kube/testing.js';
import { FakeClock } from '../util/clock.js';
import { createFakeCluster } from './fake-cluster.js';
import { ControllerManager } from './manager.js';
import { newTestApi } from '../apiserver/testing.js';
import type { Operation } from './operations.js';
import {
  daemonSetRevision,
  LABEL_POD_TEMPLATE_GENERATION,
  reconcileDaemonSet,
  shouldRunOn,
} from './reconcile-daemonset.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');

function ds(more: Partial<NonNullable<DaemonSet['spec']>> = {}, generation = 1): DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'kube-proxy', namespace: 'kube-system', uid: 'ds-uid', generation },
    spec: {
      selector: { matchLabels: { 'k8s-app': 'kube-proxy' } },
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: { hostNetwork: true, containers: [{ name: 'kube-proxy', image: 'svcnet' }] },
      },
      ...more,
    },
  };
}

function taint(
  n: Node,
  key: string,
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' = 'NoSchedule',
): Node {
  return { ...n, spec: { ...n.spec, taints: [{ key, effect }] } };
}

function daemonPodOn(owner: DaemonSet, nodeName: string, o: Parameters<typeof pod>[1] = {}): Pod {
  const p = pod(`kube-system/${owner.metadata?.name}-${nodeName}`, {
    owner: { ...owner, kind: 'DaemonSet' },
    node: nodeName,
    labels: { 'k8s-app': 'kube-proxy', 'controller-revision-hash': daemonSetRevision(owner) },
    ...o,
  });
  return p;
}

const creates = (ops: Operation[]): Pod[] =>
  ops.filter((o) => o.op === 'create').map((o) => (o as { object: Pod }).object);
const deletes = (ops: Operation[]): string[] =>
  ops.filter((o) => o.op === 'delete').map((o) => (o as { name: string }).name);
const status = (ops: Operation[]): DaemonSetStatus | undefined =>
  (ops.find((o) => o.op === 'updateStatus') as { object: DaemonSet } | undefined)?.object.status;

describe('reconcileDaemonSet', () => {
  test('creates one bound pod per node, named <ds>-, owned, with revision labels', () => {
    const owner = ds();
    const nodes = [node('a'), node('b'), node('c')];
    const out = reconcileDaemonSet({ daemonSet: owner, nodes, pods: [], now: NOW });
    const pods = creates(out);
    assert.deepEqual(
      pods.map((p) => p.spec?.nodeName),
      ['a', 'b', 'c'],
    );
    const p = pods[0]!;
    assert.equal(p.metadata?.generateName, 'kube-proxy-');
    assert.equal(p.metadata.ownerReferences?.[0]?.kind, 'DaemonSet');
    assert.equal(p.metadata.ownerReferences[0].controller, true);
    assert.equal(p.metadata.labels?.['controller-revision-hash'], daemonSetRevision(owner));
    assert.equal(p.metadata.labels[LABEL_POD_TEMPLATE_GENERATION], '1');
    assert.ok(
      p.spec?.tolerations?.some((t) => t.key === 'node.kubernetes.io/network-unavailable'),
      'hostNetwork daemon pods tolerate network-unavailable',
    );
    assert.deepEqual(status(out), {
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 3,
      numberReady: 0,
      updatedNumberScheduled: 0,
      numberAvailable: 0,
      numberUnavailable: 3,
      observedGeneration: 1,
    });
  });

  test('nodeSelector, taints and the control-plane taint decide where pods run', () => {
    const cp = taint(node('cp'), 'node-role.kubernetes.io/control-plane');
    const labelled: Node = { ...node('gpu'), metadata: { name: 'gpu', labels: { gpu: 'yes' } } };
    const plain = ds();
    assert.equal(shouldRunOn(plain, cp), false);
    assert.equal(shouldRunOn(plain, taint(node('x'), 'k', 'PreferNoSchedule')), true);
    assert.equal(shouldRunOn(plain, { ...node('u'), spec: { unschedulable: true } }), true);
    const tolerant = ds({
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: { containers: [{ name: 'c' }], tolerations: [{ operator: 'Exists' }] },
      },
    });
    assert.equal(shouldRunOn(tolerant, cp), true);
    const selective = ds({
      template: {
        metadata: { labels: { 'k8s-app': 'kube-proxy' } },
        spec: { containers: [{ name: 'c' }], nodeSelector: { gpu: 'yes' } },
      },
    });
    assert.equal(shouldRunOn(selective, labelled), true);
    assert.equal(shouldRunOn(selective, node('a')), false);
  });

  test('replaces failed pods, drops surplus and misscheduled ones, counts status', () => {
    const owner = ds();
    const nodes = [node('a'), node('b'), taint(node('c'), 'dedicated')];
    const pods = [
      daemonPodOn(owner, 'a', { created: '2026-01-01T00:00:00Z' }),
      {
        ...daemonPodOn(owner, 'a', { created: '2026-01-01T00:05:00Z' }),
        metadata: { ...daemonPodOn(owner, 'a').metadata, name: 'kube-proxy-a2', uid: 'a2' },
      },
      daemonPodOn(owner, 'b', { phase: 'Failed', ready: false }),
      daemonPodOn(owner, 'c'),
    ];
    const out = reconcileDaemonSet({ daemonSet: owner, nodes, pods, now: NOW });
    assert.deepEqual(deletes(out).sort(), ['kube-proxy-a2', 'kube-proxy-b', 'kube-proxy-c']);
    assert.deepEqual(
      creates(out).map((p) => p.spec?.nodeName),
      ['b'],
    );
    const st = status(out);
    assert.equal(st?.desiredNumberScheduled, 2);
    assert.equal(st.currentNumberScheduled, 1);
    assert.equal(st.numberMisscheduled, 1);
    assert.equal(st.numberReady, 1);
    assert.equal(st.updatedNumberScheduled, 1);
  });

  test('a steady set writes nothing', () => {
    const owner = ds();
    const nodes = [node('a'), node('b')];
    const pods = [daemonPodOn(owner, 'a'), daemonPodOn(owner, 'b')];
    const first = reconcileDaemonSet({ daemonSet: owner, nodes, pods, now: NOW });
    assert.deepEqual(creates(first), []);
    assert.deepEqual(deletes(first), []);
    const settled = { ...owner, status: status(first)! };
    assert.deepEqual(reconcileDaemonSet({ daemonSet: settled, nodes, pods, now: NOW }), []);
  });

  test('RollingUpdate deletes old pods up to maxUnavailable, waits for terminating ones', () => {
    const old = ds();
    const next = ds(
      {
        template: {
          metadata: { labels: { 'k8s-app': 'kube-proxy' }, annotations: { restartedAt: 'now' } },
          spec: { hostNetwork: true, containers: [{ name: 'kube-proxy', image: 'svcnet' }] },
        },
      },
      2,
    );
    const nodes = [node('a'), node('b'), node('c'), node('d')];
    const pods = nodes.map((n) => daemonPodOn(old, n.metadata!.name!));
    const one = reconcileDaemonSet({ daemonSet: next, nodes, pods, now: NOW });
    assert.equal(deletes(one).length, 1, 'default maxUnavailable is 1');
    assert.deepEqual(creates(one), []);
    const two = reconcileDaemonSet({
      daemonSet: {
        ...next,
        spec: {
          ...next.spec,
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '50%' } },
        },
      },
      nodes,
      pods,
      now: NOW,
    });
    assert.equal(deletes(two).length, 2);
    // While a's old pod terminates nothing is created there and nothing else goes.
    const terminating = [daemonPodOn(old, 'a', { terminating: true }), ...pods.slice(1)];
    const three = reconcileDaemonSet({ daemonSet: next, nodes, pods: terminating, now: NOW });
    assert.deepEqual(deletes(three), []);
    assert.deepEqual(creates(three), []);
    // Once it is gone, a's new pod is created; an unready old pod is deleted at no cost.
    const gone = [pods[1]!, daemonPodOn(old, 'c', { ready: false }), pods[3]!];
    const four = reconcileDaemonSet({ daemonSet: next, nodes, pods: gone, now: NOW });
    assert.deepEqual(
      creates(four).map((p) => p.spec?.nodeName),
      ['a'],
    );
    assert.deepEqual(deletes(four), ['kube-proxy-c']);
    assert.equal(creates(four)[0]?.metadata?.labels?.[LABEL_POD_TEMPLATE_GENERATION], '2');
  });

  test('OnDelete leaves old pods alone and creates new ones where pods are missing', () => {
    const old = ds();
    const next = ds(
      {
        updateStrategy: { type: 'OnDelete' },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-proxy', v: '2' } },
          spec: { containers: [{ name: 'kube-proxy', image: 'svcnet:2' }] },
        },
      },
      2,
    );
    const nodes = [node('a'), node('b')];
    const out = reconcileDaemonSet({
      daemonSet: next,
      nodes,
      pods: [daemonPodOn(old, 'a')],
      now: NOW,
    });
    assert.deepEqual(deletes(out), []);
    assert.deepEqual(
      creates(out).map((p) => p.spec?.containers[0]?.image),
      ['svcnet:2'],
    );
    assert.equal(status(out)?.updatedNumberScheduled, 0);
  });
});

describe('DaemonSet controller on the in-memory cluster', () => {
  test('one pod per node, recreated when deleted, rollout restart replaces all', async () => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    const api = newTestApi({ now: () => clock.now() });
    const cluster = createFakeCluster(api);
    const client = cluster.client;
    for (const name of ['n1', 'n2', 'n3']) {
      const n = node(name, { podCIDR: `10.244.${name.slice(1)}.0/24` });
      delete n.metadata!.uid;
      await client.create('Node', n);
    }
    const log = { debug() {}, info() {}, warn() {}, error() {} };
    const manager = new ControllerManager({
      client,
      informers: cluster.informers,
      log,
      clock,
      fakeKubelet: true,
      resyncPeriodMs: 0,
    });
    await manager.startInformers();
    const owner = ds();
    delete owner.metadata!.uid;
    delete owner.metadata!.generation;
    await client.create('DaemonSet', owner);
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) {
        await manager.runUntilIdle();
        await clock.advance(1000);
      }
    };
    const podsNow = async (): Promise<Pod[]> =>
      (await client.list('Pod', { namespace: 'kube-system' })).filter(
        (p) => p.metadata?.deletionTimestamp === undefined,
      );
    await settle();
    let pods = await podsNow();
    assert.deepEqual(pods.map((p) => p.spec?.nodeName).sort(), ['n1', 'n2', 'n3']);
    for (const p of pods) assert.match(p.metadata?.name ?? '', /^kube-proxy-[a-z0-9]{5}$/);
    let got = await client.get('DaemonSet', 'kube-system', 'kube-proxy');
    assert.equal(got?.status?.numberReady, 3);
    assert.equal(got.status.observedGeneration, 1);

    const deleted = pods[0]!.metadata!.name!;
    await client.delete('Pod', 'kube-system', deleted);
    await settle();
    pods = await podsNow();
    assert.equal(pods.length, 3, 'the deleted pod is recreated');
    assert.ok(!pods.some((p) => p.metadata?.name === deleted));

    const before = new Set(pods.map((p) => p.metadata?.name));
    const cur = (await client.get('DaemonSet', 'kube-system', 'kube-proxy'))!;
    const original = structuredClone(cur);
    cur.spec!.template!.metadata!.annotations = { 'kubectl.kubernetes.io/restartedAt': 'now' };
    await client.update('DaemonSet', cur);
    await settle();
    pods = await podsNow();
    assert.equal(pods.length, 3);
    assert.ok(
      pods.every((p) => !before.has(p.metadata?.name)),
      'every pod replaced',
    );
    got = await client.get('DaemonSet', 'kube-system', 'kube-proxy');
    assert.equal(got?.status?.observedGeneration, 2);
    assert.equal(got.status.updatedNumberScheduled, 3);
    assert.equal(got.status.numberAvailable, 3);

    // The history `kubectl rollout history` lists: one revision per template, the current one
    // last, named after the hash its Pods wear.
    const history = async (): Promise<string[]> =>
      (await client.list('ControllerRevision', { namespace: 'kube-system' }))
        .sort((a, b) => a.revision - b.revision)
        .map((r) => `${String(r.revision)} ${r.metadata?.name ?? ''}`);
    const [first, second] = [daemonSetRevision(original), daemonSetRevision(cur)];
    assert.deepEqual(await history(), [`1 kube-proxy-${first}`, `2 kube-proxy-${second}`]);
    // `rollout undo` puts the first template back: its revision becomes number 3.
    const back = (await client.get('DaemonSet', 'kube-system', 'kube-proxy'))!;
    back.spec!.template = original.spec!.template!;
    await client.update('DaemonSet', back);
    await settle();
    assert.deepEqual(await history(), [`2 kube-proxy-${second}`, `3 kube-proxy-${first}`]);
    pods = await podsNow();
    assert.ok(pods.every((p) => p.metadata?.labels?.['controller-revision-hash'] === first));
    await manager.stop();
  });
});
