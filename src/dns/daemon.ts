// The `svcnet dns` daemon wiring: informers (Services, EndpointSlices, Namespaces, and Pods
// for `pods verified`) feed the record index one event at a time; the DNS server answers from
// it (SERVFAIL for would-be NXDOMAINs until every informer has synced, as CoreDNS); the
// forwarder with its cache takes the rest; /health (200 while the process serves), /ready
// (200 once synced, 503 before and from the start of shutdown) and /metrics (Prometheus,
// CoreDNS names) listen on their own ports. `shutdown` runs CoreDNS's lameduck (lameduck.ts)
// before closing; `stop` closes at once. Bad objects are skipped, logged and counted; the
// daemon keeps serving. With `workers` > 1 the queries are answered by that many cluster
// worker processes (workers.ts), each with a copy of the index fed from this one's informers;
// this process keeps the informers, the HTTP endpoints and the lameduck.

import { createServer, type Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Informer } from '../kube/informer.js';
import type { EndpointSlice, KubeObject, Pod, Service } from '../kube/types.js';
import { describeObject } from '../kube/types.js';
import { fieldsNeedingRestart, type DnsConfig, type HostPort } from './config.js';
import { matchesLabels, parseLabelSelector } from '../kube/selectors.js';
import type { UpstreamAddress } from './forward.js';
import {
  RecordIndex,
  type IndexedKind,
  type IndexedObjects,
  type ServiceImport,
} from './record-index.js';
import { DnsMetrics } from './metrics.js';
import { DnsServing, serverLabel } from './serving.js';
import { DnsWorkerPool, type IndexEvent } from './workers.js';
import { listenFailed } from '../util/listen-error.js';
import { realClock, type Clock } from '../util/clock.js';
import { formatDuration } from '../util/duration.js';
import { LameduckShutdown, type ShutdownEvent } from './lameduck.js';

export interface DnsDaemonDeps {
  readonly config: DnsConfig;
  readonly services: Informer<Service>;
  readonly endpointSlices: Informer<EndpointSlice>;
  /** Without it every namespace is taken to exist. */
  readonly namespaces?: Informer<KubeObject>;
  /** Needed for `pods verified`. */
  readonly pods?: Informer<Pod>;
  readonly serviceImports?: Informer<ServiceImport>;
  /** Upstreams to forward to (the CLI fills them from resolv.conf when none are given). */
  readonly upstreams: readonly UpstreamAddress[];
  readonly registry: Registry;
  readonly log: Logger;
  /** Time and timers of the index, cache, forwarder and server; default the wall clock. */
  readonly clock?: Clock;
  /** Processes answering queries: 1 (default) answers here, more fork cluster workers. */
  readonly workers?: number;
}

export interface BoundPorts {
  readonly dns: number;
  readonly health: number | undefined;
  readonly ready: number | undefined;
  readonly metrics: number | undefined;
}

export class DnsDaemon {
  readonly index: RecordIndex;
  private readonly deps: DnsDaemonDeps;
  private readonly metrics: DnsMetrics;
  private readonly clock: Clock;
  /** What queries are answered with now; reconfigure() replaces it. */
  private config: DnsConfig;
  /** One of the two: the queries are answered here, or by the workers. */
  private readonly serving: DnsServing | undefined;
  private readonly pool: DnsWorkerPool | undefined;
  private readonly http: HttpServer[] = [];
  private readonly informers: Informer<KubeObject>[];
  /** Each informer's kind and whether an object of it is in the index (the label selector). */
  private readonly feeds: {
    kind: IndexedKind;
    informer: Informer<KubeObject>;
    keep: (o: KubeObject) => boolean;
  }[] = [];
  private readonly lameduck: LameduckShutdown;
  private stopped: Promise<void> | undefined;

  constructor(deps: DnsDaemonDeps) {
    this.deps = deps;
    const cfg = deps.config;
    const clock = deps.clock ?? realClock;
    this.lameduck = new LameduckShutdown({
      durationMs: cfg.lameduckMs,
      clock,
      stop: () => this.stop(),
      onEvent: (e) => {
        this.logShutdown(e);
      },
    });
    this.index = new RecordIndex({
      trackNamespaces: deps.namespaces !== undefined,
      clock,
    });
    this.clock = clock;
    this.config = cfg;
    const workers = deps.workers ?? 1;
    if (workers > 1) {
      // Here only the objects skipped and the process; the workers count the queries.
      this.metrics = new DnsMetrics(deps.registry, serverLabel(cfg));
      this.pool = new DnsWorkerPool({
        count: workers,
        init: {
          config: cfg,
          upstreams: deps.upstreams,
          trackNamespaces: deps.namespaces !== undefined,
        },
        snapshot: () => this.snapshot(),
        isSynced: () => this.isSynced(),
        log: deps.log,
      });
    } else {
      this.serving = new DnsServing({
        config: cfg,
        index: this.index,
        isSynced: () => this.isSynced(),
        upstreams: deps.upstreams,
        registry: deps.registry,
        log: deps.log,
        clock,
      });
      this.metrics = this.serving.metrics;
    }
    this.informers = [];
    this.wire('Service', deps.services);
    // `noendpoints`: as CoreDNS, EndpointSlices are not watched at all.
    if (!cfg.noEndpoints) this.wire('EndpointSlice', deps.endpointSlices);
    if (deps.namespaces) this.wire('Namespace', deps.namespaces);
    if (deps.pods && cfg.resolver.pods === 'verified') this.wire('Pod', deps.pods);
    if (deps.serviceImports) this.wire('ServiceImport', deps.serviceImports);
  }

