// The time seam of the proxy daemon: the sync runner, the health server and the canary ask a
// Clock for the time and for timers, so unit tests drive them with FakeClock (no sleeps) and
// the daemon uses realClock. It is not a scheduler: ordering and coalescing live in runner.ts.

/** Handle of a timer created by a Clock. */
export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds (never synchronously). */
  setTimer(ms: number, fn: () => void): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/** The wall clock, on setTimeout; timers do not keep the process alive (unref). */
export function createRealClock(): Clock {
  const timers = new Map<number, NodeJS.Timeout>();
  let nextId = 1;
  return {
    now: () => Date.now(),
    setTimer(ms, fn) {
      const id = nextId++;
      const t = setTimeout(
        () => {
          timers.delete(id);
          fn();
        },
        Math.max(0, ms),
      );
      t.unref();
      timers.set(id, t);
      return { id };
    },
    clearTimer(handle) {
      const t = timers.get(handle.id);
      if (t !== undefined) clearTimeout(t);
      timers.delete(handle.id);
    },
  };
}

interface FakeTimer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

/**
 * A manual clock for tests. `advance(ms)` moves time forward, firing due timers in time
 * order (each at its own due time) and letting promise callbacks run between them, so
 * async work started by a timer completes before the next one fires.
 */
export class FakeClock implements Clock {
  private time: number;
  private timers: FakeTimer[] = [];
  private nextId = 1;

  constructor(startMs = 1_700_000_000_000) {
    this.time = startMs;
  }

  now(): number {
    return this.time;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.time + Math.max(0, ms), fn });
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  /** Number of timers waiting to fire. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /** Due time of the earliest timer, if any. */
  nextTimerAt(): number | undefined {
    let best: number | undefined;
    for (const t of this.timers) if (best === undefined || t.at < best) best = t.at;
    return best;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await flushMicrotasks();
    for (;;) {
      const due = this.timers
        .filter((t) => t.at <= end)
        .sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t.id !== due.id);
      this.time = Math.max(this.time, due.at);
      due.fn();
      await flushMicrotasks();
    }
    this.time = end;
    await flushMicrotasks();
  }
}

/** Lets pending promise callbacks (several levels deep) run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
