// The bounded-frequency sync runner (the role of kube-proxy's BoundedFrequencyRunner): one
// function, run serially, at most once per `minIntervalMs` (start to start), at least once
// per `maxIntervalMs`, and again `retryIntervalMs` after a failure. Requests that arrive
// while a run is waiting or in progress coalesce into one pending run. Time comes from an
// injected Clock. It knows nothing about iptables: the proxier decides full vs partial.

import type { Clock, TimerHandle } from '../util/clock.js';

export interface RunnerOptions {
  /** Minimum time between the starts of two runs (kube-proxy minSyncPeriod, default 1 s). */
  readonly minIntervalMs: number;
  /** A failed run is retried this long after it failed (kube-proxy syncPeriod). */
  readonly retryIntervalMs: number;
  /** A run happens at least this often even without requests (periodic sync). */
  readonly maxIntervalMs: number;
  readonly clock: Clock;
  /** Called with the error of a failed run (the runner has already scheduled the retry). */
  readonly onError?: (err: unknown) => void;
}

/**
 * Runs `fn` serially under the bounded-frequency rules. Nothing runs until `start()`;
 * `run()` before `start()` is remembered and honoured at start.
 */
export class BoundedFrequencyRunner {
  private readonly fn: () => Promise<void>;
  private readonly opts: RunnerOptions;
  private started = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** A run was requested and has not started yet. */
  private pending = false;
  private lastStart: number | undefined;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;

  constructor(fn: () => Promise<void>, opts: RunnerOptions) {
    if (opts.minIntervalMs < 0 || opts.retryIntervalMs <= 0 || opts.maxIntervalMs <= 0)
      throw new RangeError('runner intervals must be positive (minInterval may be 0)');
    this.fn = fn;
    this.opts = opts;
  }

  /** Starts the loop; a run happens as soon as allowed when one was requested before. */
  start(): void {
    if (this.started) return;
    this.started = true;
    if (this.pending) this.scheduleAt(this.earliestAllowed());
    else this.scheduleAt(this.opts.clock.now() + this.opts.maxIntervalMs);
  }

  /** Requests a run as soon as minInterval allows; bursts of requests coalesce. */
  run(): void {
    this.pending = true;
    if (!this.started || this.stopped || this.running) return;
    this.scheduleAt(this.earliestAllowed());
  }

  /** Makes sure a run happens within `ms` (unless an earlier one is already scheduled). */
  retryAfter(ms: number): void {
    this.pending = true;
    if (!this.started || this.stopped) return;
    this.scheduleAt(Math.max(this.opts.clock.now() + ms, this.earliestAllowed()));
  }

  /** Whether a run is in progress. */
  isRunning(): boolean {
    return this.running !== undefined;
  }

  /** Stops scheduling and waits for a run in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.running;
  }

  private earliestAllowed(): number {
    const now = this.opts.clock.now();
    return this.lastStart === undefined
      ? now
      : Math.max(now, this.lastStart + this.opts.minIntervalMs);
  }

  private scheduleAt(at: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.tick();
    }, at - this.opts.clock.now());
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private tick(): void {
    if (this.stopped || this.running) return;
    this.pending = false;
    this.lastStart = this.opts.clock.now();
    let failed = false;
    this.running = this.fn()
      .catch((err: unknown) => {
        failed = true;
        this.opts.onError?.(err);
      })
      .finally(() => {
        this.running = undefined;
        this.afterRun(failed);
      });
  }

  private afterRun(failed: boolean): void {
    if (this.stopped) return;
    const now = this.opts.clock.now();
    const start = this.lastStart ?? now;
    // A request that arrived during the run is served as soon as minInterval allows, even
    // after a failure; otherwise a failure waits for the retry interval.
    if (this.pending) this.scheduleAt(this.earliestAllowed());
    if (failed) {
      this.pending = true;
      this.scheduleAt(Math.max(now + this.opts.retryIntervalMs, this.earliestAllowed()));
    }
    this.scheduleAt(Math.max(now, start + this.opts.maxIntervalMs));
  }
}
