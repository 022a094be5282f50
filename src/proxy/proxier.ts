// The contract between the proxy daemon and a dataplane: what `svcnet proxy` (daemon.ts),
// the canary and the tests need from a proxier, whatever it programs. The iptables proxier
// (iptables/proxier.ts) implements it; nftables and IPVS proxiers plug in beside it. Each
// one feeds informer events into its change trackers, syncs through the shared
// BoundedFrequencyRunner, reports health to ProxyHealth, records the shared ProxyMetrics and
// cleans stale UDP conntrack entries (conntrack-cleanup.ts): those pieces know nothing of
// the dataplane.

import type { Informer } from '../kube/informer.js';
import type { EndpointSlice, Node, Service, ServiceCIDR } from '../kube/types.js';
import type { IPFamily } from '../util/ip.js';

/** Result of one family's sync, for callers that watch (tests, bench). */
export interface SyncReport {
  readonly family: IPFamily;
  readonly fullSync: boolean;
  /** Clock time the sync started (changes made before it are included). */
  readonly startedAt: number;
  readonly elapsedMs: number;
  /** Size of what was handed to the kernel (restore input, nft script). */
  readonly restoreBytes: number;
}

/** The informers a proxier listens to (the Node one is optional in tests). */
export interface ProxierInformers {
  readonly services: Informer<Service>;
  readonly endpointSlices: Informer<EndpointSlice>;
  readonly nodes?: Informer<Node>;
  /** ServiceCIDRs: read by the nftables mode only; absent when the server does not serve them. */
  readonly serviceCIDRs?: Informer<ServiceCIDR>;
}

/** A dataplane's proxier (see the file header). */
export interface Proxier {
  /** Registers handlers on the informers (call before starting them). */
  attach(informers: ProxierInformers): void;
  /** Starts the sync loop (nothing is programmed until both caches have synced). */
  start(): void;
  stop(): Promise<void>;
  /**
   * One sync of every family. Partial when only some Services changed, full otherwise (the
   * first sync, after a failure, periodically, or after `forceFullSync`). Rejects after
   * syncing the other families if one failed, so the runner retries.
   */
  syncProxyRules(): Promise<void>;
  /** Forces a full resync soon (the canary saw flushed rules, a topology change). */
  forceFullSync(reason: string): void;
  /** Whether a sync is in progress (the canary waits). */
  isSyncing(): boolean;
  /** Whether at least one sync succeeded. */
  hasSynced(): boolean;
  /** Called after every sync attempt that programmed something. */
  onSync(listener: (reports: SyncReport[]) => void): void;
}
