// The query-answering half of the DNS daemon: the DNS listeners, the handler over an index,
// the forwarder with its cache, and the metrics of all of it. The daemon runs one in its own
// process (`--workers 1`), or each cluster worker runs one over its copy of the index
// (workers.ts) while the daemon's process watches the API. A reload swaps the handler and
// the forwarder for the next query; the old forwarder finishes the queries under way and is
// closed after the longest they can take.

import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { DnsCache } from './cache.js';
import type { DnsConfig } from './config.js';
import { Forwarder, type UpstreamAddress } from './forward.js';
import { DnsMetrics } from './metrics.js';
import type { RecordIndex, ZoneView } from './record-index.js';
import { DnsHandler, DnsServer } from './server.js';
import type { Clock } from '../util/clock.js';

export interface DnsServingDeps {
  readonly config: DnsConfig;
  readonly index: ZoneView & Pick<RecordIndex, 'generation'>;
  readonly isSynced: () => boolean;
  readonly upstreams: readonly UpstreamAddress[];
  readonly registry: Registry;
  readonly log: Logger;
  readonly clock: Clock;
}

/** The `server` label of every metric series (CoreDNS: dns://HOST:PORT, no host for any). */
export function serverLabel(cfg: DnsConfig): string {
  return `dns://${cfg.listen.host === '0.0.0.0' ? '' : cfg.listen.host}:${cfg.listen.port}`;
}

export class DnsServing {
  readonly metrics: DnsMetrics;
  private readonly deps: DnsServingDeps;
  private readonly cache: DnsCache | undefined;
  private forwarder: Forwarder;
  /** Forwarders replaced by a reload, closed once their queries are done (or at close). */
  private readonly retired = new Set<Forwarder>();
  private retiredRejects = 0;
  private forwardTimeoutMs: number;
  readonly server: DnsServer;

  constructor(deps: DnsServingDeps) {
    this.deps = deps;
    const cfg = deps.config;
    this.cache = cfg.cache.enabled
      ? new DnsCache({ maxTtl: cfg.cache.maxTtl, capacity: cfg.cache.capacity, clock: deps.clock })
      : undefined;
    this.metrics = new DnsMetrics(
      deps.registry,
      serverLabel(cfg),
      this.cache,
      () => this.retiredRejects + this.forwarder.rejects,
    );
    this.forwardTimeoutMs = cfg.forwardTimeoutMs;
    this.forwarder = this.newForwarder(cfg, deps.upstreams);
    this.server = new DnsServer(
      this.newHandler(cfg, this.forwarder),
      { host: cfg.listen.host, port: cfg.listen.port, clock: deps.clock },
      deps.log,
    );
  }

  private newForwarder(cfg: DnsConfig, upstreams: readonly UpstreamAddress[]): Forwarder {
    return new Forwarder({
      upstreams,
      attemptTimeoutMs: cfg.forwardTimeoutMs,
      totalTimeoutMs: cfg.forwardTimeoutMs * 2,
      maxConcurrent: cfg.forwardMaxConcurrent,
      ...(this.cache ? { cache: this.cache } : {}),
      clock: this.deps.clock,
      onExchange: (to, rcode, s) => {
        this.metrics.observeUpstream(to, rcode, s);
      },
    });
  }

  private newHandler(cfg: DnsConfig, forwarder: Forwarder): DnsHandler {
    return new DnsHandler({
      index: this.deps.index,
      config: cfg.resolver,
      isSynced: this.deps.isSynced,
      forwarder,
      metrics: this.metrics,
      log: this.deps.log,
      transfer: cfg.transfer,
    });
  }

  /** Binds UDP and TCP; returns the port. */
  async listen(): Promise<number> {
    await this.server.listen();
    return this.server.port;
  }

  /**
   * Answers the next query with `cfg`'s resolver, upstreams and forward options (what a
   * running daemon can change); the old forwarder is closed once its queries are done.
   */
  reconfigure(cfg: DnsConfig, upstreams: readonly UpstreamAddress[]): void {
    const retiring = this.forwarder;
    const oldTimeoutMs = this.forwardTimeoutMs;
    this.forwarder = this.newForwarder(cfg, upstreams);
    this.forwardTimeoutMs = cfg.forwardTimeoutMs;
    this.server.setHandler(this.newHandler(cfg, this.forwarder));
    this.retired.add(retiring);
    this.deps.clock.setTimeout(
      () => {
        this.retiredRejects += retiring.rejects;
        retiring.close();
        this.retired.delete(retiring);
      },
      oldTimeoutMs * 2 + 1000,
    );
  }

  async close(): Promise<void> {
    this.forwarder.close();
    for (const f of this.retired) f.close();
    await this.server.close().catch(() => undefined);
  }
}
