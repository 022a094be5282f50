import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeInformer } from '../kube/informer.js';
import type { Container, Pod, Probe } from '../kube/types.js';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
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
  /** Exit codes each init container gives, run after run (then 0). */
  initExits = new Map<string, number[]>();
  async start(pod: Pod, beforeServer?: (ip: string) => Promise<void>) {
    this.events.push(`start ${pod.metadata?.name}`);
    if (this.failStarts > 0) {
      this.failStarts--;
      throw new Error('CNI ADD failed');
    }
    const ip = pod.spec?.hostNetwork ? '172.18.0.3' : `10.244.1.${this.events.length + 1}`;
    try {
      await beforeServer?.(ip);
    } catch (e) {
      this.events.push(`remove sandbox ${pod.metadata?.name}`);
      throw e;
    }
    if (beforeServer) this.events.push(`server ${pod.metadata?.name}`);
    return { ip, startedAt: '2026-01-01T00:00:00.000Z' };
  }
  runInit(pod: Pod, c: Container) {
    this.events.push(`init ${c.name}`);
    const exitCode = this.initExits.get(c.name)?.shift() ?? 0;
    return Promise.resolve({ exitCode, output: '' });
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
  statuses: NonNullable<Pod['status']>[] = [];
  deleted: string[] = [];
  updateStatus(pod: Pod, status: NonNullable<Pod['status']>) {
    this.statuses.push(status);
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

function lastStatus(s: FakeStatus): NonNullable<Pod['status']> {
  const st = s.statuses.at(-1);
  assert.ok(st, 'a status was reported');
  return st;
}

/** Lets queued work run without waiting for idle (an init back-off keeps a sync pending). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushMicrotasks();
}

function initPod(restartPolicy?: string): Pod {
  const p = pod('web-1', 'n1');
  return {
    ...p,
    spec: {
      ...(p.spec ?? { containers: [] }),
      ...(restartPolicy === undefined ? {} : { restartPolicy }),
      initContainers: [
        { name: 'setup', command: ['sh', '-c', 'true'] },
        { name: 'migrate', command: ['sh', '-c', 'exit 1'] },
      ],
    },
  };
}

/** What kubectl's STATUS column shows for a status (its printer's init-container rules). */
function kubectlStatus(st: NonNullable<Pod['status']>, initCount: number): string {
  for (const [i, c] of (st.initContainerStatuses ?? []).entries()) {
    const t = c.state?.terminated;
    if (t?.exitCode === 0) continue;
    if (t) return `Init:${t.reason ?? `ExitCode:${String(t.exitCode)}`}`;
    const w = c.state?.waiting?.reason;
    if (w !== undefined && w !== 'PodInitializing') return `Init:${w}`;
    return `Init:${String(i)}/${String(initCount)}`;
  }
  return st.phase ?? '';
}

test('init containers run in order before the server; a failing one backs off and retries', async () => {
  const { informer, runtime, status, clock } = setup();
  runtime.initExits.set('migrate', [1, 2]);
  await informer.start();
  informer.upsert(initPod());
  await settle();
  assert.deepEqual(runtime.events, ['start web-1', 'init setup', 'init migrate']);
  const shown = () => status.statuses.map((s) => kubectlStatus(s, 2));
  assert.deepEqual(shown(), ['Init:0/2', 'Init:1/2', 'Init:Error']);
  const last = () => status.statuses.at(-1);
  assert.equal(last()?.phase, 'Pending');
  assert.equal(last()?.podIP, '10.244.1.2', 'the sandbox has its IP while initializing');
  assert.deepEqual(
    last()?.conditions?.find((c) => c.type === 'Initialized'),
    {
      type: 'Initialized',
      status: 'False',
      reason: 'ContainersNotInitialized',
      lastTransitionTime: '2026-01-01T00:00:00.000Z',
    },
  );
  assert.deepEqual(last()?.containerStatuses?.[0]?.state, {
    waiting: { reason: 'PodInitializing' },
  });
  clock.advanceSync(10_000); // the first back-off
  await settle();
  assert.deepEqual(shown().slice(3), ['Init:1/2', 'Init:Error', 'Init:CrashLoopBackOff']);
  assert.equal(last()?.initContainerStatuses?.[1]?.restartCount, 1);
  assert.deepEqual(last()?.initContainerStatuses?.[1]?.lastState?.terminated?.exitCode, 2);
  clock.advanceSync(19_999);
  await settle();
  assert.equal(status.statuses.length, 6, 'the second back-off is 20 s');
  clock.advanceSync(1);
  await settle();
  assert.deepEqual(runtime.events, [
    'start web-1',
    'init setup',
    'init migrate',
    'init migrate',
    'init migrate',
    'server web-1',
  ]);
  const running = lastStatus(status);
  assert.equal(running.phase, 'Running');
  assert.deepEqual(
    running.initContainerStatuses?.map((c) => [
      c.name,
      c.restartCount,
      c.state?.terminated?.reason,
    ]),
    [
      ['setup', 0, 'Completed'],
      ['migrate', 2, 'Completed'],
    ],
  );
  assert.equal(running.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
});

test('restartPolicy Never: a failing init container fails the Pod and removes its sandbox', async () => {
  const { informer, runtime, status, agent } = setup();
  runtime.initExits.set('migrate', [1]);
  await informer.start();
  informer.upsert(initPod('Never'));
  await agent.idle();
  assert.deepEqual(runtime.events, [
    'start web-1',
    'init setup',
    'init migrate',
    'remove sandbox web-1',
  ]);
  const last = lastStatus(status);
  assert.equal(last.phase, 'Failed');
  assert.equal(kubectlStatus(last, 2), 'Init:Error');
  assert.equal(agent.errors, 0);
  informer.upsert(deletingPod('web-1', 30, '2026-01-01T00:00:05Z'));
  await agent.idle();
  assert.deepEqual(status.deleted, ['web-1']);
});

test('a Pod deleted during an init back-off stops retrying and is finalized', async () => {
  const { informer, runtime, status, clock, agent } = setup();
  runtime.initExits.set('migrate', [1, 1, 1]);
  await informer.start();
  informer.upsert(initPod());
  await settle();
  informer.upsert({
    ...initPod(),
    metadata: { ...initPod().metadata, deletionTimestamp: '2026-01-01T00:00:01Z' },
  });
  await agent.idle();
  assert.deepEqual(runtime.events.slice(-1), ['remove sandbox web-1']);
  clock.advanceSync(60_000);
  await agent.idle();
  assert.equal(runtime.events.filter((e) => e === 'init migrate').length, 1);
  assert.equal(clock.pendingTimers(), 0);
  assert.equal(agent.errors, 0);
  assert.deepEqual(status.deleted, ['web-1']);
});

test('a hostNetwork Pod reports the node IP as its Pod IP', async () => {
  const { informer, status, agent } = setup();
  await informer.start();
  const p = pod('host-1', 'n1');
  informer.upsert({ ...p, spec: { ...(p.spec ?? { containers: [] }), hostNetwork: true } });
  await agent.idle();
  const st = lastStatus(status);
  assert.equal(st.podIP, '172.18.0.3');
  assert.deepEqual(st.podIPs, [{ ip: '172.18.0.3' }]);
  assert.equal(st.hostIP, '172.18.0.3');
});

test('an exec readiness probe waits initialDelaySeconds, then follows the thresholds', async () => {
  const { informer, runtime, status, clock, agent } = setup();
  await informer.start();
  informer.upsert(
    pod('web-1', 'n1', {
      exec: { command: ['sh', '-c', 'test -f /tmp/ready'] },
      initialDelaySeconds: 5,
      periodSeconds: 2,
      successThreshold: 2,
    }),
  );
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1']);
  clock.advanceSync(4000);
  await agent.idle();
  assert.deepEqual(runtime.events, ['start web-1'], 'no probe before the initial delay');
  clock.advanceSync(2000);
  await agent.idle();
  assert.equal(runtime.events.length, 2);
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false],
  );
  clock.advanceSync(2000);
  await agent.idle();
  assert.deepEqual(
    status.updates.map((u) => u.ready),
    [false, true],
  );
});
