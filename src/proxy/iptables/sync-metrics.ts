// What one successful sync of the iptables proxier records beside the shared sync metrics
// (../sync-metrics.ts): the rule counts of kube-proxy's `kubeproxy_sync_proxy_rules_iptables_*`
// gauges, by table and IP family.

import type { IPFamily } from '../../util/ip.js';
import type { ProxyMetrics } from '../metrics.js';
import type { IptablesPlan } from './plan.js';

/** Records the rule counts of one applied plan. */
export function recordIptablesCounts(
  metrics: ProxyMetrics,
  plan: IptablesPlan,
  family: IPFamily,
): void {
  const fam = { ip_family: family };
  metrics.iptablesTotal.set({ table: 'filter', ...fam }, plan.counts.filterRules);
  metrics.iptablesTotal.set({ table: 'nat', ...fam }, plan.counts.natRulesTotal);
  metrics.iptablesLast.set({ table: 'filter', ...fam }, plan.counts.filterRules);
  metrics.iptablesLast.set({ table: 'nat', ...fam }, plan.counts.natRulesLast);
}
