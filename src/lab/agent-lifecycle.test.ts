// The node agent's container lifecycle with a Fake runtime whose container processes exit
// when the test says so: restarts per restartPolicy with the back-off, CrashLoopBackOff in
// between, liveness and startup probes that kill the container.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeInformer } from '../kube/informer.js';
import type { ContainerStatus, Pod, Probe } from '../kube/types.js';
import { FakeClock } from '../util/clock.js';
import { NodeAgent, type PodRuntime, type PodStatusWriter, type StartedPod } from './agent.js';

class FakeRuntime implements PodRuntime {
  events: string[] = [];
  probeResult = true;
  /** The exit code of a process killContainer stops (a server that exits 0 on SIGTERM: 0). */
  killExit = 137;
  private pid = 100;
  /** Ends the current process of a Pod (by name) with an exit code. */
  readonly exit = new Map<string, (code: number) => void>();
  private run(pod: Pod): StartedPod {
    const name = pod.metadata?.name ?? '';
    const exited = new Promise<number>((resolve) => this.exit.set(name, resolve));
    return { ip: '10.244.1.7', startedAt: '2026-01-01T00:00:00.000Z', pid: ++this.pid, exited };
  }
  start(pod: Pod) {
    this.events.push(`start ${pod.metadata?.name ?? ''}`);
    return Promise.resolve(this.run(pod));
  }
  restartContainer(pod: Pod) {
    this.events.push(`restart ${pod.metadata?.name ?? ''}`);
    return Promise.resolve(this.run(pod));
  }
  killContainer(key: string, grace: number) {
    this.events.push(`kill ${key} grace=${String(grace)}`);
    this.exit.get(key.split('/')[1] ?? '')?.(this.killExit);
    return Promise.resolve();
  }
  stop(key: string, grace: number) {
    this.events.push(`stop ${key} grace=${String(grace)}`);
    this.exit.get(key.split('/')[1] ?? '')?.(143);
    return Promise.resolve();
  }
  probe(_pod: Pod, _ip: string, _p: Probe) {
    this.events.push('probe');
    return Promise.resolve(this.probeResult);
  }
}

class FakeStatus implements PodStatusWriter {
  statuses: NonNullable<Pod['status']>[] = [];
  updateStatus(_pod: Pod, status: NonNullable<Pod['status']>) {
    this.statuses.push(status);
    return Promise.resolve();
  }
  finalizeDelete() {
    return Promise.resolve();
  }
  /** The last reported status of the container (a call: assertions do not narrow it). */
  last(): ContainerStatus | undefined {
    return this.statuses.at(-1)?.containerStatuses?.at(0);
  }
}

function pod(
  name: string,
  spec: { restartPolicy?: string; liveness?: Probe; startup?: Probe; readiness?: Probe } = {},
): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      nodeName: 'n1',
      terminationGracePeriodSeconds: 5,
      ...(spec.restartPolicy === undefined ? {} : { restartPolicy: spec.restartPolicy }),
      containers: [
        {
          name: 'c',
          ...(spec.liveness ? { livenessProbe: spec.liveness } : {}),
          ...(spec.startup ? { startupProbe: spec.startup } : {}),
          ...(spec.readiness ? { readinessProbe: spec.readiness } : {}),
        },
      ],
    },
  };
}

async function setup(p: Pod) {
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
  await informer.start();
  informer.upsert(p);
  await agent.idle();
  const exit = async (code: number): Promise<void> => {
    runtime.exit.get(p.metadata?.name ?? '')?.(code);
    await clock.advance(0);
    await agent.idle();
  };
  const advance = async (ms: number): Promise<void> => {
    await clock.advance(ms);
    await agent.idle();
  };
  return { runtime, status, clock, agent, informer, exit, advance };
}

test('an exiting container restarts at once, then after 10 s in CrashLoopBackOff, counted', async () => {
  const { runtime, status, exit, advance } = await setup(pod('crash'));
  assert.deepEqual(status.last()?.state?.running, { startedAt: '2026-01-01T00:00:00.000Z' });
  assert.equal(status.last()?.containerID, 'svcnet://101');
  await exit(1);
  assert.deepEqual(
    runtime.events,
    ['start crash', 'restart crash'],
    'the first restart is at once',
  );
  assert.equal(status.last()?.restartCount, 1);
  assert.equal(status.last()?.lastState?.terminated?.exitCode, 1);
  assert.equal(status.last()?.lastState?.terminated?.reason, 'Error');
  assert.equal(status.last()?.lastState?.terminated?.containerID, 'svcnet://101');
  assert.equal(status.last()?.ready, true);
  await exit(1);
  assert.equal(runtime.events.length, 2, 'waiting out the back-off');
  assert.equal(status.last()?.state?.waiting?.reason, 'CrashLoopBackOff');
  assert.match(
    status.last()?.state?.waiting?.message ?? '',
    /^back-off 10s restarting failed container=c pod=crash_default\(uid-crash\)$/,
  );
  assert.equal(status.last()?.ready, false);
  assert.equal(
    status.statuses.at(-1)?.conditions?.find((c) => c.type === 'Ready')?.status,
    'False',
  );
  await advance(9_999);
  assert.equal(runtime.events.length, 2);
  await advance(1);
  assert.deepEqual(runtime.events.slice(2), ['restart crash']);
  assert.equal(status.last()?.restartCount, 2);
  await exit(1);
  assert.match(status.last()?.state?.waiting?.message ?? '', /^back-off 20s /);
});

