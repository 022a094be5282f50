// The daemon's proxier factory: from the configured mode to a running dataplane — the
// `Proxier` the daemon drives generically, the kernel backends it programs through, and the
// mode's own monitors. iptables mode detects the iptables variant (legacy or nft, as
// kube-proxy's image does), counts into the nfacct objects the host has and runs the canary
// monitor (a flushed table forces a full resync); nftables mode owns its tables, so it needs
// neither (kube-proxy's nftables mode has no canary: the hourly full sync restores state).
// ipvs mode refuses to start where the kernel has no ip_vs (one line, exit 1), then programs
// IPVS through ipvsadm, its ipsets through ipset and its iptables rules through the detected
// iptables variant; it needs no canary either, because its full sync every ipvs.syncPeriod
// (30 s) reads IPVS and the ipsets back and repairs them (the syncs between are partial).
// Before its first sync it makes kube-proxy's ipvs sysctls and IPVS timeouts
// (ipvs/host-setup.ts), and each
// sync's options carry the node IPs for NodePorts (local addresses minus the Service IPs
// bound to kube-ipvs0) and `ipvs.excludeCIDRs` of the family.

import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { IptablesBackend, IptablesVariant } from '../netfilter/iptables/backend.js';
import { resolveIptablesBackends } from '../netfilter/iptables/variant.js';
import { RealConntrack } from '../os/conntrack.js';
import type { Execer } from '../os/exec.js';
import type { Clock } from '../util/clock.js';
import type { IPFamily } from '../util/ip.js';
import type { ProxyDaemonConfig } from './config.js';
import type { ServiceHealthServers } from './healthcheck-nodeports.js';
import type { ProxyHealth } from './healthz.js';
import { CanaryMonitor } from './iptables/canary.js';
import { IptablesProxier } from './iptables/proxier.js';
import type { ProxyMetrics } from './metrics.js';
import { RealNftBackend } from '../netfilter/nftables/backend.js';
import type { NftBackend } from '../netfilter/nftables/backend.js';
import { NftablesProxier } from './nftables/proxier.js';
import { NftablesMetrics } from './nftables/sync-metrics.js';
import type { ProxyHost } from './proxier-options.js';
import {
  ipvsProxierOptionsFor,
  nftablesProxierOptionsFor,
  proxierOptionsFor,
  proxyNodeOf,
} from './proxier-options.js';
import type { Proxier } from './proxier.js';
import { SvcnetError } from '../errors.js';
import type { Ip } from '../os/ip.js';
import type { Sysctl } from '../os/sysctl.js';
import { RealIp } from '../os/ip.js';
import { RealIpvsKernel, probeIpvs } from './ipvs/kernel.js';
import type { IpvsKernel, IpvsProbe } from './ipvs/kernel.js';
import { IpvsProxier } from './ipvs/proxier.js';
import { setUpIpvsHost } from './ipvs/host-setup.js';
import { IPVS_DUMMY_DEVICE } from './ipvs/names.js';

/** The iptables variant programmed, `nftables`, or `injected` (backends given by a test). */
export type DataplaneVariant = IptablesVariant | 'injected' | 'nftables' | 'ipvs';

/** Makes a family's nftables backend (tests: Fakes). */
export type NftBackendFor = (family: IPFamily) => NftBackend;

/** Something the mode runs beside its proxier (the iptables canary). */
export interface Monitor {
  start(): void;
  stop(): Promise<void>;
}

export interface Dataplane {
  readonly proxier: Proxier;
  readonly variant: DataplaneVariant;
  readonly monitors: readonly Monitor[];
}

export interface DataplaneDeps {
  readonly execer: Execer;
  readonly clock: Clock;
  readonly log: Logger;
  readonly registry: Registry;
  readonly metrics: ProxyMetrics;
  readonly health: ProxyHealth;
  readonly serviceHealth: ServiceHealthServers;
  /** Host facts, read at every sync (local addresses change). */
  readonly host: () => ProxyHost;
  readonly iptables?: (family: IPFamily) => IptablesBackend;
  readonly nftables?: NftBackendFor;
  /** ipvs mode's kernel per family (tests: FakeIpvsKernel); default: the real tools. */
  readonly ipvs?: (family: IPFamily) => IpvsKernel;
  /** ipvs mode's kube-ipvs0 seam; default: the `ip` tool. */
  readonly ip?: Ip;
  /** Whether the kernel has ip_vs; default: /proc/net/ip_vs or /sys/module/ip_vs. */
  readonly ipvsProbe?: IpvsProbe;
  /** ipvs mode's sysctls are made through it (absent: none are made). */
  readonly sysctl?: Sysctl;
}

/** Builds the mode's proxier and what it runs beside it (see the file header). */
export async function makeDataplane(
  cfg: ProxyDaemonConfig,
  deps: DataplaneDeps,
): Promise<Dataplane> {
  if (cfg.mode === 'ipvs') return ipvsDataplane(cfg, deps);
  return cfg.mode === 'nftables' ? nftablesDataplane(cfg, deps) : iptablesDataplane(cfg, deps);
}

/** Throws UNSUPPORTED (CLI exit 1) with one line where the kernel has no ip_vs. */
export async function requireIpvs(probe: IpvsProbe = probeIpvs): Promise<void> {
  const r = await probe();
  if (!r.ok)
    throw new SvcnetError(
      'UNSUPPORTED',
      `ipvs mode needs the ip_vs kernel module: ${r.reason ?? 'not available'}`,
    );
}

