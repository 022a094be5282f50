// Keeps the lab's components running once the lab is up, as the kubelet keeps a DaemonSet's or
// a static Pod's containers running (restartPolicy Always): a component that exits on its own
// (a crash, or a proxy that exits because its --config changed, as kube-proxy does) is started
// again, at once the first time and then after the kubelet's CrashLoopBackOff: 10 s doubling
// up to 5 min; a component that then runs for 10 min has its back-off forgotten. This holds for
// every component, the API server included, as the kubelet keeps a control plane's static Pods
// running. `restart` is `svcnet lab restart NAME`: a stop it asked for is not a crash. `stop`
// ends everything for the teardown; nothing restarts after. Each component's state (running,
// restarting, backoff), pid and restart count is reported through `onChange` for `lab status`.
// It starts and stops through injected functions (run-components.ts in the supervisor), so the
// policy is tested with a FakeClock and fake processes.

import type { Clock, TimerHandle } from '../util/clock.js';
import type { ComponentSpec } from './components.js';
import type { RunningComponent } from './run-components.js';

export interface KeeperDeps {
  /** Starts one component and waits for its readiness signal (throws when it fails to start). */
  readonly start: (spec: ComponentSpec) => Promise<RunningComponent>;
  /** Stops the given components (SIGTERM, then SIGKILL). */
  readonly stop: (running: readonly RunningComponent[]) => Promise<void>;
  readonly clock: Clock;
  readonly log: (msg: string) => void;
  /** Called after every change of a component's state (see status()). */
  readonly onChange?: () => void;
}

/** The kubelet's CrashLoopBackOff: 10 s doubling up to 5 min (pkg/kubelet, backOffPeriod). */
const FIRST_BACKOFF_MS = 10_000;
const MAX_BACKOFF_MS = 5 * 60_000;
/** Running this long counts as healthy again (twice the cap, as the kubelet): the next exit restarts at once. */
export const BACKOFF_RESET_MS = 10 * 60_000;

/**
 * What a component is doing: its process runs; a start is under way (or due at once); it
 * waits out its back-off before the next start.
 */
export type ComponentState = 'running' | 'restarting' | 'backoff';

export interface ComponentStatus {
  readonly name: string;
  readonly state: ComponentState;
  /** The running process (in the lab sandbox's PID namespace); absent unless running. */
  readonly pid?: number;
  /** Restarts after exits on its own (not `lab restart`). */
  readonly restarts: number;
  /** With backoff: when the next start is due (epoch ms of the keeper's clock). */
  readonly nextStartAt?: number;
  /** Why it last exited or failed to start, if it did. */
  readonly lastExit?: string;
}

/** The wait before restart number `failures + 1` in a row: 0, then 10 s doubling up to 5 min. */
export function restartDelay(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), MAX_BACKOFF_MS);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

interface Entry {
  readonly spec: ComponentSpec;
  current: RunningComponent | undefined;
  startedAt: number;
  /** Exits in a row without a healthy run between them. */
  failures: number;
  restarts: number;
  timer: TimerHandle | undefined;
  /** When the pending timer fires (with `timer`). */
  dueAt: number;
  lastExit: string | undefined;
}

export class ComponentKeeper {
  private readonly entries = new Map<string, Entry>();
  /** Restarts under way (stop() waits for them, then stops what they started). */
  private readonly starting = new Set<Promise<void>>();
  private closed = false;
  /** False while the constructor runs: onChange is for changes after it. */
  private notifying = false;

  private readonly deps: KeeperDeps;

  /** Watches `running` (started from `specs` by the caller); `specs` names what can restart. */
  constructor(
    specs: readonly ComponentSpec[],
    running: readonly RunningComponent[],
    deps: KeeperDeps,
  ) {
    this.deps = deps;
    const now = deps.clock.now();
    for (const spec of specs)
      this.entries.set(spec.name, {
        spec,
        current: undefined,
        startedAt: now,
        failures: 0,
        restarts: 0,
        timer: undefined,
        dueAt: now,
        lastExit: undefined,
      });
    for (const c of running) {
      const e = this.entries.get(c.spec.name);
      if (e) this.watch(e, c);
    }
    this.notifying = true;
  }

  /** How often `name` was restarted after exiting on its own. */
  restarts(name: string): number {
    return this.entries.get(name)?.restarts ?? 0;
  }