  /** Every object the index holds, as upserts (for a worker that starts late). */
  private snapshot(): IndexEvent[] {
    return this.feeds.flatMap(({ kind, informer, keep }) =>
      informer
        .list()
        .filter(keep)
        .map((obj) => ({ kind, op: 'upsert' as const, obj: obj })),
    );
  }

  /** Feeds one informer's events to the index's upsert<Kind>/delete<Kind>. */
  private wire<K extends IndexedKind>(kind: K, informer: Informer<IndexedObjects[K]>): void {
    // RecordIndex implements IndexFeeds, so both methods exist for every indexed kind.
    const feeds = this.index as unknown as Record<
      `upsert${K}` | `delete${K}`,
      (o: IndexedObjects[K]) => string | undefined
    >;
    // kubernetes `labels`: Services and EndpointSlices outside the selector do not exist.
    const selector =
      this.config.labelSelector !== undefined && (kind === 'Service' || kind === 'EndpointSlice')
        ? parseLabelSelector(this.config.labelSelector)
        : undefined;
    const keep = (o: KubeObject): boolean =>
      selector === undefined || matchesLabels(selector, o.metadata?.labels);
    const ship = (op: IndexEvent['op'], obj: IndexedObjects[K]): void => {
      this.pool?.event({ kind, op, obj });
    };
    const apply = (o: IndexedObjects[K]): void => {
      if (!keep(o)) {
        feeds[`delete${kind}`](o);
        ship('delete', o);
        return;
      }
      ship('upsert', o);
      const problem = feeds[`upsert${kind}`](o);
      if (problem !== undefined) {
        this.metrics.skippedObject(kind);
        this.deps.log.warn(
          { object: describeObject({ ...o, kind }), problem },
          'Skipping invalid object',
        );
      }
    };
    informer.addHandlers({
      onAdd: apply,
      onUpdate: (_old, o) => {
        apply(o);
      },
      onDelete: (o) => {
        feeds[`delete${kind}`](o);
        ship('delete', o);
      },
      onError: (err) => {
        // One line (the informer's error names the failure count and the next retry).
        this.deps.log.warn(
          { kind, error: err instanceof Error ? err.message : String(err) },
          'List/watch failed; retrying',
        );
      },
    });
    this.informers.push(informer);
    this.feeds.push({ kind, informer: informer, keep });
  }

  /**
   * Applies a new configuration without dropping queries (a Corefile `reload`): the resolver
   * settings, upstreams and forward options take effect for the next query; queries under
   * way finish on the old forwarder, which is closed once they are done. Returns the changed
   * settings this cannot apply while running (listen addresses, cache, lameduck, labels,
   * noendpoints, `pods verified` without a Pod informer); those keep their old value.
   */
  reconfigure(next: DnsConfig, upstreams: readonly UpstreamAddress[]): string[] {
    const old = this.config;
    const needsRestart = fieldsNeedingRestart(old, next, this.deps.pods !== undefined);
    const applied: DnsConfig = {
      ...old,
      resolver:
        next.resolver.pods === 'verified' && old.resolver.pods !== 'verified' && !this.deps.pods
          ? { ...next.resolver, pods: old.resolver.pods }
          : next.resolver,
      upstreams: next.upstreams,
      forwardTimeoutMs: next.forwardTimeoutMs,
      forwardMaxConcurrent: next.forwardMaxConcurrent,
      transfer: next.transfer,
    };
    this.config = applied;
    this.serving?.reconfigure(applied, upstreams);
    this.pool?.reconfigure(applied, upstreams);
    return needsRestart;
  }

  /** True once every informer has listed. */
  isSynced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  /** /ready as CoreDNS's ready plugin: 503 naming what is missing, or "Shutting down". */
  private readiness(): [number, string] {
    if (this.lameduck.isShuttingDown()) return [503, 'Shutting down'];
    return this.isSynced() ? [200, 'OK'] : [503, 'kubernetes'];
  }

  /**
   * The graceful end (SIGTERM/SIGINT): /ready turns 503 at once, queries are still answered
   * for the configured lameduck, then everything closes. A call during lameduck ends it now.
   * Every call returns the same promise, resolved once closed.
   */
  shutdown(reason: string): Promise<void> {
    return this.lameduck.shutdown(reason);
  }

