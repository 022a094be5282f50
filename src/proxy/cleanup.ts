// Removing a proxy mode's kernel state, as kube-proxy's CleanupLeftovers does: iptables mode's
// KUBE-* chains and the rules that jump to them (plan-cleanup.ts, one restore per family),
// nftables mode's `ip kube-proxy` and `ip6 kube-proxy` tables (one `nft -f` each), ipvs mode's
// virtual servers on kube-ipvs0, the dummy and the KUBE-* ipsets (ipvs/kernel-cleanup.ts). The daemon
// removes the modes it does not run when it starts, so switching modes leaves no rules of the
// old one behind (KEP-3866); `svcnet proxy --cleanup` removes every mode's. A host without a
// mode's tool (no nft, no ip6tables) has nothing of that mode to remove: that is logged, not
// fatal, except an IPv4 iptables failure under --cleanup (the caller asked for exactly that).

import type { Logger } from 'pino';
import type { IptablesBackend } from '../netfilter/iptables/backend.js';
import { resolveIptablesBackends } from '../netfilter/iptables/variant.js';
import type { IptablesVariantSetting } from '../netfilter/iptables/variant.js';
import { parseDocument } from '../netfilter/iptables/parse.js';
import type { Execer } from '../os/exec.js';
import { tableKey } from '../netfilter/nftables/model.js';
import type { IPFamily } from '../util/ip.js';
import type { DaemonProxyMode } from './config.js';
import { planCleanup } from './iptables/plan-cleanup.js';
import { RealNftBackend } from '../netfilter/nftables/backend.js';
import type { NftBackend } from '../netfilter/nftables/backend.js';
import { tableRefOf } from './nftables/plan.js';
import { RealIpvsCleaner } from './ipvs/kernel-cleanup.js';
import type { IpvsCleaner } from './ipvs/kernel-cleanup.js';
import { RealIp } from '../os/ip.js';

/** What one mode's cleanup removed in one family (ipvs: both families, reported as IPv4). */
export interface CleanupResult {
  readonly mode: DaemonProxyMode;
  readonly family: IPFamily;
  /**
   * iptables: chains and hook rules; nftables: 1 when the table existed (then deleted); ipvs:
   * virtual servers in `rules`, ipsets in `chains`, 1 in `tables` when kube-ipvs0 existed.
   */
  readonly chains: number;
  readonly rules: number;
  readonly tables: number;
}

/** What the iptables cleanup uses of a backend (real or Fake). */
export type CleanupIptables = Pick<IptablesBackend, 'family' | 'save' | 'restore'>;

/** Removes nftables mode's table of one family (the whole table goes, in one transaction). */
export interface NftTableCleaner {
  readonly family: IPFamily;
  /** Deletes `ip|ip6 kube-proxy` if present; whether it was. */
  removeTable(): Promise<boolean>;
}

/** How to reach each mode's state (real tools, or Fakes in tests). */
export interface CleanupSeams {
  /** One backend per family; may throw (no iptables on the host). */
  readonly iptables: () => Promise<readonly CleanupIptables[]>;
  readonly nftables: () => Promise<readonly NftTableCleaner[]>;
  /** ipvs mode's state (absent: nothing of ipvs mode to remove). */
  readonly ipvs?: () => Promise<IpvsCleaner>;
}

/** An NftTableCleaner over an NftBackend (the `nft` tool, or a Fake). */
export function nftTableCleaner(nft: Pick<NftBackend, 'family' | 'deleteTable'>): NftTableCleaner {
  return { family: nft.family, removeTable: () => nft.deleteTable(tableRefOf(nft.family)) };
}

/**
 * `--cleanup`: removes every chain and hook the iptables proxier created, per family, in one
 * restore each. Returns what was removed.
 */
export async function cleanupIptables(
  backends: readonly CleanupIptables[],
  log: Logger,
): Promise<CleanupResult[]> {
  const out: CleanupResult[] = [];
  for (const b of backends) {
    const dump = await b.save();
    const plan = planCleanup(parseDocument(dump));
    if (plan.text !== '') await b.restore(plan.text, { noflush: true });
    log.info(
      { ipFamily: b.family, chains: plan.deletedChains, rules: plan.deletedRules },
      'Cleaned up iptables rules',
    );
    out.push({
      mode: 'iptables',
      family: b.family,
      chains: plan.deletedChains,
      rules: plan.deletedRules,
      tables: 0,
    });
  }
  return out;
}