  /** Every component's state, in the order of the specs. */
  status(): ComponentStatus[] {
    const now = this.deps.clock.now();
    return [...this.entries.values()].map((e): ComponentStatus => {
      const base = {
        name: e.spec.name,
        restarts: e.restarts,
        ...(e.lastExit !== undefined ? { lastExit: e.lastExit } : {}),
      };
      if (e.current) return { ...base, state: 'running', pid: e.current.proc.pid };
      if (e.timer !== undefined && e.dueAt > now)
        return { ...base, state: 'backoff', nextStartAt: e.dueAt };
      return { ...base, state: 'restarting' };
    });
  }

  /** The running process of `name`, if any. */
  running(name: string): RunningComponent | undefined {
    return this.entries.get(name)?.current;
  }

  /**
   * Stops `name` (if running) and starts it again now, forgetting its back-off; resolves with
   * the new pid, or undefined for an unknown name. A failed start rejects.
   */
  async restart(name: string): Promise<number | undefined> {
    const e = this.entries.get(name);
    if (e === undefined || this.closed) return undefined;
    this.deps.clock.clearTimeout(e.timer);
    e.timer = undefined;
    const old = e.current;
    e.current = undefined;
    this.changed();
    if (old) await this.deps.stop([old]);
    this.deps.log(`restarting ${name}`);
    e.failures = 0;
    let again: RunningComponent;
    try {
      again = await this.deps.start(e.spec);
    } catch (err) {
      // Kept trying with the back-off, as after a crash; the caller hears of this failure.
      e.lastExit = `failed to start: ${message(err)}`;
      if (!this.isClosed()) this.schedule(e, `${name} failed to start: ${message(err)}`);
      throw err;
    }
    this.watch(e, again);
    return again.proc.pid;
  }

  /** Stops every component; nothing is restarted afterwards. */
  async stop(): Promise<void> {
    this.closed = true;
    const running: RunningComponent[] = [];
    for (const e of this.entries.values()) {
      this.deps.clock.clearTimeout(e.timer);
      if (e.current) running.push(e.current);
      e.current = undefined;
    }
    await Promise.all([this.deps.stop(running), ...this.starting]);
  }

  private changed(): void {
    if (this.notifying && !this.closed) this.deps.onChange?.();
  }

  /** Read through calls: these change while a start is awaited. */
  private isClosed(): boolean {
    return this.closed;
  }

  /** No restart wanted: the lab is stopping, or `lab restart` already started one. */
  private isTaken(e: Entry): boolean {
    return this.closed || e.current !== undefined;
  }

  private watch(e: Entry, c: RunningComponent): void {
    e.current = c;
    e.startedAt = this.deps.clock.now();
    this.changed();
    void c.proc.exited.then((code) => {
      // A stop that restart() or stop() asked for, or a process already replaced.
      if (this.closed || e.current !== c) return;
      e.current = undefined;
      if (this.deps.clock.now() - e.startedAt >= BACKOFF_RESET_MS) e.failures = 0;
      e.lastExit = `exited with ${String(code)}`;
      this.schedule(e, `${e.spec.name} exited with ${String(code)}`);
    });
  }

  private schedule(e: Entry, why: string): void {
    const delay = restartDelay(e.failures);
    e.failures++;
    this.deps.log(`${why}; restarting${delay > 0 ? ` in ${String(delay)} ms` : ''}`);
    e.dueAt = this.deps.clock.now() + delay;
    e.timer = this.deps.clock.setTimeout(() => {
      e.timer = undefined;
      this.changed();
      const p = this.startAgain(e).finally(() => this.starting.delete(p));
      this.starting.add(p);
    }, delay);
    this.changed();
  }

  private async startAgain(e: Entry): Promise<void> {
    if (this.isTaken(e)) return;
    let c: RunningComponent;
    try {
      c = await this.deps.start(e.spec);
    } catch (err) {
      e.lastExit = `failed to start: ${message(err)}`;
      if (!this.isClosed()) this.schedule(e, `${e.spec.name} failed to start: ${message(err)}`);
      return;
    }
    if (this.isTaken(e)) {
      // The lab is stopping, or `lab restart` started one meanwhile: this one is not needed.
      await this.deps.stop([c]);
      return;
    }
    e.restarts++;
    this.deps.log(
      `${e.spec.name} started again (pid ${String(c.proc.pid)}, restarts ${String(e.restarts)})`,
    );
    this.watch(e, c);
  }
}
