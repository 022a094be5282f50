// The proxy daemon (`svcnet proxy`): puts the pieces together for one node the way
// kube-proxy's server does — start the healthz and metrics servers, remove the other proxy
// modes' leftovers (cleanup.ts), make the sysctls, build the mode's proxier (dataplane.ts:
// iptables with its variant detection, nfacct objects and canary monitor, or nftables), start
// Service/EndpointSlice/Node informers with kube-proxy's selectors (and ServiceCIDRs in
// nftables mode) and run the proxier's sync loop. Everything effectful is injected (Execer,
// Sysctl, Clock, informer factory, logger, kernel backends) so the same code runs against
// Fakes in tests and the bench.

import { cpus, networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { LABEL_HEADLESS, LABEL_SERVICE_PROXY_NAME } from '../kube/names.js';
import type { Informer } from '../kube/informer.js';
import { isResourceNotServed } from '../kube/service-cidr.js';
import type { KubeObject } from '../kube/types.js';
import type { IptablesBackend } from '../netfilter/iptables/backend.js';
import type { Execer } from '../os/exec.js';
import { RealNfacct } from '../os/nfacct.js';
import type { Nfacct } from '../os/nfacct.js';
import type { Sysctl } from '../os/sysctl.js';
import type { IPFamily } from '../util/ip.js';
import { cidrContains, formatIP, parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { Clock } from '../util/clock.js';
import { cleanupLeftovers, nftTableCleaner, realCleanupSeams } from './cleanup.js';
import type { CleanupSeams } from './cleanup.js';
import { makeDataplane } from './dataplane.js';
import type { DataplaneVariant, NftBackendFor } from './dataplane.js';
import { ServiceHealthServers } from './healthcheck-nodeports.js';
import { ProxyHealth, healthzHandler } from './healthz.js';
import type { ProxyDaemonConfig } from './config.js';
import type { NfacctCounters } from './iptables/options.js';
import { NO_NFACCT } from './proxier-options.js';
import { listenHttp, parseBindAddress } from './listen.js';
import type { Listening } from './listen.js';
import { listenFailed } from '../util/listen-error.js';
import { metricsHandler } from './metrics-server.js';
import { NFACCT_METRICS, ProxyMetrics } from './metrics.js';
import { applySysctls, planSysctls, readTcpBeLiberal } from './node-setup.js';
import type { Proxier, ProxierInformers } from './proxier.js';
import { SvcnetError } from '../errors.js';

export { NO_NFACCT };

/** Services the proxy watches: not claimed by another proxy, not headless (kube-proxy's selector). */
export const SERVICE_LABEL_SELECTOR = `!${LABEL_SERVICE_PROXY_NAME},!${LABEL_HEADLESS}`;
/** EndpointSlices the proxy watches: not those of headless Services. */
export const ENDPOINT_SLICE_LABEL_SELECTOR = `!${LABEL_HEADLESS}`;

/**
 * The informers the daemon needs (list+watch over HTTP in production, Fakes in tests); the
 * ServiceCIDR one is started in nftables mode only (iptables mode ignores ServiceCIDRs).
 */
export type ProxyInformers = Required<Omit<ProxierInformers, 'serviceCIDRs'>> &
  Pick<ProxierInformers, 'serviceCIDRs'>;

export interface ProxyDaemonDeps {
  readonly execer: Execer;
  readonly sysctl: Sysctl;
  readonly clock: Clock;
  readonly log: Logger;
  readonly informers: ProxyInformers;
  /** Defaults to a new Registry. */
  readonly registry?: Registry;
  /** Local interface addresses (`ip/prefix`); defaults to node:os networkInterfaces(). */
  readonly localAddresses?: () => string[];
  /** Whether this process runs in the host's initial network namespace. */
  readonly hostNetns?: boolean;
  /** Override the iptables backends (tests: Fakes). */
  readonly iptables?: (family: IPFamily) => IptablesBackend;
  /** Override the nftables backends (tests: Fakes). */
  readonly nftables?: NftBackendFor;
  /** nfacct objects; defaults to the `nfacct` tool run through `execer` (iptables mode). */
  readonly nfacct?: Nfacct;
  /**
   * Where the other modes' leftovers are removed at start. Default: the injected backends
   * when `iptables` is injected (tests), else the real tools through `execer`.
   */
  readonly cleanup?: CleanupSeams;
}

/** A running daemon. */
export interface ProxyDaemon {
  readonly proxier: Proxier;
  readonly registry: Registry;
  readonly healthzPort: number | undefined;
  readonly metricsPort: number | undefined;
  /** The iptables variant programmed (iptables mode), `nftables`, or `injected` (tests). */
  readonly variant: DataplaneVariant;
  /** Which nfacct objects exist, so the rules count into them (none in nftables mode). */
  readonly nfacct: NfacctCounters;
  stop(): Promise<void>;
}

/** Addresses of the local interfaces, `ip/prefix`, sorted (stable across syncs). */
export function systemLocalAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.cidr !== null) out.push(a.cidr);
  return out.sort();
}

