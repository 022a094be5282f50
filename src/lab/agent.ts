// The lab's node agent: the kubelet of a lab node. It watches the Pods bound to its node and,
// for each, creates the Pod's sandbox (network namespace + CNI ADD, resolv.conf and hosts),
// starts the Pod's server (pod-servers.ts), runs its readiness probe, and reports status
// (phase, IPs, conditions, container statuses) to the API server. When a Pod is deleted it
// signals the server, honours the grace period while still probing readiness (so a Pod that
// turns unready while terminating stops serving), tears the sandbox down (CNI DEL) and makes
// the final delete, as the kubelet does. The effects are behind PodRuntime and
// PodStatusWriter, so the decisions are tested with Fakes.

import type { Informer } from '../kube/informer.js';
import { runningPodStatus } from '../kube/pod-status.js';
import type { Pod, Probe } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';

export interface StartedPod {
  readonly ip: string;
  readonly startedAt: string;
}

/** The node-local effects: sandboxes and processes. */
export interface PodRuntime {
  /** Creates the sandbox and starts the Pod's server; resolves once it listens. */
  start(pod: Pod): Promise<StartedPod>;
  /** Takes over the Pod if an earlier agent left it running; undefined when it did not. */
  adopt?(pod: Pod): Promise<StartedPod | undefined>;
  /** SIGTERM, wait up to graceSeconds for exit, then SIGKILL; then removes the sandbox. Idempotent. */
  stop(key: string, graceSeconds: number): Promise<void>;
  /** One readiness check of the Pod (HTTP GET or TCP connect to its IP), true when it passed. */
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
): NonNullable<Pod['status']> {
  return runningPodStatus({
    containers: pod.spec?.containers ?? [],
    podIPs: [started.ip],
    hostIP,
    startTime: started.startedAt,
    now: now.toISOString(),
    ready,
    defaultImage: 'svcnet/netexec',
  });
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
      started = adopted ?? (await this.opts.runtime.start(pod));
    } catch (e) {
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
    this.attempts.delete(key);
    entry.started = started;
    const probe = readinessProbeOf(pod);
    entry.ready = probe === undefined;
    this.log({ pod: key, ip: started.ip }, 'Pod started');
    await this.report(entry);
    if (probe) this.startProber(key, entry, probe);
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
