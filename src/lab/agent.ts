// The lab's node agent: the kubelet of a lab node. It watches the Pods bound to its node and,
// for each, creates the Pod's sandbox (network namespace + CNI ADD, resolv.conf and hosts),
// runs its init containers (init-containers.ts), starts the Pod's container process
// (pod-servers.ts), probes it (startup, liveness and readiness; HTTP, TCP or exec), and
// reports status (phase, IPs, conditions, container statuses) to the API server. A container
// process that exits, on its own or killed after a failed liveness or startup probe, is
// restarted per restartPolicy with the kubelet's back-off and reported as the kubelet does
// (CrashLoopBackOff, restartCount, lastState; the decisions are container-lifecycle.ts's).
// When a Pod is deleted it signals the process, honours the grace period while still probing
// readiness (so a Pod that turns unready while terminating stops serving), tears the sandbox
// down (CNI DEL) and makes the final delete, as the kubelet does. The effects are behind
// PodRuntime and PodStatusWriter, so the decisions are tested with Fakes. Left out: an agent
// that restarts adopts its Pods' processes but not their restart counts, and cannot learn an
// adopted process's exit code (it is reported as 0).

import type { Informer } from '../kube/informer.js';
import { runningPodStatus } from '../kube/pod-status.js';
import type { Container, ContainerStatus, Pod, Probe } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import {
  InitAborted,
  InitFailed,
  completedInitStatuses,
  initializingStatus,
  runInitContainers,
} from './init-containers.js';
import type { ContainerRun } from './pod-exec.js';
import {
  NO_RESULTS,
  afterExit,
  afterRestart,
  countResult,
  firstRun,
  lifecycleStatus,
  probeFailed,
  probeSucceeded,
  restartPolicyOf,
  type ExitCause,
  type Lifecycle,
  type ProbeCounts,
} from './container-lifecycle.js';

export interface StartedPod {
  readonly ip: string;
  /** Dual-stack: every Pod IP, IPv4 first (status.podIPs); absent: [ip]. */
  readonly ips?: readonly string[];
  readonly startedAt: string;
  /** The container process (in the lab's PID namespace): its containerID is svcnet://PID. */
  readonly pid?: number;
  /** The containerID when the run is not a process of its own (a pod host's container). */
  readonly containerID?: string;
  /** Resolves with the process's exit code (128+N after signal N) when it ends. */
  readonly exited?: Promise<number>;
}

/** The node-local effects: sandboxes and processes. */
export interface PodRuntime {
  /**
   * Creates the sandbox, awaits `beforeServer(ip)` (the init containers), then starts the
   * Pod's server; resolves once it listens. A failure removes the sandbox.
   */
  start(pod: Pod, beforeServer?: (ip: string) => Promise<void>): Promise<StartedPod>;
  /** Runs one init container of the Pod to completion in its sandbox. */
  runInit?(pod: Pod, container: Container): Promise<ContainerRun>;
  /** Takes over the Pod if an earlier agent left it running; undefined when it did not. */
  adopt?(pod: Pod): Promise<StartedPod | undefined>;
  /** Starts the Pod's container process again in its sandbox (after it exited). */
  restartContainer?(pod: Pod): Promise<StartedPod>;
  /** SIGTERM, then SIGKILL after graceSeconds, to the container process; the sandbox stays. */
  killContainer?(key: string, graceSeconds: number): Promise<void>;
  /** SIGTERM, wait up to graceSeconds for exit, then SIGKILL; then removes the sandbox. Idempotent. */
  stop(key: string, graceSeconds: number): Promise<void>;
  /** One probe (HTTP GET or TCP connect to its IP, or exec in it), true when it passed. */
  probe(pod: Pod, ip: string, probe: Probe): Promise<boolean>;
}

/** The API writes the kubelet makes. */
export interface PodStatusWriter {
  updateStatus(pod: Pod, status: NonNullable<Pod['status']>): Promise<void>;
  /** The kubelet's final delete (grace period 0, uid precondition). NotFound is success. */
  finalizeDelete(pod: Pod): Promise<void>;
}

