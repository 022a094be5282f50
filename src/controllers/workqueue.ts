// A work queue of object keys with the semantics controllers need (after client-go's
// workqueue): a key is queued at most once; a key being processed that is added again is
// processed once more after `done`; failed keys come back after an exponential per-key delay
// (`addRateLimited`), reset by `forget`. Time comes from an injected Clock so unit tests
// never sleep. Also remembers when a key was first queued (the "trigger time" of a sync).

import { realClock, type Clock, type TimerHandle } from '../util/clock.js';

export interface WorkQueueOptions {
  readonly clock?: Clock;
  /** First retry delay of addRateLimited; doubles per failure. */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly firstAdded = new Map<string, number>();
  private readonly delayed = new Map<string, TimerHandle>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly clock: Clock;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(opts: WorkQueueOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
  }

  /** Queues a key (no-op if already queued; re-run later if being processed). */
  add(key: string): void {
    if (this.shuttingDown) return;
    if (!this.firstAdded.has(key)) this.firstAdded.set(key, this.clock.now());
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
  }

  /** Queues a key after a delay (an earlier pending delay for the key wins). */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    if (this.delayed.has(key)) return;
    const h = this.clock.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, h);
  }

  /** Queues a failed key after its backoff: base * 2^failures, capped. */
  addRateLimited(key: string): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n));
  }

  /** Clears the key's failure count. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** When the key was first queued since it was last handed out (ms), if known. */
  triggerTime(key: string): number | undefined {
    return this.firstAdded.get(key);
  }

  /** Next key to process; resolves undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.queued.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Non-blocking get: a key or undefined when nothing is queued. */
  tryGet(): string | undefined {
    const key = this.queue.shift();
    if (key === undefined) return undefined;
    this.queued.delete(key);
    this.processing.add(key);
    return key;
  }

  /** Marks a key processed; a key added meanwhile is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) {
      this.add(key);
      return;
    }
    if (!this.queued.has(key)) this.firstAdded.delete(key);
  }

  /** Marks the start of processing for the trigger-time bookkeeping. */
  takeTriggerTime(key: string): number | undefined {
    const t = this.firstAdded.get(key);
    this.firstAdded.delete(key);
    return t;
  }

  len(): number {
    return this.queue.length;
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const h of this.delayed.values()) this.clock.clearTimeout(h);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