/** Backends for the iptables cleanup: the variant the daemon's proxier uses (variant.ts). */
export async function cleanupBackends(
  execer: Execer,
  families: readonly IPFamily[],
  variantSetting: IptablesVariantSetting,
): Promise<IptablesBackend[]> {
  return (await resolveIptablesBackends(variantSetting, execer, families)).backends;
}

/** The real tools, both families (a family the host lacks is skipped by the cleanup). */
export function realCleanupSeams(
  execer: Execer,
  variantSetting: IptablesVariantSetting,
): CleanupSeams {
  const families: IPFamily[] = ['IPv4', 'IPv6'];
  return {
    iptables: () => cleanupBackends(execer, families, variantSetting),
    nftables: () =>
      Promise.resolve(families.map((f) => nftTableCleaner(new RealNftBackend(execer, f)))),
    ipvs: () => Promise.resolve(new RealIpvsCleaner(execer, new RealIp(execer))),
  };
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Removes the state of every mode except `running` (`'all'`: every mode, for --cleanup), as
 * kube-proxy does at start. Failures are logged and skipped, except an IPv4 iptables failure
 * under --cleanup, which is rethrown.
 */
export async function cleanupLeftovers(
  running: DaemonProxyMode | 'all',
  seams: CleanupSeams,
  log: Logger,
): Promise<CleanupResult[]> {
  const strict = running === 'all';
  const out: CleanupResult[] = [];
  if (running !== 'iptables') {
    let backends: readonly CleanupIptables[] = [];
    try {
      backends = await seams.iptables();
    } catch (err) {
      if (strict) throw err;
      log.warn({ err: message(err) }, 'Cannot clean up iptables rules');
    }
    for (const b of backends) {
      try {
        out.push(...(await cleanupIptables([b], log)));
      } catch (err) {
        if (strict && b.family === 'IPv4') throw err;
        log.warn({ ipFamily: b.family, err: message(err) }, 'iptables cleanup skipped');
      }
    }
  }
  if (running !== 'nftables') {
    for (const c of await seams.nftables()) {
      try {
        const removed = await c.removeTable();
        if (removed) log.info({ ipFamily: c.family }, 'Cleaned up nftables table');
        out.push({
          mode: 'nftables',
          family: c.family,
          chains: 0,
          rules: 0,
          tables: removed ? 1 : 0,
        });
      } catch (err) {
        log.warn({ ipFamily: c.family, err: message(err) }, 'nftables cleanup skipped');
      }
    }
  }
  if (running !== 'ipvs' && seams.ipvs !== undefined)
    out.push(...(await cleanupIpvs(seams.ipvs, log)));
  return out;
}

/** ipvs mode's part of cleanupLeftovers: failures are logged, never fatal. */
async function cleanupIpvs(
  cleaner: () => Promise<IpvsCleaner>,
  log: Logger,
): Promise<CleanupResult[]> {
  try {
    const r = await (await cleaner()).removeIpvs();
    if (r.virtualServers + r.ipsets > 0 || r.device) log.info(r, 'Cleaned up ipvs state');
    return [
      {
        mode: 'ipvs',
        family: 'IPv4',
        chains: r.ipsets,
        rules: r.virtualServers,
        tables: r.device ? 1 : 0,
      },
    ];
  } catch (err) {
    log.warn({ err: message(err) }, 'ipvs cleanup skipped');
    return [];
  }
}

/** One line per mode and family, for --cleanup's output. */
export function formatCleanup(results: readonly CleanupResult[]): string {
  return results
    .map((r) =>
      r.mode === 'iptables'
        ? `${r.family}: removed ${r.chains} chains, ${r.rules} rules`
        : r.mode === 'ipvs'
          ? `ipvs: removed ${r.rules} virtual servers, ${r.chains} ipsets, ${r.tables > 0 ? 'the' : 'no'} kube-ipvs0 device`
          : `${r.family}: ${r.tables > 0 ? 'removed' : 'no'} nftables table ${tableKey(tableRefOf(r.family))}`,
    )
    .join('\n');
}