interface LocalPod {
  pod: Pod;
  started?: StartedPod;
  /** The readiness probe's verdict (true without one); Ready also needs the startup probe. */
  ready: boolean;
  successes: number;
  failures: number;
  /** The current run's probe timers (startup, liveness, readiness). */
  probers: TimerHandle[];
  /** The container process's runs, restarts and exits (container-lifecycle.ts). */
  life?: Lifecycle;
  /** Which run the watchers belong to: bumped at every (re)start. */
  run: number;
  /** The startup probe passed (or there is none): liveness and readiness run. */
  startupDone: boolean;
  startupCounts?: ProbeCounts;
  livenessCounts?: ProbeCounts;
  /** Set while the agent kills the container after a failed liveness or startup probe. */
  killCause?: ExitCause;
  restartTimer?: TimerHandle;
  terminating: boolean;
  /** Set once the Pod's server is stopped: no more probes or status writes. */
  stopped: boolean;
  /** The init containers' statuses, once they have all completed. */
  initStatuses?: ContainerStatus[];
  /** Aborts the init containers' run when the Pod is deleted meanwhile. */
  initAbort?: AbortController;
  /** An init container failed under restartPolicy Never: the Pod is Failed, nothing runs. */
  failed?: boolean;
}

/** Whether the Pod's server has stopped (read through a call: it changes across awaits). */
function isStopped(entry: LocalPod): boolean {
  return entry.stopped;
}

type ProbeKind = 'startup' | 'liveness' | 'readiness';
const PROBE_KINDS: readonly ProbeKind[] = ['startup', 'liveness', 'readiness'];

/** Queue key of a Pod's probes of one kind: apart from its sync queue, which a teardown holds. */
function probeKey(key: string, kind: ProbeKind): string {
  return `${key}\u0000${kind}`;
}

export interface AgentOptions {
  readonly nodeName: string;
  readonly hostIP: string;
  readonly pods: Informer<Pod>;
  readonly runtime: PodRuntime;
  readonly status: PodStatusWriter;
  readonly clock?: Clock;
  readonly log?: (fields: Record<string, unknown>, msg: string) => void;
}

/** Readiness of a Pod: its first container's readinessProbe, if any. */
export function readinessProbeOf(pod: Pod): Probe | undefined {
  return pod.spec?.containers.find((c) => c.readinessProbe !== undefined)?.readinessProbe;
}

/** A Pod's probe of a kind: its first container's that has one (they share one process). */
export function probeOf(pod: Pod, kind: ProbeKind): Probe | undefined {
  for (const c of pod.spec?.containers ?? []) {
    const p =
      kind === 'startup'
        ? c.startupProbe
        : kind === 'liveness'
          ? c.livenessProbe
          : c.readinessProbe;
    if (p !== undefined) return p;
  }
  return undefined;
}

/** The status a kubelet reports for a running Pod. */
export function runningStatus(
  pod: Pod,
  started: StartedPod,
  hostIP: string,
  ready: boolean,
  now: Date,
  initStatuses?: readonly ContainerStatus[],
): NonNullable<Pod['status']> {
  const status = runningPodStatus({
    containers: pod.spec?.containers ?? [],
    podIPs: [...(started.ips ?? [started.ip])],
    hostIP,
    startTime: started.startedAt,
    now: now.toISOString(),
    ready,
    defaultImage: 'svcnet/netexec',
  });
  return initStatuses === undefined || initStatuses.length === 0
    ? status
    : { ...status, initContainerStatuses: [...initStatuses] };
}

/** First retry of a Pod whose start failed, doubling up to MAX_RETRY_MS. */
export const RETRY_MS = 1000;
export const MAX_RETRY_MS = 30_000;

export class NodeAgent {
  private readonly local = new Map<string, LocalPod>();
  /** Failed start attempts per Pod, for the retry back-off. */
  private readonly attempts = new Map<string, number>();
  /** Per-Pod chain of pending work, so one Pod's steps never interleave. */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly clock: Clock;
  private readonly log: (fields: Record<string, unknown>, msg: string) => void;
  private readonly opts: AgentOptions;
  errors = 0;

  constructor(opts: AgentOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ?? (() => undefined);
    opts.pods.addHandlers({
      onAdd: (p) => {
        this.enqueue(objectKey(p));
      },
      onUpdate: (_o, p) => {
        this.enqueue(objectKey(p));
      },
      onDelete: (p) => {
        this.enqueue(objectKey(p));
      },
    });
  }

