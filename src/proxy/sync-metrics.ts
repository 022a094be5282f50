// What one successful sync records in the shared ProxyMetrics, whatever the mode: kube-proxy's
// sync durations (all, full, partial) and last-sync timestamp, the no-local-endpoints gauges
// by IP family, and the network programming latency. The modes add their own gauges and
// counters (iptables/sync-metrics.ts, nftables/sync-metrics.ts).

import type { Logger } from 'pino';
import type { IPFamily } from '../util/ip.js';
import type { ProxyMetrics } from './metrics.js';

/** What a sync's plan reports for the shared metrics. */
export interface SyncFigures {
  readonly fullSync: boolean;
  /** Service ports with a Local policy and no local endpoints, by policy. */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
}

/** Records one applied sync; `seconds` is its duration, `endMs` the clock at its end. */
export function recordSyncTiming(
  metrics: ProxyMetrics,
  figures: SyncFigures,
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

/**
 * Network programming latency: from each changed object's `endpoints.kubernetes.io/last-change-trigger-time`
 * (per Service, as the snapshot collected them) to `endMs`, when its rules were applied.
 */
export function recordNetworkProgramming(
  metrics: ProxyMetrics,
  log: Logger,
  family: IPFamily,
  triggerTimes: ReadonlyMap<string, readonly string[]>,
  endMs: number,
): void {
  const fam = { ip_family: family };
  for (const [service, times] of triggerTimes) {
    for (const t of times) {
      const at = Date.parse(t);
      if (Number.isNaN(at)) continue;
      const latency = Math.max(0, (endMs - at) / 1000);
      metrics.networkProgrammingDuration.observe(fam, latency);
      log.debug({ ipFamily: family, service, elapsed: latency }, 'Network programming');
    }
  }
}