/**
 * Creates kube-proxy's nfacct objects (unless present) and says which exist. A host without
 * the tool or kernel support is logged once and leaves the counters off; never fatal.
 */
export async function ensureNfacctCounters(nfacct: Nfacct, log: Logger): Promise<NfacctCounters> {
  const result: { -readonly [K in keyof NfacctCounters]: boolean } = { ...NO_NFACCT };
  const failed: Record<string, string> = {};
  for (const m of NFACCT_METRICS) {
    try {
      await nfacct.ensure(m.object);
      result[m.option] = true;
    } catch (err) {
      failed[m.object] = err instanceof Error ? err.message : String(err);
    }
  }
  if (Object.keys(failed).length > 0)
    log.warn(
      { failed },
      'Cannot create nfacct objects; their rules run without packet counting and their metrics are not exported',
    );
  return result;
}

/** The healthz and metrics listeners, bound (or none when their address is empty). */
interface Listeners {
  readonly healthzPort: number | undefined;
  readonly metricsPort: number | undefined;
  close(): Promise<void>;
}

/**
 * Binds the healthz and metrics servers before any kernel state is touched: a port that is
 * taken ends the start-up whole (LISTEN_FAILED naming the address and the flag), not
 * half-way; what was bound is closed again.
 */
async function bindListeners(
  cfg: ProxyDaemonConfig,
  health: ProxyHealth,
  metrics: ProxyMetrics,
  registry: Registry,
): Promise<Listeners> {
  const listeners: Listening[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(listeners.map((l) => l.close()));
  };
  /** Binds one listener unless its address is empty; LISTEN_FAILED names it and its flag. */
  const bind = async (
    address: string,
    what: string,
    flag: string,
    handler: Parameters<typeof listenHttp>[1],
  ): Promise<number | undefined> => {
    if (address === '') return undefined;
    const at = parseBindAddress(address, flag);
    let l: Listening;
    try {
      l = await listenHttp(at, handler);
    } catch (e) {
      throw listenFailed(what, at.host, at.port, flag, e);
    }
    listeners.push(l);
    return l.port;
  };
  try {
    const healthzPort = await bind(
      cfg.healthzBindAddress,
      '/healthz',
      '--healthz-bind-address',
      healthzHandler(health, {
        onHealthz: (code) => {
          metrics.healthzTotal.inc({ code: String(code) });
        },
        onLivez: (code) => {
          metrics.livezTotal.inc({ code: String(code) });
        },
      }),
    );
    const metricsPort = await bind(
      cfg.metricsBindAddress,
      '/metrics',
      '--metrics-bind-address',
      metricsHandler({ registry, mode: cfg.mode, configz: () => cfg }),
    );
    return { healthzPort, metricsPort, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** What the node setup found out about the host. */
interface NodeFacts {
  readonly conntrackTCPLiberal: boolean;
  readonly nfacctCounters: NfacctCounters;
}

/** Sysctls, then the nfacct objects and their metrics (never fatal). */
async function setUpNode(
  cfg: ProxyDaemonConfig,
  deps: ProxyDaemonDeps,
  metrics: ProxyMetrics,
  registry: Registry,
): Promise<NodeFacts> {
  const { log } = deps;
  const iptablesMode = cfg.mode === 'iptables';
  const sysctls = planSysctls({
    ipv4: cfg.families.includes('IPv4'),
    // route_localnet serves iptables mode's NodePorts on 127.0.0.1; nftables mode has none.
    localhostNodePorts: iptablesMode && cfg.localhostNodePorts,
    conntrack: cfg.conntrack,
    cpus: cpus().length,
    hostNetns: deps.hostNetns ?? false,
  });
  await applySysctls(deps.sysctl, sysctls, log);
  const conntrackTCPLiberal = await readTcpBeLiberal(deps.sysctl);
  // nfacct objects count iptables rules; nftables mode's rules use none.
  if (!iptablesMode) return { conntrackTCPLiberal, nfacctCounters: NO_NFACCT };
  const nfacct = deps.nfacct ?? new RealNfacct(deps.execer);
  const nfacctCounters = await ensureNfacctCounters(nfacct, log);
  metrics.addNfacctCounters(
    registry,
    nfacctCounters,
    async (object) => (await nfacct.get(object)).packets,
    (object, err) => {
      log.warn(
        { object, err: err instanceof Error ? err.message : String(err) },
        'Cannot read nfacct object',
      );
    },
  );
  return { conntrackTCPLiberal, nfacctCounters };
}

/** Starts the proxy (see the file header). Resolves once servers listen and informers started. */
export async function startProxyDaemon(
  cfg: ProxyDaemonConfig,
  deps: ProxyDaemonDeps,
): Promise<ProxyDaemon> {
  const { log, clock } = deps;
  if (cfg.families.length === 0) throw new SvcnetError('INVALID_INPUT', 'no IP family to program');
  const registry = deps.registry ?? new Registry();
  const metrics = new ProxyMetrics(registry, cfg.mode);
  const health = new ProxyHealth(clock, 2 * cfg.syncPeriodMs, cfg.families);
  const listeners = await bindListeners(cfg, health, metrics, registry);
  const { healthzPort, metricsPort } = listeners;

  await cleanupLeftovers(cfg.mode, deps.cleanup ?? defaultCleanupSeams(cfg, deps), log);
  const { conntrackTCPLiberal, nfacctCounters } = await setUpNode(cfg, deps, metrics, registry);
  const localAddresses = deps.localAddresses ?? systemLocalAddresses;

  const serviceHealth = new ServiceHealthServers({
    addresses: healthCheckAddresses(cfg, localAddresses()),
    isProxyHealthy: () => health.status().healthy,
    onError: (service, port, err) => {
      log.error(
        { service, port, err: err instanceof Error ? err.message : String(err) },
        'Failed to start healthcheck',
      );
    },
  });

  const { proxier, variant, monitors } = await makeDataplane(cfg, {
    ...deps,
    registry,
    metrics,
    health,
    serviceHealth,
    host: () => ({ localAddresses: localAddresses(), conntrackTCPLiberal, nfacct: nfacctCounters }),
  });
  const informers = informersOfMode(cfg, deps.informers, log);
  proxier.attach(informers);

  proxier.start();
  for (const m of monitors) m.start();
  // Informers retry by themselves; the proxier programs nothing until Services and
  // EndpointSlices have both synced (ServiceCIDRs are not waited for, as in kube-proxy).
  const all: Pick<Informer<KubeObject>, 'start' | 'stop'>[] = [
    informers.services,
    informers.endpointSlices,
    informers.nodes,
  ];
  if (informers.serviceCIDRs !== undefined) all.push(informers.serviceCIDRs);
  const starts = all.map((i) =>
    i.start().catch((err: unknown) => {
      log.error({ err }, 'Informer failed to start');
    }),
  );
  void Promise.all(starts);
  log.info(
    {
      node: cfg.nodeName,
      mode: cfg.mode,
      families: cfg.families,
      variant,
      healthzPort,
      metricsPort,
      nfacct: nfacctCounters,
    },
    'Proxy started',
  );

  return {
    proxier,
    registry,
    healthzPort,
    metricsPort,
    variant,
    nfacct: nfacctCounters,
    stop: async () => {
      for (const m of monitors) await m.stop();
      await proxier.stop();
      await Promise.all(all.map((i) => i.stop()));
      await serviceHealth.close();
      await listeners.close();
    },
  };
}

/**
 * The informers the mode reads: nftables mode follows ServiceCIDRs when given one. A server
 * that answers 404 for them (before Kubernetes 1.33, or with the API off) is logged once and
 * the informer stopped: the proxy runs on without the drop rule for unallocated ClusterIPs.
 * Other failures are retried by the informer.
 */
function informersOfMode(
  cfg: ProxyDaemonConfig,
  informers: ProxyInformers,
  log: Logger,
): ProxyInformers {
  const { serviceCIDRs, ...rest } = informers;
  if (cfg.mode !== 'nftables' || serviceCIDRs === undefined) return rest;
  let notServed = false;
  serviceCIDRs.addHandlers({
    onError: (err) => {
      if (notServed) return;
      if (isResourceNotServed(err)) {
        notServed = true;
        log.info('The API server does not serve ServiceCIDRs; continuing without them');
        void serviceCIDRs.stop();
        return;
      }
      log.warn(
        { error: err instanceof Error ? err.message : String(err), resource: 'servicecidrs' },
        'Watch failed; retrying',
      );
    },
  });
  return { ...rest, serviceCIDRs };
}

/** Where health-check node port servers listen: node IPs matched by nodePortAddresses, or all. */
export function healthCheckAddresses(
  cfg: ProxyDaemonConfig,
  localAddresses: readonly string[],
): string[] {
  const cidrs = cfg.nodePortAddresses
    .filter((a) => a !== 'all' && a !== 'primary' && a !== 'localhost')
    .map((c) => parseCIDRSloppy(c))
    .filter((c) => c !== undefined);
  if (cidrs.length === 0 || cfg.nodePortAddresses.includes('all'))
    return cfg.families.includes('IPv4') ? ['0.0.0.0'] : ['::'];
  const out: string[] = [];
  for (const a of localAddresses) {
    const ip = parseIPSloppy(a.split('/')[0] ?? '');
    if (ip === undefined) continue;
    if (cidrs.some((c) => cidrContains(c, ip))) out.push(formatIP(ip));
  }
  return out;
}

/**
 * Where the daemon removes the other modes' leftovers: the injected backends in tests (no
 * nftables cleaner unless `nftables` is injected), the real tools otherwise.
 */
function defaultCleanupSeams(cfg: ProxyDaemonConfig, deps: ProxyDaemonDeps): CleanupSeams {
  const { iptables, nftables } = deps;
  if (iptables === undefined && nftables === undefined)
    return realCleanupSeams(deps.execer, cfg.iptablesVariant);
  return {
    iptables: () => Promise.resolve(iptables === undefined ? [] : cfg.families.map(iptables)),
    nftables: () =>
      Promise.resolve(
        nftables === undefined ? [] : cfg.families.map((f) => nftTableCleaner(nftables(f))),
      ),
  };
}
