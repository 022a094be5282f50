import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeInformer } from '../kube/informer.js';
import type { Pod, Probe } from '../kube/types.js';
import { FakeClock } from '../util/clock.js';
import { NodeAgent, type PodRuntime, type PodStatusWriter } from './agent.js';

class FakeRuntime implements PodRuntime {
  events: string[] = [];
  probeResult = true;
  failStarts = 0;
  /** Pods an earlier agent left running, by name, with their IPs. */
  leftRunning = new Map<string, string>();
  adopt(pod: Pod) {
    const ip = this.leftRunning.get(pod.metadata?.name ?? '');
    if (ip === undefined) return Promise.resolve(undefined);
    this.events.push(`adopt ${pod.metadata?.name}`);
    return Promise.resolve({ ip, startedAt: '2025-12-31T23:00:00.000Z' });
  }
  start(pod: Pod) {
    this.events.push(`start ${pod.metadata?.name}`);
    if (this.failStarts > 0) {
      this.failStarts--;
      return Promise.reject(new Error('CNI ADD failed'));
    }
    return Promise.resolve({
      ip: `10.244.1.${this.events.length + 1}`,
      startedAt: '2026-01-01T00:00:00.000Z',
    });
  }
  stop(key: string, grace: number) {
    this.events.push(`stop ${key} grace=${grace}`);
    return Promise.resolve();
  }
  probe(_pod: Pod, ip: string, _p: Probe) {
    this.events.push(`probe ${ip}`);
    return Promise.resolve(this.probeResult);
  }
}

class FakeStatus implements PodStatusWriter {
  updates: { name: string; ready: boolean; ip: string | undefined }[] = [];
  deleted: string[] = [];
  updateStatus(pod: Pod, status: NonNullable<Pod['status']>) {
    const ready = status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    this.updates.push({ name: pod.metadata?.name ?? '', ready, ip: status.podIP });
    return Promise.resolve();
  }
  finalizeDelete(pod: Pod) {
    this.deleted.push(pod.metadata?.name ?? '');
    return Promise.resolve();
  }
}

function pod(
  name: string,
  node: string,
  probe?: Probe,
  extra: Partial<NonNullable<Pod['metadata']>> = {},
): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, ...extra },
    spec: {
      nodeName: node,
      containers: [
        { name: 'c', ports: [{ containerPort: 80 }], ...(probe ? { readinessProbe: probe } : {}) },
      ],
    },
  };
}

/** A Pod of node n1 the API server is deleting since `at`, with `grace` seconds to stop. */
function deletingPod(name: string, grace: number, at: string, probe?: Probe): Pod {
  return pod(name, 'n1', probe, { deletionTimestamp: at, deletionGracePeriodSeconds: grace });
}

function setup() {
  const informer = new FakeInformer<Pod>();
  const runtime = new FakeRuntime();
  const status = new FakeStatus();
  const clock = new FakeClock();
  const agent = new NodeAgent({
    nodeName: 'n1',
    hostIP: '172.18.0.3',
    pods: informer,
    runtime,
    status,
    clock,
  });
  return { informer, runtime, status, clock, agent };
}

test('a Pod bound to this node is started and reported Running and Ready with its IP', async () => {
  const { informer, runtime, status, agent } = setup();
  await informer.start();
  informer.upsert(pod('web-1', 'n1'));
  informer.upsert(pod('other', 'n2'));
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1']);
  assert.deepEqual(status.updates, [{ name: 'web-1', ready: true, ip: '10.244.1.2' }]);
});

test('readiness follows the probe with success and failure thresholds', async () => {
  const { informer, runtime, status, clock, agent } = setup();
  await informer.start();
  informer.upsert(
    pod('web-1', 'n1', {
      httpGet: { path: '/readyz', port: 80 },
      periodSeconds: 2,
      failureThreshold: 2,
    }),
  );
  await agent.idle();
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false, true],
  ); // reported unready, then the first probe passed
  runtime.probeResult = false;
  clock.advanceSync(2000);
  await agent.idle();
  assert.equal(status.updates.length, 2, 'one failure is below the threshold');
  clock.advanceSync(2000);
  await agent.idle();
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false, true, false],
  );
});

test('deletion honours the grace period, then tears down and makes the final delete', async () => {
  const { informer, runtime, status, agent } = setup();
  await informer.start();
  informer.upsert(pod('web-1', 'n1'));
  await agent.idle();
  informer.upsert(deletingPod('web-1', 7, '2026-01-01T00:00:05Z'));
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1', 'stop default/web-1 grace=7']);
  assert.deepEqual(status.deleted, ['web-1']);
  // A Pod removed from the API without us (force delete) is torn down at once.
  informer.upsert(pod('web-2', 'n1'));
  await agent.idle();
  informer.delete('default/web-2');
  await agent.idle();
  assert.equal(runtime.events.at(-1), 'stop default/web-2 grace=0');
});

