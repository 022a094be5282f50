// The kubelet's container lifecycle for a lab Pod's main containers, as pure decisions: what
// to do when the container's process exits (restart per restartPolicy, at once the first time,
// then after the kubelet's CrashLoopBackOff: keeper.ts's 10 s doubling to 5 min, forgotten
// after 10 min of running), what a liveness or startup probe's result means (kill the
// container after failureThreshold failures in a row), and the status the kubelet reports
// from all that: `state` (running, waiting CrashLoopBackOff with the kubelet's message, or
// terminated), `lastState.terminated` of the previous run, `restartCount`, `started`, and
// the Pod's phase (Running; Succeeded or Failed once a container that will not be restarted
// has ended). The lab runs one container run per Pod (pod-servers.ts: a process, or a run in
// the node's pod host), so every container of a Pod shares that run's lifecycle and each
// reports it. A run's containerID is
// `svcnet://<pid>` (the pid in the lab's PID namespace), so a test can signal it; a netexec
// container the node's pod host serves (pod-host.ts) is `svcnet://<host pid>/<sandbox>.<run>`,
// no process of its own to signal. The agent
// (agent.ts) drives these with its clock and the PodRuntime.

import type {
  Container,
  ContainerStateTerminated,
  ContainerStatus,
  Pod,
  Probe,
} from '../kube/types.js';
import type { PodStatus } from '../kube/pod-status.js';
import { BACKOFF_RESET_MS, restartDelay } from './keeper.js';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export function restartPolicyOf(pod: Pod): RestartPolicy {
  const p = pod.spec?.restartPolicy;
  return p === 'OnFailure' || p === 'Never' ? p : 'Always';
}

/** Why a run ended: on its own, or killed by the agent after a liveness or startup failure. */
export type ExitCause = 'exited' | 'liveness' | 'startup';

/**
 * Whether the kubelet starts the container again: Always does; OnFailure after a non-zero
 * exit or a kill for a failed probe; Never never.
 */
export function shouldRestart(policy: RestartPolicy, exitCode: number, cause: ExitCause): boolean {
  if (policy === 'Never') return false;
  return policy === 'Always' || exitCode !== 0 || cause !== 'exited';
}

/** The reason a runtime gives a terminated container (137 after SIGKILL is an Error). */
export function terminatedReason(exitCode: number): 'Completed' | 'Error' {
  return exitCode === 0 ? 'Completed' : 'Error';
}

/** The kubelet's CrashLoopBackOff message: pod as name_namespace(uid). */
export function crashLoopMessage(pod: Pod, container: string, delayMs: number): string {
  const m = pod.metadata;
  const who = `${m?.name ?? ''}_${m?.namespace ?? 'default'}(${m?.uid ?? ''})`;
  return `back-off ${String(delayMs / 1000)}s restarting failed container=${container} pod=${who}`;
}

/** The lifecycle of a Pod's container process across its runs. */
export interface Lifecycle {
  readonly restartCount: number;
  /** Exits in a row without a run of BACKOFF_RESET_MS between them (the back-off step). */
  readonly failures: number;
  readonly current:
    | { readonly kind: 'running'; readonly startedAt: string; readonly containerID: string }
    | { readonly kind: 'waiting'; readonly delayMs: number }
    | { readonly kind: 'terminated' };
  /** The last run that ended (lastState, or state while terminated). */
  readonly last?: ContainerStateTerminated & { containerID?: string };
}

/** A run's containerID: `svcnet://PID` for a process of its own, else the runtime's own ID. */
export function containerID(run: number | string | undefined): string {
  if (typeof run === 'string') return run;
  return run === undefined ? '' : `svcnet://${String(run)}`;
}

/** The first run. */
export function firstRun(startedAt: string, pid: number | string | undefined): Lifecycle {
  return {
    restartCount: 0,
    failures: 0,
    current: { kind: 'running', startedAt, containerID: containerID(pid) },
  };
}

export interface ExitDecision {
  readonly life: Lifecycle;
  /** Milliseconds until the restart; undefined when the container stays terminated. */
  readonly restartInMs: number | undefined;
}