  /** Resolves when all queued work has finished (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.queues.size > 0) await Promise.all([...this.queues.values()]);
  }

  private enqueue(key: string): void {
    // A Pod deleted while its init containers run stops them (its sync waits behind them).
    const entry = this.local.get(key);
    const pod = this.opts.pods.get(key);
    if (
      entry?.initAbort !== undefined &&
      (pod === undefined ||
        pod.metadata?.deletionTimestamp !== undefined ||
        pod.spec?.nodeName !== this.opts.nodeName)
    )
      entry.initAbort.abort();
    this.runSerial(key, 'Pod sync failed', () => this.sync(key));
  }

  /** Runs `work` after the Pod's pending work; failures are logged and counted. */
  private runSerial(key: string, failure: string, work: () => Promise<void>): void {
    const prev = this.queues.get(key) ?? Promise.resolve();
    const next: Promise<void> = prev
      .then(work)
      .catch((e: unknown) => {
        this.errors++;
        this.log({ pod: key, err: e instanceof Error ? e.message : String(e) }, failure);
      })
      .finally(() => {
        if (this.queues.get(key) === next) this.queues.delete(key);
      });
    this.queues.set(key, next);
  }

  private async sync(key: string): Promise<void> {
    const pod = this.opts.pods.get(key);
    const local = this.local.get(key);
    const mine = pod?.spec?.nodeName === this.opts.nodeName;
    if (pod === undefined || !mine) {
      if (local) await this.teardown(key, local, 0, undefined);
      return;
    }
    if (pod.metadata?.deletionTimestamp !== undefined) {
      const grace =
        pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      if (local && !local.terminating) await this.teardown(key, local, grace, pod);
      else if (!local) {
        // Deleted while no agent was watching: stop what an earlier agent left running first.
        const adopted = await this.opts.runtime.adopt?.(pod);
        if (adopted) {
          const entry = this.track(key, pod);
          entry.started = adopted;
          await this.teardown(key, entry, grace, pod);
        } else await this.opts.status.finalizeDelete(pod);
      }
      return;
    }
    if (local) {
      local.pod = pod;
      return;
    }
    const entry = this.track(key, pod);
    let started: StartedPod;
    try {
      const adopted = await this.opts.runtime.adopt?.(pod);
      if (adopted) this.log({ pod: key, ip: adopted.ip }, 'Pod adopted');
      // An adopted Pod's init containers completed under the earlier agent.
      if (adopted) entry.initStatuses = completedInitStatuses(pod, adopted.startedAt);
      started = adopted ?? (await this.opts.runtime.start(pod, this.initRunner(key, entry)));
    } catch (e) {
      delete entry.initAbort;
      if (e instanceof InitAborted) {
        this.local.delete(key); // the queued sync of the deletion finishes it
        return;
      }
      if (e instanceof InitFailed) {
        entry.failed = true;
        this.log({ pod: key, err: e.message }, 'Pod failed');
        await this.opts.status.updateStatus(
          pod,
          initializingStatus({
            pod,
            phase: 'Failed',
            ip: undefined,
            hostIP: this.opts.hostIP,
            startTime: new Date(this.clock.now()).toISOString(),
            now: new Date(this.clock.now()).toISOString(),
            initStatuses: e.statuses,
          }),
        );
        return;
      }
      // Like the kubelet's sandbox back-off: forget the attempt and try again later.
      this.local.delete(key);
      const attempt = (this.attempts.get(key) ?? 0) + 1;
      this.attempts.set(key, attempt);
      const delay = Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** (attempt - 1));
      this.clock.setTimeout(() => {
        this.enqueue(key);
      }, delay);
      throw e;
    }
    delete entry.initAbort;
    this.attempts.delete(key);
    entry.started = started;
    entry.life = firstRun(started.startedAt, started.containerID ?? started.pid);
    this.log({ pod: key, ip: started.ip }, 'Pod started');
    await this.beginRun(key, entry, started);
  }

  /** A run of the container has started: watch its exit, probe it, report it. */
  private async beginRun(key: string, entry: LocalPod, started: StartedPod): Promise<void> {
    const run = ++entry.run;
    entry.startupDone = probeOf(entry.pod, 'startup') === undefined;
    entry.ready = probeOf(entry.pod, 'readiness') === undefined;
    entry.successes = 0;
    entry.failures = 0;
    delete entry.killCause;
    void started.exited?.then((code) => {
      this.runSerial(key, 'Container exit failed', () => this.onExit(key, entry, run, code));
    });
    await this.report(entry);
    if (entry.run !== run || isStopped(entry)) return;
    for (const kind of PROBE_KINDS) {
      const probe = probeOf(entry.pod, kind);
      if (probe) this.startProber(key, entry, run, kind, probe);
    }
  }

  /** The container's process ended: decide, report, and restart it per restartPolicy. */
  private async onExit(key: string, entry: LocalPod, run: number, code: number): Promise<void> {
    if (entry.terminating || entry.stopped || entry.run !== run || entry.life === undefined) return;
    this.stopProbers(entry);
    const cause = entry.killCause ?? 'exited';
    delete entry.killCause;
    const policy = restartPolicyOf(entry.pod);
    const d = afterExit(entry.life, policy, code, cause, this.clock.now());
    entry.life = d.life;
    entry.ready = false;
    this.log(
      {
        pod: key,
        exitCode: code,
        cause,
        restartInMs: d.restartInMs,
        restarts: d.life.restartCount,
      },
      'Container exited',
    );
    await this.report(entry);
    if (d.restartInMs === undefined) return;
    const restart = (): void => {
      this.runSerial(key, 'Container restart failed', () => this.restartRun(key, entry, run));
    };
    if (d.restartInMs === 0) {
      restart(); // the first restart is at once
      return;
    }
    entry.restartTimer = this.clock.setTimeout(() => {
      delete entry.restartTimer;
      restart();
    }, d.restartInMs);
  }

  private async restartRun(key: string, entry: LocalPod, run: number): Promise<void> {
    const restart = this.opts.runtime.restartContainer?.bind(this.opts.runtime);
    if (entry.terminating || entry.stopped || entry.run !== run || restart === undefined) return;
    if (entry.life === undefined || entry.started === undefined) return;
    let again: StartedPod;
    try {
      again = await restart(entry.pod);
    } catch (e) {
      // Like a container that could not be created: counted as a failed run, backed off.
      this.log({ pod: key, err: e instanceof Error ? e.message : String(e) }, 'Restart failed');
      await this.onExit(key, entry, run, 128);
      return;
    }
    entry.life = afterRestart(entry.life, again.startedAt, again.containerID ?? again.pid);
    // The Pod keeps its IP and startTime; the run is new.
    entry.started = { ...entry.started, ...(again.pid === undefined ? {} : { pid: again.pid }) };
    this.log(
      { pod: key, restarts: entry.life.restartCount, pid: again.pid },
      'Container restarted',
    );
    await this.beginRun(key, entry, again);
  }

  /** The hook that runs the Pod's init containers in its new sandbox (undefined: none). */
  private initRunner(key: string, entry: LocalPod): ((ip: string) => Promise<void>) | undefined {
    const containers = entry.pod.spec?.initContainers ?? [];
    const run = this.opts.runtime.runInit?.bind(this.opts.runtime);
    if (containers.length === 0 || run === undefined) return undefined;
    const abort = new AbortController();
    entry.initAbort = abort;
    return async (ip) => {
      const startTime = new Date(this.clock.now()).toISOString();
      entry.initStatuses = await runInitContainers(entry.pod, {
        run: (c) => run(entry.pod, c),
        report: (statuses) => {
          this.log({ pod: key, init: statuses.map((s) => s.state) }, 'Init containers');
          return this.opts.status.updateStatus(
            entry.pod,
            initializingStatus({
              pod: entry.pod,
              phase: 'Pending',
              ip,
              hostIP: this.opts.hostIP,
              startTime,
              now: new Date(this.clock.now()).toISOString(),
              initStatuses: statuses,
            }),
          );
        },
        clock: this.clock,
        signal: abort.signal,
      });
    };
  }

  /** A fresh local record of the Pod, before anything runs. */
  private track(key: string, pod: Pod): LocalPod {
    const entry: LocalPod = {
      pod,
      ready: false,
      successes: 0,
      failures: 0,
      probers: [],
      run: 0,
      startupDone: true,
      terminating: false,
      stopped: false,
    };
    this.local.set(key, entry);
    return entry;
  }

  /**
   * Probes the run every periodSeconds from initialDelaySeconds after its start, as the
   * kubelet's probe workers (one queue per kind, so a slow probe holds back only its kind).
   */
  private startProber(
    key: string,
    entry: LocalPod,
    run: number,
    kind: ProbeKind,
    probe: Probe,
  ): void {
    const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
    const startAt = this.clock.now() + Math.max(0, probe.initialDelaySeconds ?? 0) * 1000;
    const check = async (): Promise<void> => {
      // Like the kubelet, keep probing readiness while the Pod terminates: a server that fails
      // it after SIGTERM must be reported unready (EndpointSlice serving=false) until it stops.
      if (this.clock.now() < startAt || entry.stopped || !entry.started || entry.run !== run)
        return;
      if (kind === 'startup' ? entry.startupDone : !entry.startupDone) return;
      if (kind !== 'readiness' && (entry.terminating || entry.killCause !== undefined)) return;
      const ok = await this.opts.runtime
        .probe(entry.pod, entry.started.ip, probe)
        .catch(() => false);
      // The Pod may have stopped, or the run ended, while the probe ran: then nothing more.
      if (isStopped(entry) || !this.isRun(entry, run)) return;
      if (kind === 'readiness') await this.readinessResult(key, entry, probe, ok);
      else await this.lifeProbeResult(key, entry, kind, probe, ok);
    };
    const tick = (): void => {
      this.runSerial(probeKey(key, kind), 'Probe failed', check);
    };
    // The kubelet probes first after initialDelaySeconds, then every periodSeconds.
    if (startAt <= this.clock.now()) tick();
    entry.probers.push(this.clock.setInterval(tick, period));
  }

  /** Read through a call: the run changes across awaits. */
  private isRun(entry: LocalPod, run: number): boolean {
    return entry.run === run;
  }

  private async readinessResult(
    key: string,
    entry: LocalPod,
    probe: Probe,
    ok: boolean,
  ): Promise<void> {
    const counts = countResult(entry, ok);
    entry.successes = counts.successes;
    entry.failures = counts.failures;
    const becomesReady = !entry.ready && entry.successes >= (probe.successThreshold ?? 1);
    const becomesUnready = entry.ready && entry.failures >= (probe.failureThreshold ?? 3);
    if (becomesReady || becomesUnready) {
      entry.ready = becomesReady;
      this.log({ pod: key, ready: entry.ready }, 'Readiness changed');
      await this.report(entry);
    }
  }

  /** Liveness and startup: failureThreshold failures in a row kill the container. */
  private async lifeProbeResult(
    key: string,
    entry: LocalPod,
    kind: 'startup' | 'liveness',
    probe: Probe,
    ok: boolean,
  ): Promise<void> {
    const prev = kind === 'startup' ? entry.startupCounts : entry.livenessCounts;
    const counts = countResult(prev ?? NO_RESULTS, ok);
    if (kind === 'startup') entry.startupCounts = counts;
    else entry.livenessCounts = counts;
    if (kind === 'startup' && probeSucceeded(counts, probe)) {
      entry.startupDone = true;
      this.log({ pod: key }, 'Startup probe succeeded');
      await this.report(entry);
      return;
    }
    if (!probeFailed(counts, probe)) return;
    const grace =
      probe.terminationGracePeriodSeconds ?? entry.pod.spec?.terminationGracePeriodSeconds ?? 30;
    entry.killCause = kind;
    this.log({ pod: key, probe: kind, failures: counts.failures, grace }, 'Probe failed: killing');
    await this.opts.runtime.killContainer?.(objectKey(entry.pod), grace);
  }

  private stopProbers(entry: LocalPod): void {
    for (const t of entry.probers) this.clock.clearInterval(t);
    entry.probers = [];
    entry.startupCounts = NO_RESULTS;
    entry.livenessCounts = NO_RESULTS;
  }

  private async report(entry: LocalPod): Promise<void> {
    if (!entry.started) return;
    const base = runningStatus(
      entry.pod,
      entry.started,
      this.opts.hostIP,
      entry.ready && entry.startupDone,
      new Date(this.clock.now()),
      entry.initStatuses,
    );
    await this.opts.status.updateStatus(
      entry.pod,
      entry.life === undefined
        ? base
        : lifecycleStatus(entry.pod, base, entry.life, entry.startupDone),
    );
  }

  private async teardown(
    key: string,
    entry: LocalPod,
    graceSeconds: number,
    pod: Pod | undefined,
  ): Promise<void> {
    entry.terminating = true;
    if (pod) entry.pod = pod;
    this.clock.clearTimeout(entry.restartTimer);
    await this.opts.runtime.stop(key, graceSeconds);
    entry.stopped = true;
    this.stopProbers(entry);
    // A probe in flight reports before the final delete.
    await Promise.all(
      PROBE_KINDS.map((k) => this.queues.get(probeKey(key, k)) ?? Promise.resolve()),
    );
    this.local.delete(key);
    this.log({ pod: key, graceSeconds }, 'Pod stopped');
    if (pod) await this.opts.status.finalizeDelete(pod);
  }

  /** Stops every Pod (agent shutdown). */
  async stopAll(): Promise<void> {
    for (const [key, entry] of [...this.local]) await this.teardown(key, entry, 0, undefined);
  }
}
