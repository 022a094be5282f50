// What the nftables proxier records: kube-proxy's nftables-only counters
// (`kubeproxy_sync_proxy_rules_nftables_sync_failures_total`, `…_cleanup_failures_total`,
// registered only in nftables mode as kube-proxy registers them per mode), svcnet's gauge of
// Service ports the plan left out (the kernel would refuse them) and, per successful
// sync, the shared ProxyMetrics: sync durations (all, full, partial), the last-sync timestamp
// and the no-local-endpoints gauges by IP family. Network programming latency is recorded
// with the iptables proxier's recordNetworkProgramming (the same metric in both modes).

import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { IPFamily } from '../../util/ip.js';
import type { ProxyMetrics } from '../metrics.js';

/** kube-proxy's nftables-mode counters, on an injected registry. */
export class NftablesMetrics {
  /** A sync whose transaction the kernel refused (full or partial). */
  readonly syncFailuresTotal: Counter;
  /** A failed delete of stale chains (it forces a full sync). */
  readonly cleanupFailuresTotal: Counter;
  /** svcnet's own: Service ports left out because the kernel would refuse them. */
  readonly skippedServicePorts: Gauge<'ip_family'>;

  constructor(registry: Registry) {
    this.syncFailuresTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
      help: 'Cumulative proxy nftables sync failures',
      registers: [registry],
    });
    this.cleanupFailuresTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total',
      help: 'Cumulative proxy nftables cleanup failures',
      registers: [registry],
    });
    this.skippedServicePorts = new Gauge({
      name: 'svcnet_proxy_nftables_skipped_service_ports',
      help: 'Service ports left out of the nftables rules because the kernel would refuse them',
      labelNames: ['ip_family'],
      registers: [registry],
    });
  }
}

/** What a sync's plan reports for the metrics. */
export interface NftSyncFigures {
  readonly fullSync: boolean;
  /** Services with a Local policy and no local endpoints, by policy. */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
}

/** Records one applied sync; `seconds` is its duration, `endMs` the clock at its end. */
export function recordNftSyncMetrics(
  metrics: ProxyMetrics,
  figures: NftSyncFigures,
  family: IPFamily,
  seconds: number,
  endMs: number,
): void {
  metrics.syncProxyRulesDuration.observe(seconds);
  (figures.fullSync
    ? metrics.syncFullProxyRulesDuration
    : metrics.syncPartialProxyRulesDuration
  ).observe(seconds);
  metrics.syncProxyRulesLastTimestamp.set(endMs / 1000);
  const fam = { ip_family: family };
  metrics.noLocalEndpointsTotal.set(
    { traffic_policy: 'internal', ...fam },
    figures.noLocalEndpointsInternal,
  );
  metrics.noLocalEndpointsTotal.set(
    { traffic_policy: 'external', ...fam },
    figures.noLocalEndpointsExternal,
  );
}
