// kube-proxy's metrics, by kube-proxy's names (`kubeproxy_*`, served on metricsBindAddress,
// default 127.0.0.1:10249), registered on an injected prom-client Registry so tests and
// several proxies in one process never share state. This file only defines and records;
// metrics-server.ts serves them. The two nfacct-backed counters are read from the kernel
// when scraped (addNfacctCounters).

import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import {
  NFACCT_CT_STATE_INVALID_DROPPED,
  NFACCT_LOCALHOST_NODEPORTS_ACCEPTED,
} from './iptables/names.js';
import type { NfacctCounters } from './iptables/options.js';

function range(start: number, step: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i * step);
}

function exponential(start: number, factor: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start * factor ** i);
}

/** Buckets of kube-proxy's network programming histogram: fine below a minute, coarse after. */
export const NETWORK_PROGRAMMING_BUCKETS: readonly number[] = [
  ...range(0.25, 0.25, 2),
  ...range(1, 1, 59),
  ...range(60, 5, 12),
  ...range(120, 30, 7),
];

/** The kube-proxy metric that reports each nfacct object's packet count. */
export const NFACCT_METRICS: readonly {
  readonly object: string;
  readonly option: keyof NfacctCounters;
  readonly name: string;
  readonly help: string;
}[] = [
  {
    object: NFACCT_LOCALHOST_NODEPORTS_ACCEPTED,
    option: 'localhostNodePortsAccepted',
    name: 'kubeproxy_iptables_localhost_nodeports_accepted_packets_total',
    help: 'Number of packets accepted on nodeports of loopback interface',
  },
  {
    object: NFACCT_CT_STATE_INVALID_DROPPED,
    option: 'ctStateInvalidDropped',
    name: 'kubeproxy_iptables_ct_state_invalid_dropped_packets_total',
    help: 'packets dropped by iptables to work around conntrack problems',
  },
];

/**
 * Every kube-proxy metric svcnet's proxy records. The `…_iptables_*` ones are registered in
 * iptables mode only, as kube-proxy registers each mode's own (nftables mode's are in
 * nftables/sync-metrics.ts).
 */
export class ProxyMetrics {
  readonly syncProxyRulesDuration: Histogram;
  readonly syncFullProxyRulesDuration: Histogram;
  readonly syncPartialProxyRulesDuration: Histogram;
  readonly networkProgrammingDuration: Histogram<'ip_family'>;
  readonly syncProxyRulesLastTimestamp: Gauge;
  readonly syncProxyRulesLastQueuedTimestamp: Gauge;
  readonly endpointChangesPending: Gauge;
  readonly endpointChangesTotal: Counter;
  readonly serviceChangesPending: Gauge;
  readonly serviceChangesTotal: Counter;
  readonly noLocalEndpointsTotal: Gauge<'traffic_policy' | 'ip_family'>;
  readonly iptablesTotal: Gauge<'table' | 'ip_family'>;
  readonly iptablesLast: Gauge<'table' | 'ip_family'>;
  readonly iptablesRestoreFailuresTotal: Counter;
  readonly iptablesPartialRestoreFailuresTotal: Counter;
  readonly conntrackReconcilerSyncDuration: Histogram;
  readonly conntrackReconcilerDeletedEntriesTotal: Counter<'ip_family'>;
  readonly healthzTotal: Counter<'code'>;
  readonly livezTotal: Counter<'code'>;
  /** svcnet's own: objects the proxy skipped because they were invalid. */
  readonly invalidObjectsTotal: Counter<'kind'>;