test('kill -9 of a running container (exit 137) is restarted and reported as the kubelet does', async () => {
  const { status, exit } = await setup(pod('dns'));
  await exit(137);
  assert.equal(status.last()?.restartCount, 1);
  assert.equal(status.last()?.lastState?.terminated?.exitCode, 137);
  assert.equal(status.last()?.lastState?.terminated?.reason, 'Error');
  assert.equal(status.statuses.at(-1)?.phase, 'Running');
});

test('restartPolicy Never: the Pod ends Failed (or Succeeded) and nothing restarts', async () => {
  const failed = await setup(pod('once', { restartPolicy: 'Never' }));
  await failed.exit(3);
  assert.deepEqual(failed.runtime.events, ['start once']);
  assert.equal(failed.status.statuses.at(-1)?.phase, 'Failed');
  assert.equal(failed.status.last()?.state?.terminated?.exitCode, 3);
  const ok = await setup(pod('job', { restartPolicy: 'OnFailure' }));
  await ok.exit(0);
  assert.deepEqual(ok.runtime.events, ['start job']);
  assert.equal(ok.status.statuses.at(-1)?.phase, 'Succeeded');
  assert.equal(ok.status.last()?.state?.terminated?.reason, 'Completed');
});

test('a failing liveness probe kills the container after failureThreshold, and it restarts', async () => {
  const liveness = {
    httpGet: { path: '/healthz', port: 8080 },
    periodSeconds: 2,
    failureThreshold: 2,
  };
  const { runtime, status, advance } = await setup(pod('live', { liveness }));
  assert.deepEqual(runtime.events, ['start live', 'probe']);
  runtime.probeResult = false;
  await advance(2000);
  assert.equal(
    runtime.events.includes('kill default/live grace=5'),
    false,
    'one failure is not enough',
  );
  await advance(2000);
  // The new run is probed at once (no initialDelaySeconds).
  assert.deepEqual(runtime.events.slice(-4), [
    'probe',
    'kill default/live grace=5',
    'restart live',
    'probe',
  ]);
  assert.equal(status.last()?.restartCount, 1);
  assert.equal(status.last()?.lastState?.terminated?.exitCode, 137);
  // The new run is probed afresh; still failing, it is killed again and now backs off.
  await advance(4000);
  assert.equal(runtime.events.filter((e) => e.startsWith('kill')).length, 2);
  assert.equal(status.last()?.state?.waiting?.reason, 'CrashLoopBackOff');
});

test('liveness under OnFailure restarts even a clean exit; under Never it does not', async () => {
  const liveness = { tcpSocket: { port: 80 }, periodSeconds: 1, failureThreshold: 1 };
  const onFailure = await setup(pod('a', { liveness, restartPolicy: 'OnFailure' }));
  onFailure.runtime.probeResult = false;
  onFailure.runtime.killExit = 0;
  await onFailure.advance(1000);
  assert.deepEqual(onFailure.runtime.events.slice(3, 5), ['kill default/a grace=5', 'restart a']);
  assert.equal(onFailure.status.last()?.lastState?.terminated?.reason, 'Completed');
  const never = await setup(pod('b', { liveness, restartPolicy: 'Never' }));
  never.runtime.probeResult = false;
  await never.advance(1000);
  assert.equal(never.runtime.events.at(-1), 'kill default/b grace=5');
  assert.equal(never.status.statuses.at(-1)?.phase, 'Failed');
});

test('a startup probe holds liveness and readiness until it passes; its failure restarts', async () => {
  const startup = {
    tcpSocket: { port: 80 },
    initialDelaySeconds: 1,
    periodSeconds: 1,
    failureThreshold: 3,
  };
  const liveness = { tcpSocket: { port: 80 }, periodSeconds: 1, failureThreshold: 1 };
  const readiness = { tcpSocket: { port: 80 }, periodSeconds: 1 };
  const s = await setup(pod('slow', { startup, liveness, readiness }));
  assert.deepEqual(s.runtime.events, ['start slow'], 'liveness and readiness wait for startup');
  assert.equal(s.status.last()?.started, false);
  assert.equal(s.status.last()?.ready, false);
  // Passed at 1 s: liveness and readiness take over; the Pod turns ready.
  await s.advance(1000);
  assert.equal(s.status.last()?.started, true);
  await s.advance(1000);
  assert.equal(s.status.last()?.started, true);
  assert.equal(s.status.last()?.ready, true);
  const failing = await setup(pod('stuck', { startup, liveness }));
  failing.runtime.probeResult = false;
  await failing.advance(2000);
  assert.equal(
    failing.runtime.events.some((e) => e.startsWith('kill')),
    false,
    'below the threshold',
  );
  await failing.advance(1000);
  assert.deepEqual(failing.runtime.events.slice(-2), [
    'kill default/stuck grace=5',
    'restart stuck',
  ]);
});

test('a Pod deleted during its back-off is not restarted', async () => {
  const { runtime, informer, exit, advance } = await setup(pod('gone'));
  await exit(1);
  await exit(1);
  informer.upsert({
    ...pod('gone'),
    metadata: {
      ...pod('gone').metadata,
      deletionTimestamp: '2026-01-01T00:00:05Z',
      deletionGracePeriodSeconds: 0,
    },
  });
  await advance(0);
  await advance(30_000);
  assert.deepEqual(runtime.events, ['start gone', 'restart gone', 'stop default/gone grace=0']);
});