/** The run ended with `exitCode` at `now` (epoch ms). */
export function afterExit(
  life: Lifecycle,
  policy: RestartPolicy,
  exitCode: number,
  cause: ExitCause,
  now: number,
): ExitDecision {
  const run = life.current.kind === 'running' ? life.current : undefined;
  const finishedAt = new Date(now).toISOString();
  const last = {
    exitCode,
    reason: terminatedReason(exitCode),
    startedAt: run?.startedAt ?? finishedAt,
    finishedAt,
    ...(run?.containerID ? { containerID: run.containerID } : {}),
  };
  if (!shouldRestart(policy, exitCode, cause))
    return { life: { ...life, current: { kind: 'terminated' }, last }, restartInMs: undefined };
  const ranFor = run === undefined ? 0 : now - Date.parse(run.startedAt);
  const failures = ranFor >= BACKOFF_RESET_MS ? 0 : life.failures;
  const delayMs = restartDelay(failures);
  return {
    life: {
      ...life,
      failures: failures + 1,
      current: delayMs === 0 ? { kind: 'terminated' } : { kind: 'waiting', delayMs },
      last,
    },
    restartInMs: delayMs,
  };
}

/** The container runs again. */
export function afterRestart(
  life: Lifecycle,
  startedAt: string,
  pid: number | string | undefined,
): Lifecycle {
  return {
    ...life,
    restartCount: life.restartCount + 1,
    current: { kind: 'running', startedAt, containerID: containerID(pid) },
  };
}

/** The Pod's phase as the kubelet computes it for its one (shared) container process. */
export function podPhase(
  life: Lifecycle,
  policy: RestartPolicy,
): 'Running' | 'Succeeded' | 'Failed' {
  if (life.current.kind !== 'terminated') return 'Running';
  const code = life.last?.exitCode ?? 0;
  if (shouldRestart(policy, code, 'exited')) return 'Running'; // a restart is due at once
  return code === 0 ? 'Succeeded' : 'Failed';
}

/** The Pod's status for its lifecycle, from the status of a running Pod (`base`). */
export function lifecycleStatus(
  pod: Pod,
  base: PodStatus,
  life: Lifecycle,
  started: boolean,
): PodStatus {
  const phase = podPhase(life, restartPolicyOf(pod));
  const terminal = phase !== 'Running';
  const { containerID: lastID, ...lastTerminated } = life.last ?? { exitCode: 0 };
  const lastState =
    life.last === undefined
      ? {}
      : { terminated: { ...lastTerminated, ...(lastID ? { containerID: lastID } : {}) } };
  const status = (c: Container, prev: ContainerStatus | undefined): ContainerStatus => {
    const common: ContainerStatus = {
      name: c.name,
      ready: false,
      restartCount: life.restartCount,
      ...(prev?.image === undefined ? {} : { image: prev.image }),
      imageID: prev?.imageID ?? '',
      started: false,
    };
    const cur = life.current;
    if (cur.kind === 'running')
      return {
        ...common,
        ready: started && (prev?.ready ?? false),
        started,
        state: { running: { startedAt: cur.startedAt } },
        lastState,
        ...(cur.containerID ? { containerID: cur.containerID } : {}),
      };
    if (cur.kind === 'waiting') {
      const message = crashLoopMessage(pod, c.name, cur.delayMs);
      return { ...common, state: { waiting: { reason: 'CrashLoopBackOff', message } }, lastState };
    }
    // Ended (for good, or restarting at once): the run before it is not kept.
    return {
      ...common,
      state: { terminated: lastTerminated },
      ...(lastID ? { containerID: lastID } : {}),
    };
  };
  const containers = pod.spec?.containers ?? [];
  const prevs = base.containerStatuses ?? [];
  const containerStatuses = containers.map((c, i) => status(c, prevs[i]));
  const ready = containerStatuses.every((s) => s.ready);
  return {
    ...base,
    phase,
    conditions: (base.conditions ?? []).map((cond) =>
      cond.type === 'Ready' || cond.type === 'ContainersReady'
        ? {
            ...cond,
            status: ready ? 'True' : 'False',
            ...(ready ? {} : { reason: terminal ? 'PodCompleted' : 'ContainersNotReady' }),
          }
        : cond,
    ),
    containerStatuses,
  };
}

/** A probe's run of results: consecutive successes and failures. */
export interface ProbeCounts {
  readonly successes: number;
  readonly failures: number;
}

export const NO_RESULTS: ProbeCounts = { successes: 0, failures: 0 };

export function countResult(counts: ProbeCounts, ok: boolean): ProbeCounts {
  return ok
    ? { successes: counts.successes + 1, failures: 0 }
    : { successes: 0, failures: counts.failures + 1 };
}

/** A liveness or startup probe has failed failureThreshold (default 3) times in a row. */
export function probeFailed(counts: ProbeCounts, probe: Probe): boolean {
  return counts.failures >= Math.max(1, probe.failureThreshold ?? 3);
}

/** A startup probe has passed (its successThreshold must be 1, as the API server requires). */
export function probeSucceeded(counts: ProbeCounts, probe: Probe): boolean {
  return counts.successes >= Math.max(1, probe.successThreshold ?? 1);
}
