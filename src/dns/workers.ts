// `svcnet dns --workers N`: N node:cluster worker processes answer queries on one address;
// the daemon's process (the primary) watches the API, serves /health, /ready and /metrics, and
// runs the lameduck. Node 20's dgram has no SO_REUSEPORT, but cluster workers binding the same
// UDP address share the primary's one socket and the kernel hands each datagram to whichever
// worker's recvmsg comes first, so both cores answer (TCP: the primary accepts and hands the
// connections round-robin). Each worker keeps its own RecordIndex: the primary ships the
// informers' events (filtered as the daemon's own index gets them) in one IPC message per
// tick, and whether the informers have synced; a worker that dies is forked again and gets a
// snapshot of every object. /metrics is the primary's registry plus every worker's, summed
// per series (prom-client's cluster aggregation), so every query is counted once whichever
// worker answered it (svcnet_dns_worker_messages_total{worker} shows the split). Forwarder
// and cache are per worker, as two CoreDNS replicas.

import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import {
  AggregatorRegistry,
  Counter,
  Registry,
  type MetricObjectWithValues,
  type MetricValue,
} from 'prom-client';
import type { DnsConfig } from './config.js';
import type { UpstreamAddress } from './forward.js';
import { RecordIndex, type IndexedKind, type IndexedObjects } from './record-index.js';
import { DnsServing } from './serving.js';
import { realClock } from '../util/clock.js';

/** One informer event for the workers' indexes. */
export interface IndexEvent {
  readonly kind: IndexedKind;
  readonly op: 'upsert' | 'delete';
  readonly obj: IndexedObjects[IndexedKind];
}

/** What a worker needs to answer: the configuration, upstreams and index options. */
export interface WorkerInit {
  readonly config: DnsConfig;
  readonly upstreams: readonly UpstreamAddress[];
  readonly trackNamespaces: boolean;
}

type ToWorker =
  | {
      readonly t: 'init';
      readonly init: WorkerInit;
      readonly events: readonly IndexEvent[];
      readonly synced: boolean;
    }
  | { readonly t: 'events'; readonly events: readonly IndexEvent[]; readonly synced: boolean }
  | {
      readonly t: 'reconfigure';
      readonly config: DnsConfig;
      readonly upstreams: readonly UpstreamAddress[];
    }
  | { readonly t: 'metrics'; readonly id: number }
  | { readonly t: 'stop' };

type FromWorker =
  | { readonly t: 'hello' }
  | { readonly t: 'listening'; readonly port: number }
  | { readonly t: 'failed'; readonly message: string; readonly code: string | undefined }
  | {
      readonly t: 'metrics';
      readonly id: number;
      readonly metrics: MetricObjectWithValues<MetricValue<string>>[];
    };

/** Marks the processes the pool forks, so the entry point runs runDnsWorker in them. */
export const WORKER_ENV = 'SVCNET_DNS_WORKER';

/** Whether this process is a DNS worker forked by a DnsWorkerPool. */
export function isDnsWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_ENV] === '1';
}

export interface WorkerPoolOptions {
  readonly count: number;
  readonly init: WorkerInit;
  /** Every object as an upsert (for a worker forked after start). */
  readonly snapshot: () => IndexEvent[];
  readonly isSynced: () => boolean;
  readonly log: Logger;
}

/** The primary's side: forks, feeds, scrapes and stops the workers. */
export class DnsWorkerPool {
  private readonly opts: WorkerPoolOptions;
  private init: WorkerInit;
  private readonly workers = new Set<Worker>();
  private pending: IndexEvent[] = [];
  private flushQueued = false;
  private stopping = false;
  private nextId = 1;
  private readonly scrapes = new Map<
    number,
    (m: MetricObjectWithValues<MetricValue<string>>[]) => void
  >();
  /** Workers forked again after dying, since start. */
  restarts = 0;

  constructor(opts: WorkerPoolOptions) {
    this.opts = opts;
    this.init = opts.init;
  }

  /** Forks the workers; resolves with the DNS port once every one listens. */
  async start(): Promise<number> {
    // Advanced serialization: objects are structured-cloned, not JSON round-tripped.
    cluster.setupPrimary({ serialization: 'advanced' });
    const ports = await Promise.all(Array.from({ length: this.opts.count }, () => this.fork()));
    return ports[0] ?? 0;
  }

  private fork(): Promise<number> {
    const w = cluster.fork({ [WORKER_ENV]: '1' });
    this.workers.add(w);
    let listening = false;
    return new Promise<number>((resolve, reject) => {
      w.on('message', (m: FromWorker) => {
        // The worker listens for messages now (one sent earlier could have been missed).
        if (m.t === 'hello')
          this.send(w, {
            t: 'init',
            init: this.init,
            events: this.opts.snapshot(),
            synced: this.opts.isSynced(),
          });
        else if (m.t === 'listening') {
          listening = true;
          resolve(m.port);
        } else if (m.t === 'failed') reject(Object.assign(new Error(m.message), { code: m.code }));
        else this.scrapes.get(m.id)?.(m.metrics);
      });
      // A message written while the worker dies (killed with the daemon's process group, or
      // crashed) fails with EPIPE on the IPC channel; the exit handler deals with the worker.
      // Unhandled, that error would take the whole daemon down with a stack.
      w.on('error', (err: Error) => {
        if (!this.stopping)
          this.opts.log.warn({ pid: w.process.pid, err: err.message }, 'DNS worker channel error');
      });
      w.on('exit', (code, signal) => {
        this.workers.delete(w);
        // One that never listened failed to start (start() rejects); only a serving one is
        // forked again.
        if (!listening) {
          reject(new Error(`DNS worker exited (${signal || String(code)}) before listening`));
          return;
        }
        if (this.stopping) return;
        this.opts.log.error(
          { pid: w.process.pid, code, signal },
          'DNS worker died; forking another',
        );
        this.restarts++;
        this.fork().catch((e: unknown) => {
          this.opts.log.error({ err: e }, 'DNS worker failed to start');
        });
      });
    });
  }

