// Prometheus metrics of the DNS server under CoreDNS's names, so its dashboards and alerts
// work unchanged: coredns_dns_requests_total, coredns_dns_responses_total,
// coredns_dns_request_duration_seconds, coredns_dns_request_size_bytes,
// coredns_dns_response_size_bytes, coredns_cache_*, coredns_forward_*/coredns_proxy_*,
// coredns_kubernetes_* and coredns_build_info. Registered on an injected Registry.
//
// The query path must stay cheap at 100k+ QPS, so it only bumps plain counters keyed by a
// short string; prom-client sees them at scrape time (counters through `collect`, the
// histograms through a subclass whose get() renders our own bucket arrays).

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DnsCache } from './cache.js';

const DURATION_BUCKETS = [
  0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024,
  2.048, 4.096, 8.192,
];
const SIZE_BUCKETS = [
  0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16000, 32000, 48000, 64000,
];

type Labels = Record<string, string>;

interface Series {
  readonly labels: Labels;
  readonly counts: Float64Array;
  sum: number;
  n: number;
}

/** Bucketed observations per label set, rendered by FastHistogram.get(). */
class BucketSet {
  readonly series = new Map<string, Series>();
  readonly buckets: readonly number[];
  constructor(buckets: readonly number[]) {
    this.buckets = buckets;
  }

