// What one successful sync of the iptables proxier records in the shared ProxyMetrics:
// kube-proxy's sync durations and timestamp, the rule counts of the
// `kubeproxy_sync_proxy_rules_iptables_*` gauges and the no-local-endpoints gauges, all
// labelled by IP family where kube-proxy labels them, and the network programming latency.

import type { Logger } from 'pino';
import type { IPFamily } from '../../util/ip.js';
import type { ProxyMetrics } from '../metrics.js';
import type { IptablesPlan } from './plan.js';

/** Records one applied plan; `seconds` is the sync's duration, `endMs` the clock at its end. */
export function recordSyncMetrics(
  metrics: ProxyMetrics,
  plan: IptablesPlan,
  family: IPFamily,
  seconds: number,
  endMs: number,
): void {
  metrics.syncProxyRulesDuration.observe(seconds);
  (plan.fullSync
    ? metrics.syncFullProxyRulesDuration
    : metrics.syncPartialProxyRulesDuration
  ).observe(seconds);
  metrics.syncProxyRulesLastTimestamp.set(endMs / 1000);
  const fam = { ip_family: family };
  metrics.iptablesTotal.set({ table: 'filter', ...fam }, plan.counts.filterRules);
  metrics.iptablesTotal.set({ table: 'nat', ...fam }, plan.counts.natRulesTotal);
  metrics.iptablesLast.set({ table: 'filter', ...fam }, plan.counts.filterRules);
  metrics.iptablesLast.set({ table: 'nat', ...fam }, plan.counts.natRulesLast);
  metrics.noLocalEndpointsTotal.set(
    { traffic_policy: 'internal', ...fam },
    plan.noLocalEndpointsInternal,
  );
  metrics.noLocalEndpointsTotal.set(
    { traffic_policy: 'external', ...fam },
    plan.noLocalEndpointsExternal,
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
