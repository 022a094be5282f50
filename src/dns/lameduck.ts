// The shutdown sequence of `svcnet dns`, after CoreDNS's `health { lameduck DURATION }`: the
// first SIGTERM/SIGINT puts the server in lameduck (it reports not ready, so the kubelet
// marks the Pod unready and proxies stop sending it new queries, yet it keeps answering the
// queries that still arrive), and only when the duration has passed are the listeners closed.
// A second signal during lameduck cuts it short; a duration of 0 stops at once. A state
// machine on an injected Clock: the daemon supplies `stop` and logs the events; no I/O here.

import type { Clock, TimerHandle } from '../util/clock.js';

/** serving → lameduck (skipped when the duration is 0) → stopping → stopped. */
export type ShutdownPhase = 'serving' | 'lameduck' | 'stopping' | 'stopped';

export type ShutdownEvent =
  | { readonly kind: 'lameduck'; readonly reason: string; readonly durationMs: number }
  | { readonly kind: 'cut-short'; readonly reason: string; readonly remainingMs: number }
  | { readonly kind: 'stopping'; readonly reason: string; readonly lameduckMs: number }
  | { readonly kind: 'stopped' };

export interface LameduckOptions {
  /** How long to keep answering after the first signal; 0 (or less) disables lameduck. */
  readonly durationMs: number;
  readonly clock: Clock;
  /** Closes everything; called exactly once, when lameduck ends. */
  readonly stop: () => Promise<void>;
  readonly onEvent?: (e: ShutdownEvent) => void;
}

export class LameduckShutdown {
  private current: ShutdownPhase = 'serving';
  private done: Promise<void> | undefined;
  private timer: TimerHandle | undefined;
  /** Ends a running lameduck; `early` when a second signal does it. */
  private endLameduck: ((reason: string, early: boolean) => void) | undefined;
  private enteredAt = 0;
  private readonly opts: LameduckOptions;

  constructor(opts: LameduckOptions) {
    this.opts = opts;
  }

  get phase(): ShutdownPhase {
    return this.current;
  }

  /** True from the first signal on: /ready answers 503 from then. */
  isShuttingDown(): boolean {
    return this.current !== 'serving';
  }

  /**
   * Begins the shutdown (first call), or ends a running lameduck now (a call during it); a
   * call once stopping changes nothing. Every call returns the same promise, which resolves
   * once `stop` has finished and rejects if it failed.
   */
  shutdown(reason: string): Promise<void> {
    if (this.done !== undefined) {
      if (this.current === 'lameduck') this.endLameduck?.(reason, true);
      return this.done;
    }
    const { clock, durationMs } = this.opts;
    this.enteredAt = clock.now();
    if (durationMs <= 0) {
      this.done = this.stop(reason);
      return this.done;
    }
    this.current = 'lameduck';
    this.emit({ kind: 'lameduck', reason, durationMs });
    this.done = new Promise<string>((resolve) => {
      this.endLameduck = (why, early) => {
        this.endLameduck = undefined;
        clock.clearTimeout(this.timer);
        if (early)
          this.emit({
            kind: 'cut-short',
            reason: why,
            remainingMs: Math.max(0, durationMs - (clock.now() - this.enteredAt)),
          });
        resolve(why);
      };
      this.timer = clock.setTimeout(() => {
        this.endLameduck?.(reason, false);
      }, durationMs);
    }).then((why) => this.stop(why));
    return this.done;
  }

  private async stop(reason: string): Promise<void> {
    this.current = 'stopping';
    this.emit({ kind: 'stopping', reason, lameduckMs: this.opts.clock.now() - this.enteredAt });
    try {
      await this.opts.stop();
    } finally {
      this.current = 'stopped';
      this.emit({ kind: 'stopped' });
    }
  }

  private emit(e: ShutdownEvent): void {
    this.opts.onEvent?.(e);
  }
}