test('a failing runtime is logged and counted; the agent keeps serving other Pods', async () => {
  const { informer, runtime, status, agent } = setup();
  await informer.start();
  runtime.start = (p: Pod) =>
    p.metadata?.name === 'bad'
      ? Promise.reject(new Error('cni: no IP'))
      : FakeRuntime.prototype.start.call(runtime, p);
  informer.upsert(pod('bad', 'n1'));
  informer.upsert(pod('good', 'n1'));
  await agent.idle();
  assert.equal(agent.errors, 1);
  assert.deepEqual(
    status.updates.map((u) => u.name),
    ['good'],
  );
});

test('a Pod whose start fails is retried with a doubling back-off, then reported', async () => {
  const { informer, runtime, status, clock, agent } = setup();
  await informer.start();
  runtime.failStarts = 2;
  informer.upsert(pod('web-1', 'n1'));
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1']);
  assert.equal(agent.errors, 1);
  clock.advanceSync(999);
  await agent.idle();
  assert.equal(runtime.events.length, 1, 'no retry before 1 s');
  clock.advanceSync(1);
  await agent.idle();
  assert.equal(runtime.events.length, 2, 'first retry after 1 s');
  clock.advanceSync(1999);
  await agent.idle();
  assert.equal(runtime.events.length, 2, 'second retry waits 2 s');
  clock.advanceSync(1);
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1', 'start web-1', 'start web-1']);
  assert.deepEqual(status.updates, [{ name: 'web-1', ready: true, ip: '10.244.1.4' }]);
});

test('a terminating Pod is still probed: failing readiness after SIGTERM reports it unready', async () => {
  const { informer, runtime, status, clock, agent } = setup();
  let finishStop: () => void = () => undefined;
  runtime.stop = (key: string, grace: number) => {
    runtime.events.push(`stop ${key} grace=${grace}`);
    return new Promise<void>((resolve) => {
      finishStop = resolve;
    });
  };
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  const probe: Probe = { httpGet: { path: '/readyz', port: 80 }, periodSeconds: 1 };
  await informer.start();
  informer.upsert(pod('web-1', 'n1', probe));
  await agent.idle();
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false, true],
  );
  informer.upsert(deletingPod('web-1', 60, '2026-01-01T00:00:05Z', probe));
  await flush();
  assert.equal(runtime.events.at(-1), 'stop default/web-1 grace=60', 'server signalled');
  // The server now fails /readyz while it drains; the probe keeps running (failureThreshold 3).
  runtime.probeResult = false;
  clock.advanceSync(3000);
  await flush();
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false, true, false],
    'reported unready while terminating',
  );
  assert.deepEqual(status.deleted, [], 'no final delete before the server stopped');
  finishStop();
  await agent.idle();
  assert.deepEqual(status.deleted, ['web-1']);
  const probes = runtime.events.filter((e) => e.startsWith('probe')).length;
  clock.advanceSync(5000);
  await agent.idle();
  assert.equal(
    runtime.events.filter((e) => e.startsWith('probe')).length,
    probes,
    'no probe after the Pod stopped',
  );
});

test('a restarted agent adopts the Pods still running and starts only the others', async () => {
  const { informer, runtime, status, agent } = setup();
  runtime.leftRunning.set('web-1', '10.244.1.7');
  await informer.start();
  informer.upsert(pod('web-1', 'n1'));
  informer.upsert(pod('web-2', 'n1'));
  await agent.idle();
  assert.deepEqual(runtime.events, ['adopt web-1', 'start web-2']);
  assert.deepEqual(status.updates, [
    { name: 'web-1', ready: true, ip: '10.244.1.7' },
    { name: 'web-2', ready: true, ip: '10.244.1.3' },
  ]);
  informer.upsert(deletingPod('web-1', 0, '2026-01-01T00:00:00Z'));
  await agent.idle();
  assert.ok(
    runtime.events.includes('stop default/web-1 grace=0'),
    'an adopted Pod is stopped like any other',
  );
});

test('a Pod deleted while no agent ran is stopped by the next one before the final delete', async () => {
  const { informer, runtime, status, agent } = setup();
  runtime.leftRunning.set('web-1', '10.244.1.7');
  await informer.start();
  informer.upsert(deletingPod('web-1', 0, '2026-01-01T00:00:00Z'));
  informer.upsert(deletingPod('web-2', 0, '2026-01-01T00:00:00Z'));
  await agent.idle();
  assert.deepEqual(runtime.events, ['adopt web-1', 'stop default/web-1 grace=0']);
  assert.deepEqual(status.deleted.sort(), ['web-1', 'web-2']);
});
