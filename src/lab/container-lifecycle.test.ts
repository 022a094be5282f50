import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../kube/types.js';
import { runningPodStatus } from '../kube/pod-status.js';
import {
  NO_RESULTS,
  afterExit,
  afterRestart,
  countResult,
  crashLoopMessage,
  firstRun,
  lifecycleStatus,
  podPhase,
  probeFailed,
  probeSucceeded,
  shouldRestart,
  type Lifecycle,
} from './container-lifecycle.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function pod(restartPolicy?: string): Pod {
  return {
    metadata: { name: 'crash', namespace: 'lc', uid: 'u-1' },
    spec: {
      containers: [{ name: 'main', image: 'busybox' }],
      ...(restartPolicy === undefined ? {} : { restartPolicy }),
    },
  };
}

function base(p: Pod, ready = true) {
  return runningPodStatus({
    containers: p.spec?.containers ?? [],
    podIPs: ['10.244.1.5'],
    startTime: iso(T0),
    now: iso(T0),
    ready,
  });
}

test('shouldRestart: Always always, OnFailure after a failure or a probe kill, Never never', () => {
  const table: [Parameters<typeof shouldRestart>, boolean][] = [
    [['Always', 0, 'exited'], true],
    [['Always', 137, 'exited'], true],
    [['OnFailure', 0, 'exited'], false],
    [['OnFailure', 1, 'exited'], true],
    [['OnFailure', 0, 'liveness'], true],
    [['Never', 1, 'exited'], false],
    [['Never', 137, 'liveness'], false],
  ];
  for (const [args, want] of table) assert.equal(shouldRestart(...args), want, args.join(' '));
});

test('exits in a row: at once, then 10 s, 20 s, 40 s; restartCount counts the restarts', () => {
  let life: Lifecycle = firstRun(iso(T0), 100);
  let now = T0;
  const delays: (number | undefined)[] = [];
  for (let i = 0; i < 4; i++) {
    now += 1000;
    const d = afterExit(life, 'Always', 1, 'exited', now);
    delays.push(d.restartInMs);
    now += d.restartInMs ?? 0;
    life = afterRestart(d.life, iso(now), 101 + i);
  }
  assert.deepEqual(delays, [0, 10_000, 20_000, 40_000]);
  assert.equal(life.restartCount, 4);
  assert.deepEqual(life.current, {
    kind: 'running',
    startedAt: iso(now),
    containerID: 'svcnet://104',
  });
});

test('a run of 10 minutes forgets the back-off: the next exit restarts at once', () => {
  let life = afterRestart(
    afterExit(firstRun(iso(T0), 1), 'Always', 1, 'exited', T0 + 1).life,
    iso(T0 + 2),
    2,
  );
  const soon = afterExit(life, 'Always', 1, 'exited', T0 + 5000);
  assert.equal(soon.restartInMs, 10_000);
  life = afterExit(life, 'Always', 1, 'exited', T0 + 2 + 10 * 60_000).life;
  assert.equal(life.current.kind, 'terminated', 'restarting at once');
});

test('the last run is kept as terminated: exit code, reason, its times and containerID', () => {
  const d = afterExit(firstRun(iso(T0), 42), 'Always', 137, 'exited', T0 + 3000);
  assert.deepEqual(d.life.last, {
    exitCode: 137,
    reason: 'Error',
    startedAt: iso(T0),
    finishedAt: iso(T0 + 3000),
    containerID: 'svcnet://42',
  });
  const done = afterExit(firstRun(iso(T0), 42), 'OnFailure', 0, 'exited', T0 + 3000);
  assert.equal(done.life.last?.reason, 'Completed');
  assert.equal(done.restartInMs, undefined);
});

test('CrashLoopBackOff: waiting with the kubelet message, lastState terminated, not ready', () => {
  const p = pod();
  let life = firstRun(iso(T0), 7);
  life = afterRestart(afterExit(life, 'Always', 1, 'exited', T0 + 100).life, iso(T0 + 200), 8);
  const d = afterExit(life, 'Always', 1, 'exited', T0 + 300);
  const st = lifecycleStatus(p, base(p), d.life, true);
  const cs = () => st.containerStatuses?.at(0);
  assert.equal(st.phase, 'Running');
  assert.equal(cs()?.restartCount, 1);
  assert.equal(cs()?.ready, false);
  assert.deepEqual(cs()?.state, {
    waiting: {
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s restarting failed container=main pod=crash_lc(u-1)',
    },
  });
  assert.equal(cs()?.lastState?.terminated?.exitCode, 1);
  assert.equal(cs()?.lastState?.terminated?.containerID, 'svcnet://8');
  assert.equal(st.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(crashLoopMessage(p, 'main', 40_000).startsWith('back-off 40s '), true);
});

test('running again after a restart: running since the new start, lastState the old run', () => {
  const p = pod();
  const life = afterRestart(
    afterExit(firstRun(iso(T0), 7), 'Always', 137, 'exited', T0 + 100).life,
    iso(T0 + 150),
    9,
  );
  const st = lifecycleStatus(p, base(p), life, true);
  const cs = () => st.containerStatuses?.at(0);
  assert.deepEqual(cs()?.state, { running: { startedAt: iso(T0 + 150) } });
  assert.equal(cs()?.containerID, 'svcnet://9');
  assert.equal(cs()?.lastState?.terminated?.exitCode, 137);
  assert.equal(cs()?.ready, true);
  assert.equal(cs()?.started, true);
  // A startup probe that has not passed yet: not started, not ready.
  const early = lifecycleStatus(p, base(p), life, false).containerStatuses?.at(0);
  assert.deepEqual([early?.started, early?.ready], [false, false]);
});

test('phase: Never and OnFailure end the Pod Succeeded or Failed; Always keeps it Running', () => {
  const ended = (policy: 'Always' | 'OnFailure' | 'Never', code: number): string =>
    podPhase(afterExit(firstRun(iso(T0), 1), policy, code, 'exited', T0 + 1).life, policy);
  assert.equal(ended('Never', 0), 'Succeeded');
  assert.equal(ended('Never', 2), 'Failed');
  assert.equal(ended('OnFailure', 0), 'Succeeded');
  assert.equal(ended('OnFailure', 2), 'Running');
  assert.equal(ended('Always', 0), 'Running');
  const p = pod('Never');
  const life = afterExit(firstRun(iso(T0), 1), 'Never', 2, 'exited', T0 + 1).life;
  const st = lifecycleStatus(p, base(p), life, true);
  assert.equal(st.phase, 'Failed');
  assert.deepEqual(st.containerStatuses?.at(0)?.state?.terminated?.reason, 'Error');
  assert.equal(st.conditions?.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
});

test('probe counts: failureThreshold failures in a row fail, a success resets them', () => {
  const probe = { failureThreshold: 2 };
  let c = countResult(NO_RESULTS, false);
  assert.equal(probeFailed(c, probe), false);
  c = countResult(countResult(c, true), false);
  assert.equal(probeFailed(c, probe), false, 'the success reset the run');
  c = countResult(c, false);
  assert.equal(probeFailed(c, probe), true);
  assert.equal(probeFailed(countResult(NO_RESULTS, false), {}), false, 'default threshold 3');
  assert.equal(probeSucceeded(countResult(NO_RESULTS, true), {}), true);
});
