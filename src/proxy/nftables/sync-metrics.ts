// What the nftables proxier records beside the shared sync metrics (../sync-metrics.ts):
// kube-proxy's nftables-only counters (`kubeproxy_sync_proxy_rules_nftables_sync_failures_total`,
// `…_cleanup_failures_total`, registered only in nftables mode as kube-proxy registers them
// per mode) and svcnet's gauge of Service ports the plan left out (the kernel would refuse
// them).

import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';

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