  private send(w: Worker, m: ToWorker): void {
    if (w.isConnected()) w.send(m);
  }

  private broadcast(m: ToWorker): void {
    for (const w of this.workers) this.send(w, m);
  }

  /** Queues an index event; the queue goes out once per tick. */
  event(e: IndexEvent): void {
    this.pending.push(e);
    this.schedule();
  }

  /** Sends the sync state (with any queued events) on the next tick. */
  update(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      const events = this.pending;
      this.pending = [];
      this.broadcast({ t: 'events', events, synced: this.opts.isSynced() });
    });
  }

  reconfigure(config: DnsConfig, upstreams: readonly UpstreamAddress[]): void {
    this.init = { ...this.init, config, upstreams };
    this.broadcast({ t: 'reconfigure', config, upstreams });
  }

  /** `own` (the primary's registry) plus every worker's metrics, summed per series. */
  async metrics(own: Registry): Promise<Registry> {
    const parts = await Promise.all(
      [...this.workers].map(
        (w) =>
          new Promise<MetricObjectWithValues<MetricValue<string>>[]>((resolve) => {
            const id = this.nextId++;
            const timer = setTimeout(() => {
              this.scrapes.delete(id);
              resolve([]);
            }, 5000);
            this.scrapes.set(id, (m) => {
              clearTimeout(timer);
              this.scrapes.delete(id);
              resolve(m);
            });
            this.send(w, { t: 'metrics', id });
          }),
      ),
    );
    return AggregatorRegistry.aggregate([await own.getMetricsAsJSON(), ...parts]);
  }

  /** Stops every worker (their listeners close, then they exit); kills one that hangs. */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.workers].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) {
              resolve();
              return;
            }
            const timer = setTimeout(() => w.process.kill('SIGKILL'), 5000);
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            this.send(w, { t: 'stop' });
          }),
      ),
    );
  }
}

/** The applier of one index event (as the daemon's own wire() does, minus the logging). */
function apply(index: RecordIndex, e: IndexEvent): void {
  const feeds = index as unknown as Record<string, (o: IndexedObjects[IndexedKind]) => unknown>;
  feeds[`${e.op}${e.kind}`]?.call(index, e.obj);
}

/**
 * A worker's life: waits for the primary's init, answers queries from its own index until
 * told to stop, then closes its listeners and exits 0. A listener that cannot bind is
 * reported to the primary (which fails the start) and the worker exits 1.
 */
export function runDnsWorker(log: Logger): Promise<void> {
  let serving: DnsServing | undefined;
  let index: RecordIndex | undefined;
  let synced = false;
  const registry = new Registry();
  const reply = (m: FromWorker): void => {
    process.send?.(m);
  };
  return new Promise<void>((done) => {
    // Signals are the primary's business (lameduck); it says when to stop. A primary gone
    // (the IPC channel closed) ends the worker too.
    const ignore = (): void => undefined;
    process.on('SIGTERM', ignore);
    process.on('SIGINT', ignore);
    process.once('disconnect', () => {
      void (serving?.close() ?? Promise.resolve()).then(done);
    });
    process.on('message', (m: ToWorker) => {
      switch (m.t) {
        case 'init': {
          index = new RecordIndex({ trackNamespaces: m.init.trackNamespaces });
          for (const e of m.events) apply(index, e);
          synced = m.synced;
          serving = new DnsServing({
            config: m.init.config,
            index,
            isSynced: () => synced,
            upstreams: m.init.upstreams,
            registry,
            log,
            clock: realClock,
          });
          const server = serving.server;
          new Counter({
            name: 'svcnet_dns_worker_messages_total',
            help: 'DNS messages received by each worker process of --workers N.',
            labelNames: ['worker'],
            registers: [registry],
            collect() {
              this.reset();
              this.inc({ worker: String(cluster.worker?.id ?? 0) }, server.received);
            },
          });
          serving.listen().then(
            (port) => {
              reply({ t: 'listening', port });
            },
            (e: unknown) => {
              const code = (e as { code?: unknown }).code;
              reply({
                t: 'failed',
                message: e instanceof Error ? e.message : String(e),
                code: typeof code === 'string' ? code : undefined,
              });
              process.exitCode = 1;
              process.disconnect();
            },
          );
          return;
        }
        case 'events':
          if (index) for (const e of m.events) apply(index, e);
          synced = m.synced;
          return;
        case 'reconfigure':
          serving?.reconfigure(m.config, m.upstreams);
          return;
        case 'metrics':
          registry.getMetricsAsJSON().then(
            (metrics) => {
              reply({ t: 'metrics', id: m.id, metrics });
            },
            () => {
              reply({ t: 'metrics', id: m.id, metrics: [] });
            },
          );
          return;
        case 'stop':
          void (serving?.close() ?? Promise.resolve()).then(() => {
            process.disconnect();
          });
          return;
      }
    });
    reply({ t: 'hello' });
  });
}