async function ipvsDataplane(cfg: ProxyDaemonConfig, deps: DataplaneDeps): Promise<Dataplane> {
  // Checked before anything is programmed: a node without ip_vs is never half set up.
  await requireIpvs(deps.ipvsProbe);
  if (deps.sysctl !== undefined)
    await setUpIpvsHost({ sysctl: deps.sysctl, execer: deps.execer, log: deps.log }, cfg.ipvs);
  let make = deps.ipvs;
  if (make === undefined) {
    const { backends } = await iptablesBackends(cfg, deps);
    make = (family) => {
      const b = backends.find((x) => x.family === family);
      if (b === undefined) throw new Error(`no iptables backend for ${family}`);
      return new RealIpvsKernel(deps.execer, family, b);
    };
  }
  const kernelOf = make;
  const ip = deps.ip ?? new RealIp(deps.execer);
  // The Service IPs on kube-ipvs0 (as found at start, then as the last sync left them):
  // never node IPs for NodePorts, even where kube-ipvs0 is up and lists them as local.
  const atStart = await dummyAddresses(ip);
  const boundToDummy = (): string[] =>
    cfg.families.flatMap((f) => proxier.lastPlan(f)?.boundAddresses ?? atStart);
  const proxier: IpvsProxier = new IpvsProxier({
    ...commonDeps(cfg, deps),
    ip,
    families: cfg.families.map((family) => ({ family, kernel: kernelOf(family) })),
    optionsFor: (family, node) =>
      ipvsProxierOptionsFor(
        cfg,
        proxyNodeOf(cfg.nodeName, node),
        { localAddresses: deps.host().localAddresses, ipvsBoundAddresses: boundToDummy() },
        family,
        cfg.ipvs.scheduler,
        cfg.ipvs.excludeCIDRs,
      ),
  });
  return { proxier, variant: deps.ipvs === undefined ? 'ipvs' : 'injected', monitors: [] };
}

/** The addresses on kube-ipvs0 ([] when it is missing or cannot be read). */
async function dummyAddresses(ip: Ip): Promise<string[]> {
  try {
    const link = (await ip.links(undefined)).find((l) => l.name === IPVS_DUMMY_DEVICE);
    return link?.addrs.map((a) => a.local) ?? [];
  } catch {
    return [];
  }
}

async function iptablesBackends(
  cfg: ProxyDaemonConfig,
  deps: DataplaneDeps,
): Promise<{ backends: IptablesBackend[]; variant: IptablesVariant | 'injected' }> {
  if (deps.iptables !== undefined) {
    const make = deps.iptables;
    return { backends: cfg.families.map((f) => make(f)), variant: 'injected' };
  }
  // Memoized per execer: the same answer as the cleanup of other modes' leftovers got.
  const { choice, backends } = await resolveIptablesBackends(
    cfg.iptablesVariant,
    deps.execer,
    cfg.families,
  );
  deps.log.info(
    { variant: choice.variant, setting: cfg.iptablesVariant, reason: choice.reason },
    'Using iptables backend',
  );
  return { backends, variant: choice.variant };
}

/** The shared parts of both proxiers' dependencies. */
function commonDeps(cfg: ProxyDaemonConfig, deps: DataplaneDeps) {
  return {
    nodeName: cfg.nodeName,
    clock: deps.clock,
    log: deps.log,
    metrics: deps.metrics,
    health: deps.health,
    serviceHealth: deps.serviceHealth,
    conntrack: new RealConntrack(deps.execer),
    minSyncPeriodMs: cfg.minSyncPeriodMs,
    syncPeriodMs: cfg.syncPeriodMs,
  };
}

async function iptablesDataplane(cfg: ProxyDaemonConfig, deps: DataplaneDeps): Promise<Dataplane> {
  const { backends, variant } = await iptablesBackends(cfg, deps);
  const proxier = new IptablesProxier({
    ...commonDeps(cfg, deps),
    families: backends.map((b) => ({ family: b.family, iptables: b })),
    optionsFor: (family, node) =>
      proxierOptionsFor(cfg, proxyNodeOf(cfg.nodeName, node), deps.host(), family),
  });
  const { log } = deps;
  const canary = new CanaryMonitor({
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
  return { proxier, variant, monitors: [canary] };
}

async function nftablesDataplane(cfg: ProxyDaemonConfig, deps: DataplaneDeps): Promise<Dataplane> {
  const make = deps.nftables ?? ((family: IPFamily) => new RealNftBackend(deps.execer, family));
  const families = cfg.families.map((family) => ({ family, nft: make(family) }));
  // As kube-proxy does, refuse to start in nftables mode where nft or nf_tables is missing.
  for (const { family, nft } of families) {
    const a = await nft.availability();
    if (!a.ok)
      throw new SvcnetError(
        'UNSUPPORTED',
        `--proxy-mode nftables: nftables is not usable here (${family}): ${a.reason ?? 'unknown reason'}`,
      );
    deps.log.info({ ipFamily: family, version: a.version }, 'Using nftables');
  }
  const proxier = new NftablesProxier({
    ...commonDeps(cfg, deps),
    families,
    nftMetrics: new NftablesMetrics(deps.registry),
    optionsFor: (family, node, serviceCIDRs) =>
      nftablesProxierOptionsFor(
        cfg,
        proxyNodeOf(cfg.nodeName, node),
        deps.host(),
        family,
        serviceCIDRs,
      ),
  });
  return { proxier, variant: deps.nftables === undefined ? 'nftables' : 'injected', monitors: [] };
}
