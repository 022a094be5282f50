// The proxy daemon (`svcnet proxy`): puts the pieces together for one node the way
// kube-proxy's server does — detect the iptables variant, make the sysctls, start the
// healthz and metrics servers, start Service/EndpointSlice/Node informers with kube-proxy's
// selectors, create the nfacct objects the rules count into (when the host has nfacct),
// run the proxier's sync loop and the canary monitor — and `cleanupIptables`
// for `--cleanup`. Everything effectful is injected (Execer, Sysctl, Clock, informer
// factory, logger) so the same code runs against Fakes in tests and the bench.

import { cpus, networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { LABEL_HEADLESS, LABEL_SERVICE_PROXY_NAME } from '../kube/names.js';
import { RealIptables, commandsFor, detectIptablesVariant } from '../netfilter/iptables/backend.js';
import type { IptablesBackend, IptablesVariant } from '../netfilter/iptables/backend.js';
import { parseDocument } from '../netfilter/iptables/parse.js';
import { RealConntrack } from '../os/conntrack.js';
import type { Execer } from '../os/exec.js';
import { RealNfacct } from '../os/nfacct.js';
import type { Nfacct } from '../os/nfacct.js';
import type { Sysctl } from '../os/sysctl.js';
import type { IPFamily } from '../util/ip.js';
import { cidrContains, formatIP, parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import { CanaryMonitor } from './iptables/canary.js';
import type { Clock } from '../util/clock.js';
import { ServiceHealthServers } from './healthcheck-nodeports.js';
import { ProxyHealth, healthzHandler } from './healthz.js';
import type { ProxyDaemonConfig } from './config.js';
import type { NfacctCounters } from './iptables/options.js';
import { NO_NFACCT, proxierOptionsFor, proxyNodeOf } from './proxier-options.js';
import { listenHttp, parseBindAddress } from './listen.js';
import type { Listening } from './listen.js';
import { listenFailed } from '../util/listen-error.js';
import { metricsHandler } from './metrics-server.js';
import { NFACCT_METRICS, ProxyMetrics } from './metrics.js';
import { applySysctls, planSysctls, readTcpBeLiberal } from './node-setup.js';
import { planCleanup } from './iptables/plan-cleanup.js';
import { IptablesProxier } from './iptables/proxier.js';
import type { Proxier, ProxierInformers } from './proxier.js';
import { SvcnetError } from '../errors.js';

/** Services the proxy watches: not claimed by another proxy, not headless (kube-proxy's selector). */
export const SERVICE_LABEL_SELECTOR = `!${LABEL_SERVICE_PROXY_NAME},!${LABEL_HEADLESS}`;
/** EndpointSlices the proxy watches: not those of headless Services. */
export const ENDPOINT_SLICE_LABEL_SELECTOR = `!${LABEL_HEADLESS}`;

/** The informers the daemon needs (client-node backed in production, Fakes in tests). */
export type ProxyInformers = Required<ProxierInformers>;

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
  /** nfacct objects; defaults to the `nfacct` tool run through `execer`. */
  readonly nfacct?: Nfacct;
}

/** A running daemon. */
export interface ProxyDaemon {
  readonly proxier: Proxier;
  readonly registry: Registry;
  readonly healthzPort: number | undefined;
  readonly metricsPort: number | undefined;
  readonly variant: IptablesVariant | 'injected';
  /** Which nfacct objects exist, so the rules count into them. */
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

async function makeBackends(
  cfg: ProxyDaemonConfig,
  deps: Pick<ProxyDaemonDeps, 'execer' | 'iptables' | 'log'>,
): Promise<{ backends: IptablesBackend[]; variant: IptablesVariant | 'injected' }> {
  if (deps.iptables !== undefined) {
    const make = deps.iptables;
    return { backends: cfg.families.map((f) => make(f)), variant: 'injected' };
  }
  let variant: IptablesVariant;
  let specific = true;
  if (cfg.iptablesVariant === 'auto') {
    ({ variant, specific } = await detectIptablesVariant(deps.execer));
    deps.log.info({ variant }, 'Detected iptables mode');
  } else variant = cfg.iptablesVariant;
  return {
    backends: cfg.families.map(
      (f) => new RealIptables(deps.execer, f, commandsFor(f, specific ? variant : undefined)),
    ),
    variant,
  };
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
      metricsHandler({ registry, mode: 'iptables', configz: () => cfg }),
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
  const sysctls = planSysctls({
    ipv4: cfg.families.includes('IPv4'),
    localhostNodePorts: cfg.localhostNodePorts,
    conntrack: cfg.conntrack,
    cpus: cpus().length,
    hostNetns: deps.hostNetns ?? false,
  });
  await applySysctls(deps.sysctl, sysctls, log);
  const conntrackTCPLiberal = await readTcpBeLiberal(deps.sysctl);
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

/** The canary monitor: a flushed table forces a full resync. */
function canaryFor(
  cfg: ProxyDaemonConfig,
  backends: readonly IptablesBackend[],
  proxier: IptablesProxier,
  deps: Pick<ProxyDaemonDeps, 'clock' | 'log'>,
): CanaryMonitor {
  const { log } = deps;
  return new CanaryMonitor({
    probes: backends,
    checks: (family) => proxier.canaryChecks(family),
    intervalMs: cfg.canaryIntervalMs,
    clock: deps.clock,
    isBusy: () => proxier.isSyncing(),
    onLost: (family, missing) => {
      log.warn(
        { ipFamily: family, missing },
        'iptables canary gone: rules were flushed; forcing full resync',
      );
      proxier.forceFullSync('canary');
    },
    onError: (err) => {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Canary check failed');
    },
  });
}

/** Starts the proxy (see the file header). Resolves once servers listen and informers started. */
export async function startProxyDaemon(
  cfg: ProxyDaemonConfig,
  deps: ProxyDaemonDeps,
): Promise<ProxyDaemon> {
  const { log, clock } = deps;
  if (cfg.families.length === 0) throw new SvcnetError('INVALID_INPUT', 'no IP family to program');
  const registry = deps.registry ?? new Registry();
  const metrics = new ProxyMetrics(registry);
  const health = new ProxyHealth(clock, 2 * cfg.syncPeriodMs, cfg.families);
  const listeners = await bindListeners(cfg, health, metrics, registry);
  const { healthzPort, metricsPort } = listeners;

  const { backends, variant } = await makeBackends(cfg, deps);
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

  const proxier = new IptablesProxier({
    nodeName: cfg.nodeName,
    families: backends.map((b) => ({ family: b.family, iptables: b })),
    optionsFor: (family, node) =>
      proxierOptionsFor(
        cfg,
        proxyNodeOf(cfg.nodeName, node),
        { localAddresses: localAddresses(), conntrackTCPLiberal, nfacct: nfacctCounters },
        family,
      ),
    clock,
    log,
    metrics,
    health,
    serviceHealth,
    conntrack: new RealConntrack(deps.execer),
    minSyncPeriodMs: cfg.minSyncPeriodMs,
    syncPeriodMs: cfg.syncPeriodMs,
  });
  proxier.attach(deps.informers);
  const canary = canaryFor(cfg, backends, proxier, deps);

  proxier.start();
  canary.start();
  // Informers retry by themselves; the proxier programs nothing until Services and
  // EndpointSlices have both synced.
  const starts = [deps.informers.services, deps.informers.endpointSlices, deps.informers.nodes].map(
    (i) =>
      i.start().catch((err: unknown) => {
        log.error({ err }, 'Informer failed to start');
      }),
  );
  void Promise.all(starts);
  log.info(
    {
      node: cfg.nodeName,
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
      await canary.stop();
      await proxier.stop();
      await Promise.all([
        deps.informers.services.stop(),
        deps.informers.endpointSlices.stop(),
        deps.informers.nodes.stop(),
      ]);
      await serviceHealth.close();
      await listeners.close();
    },
  };
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
 * `--cleanup`: removes every chain and hook the iptables proxier created, per family, in one
 * restore each. Returns what was removed.
 */
export async function cleanupIptables(
  backends: readonly IptablesBackend[],
  log: Logger,
): Promise<{ family: IPFamily; chains: number; rules: number }[]> {
  const out: { family: IPFamily; chains: number; rules: number }[] = [];
  for (const b of backends) {
    const dump = await b.save();
    const plan = planCleanup(parseDocument(dump));
    if (plan.text !== '') await b.restore(plan.text, { noflush: true });
    log.info(
      { ipFamily: b.family, chains: plan.deletedChains, rules: plan.deletedRules },
      'Cleaned up iptables rules',
    );
    out.push({ family: b.family, chains: plan.deletedChains, rules: plan.deletedRules });
  }
  return out;
}

/** Backends for `--cleanup` (variant detected like the daemon). */
export async function cleanupBackends(
  execer: Execer,
  families: readonly IPFamily[],
  variantSetting: 'auto' | IptablesVariant,
): Promise<IptablesBackend[]> {
  let variant: IptablesVariant;
  let specific = true;
  if (variantSetting === 'auto') ({ variant, specific } = await detectIptablesVariant(execer));
  else variant = variantSetting;
  return families.map(
    (f) => new RealIptables(execer, f, commandsFor(f, specific ? variant : undefined)),
  );
}