  private logShutdown(e: ShutdownEvent): void {
    const log = this.deps.log;
    switch (e.kind) {
      case 'lameduck':
        log.info(
          { reason: e.reason, lameduck: formatDuration(e.durationMs) },
          'Going into lameduck mode',
        );
        return;
      case 'cut-short':
        log.info(
          { reason: e.reason, remaining: formatDuration(e.remainingMs) },
          'Lameduck cut short',
        );
        return;
      case 'stopping':
        log.info({ reason: e.reason, lameduckMs: e.lameduckMs }, 'Shutting down');
        return;
      case 'stopped':
        log.info('DNS server stopped');
        return;
    }
  }

  /**
   * Binds every listener (DNS first, so queries get SERVFAIL rather than nothing before sync)
   * and then starts the informers. Whole or not at all: when any listener cannot bind, every
   * one already bound is closed and a LISTEN_FAILED error names the address and the flag
   * (`--listen`, `--health-listen`, `--ready-listen`, `--metrics-listen`), as CoreDNS exits
   * when a plugin's listener fails.
   */
  async start(): Promise<BoundPorts> {
    const cfg = this.deps.config;
    const step = async <T>(
      what: string,
      at: HostPort,
      flag: string,
      bind: () => Promise<T>,
    ): Promise<T> => {
      try {
        return await bind();
      } catch (e) {
        await this.closeListeners();
        throw listenFailed(what, at.host, at.port, flag, e);
      }
    };
    const dns = await step('DNS', cfg.listen, '--listen', () =>
      this.pool ? this.pool.start() : (this.serving?.listen() ?? Promise.resolve(0)),
    );
    const health = cfg.health
      ? await step('/health', cfg.health, '--health-listen', () =>
          this.listenHttp(cfg.health ?? cfg.listen, (path) =>
            path === '/health' ? [200, 'OK'] : undefined,
          ),
        )
      : undefined;
    const ready = cfg.ready
      ? await step('/ready', cfg.ready, '--ready-listen', () =>
          this.listenHttp(cfg.ready ?? cfg.listen, (path) =>
            path === '/ready' ? this.readiness() : undefined,
          ),
        )
      : undefined;
    const metrics = cfg.metrics
      ? await step('/metrics', cfg.metrics, '--metrics-listen', () =>
          this.listenMetrics(cfg.metrics ?? cfg.listen),
        )
      : undefined;
    const clock = this.deps.clock ?? realClock;
    const t0 = clock.now();
    for (const inf of this.informers) {
      inf.start().then(
        () => {
          this.pool?.update();
          // An informer stopped by shutdown ends its start() too: that is no sync.
          if (this.stopped === undefined && this.isSynced())
            this.deps.log.info(
              { ...this.index.stats(), elapsedMs: clock.now() - t0 },
              'Kubernetes API synced',
            );
        },
        (err: unknown) => {
          this.deps.log.error({ err }, 'Informer failed to start');
        },
      );
    }
    const workers = this.deps.workers ?? 1;
    this.deps.log.info({ dns, health, ready, metrics, workers }, 'DNS server listening');
    return { dns, health, ready, metrics };
  }

  private async listenHttp(
    at: HostPort,
    route: (path: string) => [number, string] | undefined,
  ): Promise<number> {
    const srv = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const r = route(path);
      res.writeHead(r ? r[0] : 404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(r ? r[1] : 'not found');
    });
    return this.bind(srv, at);
  }

  private async listenMetrics(at: HostPort): Promise<number> {
    const registry = this.deps.registry;
    const srv = createServer((req, res) => {
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404).end('not found');
        return;
      }
      const pool = this.pool;
      (pool ? pool.metrics(registry) : Promise.resolve(registry))
        .then((r) => r.metrics())
        .then(
          (text) => {
            res.writeHead(200, { 'content-type': registry.contentType }).end(text);
          },
          (e: unknown) => {
            res.writeHead(500).end(e instanceof Error ? e.message : String(e));
          },
        );
    });
    return this.bind(srv, at);
  }

  private bind(srv: HttpServer, at: HostPort): Promise<number> {
    this.http.push(srv);
    return new Promise((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(at.port, at.host, () => {
        srv.off('error', reject);
        const addr = srv.address();
        resolve(typeof addr === 'object' && addr ? addr.port : at.port);
      });
    });
  }

  /** Closes the DNS server and every HTTP listener bound so far. */
  private async closeListeners(): Promise<void> {
    await this.serving?.close();
    await this.pool?.close();
    await Promise.all(
      this.http.map(
        (s) =>
          new Promise<void>((r) => {
            if (!s.listening) {
              r();
              return;
            }
            s.closeAllConnections();
            s.close(() => {
              r();
            });
          }),
      ),
    );
  }

  /** Closes everything now (no lameduck). Idempotent: later calls share the first. */
  stop(): Promise<void> {
    this.stopped ??= this.closeAll();
    return this.stopped;
  }

  private async closeAll(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.serving?.close();
    await this.pool?.close();
    await Promise.all(
      this.http.map(
        (s) =>
          new Promise<void>((r) => {
            s.closeAllConnections();
            s.close(() => {
              r();
            });
          }),
      ),
    );
  }
}
