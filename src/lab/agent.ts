// The lab's node agent: the kubelet of a lab node. It watches the Pods bound to its node and,
// for each, creates the Pod's sandbox (network namespace + CNI ADD, resolv.conf and hosts),
// runs its init containers (init-containers.ts), starts the Pod's server (pod-servers.ts),
// runs its readiness probe (HTTP, TCP or exec), and reports status
// (phase, IPs, conditions, container statuses) to the API server. When a Pod is deleted it
// signals the server, honours the grace period while still probing readiness (so a Pod that
// turns unready while terminating stops serving), tears the sandbox down (CNI DEL) and makes
// the final delete, as the kubelet does. The effects are behind PodRuntime and
// PodStatusWriter, so the decisions are tested with Fakes.

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

export interface StartedPod {
  readonly ip: string;
  readonly startedAt: string;
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
  /** SIGTERM, wait up to graceSeconds for exit, then SIGKILL; then removes the sandbox. Idempotent. */
  stop(key: string, graceSeconds: number): Promise<void>;
  /** One readiness check (HTTP GET or TCP connect to its IP, or exec in it), true when it passed. */
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
  ready: boolean;
  successes: number;
  failures: number;
  prober?: TimerHandle;
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

/** Queue key of a Pod's readiness probes: apart from its sync queue, which a teardown holds. */
function probeKey(key: string): string {
  return `${key}\u0000probe`;
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
    podIPs: [started.ip],
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
    const probe = readinessProbeOf(pod);
    entry.ready = probe === undefined;
    this.log({ pod: key, ip: started.ip }, 'Pod started');
    await this.report(entry);
    if (probe) this.startProber(key, entry, probe);
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
      terminating: false,
      stopped: false,
    };
    this.local.set(key, entry);
    return entry;
  }

  private startProber(key: string, entry: LocalPod, probe: Probe): void {
    const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
    const startAt = this.clock.now() + Math.max(0, probe.initialDelaySeconds ?? 0) * 1000;
    const check = async (): Promise<void> => {
      // Like the kubelet, keep probing while the Pod terminates: a server that fails readiness
      // after SIGTERM must be reported unready (EndpointSlice serving=false) until it stops.
      if (this.clock.now() < startAt || entry.stopped || !entry.started) return;
      const ok = await this.opts.runtime
        .probe(entry.pod, entry.started.ip, probe)
        .catch(() => false);
      entry.successes = ok ? entry.successes + 1 : 0;
      entry.failures = ok ? 0 : entry.failures + 1;
      const becomesReady = !entry.ready && entry.successes >= (probe.successThreshold ?? 1);
      const becomesUnready = entry.ready && entry.failures >= (probe.failureThreshold ?? 3);
      // The Pod may have stopped while the probe ran: then nothing more is reported.
      if ((becomesReady || becomesUnready) && !isStopped(entry)) {
        entry.ready = becomesReady;
        this.log({ pod: key, ready: entry.ready }, 'Readiness changed');
        await this.report(entry);
      }
    };
    // The kubelet probes first after initialDelaySeconds, then every periodSeconds.
    if (startAt <= this.clock.now()) this.runSerial(probeKey(key), 'Probe failed', check);
    entry.prober = this.clock.setInterval(() => {
      this.runSerial(probeKey(key), 'Probe failed', check);
    }, period);
  }

  private async report(entry: LocalPod): Promise<void> {
    if (!entry.started) return;
    await this.opts.status.updateStatus(
      entry.pod,
      runningStatus(
        entry.pod,
        entry.started,
        this.opts.hostIP,
        entry.ready,
        new Date(this.clock.now()),
        entry.initStatuses,
      ),
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
    await this.opts.runtime.stop(key, graceSeconds);
    entry.stopped = true;
    this.clock.clearInterval(entry.prober);
    await this.queues.get(probeKey(key)); // a probe in flight reports before the final delete
    this.local.delete(key);
    this.log({ pod: key, graceSeconds }, 'Pod stopped');
    if (pod) await this.opts.status.finalizeDelete(pod);
  }

  /** Stops every Pod (agent shutdown). */
  async stopAll(): Promise<void> {
    for (const [key, entry] of [...this.local]) await this.teardown(key, entry, 0, undefined);
  }
}