  constructor(registry: Registry, mode: 'iptables' | 'nftables' | 'ipvs' = 'iptables') {
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers });
    const gauge = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers });
    // Recorded but not exported in another mode (nothing writes them there).
    const iptablesOnly = mode === 'iptables' ? registers : [];
    const histogram = <L extends string>(
      name: string,
      help: string,
      buckets: number[],
      labelNames: L[] = [],
    ) => new Histogram<L>({ name, help, buckets, labelNames, registers });
    const syncBuckets = exponential(0.001, 2, 15);
    this.syncProxyRulesDuration = histogram(
      'kubeproxy_sync_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds',
      syncBuckets,
    );
    this.syncFullProxyRulesDuration = histogram(
      'kubeproxy_sync_full_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds for full resyncs',
      syncBuckets,
    );
    this.syncPartialProxyRulesDuration = histogram(
      'kubeproxy_sync_partial_proxy_rules_duration_seconds',
      'SyncProxyRules latency in seconds for partial resyncs',
      syncBuckets,
    );
    this.networkProgrammingDuration = histogram(
      'kubeproxy_network_programming_duration_seconds',
      'In Cluster Network Programming Latency in seconds',
      [...NETWORK_PROGRAMMING_BUCKETS],
      ['ip_family'],
    );
    this.syncProxyRulesLastTimestamp = gauge(
      'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
      'The last time proxy rules were successfully synced',
    );
    this.syncProxyRulesLastQueuedTimestamp = gauge(
      'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
      'The last time a sync of proxy rules was queued',
    );
    this.endpointChangesPending = gauge(
      'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
      'Pending proxy rules Endpoint changes',
    );
    this.endpointChangesTotal = counter(
      'kubeproxy_sync_proxy_rules_endpoint_changes_total',
      'Cumulative proxy rules Endpoint changes',
    );
    this.serviceChangesPending = gauge(
      'kubeproxy_sync_proxy_rules_service_changes_pending',
      'Pending proxy rules Service changes',
    );
    this.serviceChangesTotal = counter(
      'kubeproxy_sync_proxy_rules_service_changes_total',
      'Cumulative proxy rules Service changes',
    );
    this.noLocalEndpointsTotal = gauge(
      'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
      'Number of services with a Local traffic policy and no endpoints',
      ['traffic_policy', 'ip_family'],
    );
    this.iptablesTotal = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_iptables_total',
      help: 'Total number of iptables rules owned by kube-proxy',
      labelNames: ['table', 'ip_family'],
      registers: iptablesOnly,
    });
    this.iptablesLast = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_iptables_last',
      help: 'Number of iptables rules written by kube-proxy in last sync',
      labelNames: ['table', 'ip_family'],
      registers: iptablesOnly,
    });
    this.iptablesRestoreFailuresTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total',
      help: 'Cumulative proxy iptables restore failures',
      registers: iptablesOnly,
    });
    this.iptablesPartialRestoreFailuresTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total',
      help: 'Cumulative proxy iptables partial restore failures',
      registers: iptablesOnly,
    });
    this.conntrackReconcilerSyncDuration = histogram(
      'kubeproxy_conntrack_reconciler_sync_duration_seconds',
      'ReconcileConntrackFlowsLatency latency in seconds',
      exponential(0.001, 2, 15),
    );
    this.conntrackReconcilerDeletedEntriesTotal = counter(
      'kubeproxy_conntrack_reconciler_deleted_entries_total',
      'Cumulative conntrack flows deleted by conntrack reconciler',
      ['ip_family'],
    );
    this.healthzTotal = counter(
      'kubeproxy_proxy_healthz_total',
      'Cumulative proxy healthz HTTP status',
      ['code'],
    );
    this.livezTotal = counter('kubeproxy_proxy_livez_total', 'Cumulative proxy livez HTTP status', [
      'code',
    ]);
    this.invalidObjectsTotal = counter(
      'svcnet_proxy_invalid_objects_total',
      'Services and EndpointSlices skipped because they failed validation',
      ['kind'],
    );
  }

  /**
   * Registers the counters of the nfacct objects that exist (`enabled`); each scrape reads the
   * object's packet count through `read`. When a read fails the last value stays and
   * `onError` hears why (e.g. someone deleted the object).
   */
  addNfacctCounters(
    registry: Registry,
    enabled: NfacctCounters,
    read: (object: string) => Promise<number>,
    onError: (object: string, err: unknown) => void,
  ): Counter[] {
    const out: Counter[] = [];
    for (const m of NFACCT_METRICS) {
      if (!enabled[m.option]) continue;
      out.push(
        new Counter({
          name: m.name,
          help: m.help,
          registers: [registry],
          async collect() {
            try {
              const packets = await read(m.object);
              this.reset();
              this.inc(packets);
            } catch (err) {
              onError(m.object, err);
            }
          },
        }),
      );
    }
    return out;
  }
}