  /** The series for `key` (created with `labels()` on first use). */
  entry(key: string, labels: () => Labels): Series {
    let s = this.series.get(key);
    if (!s) {
      s = { labels: labels(), counts: new Float64Array(this.buckets.length), sum: 0, n: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  add(s: Series, value: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (value <= (b[i] ?? Infinity)) {
        s.counts[i] = (s.counts[i] ?? 0) + 1;
        break;
      }
    }
    s.sum += value;
    s.n++;
  }

  observe(key: string, labels: () => Labels, value: number): void {
    this.add(this.entry(key, labels), value);
  }
}

class FastHistogram extends Histogram {
  private readonly set: BucketSet;
  constructor(
    name: string,
    help: string,
    labelNames: string[],
    set: BucketSet,
    registry: Registry,
  ) {
    super({ name, help, labelNames, buckets: [...set.buckets], registers: [registry] });
    this.set = set;
  }

  override async get(): ReturnType<Histogram['get']> {
    return this.getForPromString();
  }

  /** prom-client's text exposition calls this (not get()) when a metric has it. */
  async getForPromString(): ReturnType<Histogram['get']> {
    // The base implementation gives name, help, type and aggregator (its own series are empty).
    const proto = Histogram.prototype as unknown as {
      getForPromString(this: Histogram): ReturnType<Histogram['get']>;
    };
    const base = await proto.getForPromString.call(this);
    return { ...base, values: this.render(base.name) };
  }

  private render(name: string): Awaited<ReturnType<Histogram['get']>>['values'] {
    const values: Awaited<ReturnType<Histogram['get']>>['values'] = [];
    for (const s of this.set.series.values()) {
      let cumulative = 0;
      this.set.buckets.forEach((le, i) => {
        cumulative += s.counts[i] ?? 0;
        values.push({
          labels: { ...s.labels, le },
          value: cumulative,
          metricName: `${name}_bucket`,
        });
      });
      values.push({
        labels: { ...s.labels, le: '+Inf' },
        value: s.n,
        metricName: `${name}_bucket`,
      });
      values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
      values.push({ labels: s.labels, value: s.n, metricName: `${name}_count` });
    }
    return values;
  }
}

/** Counts keyed by a joined label string, flushed into a prom-client Counter on scrape. */
class CounterSet {
  readonly pending = new Map<string, { labels: Labels; n: number }>();
  entry(key: string, labels: () => Labels): { labels: Labels; n: number } {
    let e = this.pending.get(key);
    if (!e) {
      e = { labels: labels(), n: 0 };
      this.pending.set(key, e);
    }
    return e;
  }
  inc(key: string, labels: () => Labels): void {
    this.entry(key, labels).n++;
  }
  flush(c: Counter): void {
    for (const e of this.pending.values()) if (e.n > 0) c.inc(e.labels, e.n);
    for (const e of this.pending.values()) e.n = 0;
  }
}

/** Everything one kind of query touches, found with a single map lookup per query. */
export interface Combo {
  readonly req: { n: number };
  readonly resp: { n: number };
  readonly duration: Series;
  readonly reqSize: Series;
  readonly respSize: Series;
}

/** The labels of one kind of query: the series its observations go to. */
export interface QueryLabels {
  readonly proto: 'udp' | 'tcp';
  readonly family: '1' | '2';
  readonly type: string;
  readonly zone: string;
  readonly rcode: string;
  /** Which part answered: kubernetes, forward, cache, or '' for errors before either. */
  readonly plugin: string;
}

/** One answered query. */
export interface QueryObservation extends QueryLabels {
  readonly seconds: number;
  readonly requestSize: number;
  readonly responseSize: number;
}

const COMMON_TYPES = new Set([
  'A',
  'AAAA',
  'NS',
  'PTR',
  'SOA',
  'CNAME',
  'MX',
  'TXT',
  'SRV',
  'IXFR',
  'AXFR',
  'ANY',
  'HTTPS',
]);

/** The server's metrics. `server` is the listen address label, e.g. `dns://:53`. */
export class DnsMetrics {
  private readonly requests = new CounterSet();
  private readonly responses = new CounterSet();
  private readonly duration = new BucketSet(DURATION_BUCKETS);
  private readonly reqSize = new BucketSet(SIZE_BUCKETS);
  private readonly respSize = new BucketSet(SIZE_BUCKETS);
  private readonly proxy = new BucketSet(DURATION_BUCKETS);
  /** Informer objects skipped as invalid, by kind. */
  private readonly skipped = new CounterSet();

  private readonly server: string;

  constructor(registry: Registry, server: string, cache?: DnsCache, forwardRejects?: () => number) {
    this.server = server;
    const requests = this.requests;
    const responses = this.responses;
    const skipped = this.skipped;
    new Counter({
      name: 'coredns_dns_requests_total',
      help: 'Counter of DNS requests made per zone, protocol and family.',
      labelNames: ['server', 'zone', 'view', 'proto', 'family', 'type'],
      registers: [registry],
      collect() {
        requests.flush(this);
      },
    });
    new Counter({
      name: 'coredns_dns_responses_total',
      help: 'Counter of response status codes.',
      labelNames: ['server', 'zone', 'view', 'rcode', 'plugin'],
      registers: [registry],
      collect() {
        responses.flush(this);
      },
    });
    new FastHistogram(
      'coredns_dns_request_duration_seconds',
      'Histogram of the time (in seconds) each request took per zone.',
      ['server', 'zone', 'view', 'type'],
      this.duration,
      registry,
    );
    new FastHistogram(
      'coredns_dns_request_size_bytes',
      'Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.',
      ['server', 'zone', 'view', 'proto'],
      this.reqSize,
      registry,
    );
    new FastHistogram(
      'coredns_dns_response_size_bytes',
      'Size of the returned response in bytes.',
      ['server', 'zone', 'view', 'proto'],
      this.respSize,
      registry,
    );
    new FastHistogram(
      'coredns_proxy_request_duration_seconds',
      'Histogram of the time each request took.',
      ['proxy_name', 'to', 'rcode'],
      this.proxy,
      registry,
    );
    new Gauge({
      name: 'coredns_build_info',
      help: 'A metric with a constant 1 value labeled by version, revision, and goversion from which CoreDNS was built.',
      labelNames: ['version', 'revision', 'goversion'],
      registers: [registry],
      // One per daemon when --workers N sums the processes' metrics.
      aggregator: 'first',
      collect() {
        this.set({ version: 'svcnet-0.1.0', revision: '', goversion: process.version }, 1);
      },
    });
    new Counter({
      name: 'svcnet_dns_skipped_objects_total',
      help: 'API objects the DNS index skipped as invalid, by kind.',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        skipped.flush(this);
      },
    });
    if (forwardRejects) {
      let last = 0;
      new Counter({
        name: 'coredns_forward_max_concurrent_rejects_total',
        help: 'Counter of the number of queries rejected because the concurrent queries were at maximum.',
        registers: [registry],
        collect() {
          const now = forwardRejects();
          if (now > last) this.inc(now - last);
          last = now;
        },
      });
    }
    if (cache) this.registerCache(registry, cache);
  }

  private registerCache(registry: Registry, cache: DnsCache): void {
    const server = this.server;
    new Gauge({
      name: 'coredns_cache_entries',
      help: 'The number of elements in the cache.',
      labelNames: ['server', 'type', 'zones', 'view'],
      registers: [registry],
      collect() {
        for (const type of ['success', 'denial'] as const)
          this.set({ server, type, zones: '.', view: '' }, cache.size(type));
      },
    });
    const last = { success: 0, denial: 0, misses: 0, requests: 0, evSuccess: 0, evDenial: 0 };
    new Counter({
      name: 'coredns_cache_hits_total',
      help: 'The count of cache hits.',
      labelNames: ['server', 'type', 'zones', 'view'],
      registers: [registry],
      collect() {
        for (const type of ['success', 'denial'] as const) {
          const now = cache.stats[type].hits;
          if (now > last[type]) this.inc({ server, type, zones: '.', view: '' }, now - last[type]);
          last[type] = now;
        }
      },
    });
    new Counter({
      name: 'coredns_cache_misses_total',
      help: 'The count of cache misses.',
      labelNames: ['server', 'zones', 'view'],
      registers: [registry],
      collect() {
        const now = cache.stats.success.misses;
        if (now > last.misses) this.inc({ server, zones: '.', view: '' }, now - last.misses);
        last.misses = now;
      },
    });
    new Counter({
      name: 'coredns_cache_requests_total',
      help: 'The count of cache requests.',
      labelNames: ['server', 'zones', 'view'],
      registers: [registry],
      collect() {
        const s = cache.stats;
        const now = s.success.hits + s.denial.hits + s.success.misses;
        if (now > last.requests) this.inc({ server, zones: '.', view: '' }, now - last.requests);
        last.requests = now;
      },
    });
    new Counter({
      name: 'coredns_cache_evictions_total',
      help: 'The count of cache evictions.',
      labelNames: ['server', 'type', 'zones', 'view'],
      registers: [registry],
      collect() {
        const s = cache.stats;
        if (s.success.evictions > last.evSuccess)
          this.inc(
            { server, type: 'success', zones: '.', view: '' },
            s.success.evictions - last.evSuccess,
          );
        if (s.denial.evictions > last.evDenial)
          this.inc(
            { server, type: 'denial', zones: '.', view: '' },
            s.denial.evictions - last.evDenial,
          );
        last.evSuccess = s.success.evictions;
        last.evDenial = s.denial.evictions;
      },
    });
  }

  private readonly combos = new Map<string, Combo>();

  /** Records one answered query (the hot path: one string key and one map lookup). */
  observe(o: QueryObservation): void {
    this.record(this.combo(o), o.seconds, o.requestSize, o.responseSize);
  }

  /** The series one kind of query updates; callers may keep it to skip the lookup. */
  combo(labels: QueryLabels): Combo {
    const { proto, family, type: qtype, zone, rcode, plugin } = labels;
    const key = `${zone}|${qtype}|${rcode}|${plugin}|${proto}|${family}`;
    let c = this.combos.get(key);
    if (!c) {
      const server = this.server;
      const type = COMMON_TYPES.has(qtype) ? qtype : 'other';
      const sizeLabels = (): Labels => ({ server, zone, view: '', proto });
      c = {
        req: this.requests.entry(`${zone}|${proto}|${family}|${type}`, () => ({
          server,
          zone,
          view: '',
          proto,
          family,
          type,
        })),
        resp: this.responses.entry(`${zone}|${rcode}|${plugin}`, () => ({
          server,
          zone,
          view: '',
          rcode,
          plugin,
        })),
        duration: this.duration.entry(`${zone}|${type}`, () => ({ server, zone, view: '', type })),
        reqSize: this.reqSize.entry(`${zone}|${proto}`, sizeLabels),
        respSize: this.respSize.entry(`${zone}|${proto}`, sizeLabels),
      };
      this.combos.set(key, c);
    }
    return c;
  }

  /** Adds one query to a combo's series. */
  record(c: Combo, seconds: number, requestSize: number, responseSize: number): void {
    c.req.n++;
    c.resp.n++;
    this.duration.add(c.duration, seconds);
    this.reqSize.add(c.reqSize, requestSize);
    this.respSize.add(c.respSize, responseSize);
  }

  /** One upstream exchange (forward plugin). */
  observeUpstream(to: string, rcode: string, seconds: number): void {
    this.proxy.observe(`${to}|${rcode}`, () => ({ proxy_name: 'forward', to, rcode }), seconds);
  }

  /** An API object the index could not use. */
  skippedObject(kind: string): void {
    this.skipped.inc(kind, () => ({ kind }));
  }
}
