// The one time seam of svcnet: daemons and controllers ask a Clock for the time, for timers and
// for sleeps, so unit tests drive them with FakeClock (no sleeps, no flakes) and production uses
// realClock. The method names and argument order are the globals' (`setTimeout(fn, ms)`), so a
// direct call becomes `clock.setTimeout(fn, ms)`. It is not a scheduler: ordering and
// coalescing live in their owners (proxy/runner.ts, controllers/workqueue.ts).

/** Handle of a timer created by a Clock. */
export interface TimerHandle {
  readonly id: number;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds (never synchronously; negative means 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Calls `fn` every `ms` milliseconds until cleared. */
  setInterval(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timeout or an interval; a fired, cleared or unknown handle is ignored. */
  clearTimeout(handle: TimerHandle | undefined): void;
  /** Same as clearTimeout (either clears either kind, as in Node). */
  clearInterval(handle: TimerHandle | undefined): void;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
}

/**
 * The wall clock. Timers from setTimeout/setInterval are unref'd: they never keep the process
 * alive on their own (the socket, server or child they guard does). `sleep` is not: whoever
 * awaits it is waiting on purpose.
 */
function createRealClock(): Clock {
  const timers = new Map<number, NodeJS.Timeout>();
  let nextId = 1;
  const clear = (handle: TimerHandle | undefined): void => {
    if (handle === undefined) return;
    const t = timers.get(handle.id);
    if (t !== undefined) clearTimeout(t);
    timers.delete(handle.id);
  };
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
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
    setInterval(fn, ms) {
      const id = nextId++;
      const t = setInterval(fn, ms);
      t.unref();
      timers.set(id, t);
      return { id };
    },
    clearTimeout: clear,
    clearInterval: clear,
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        setTimeout(resolve, Math.max(0, ms));
      }),
  };
}

/** The process's wall clock (stateless apart from its own timer table). */
export const realClock: Clock = createRealClock();

interface FakeTimer {
  readonly id: number;
  at: number;
  /** Period of an interval; undefined for a one-shot timer. */
  readonly every: number | undefined;
  readonly fn: () => void;
}

/** The default start of a FakeClock: 2026-01-01T00:00:00Z. */
export const FAKE_CLOCK_START = Date.parse('2026-01-01T00:00:00Z');

/**
 * A manual clock for tests: time moves only when told to. Two ways to move it:
 * - `await advance(ms)` fires due timers in time order (each at its own due time) and lets
 *   promise callbacks run before, between and after them, so async work started by one timer
 *   completes before the next fires (the proxy runner, the bootstrap loop);
 * - `advanceSync(ms)` fires them in the same order without yielding (work queues, the lab
 *   agent's probes), for synchronous tests.
 * Timers due at the same time fire in creation order; an interval re-arms at its due time plus
 * its period.
 */
export class FakeClock implements Clock {
  private time: number;
  private timers: FakeTimer[] = [];
  private nextId = 1;

  constructor(startMs = FAKE_CLOCK_START) {
    this.time = startMs;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, undefined);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, Math.max(1, ms));
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle === undefined) return;
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  clearInterval(handle: TimerHandle | undefined): void {
    this.clearTimeout(handle);
  }

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.setTimeout(resolve, ms));
  }

  /** Number of timers (and intervals) waiting to fire. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /** Due time of the earliest timer, if any. */
  nextTimerAt(): number | undefined {
    return this.nextDue(Infinity)?.at;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way (see above). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await flushMicrotasks();
    for (let due = this.nextDue(end); due !== undefined; due = this.nextDue(end)) {
      this.fire(due);
      await flushMicrotasks();
    }
    this.time = end;
    await flushMicrotasks();
  }

  /** Moves time forward by `ms`, firing due timers in order without yielding to promises. */
  advanceSync(ms: number): void {
    const end = this.time + ms;
    for (let due = this.nextDue(end); due !== undefined; due = this.nextDue(end)) this.fire(due);
    this.time = end;
  }

  private add(fn: () => void, ms: number, every: number | undefined): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.time + Math.max(0, ms), every, fn });
    return { id };
  }

  private nextDue(end: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers)
      if (
        t.at <= end &&
        (best === undefined || t.at < best.at || (t.at === best.at && t.id < best.id))
      )
        best = t;
    return best;
  }

  private fire(t: FakeTimer): void {
    this.time = Math.max(this.time, t.at);
    if (t.every === undefined) this.timers = this.timers.filter((x) => x.id !== t.id);
    else t.at += t.every;
    t.fn();
  }
}

/** Lets pending promise callbacks (several levels deep) and immediates run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
