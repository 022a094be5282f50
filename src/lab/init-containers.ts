// Init containers, as the kubelet runs them: in order, each to completion, before the Pod's
// containers start; one that fails is run again after a back-off (10 s doubling to 5 min,
// the kubelet's container back-off) unless restartPolicy is Never, which fails the Pod. The
// Pod's status tells kubectl what it shows: phase Pending with Initialized=False while they
// run (`Init:1/2` for a running one, `Init:Error` after a failure, `Init:CrashLoopBackOff`
// while waiting to run it again from the second failure on), phase Failed after a failure
// under Never, and every init container terminated with reason Completed once the Pod runs.
// The statuses are pure; runInitContainers drives the runs through injected effects.

import type { Clock } from '../util/clock.js';
import type { Container, ContainerStatus, Pod, PodCondition } from '../kube/types.js';
import type { PodStatus } from '../kube/pod-status.js';
import type { ContainerRun } from './pod-exec.js';

/** The kubelet's container restart back-off: first delay and cap. */
export const INIT_BACKOFF_MS = 10_000;
export const MAX_INIT_BACKOFF_MS = 300_000;

/** The Pod was deleted (or moved) while its init containers ran: nothing more to do. */
export class InitAborted extends Error {
  constructor(key: string) {
    super(`pod ${key}: deleted while its init containers ran`);
    this.name = 'InitAborted';
  }
}

/** An init container failed under restartPolicy Never: the Pod has failed. */
export class InitFailed extends Error {
  readonly statuses: readonly ContainerStatus[];
  constructor(key: string, container: string, statuses: readonly ContainerStatus[]) {
    super(`pod ${key}: init container ${container} failed (restartPolicy Never)`);
    this.name = 'InitFailed';
    this.statuses = statuses;
  }
}

function waiting(c: Container, reason: string, message?: string): ContainerStatus {
  return {
    name: c.name,
    ready: false,
    restartCount: 0,
    ...(c.image === undefined ? {} : { image: c.image }),
    imageID: '',
    started: false,
    state: { waiting: { reason, ...(message === undefined ? {} : { message }) } },
  };
}

/** Init containers not yet run. */
export function pendingInitStatuses(pod: Pod): ContainerStatus[] {
  return (pod.spec?.initContainers ?? []).map((c) => waiting(c, 'PodInitializing'));
}

/** All init containers done (a running Pod's, or an adopted one's). */
export function completedInitStatuses(pod: Pod, at: string): ContainerStatus[] {
  return (pod.spec?.initContainers ?? []).map((c) => ({
    ...waiting(c, 'PodInitializing'),
    ready: true,
    state: {
      terminated: { exitCode: 0, reason: 'Completed', startedAt: at, finishedAt: at },
    },
  }));
}

/** The status of a Pod whose init containers have not all completed (Pending or Failed). */
export function initializingStatus(i: {
  readonly pod: Pod;
  readonly phase: 'Pending' | 'Failed';
  readonly ip: string | undefined;
  readonly hostIP: string;
  readonly startTime: string;
  readonly now: string;
  readonly initStatuses: readonly ContainerStatus[];
}): PodStatus {
  const cond = (type: string, ok: boolean, reason?: string): PodCondition => ({
    type,
    status: ok ? 'True' : 'False',
    ...(reason === undefined ? {} : { reason }),
    lastTransitionTime: i.now,
  });
  const sandbox = i.phase === 'Pending';
  return {
    phase: i.phase,
    conditions: [
      cond('PodReadyToStartContainers', sandbox),
      cond('Initialized', false, 'ContainersNotInitialized'),
      cond('Ready', false, 'ContainersNotReady'),
      cond('ContainersReady', false, 'ContainersNotReady'),
      cond('PodScheduled', true),
    ],
    ...(i.ip === undefined ? {} : { podIP: i.ip, podIPs: [{ ip: i.ip }] }),
    hostIP: i.hostIP,
    startTime: i.startTime,
    initContainerStatuses: [...i.initStatuses],
    containerStatuses: (i.pod.spec?.containers ?? []).map((c) => waiting(c, 'PodInitializing')),
  };
}

export interface InitEffects {
  /** Runs one init container to completion. */
  run(c: Container): Promise<ContainerRun>;
  /** Reports the init containers' statuses so far (phase Pending). */
  report(statuses: readonly ContainerStatus[]): Promise<void>;
  readonly clock: Clock;
  /** Aborted when the Pod is deleted: the run stops at the next step (InitAborted). */
  readonly signal: AbortSignal;
}

/** Whether the signal has aborted (read through a call: it changes across awaits). */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** Sleeps, or resolves early when the signal aborts. */
function sleepOrAbort(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(done, ms);
    function done(): void {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * Runs the Pod's init containers in order, each until it completes, reporting every change;
 * returns their final statuses (all Completed). Throws InitFailed (restartPolicy Never) or
 * InitAborted (the signal aborted).
 */
export async function runInitContainers(pod: Pod, fx: InitEffects): Promise<ContainerStatus[]> {
  const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
  const statuses = pendingInitStatuses(pod);
  const now = (): string => new Date(fx.clock.now()).toISOString();
  const containers = pod.spec?.initContainers ?? [];
  for (const [n, c] of containers.entries()) {
    for (let failures = 0; ;) {
      if (fx.signal.aborted) throw new InitAborted(key);
      const prev = statuses[n] ?? waiting(c, 'PodInitializing');
      const startedAt = now();
      statuses[n] = { ...prev, started: true, state: { running: { startedAt } } };
      await fx.report(statuses);
      const run = await fx.run(c);
      if (isAborted(fx.signal)) throw new InitAborted(key);
      const finishedAt = now();
      if (run.exitCode === 0) {
        statuses[n] = {
          ...prev,
          ready: true,
          started: false,
          state: { terminated: { exitCode: 0, reason: 'Completed', startedAt, finishedAt } },
        };
        break;
      }
      failures++;
      const terminated = {
        exitCode: run.exitCode ?? 1,
        reason: 'Error',
        ...(run.exitCode === undefined ? { message: run.output.trim().slice(0, 200) } : {}),
        startedAt,
        finishedAt,
      };
      statuses[n] = { ...prev, started: false, state: { terminated } };
      if ((pod.spec?.restartPolicy ?? 'Always') === 'Never')
        throw new InitFailed(key, c.name, statuses);
      await fx.report(statuses);
      const delay = Math.min(MAX_INIT_BACKOFF_MS, INIT_BACKOFF_MS * 2 ** (failures - 1));
      if (failures >= 2) {
        const message = `back-off ${String(delay / 1000)}s restarting failed container=${c.name} pod=${key}`;
        statuses[n] = {
          ...waiting(c, 'CrashLoopBackOff', message),
          restartCount: prev.restartCount,
          lastState: { terminated },
        };
        await fx.report(statuses);
      }
      await sleepOrAbort(fx.clock, delay, fx.signal);
      statuses[n] = {
        ...(statuses[n] ?? prev),
        restartCount: prev.restartCount + 1,
        lastState: { terminated },
      };
    }
  }
  return statuses;
}
