// The `ipvs:` section of a KubeProxyConfiguration and the `--ipvs-*` flags of `svcnet proxy`:
// the values, kube-proxy's defaults (syncPeriod 30s, minSyncPeriod 0, scheduler rr, timeouts
// 0 = keep the kernel's), its validation rules (apis/config/validation: a scheduler kube-proxy
// knows, CIDRs, no negative timeout, minSyncPeriod ≤ syncPeriod) and the flag overlay. The
// parsing of the YAML itself stays in ../config.ts; this file only sees typed values. Pure.

import { formatCIDR, parseCIDRSloppy } from '../../util/ip.js';

/** The schedulers kube-proxy accepts for `ipvs.scheduler` ('' means rr). */
export const IPVS_SCHEDULERS = [
  'rr',
  'wrr',
  'lc',
  'wlc',
  'lblc',
  'lblcr',
  'sh',
  'dh',
  'sed',
  'nq',
] as const;

/** A validated, defaulted `ipvs:` section. */
export interface IpvsModeConfig {
  /** '' means rr. */
  readonly scheduler: string;
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  /** CIDRs (any family) whose virtual servers the proxy never deletes. */
  readonly excludeCIDRs: readonly string[];
  readonly strictARP: boolean;
  /** 0 keeps the kernel's value. */
  readonly tcpTimeoutMs: number;
  readonly tcpFinTimeoutMs: number;
  readonly udpTimeoutMs: number;
}

export const IPVS_SYNC_PERIOD_MS = 30_000;

export const DEFAULT_IPVS_MODE_CONFIG: IpvsModeConfig = {
  scheduler: '',
  syncPeriodMs: IPVS_SYNC_PERIOD_MS,
  minSyncPeriodMs: 0,
  excludeCIDRs: [],
  strictARP: false,
  tcpTimeoutMs: 0,
  tcpFinTimeoutMs: 0,
  udpTimeoutMs: 0,
};

/** Where each value came from, for the messages: a file field or a flag. */
export interface IpvsFieldNames {
  readonly scheduler: string;
  readonly syncPeriod: string;
  readonly minSyncPeriod: string;
  readonly excludeCIDRs: (index: number) => string;
  readonly tcpTimeout: string;
  readonly tcpFinTimeout: string;
  readonly udpTimeout: string;
}

export const IPVS_FILE_FIELDS: IpvsFieldNames = {
  scheduler: 'ipvs.scheduler',
  syncPeriod: 'ipvs.syncPeriod',
  minSyncPeriod: 'ipvs.minSyncPeriod',
  excludeCIDRs: (i) => `ipvs.excludeCIDRs[${i}]`,
  tcpTimeout: 'ipvs.tcpTimeout',
  tcpFinTimeout: 'ipvs.tcpFinTimeout',
  udpTimeout: 'ipvs.udpTimeout',
};

export const IPVS_FLAGS: IpvsFieldNames = {
  scheduler: '--ipvs-scheduler',
  syncPeriod: '--ipvs-sync-period',
  minSyncPeriod: '--ipvs-min-sync-period',
  excludeCIDRs: () => '--ipvs-exclude-cidrs',
  tcpTimeout: '--ipvs-tcp-timeout',
  tcpFinTimeout: '--ipvs-tcpfin-timeout',
  udpTimeout: '--ipvs-udp-timeout',
};

/**
 * Reports (through `add`, naming the field or flag) every value kube-proxy's validation
 * refuses. Excluded CIDRs are checked as given; `normalizeIpvsConfig` canonicalizes them.
 */
export function checkIpvsConfig(
  c: IpvsModeConfig,
  names: IpvsFieldNames,
  add: (field: string, message: string) => void,
): void {
  if (c.scheduler !== '' && !(IPVS_SCHEDULERS as readonly string[]).includes(c.scheduler))
    add(
      names.scheduler,
      `must be one of ${IPVS_SCHEDULERS.join(', ')} (or empty for rr), got ${JSON.stringify(c.scheduler)}`,
    );
  if (c.syncPeriodMs <= 0) add(names.syncPeriod, 'must be greater than 0');
  if (c.minSyncPeriodMs < 0) add(names.minSyncPeriod, 'must not be negative');
  else if (c.minSyncPeriodMs > c.syncPeriodMs)
    add(names.syncPeriod, `must be greater than or equal to ${names.minSyncPeriod}`);
  c.excludeCIDRs.forEach((cidr, i) => {
    if (parseCIDRSloppy(cidr) === undefined)
      add(names.excludeCIDRs(i), `must be a CIDR, got ${JSON.stringify(cidr)}`);
  });
  const timeouts = [
    [names.tcpTimeout, c.tcpTimeoutMs],
    [names.tcpFinTimeout, c.tcpFinTimeoutMs],
    [names.udpTimeout, c.udpTimeoutMs],
  ] as const;
  for (const [field, ms] of timeouts) if (ms < 0) add(field, 'must not be negative');
}

/** The CIDRs in canonical form (host bits cleared); call after checkIpvsConfig passed. */
export function normalizeIpvsConfig(c: IpvsModeConfig): IpvsModeConfig {
  return {
    ...c,
    excludeCIDRs: c.excludeCIDRs.map((x) => {
      const p = parseCIDRSloppy(x);
      return p === undefined ? x : formatCIDR(p);
    }),
  };
}

/** The `--ipvs-*` flags as given on the command line. */
export interface IpvsFlags {
  readonly ipvsScheduler?: string;
  readonly ipvsSyncPeriod?: string;
  readonly ipvsMinSyncPeriod?: string;
  readonly ipvsExcludeCidrs?: string;
  readonly ipvsStrictArp?: string | boolean;
  readonly ipvsTcpTimeout?: string;
  readonly ipvsTcpfinTimeout?: string;
  readonly ipvsUdpTimeout?: string;
}

/** The flag readers of ../config.ts (each reports a bad value naming its flag). */
export interface IpvsFlagReaders {
  duration(flag: string, text: string | undefined): number | undefined;
  boolean(flag: string, text: string | undefined): boolean | undefined;
  list(text: string): string[];
}

/**
 * The `ipvs:` section with the flags given explicitly laid over it, normalized. With
 * `validate` (ipvs mode: kube-proxy checks the section only then) the values are checked,
 * each problem going to `bad` naming the flag when a flag set the value, else the file field.
 * A flag value that does not parse is reported whatever the mode.
 */
export function resolveIpvsConfig(
  flags: IpvsFlags,
  file: IpvsModeConfig,
  read: IpvsFlagReaders,
  bad: (field: string, message: string) => void,
  validate: boolean,
): IpvsModeConfig {
  const F = IPVS_FLAGS;
  const strictText = flags.ipvsStrictArp;
  const strict =
    typeof strictText === 'boolean' ? strictText : read.boolean('--ipvs-strict-arp', strictText);
  const flagged = {
    scheduler: flags.ipvsScheduler,
    syncPeriodMs: read.duration(F.syncPeriod, flags.ipvsSyncPeriod),
    minSyncPeriodMs: read.duration(F.minSyncPeriod, flags.ipvsMinSyncPeriod),
    excludeCIDRs:
      flags.ipvsExcludeCidrs === undefined ? undefined : read.list(flags.ipvsExcludeCidrs),
    strictARP: strict,
    tcpTimeoutMs: read.duration(F.tcpTimeout, flags.ipvsTcpTimeout),
    tcpFinTimeoutMs: read.duration(F.tcpFinTimeout, flags.ipvsTcpfinTimeout),
    udpTimeoutMs: read.duration(F.udpTimeout, flags.ipvsUdpTimeout),
  };
  const merged: IpvsModeConfig = {
    scheduler: flagged.scheduler ?? file.scheduler,
    syncPeriodMs: flagged.syncPeriodMs ?? file.syncPeriodMs,
    minSyncPeriodMs: flagged.minSyncPeriodMs ?? file.minSyncPeriodMs,
    excludeCIDRs: flagged.excludeCIDRs ?? file.excludeCIDRs,
    strictARP: flagged.strictARP ?? file.strictARP,
    tcpTimeoutMs: flagged.tcpTimeoutMs ?? file.tcpTimeoutMs,
    tcpFinTimeoutMs: flagged.tcpFinTimeoutMs ?? file.tcpFinTimeoutMs,
    udpTimeoutMs: flagged.udpTimeoutMs ?? file.udpTimeoutMs,
  };
  // A value a flag set is named by the flag, else by the file's field.
  const pick = <K extends keyof IpvsFieldNames>(k: K, set: unknown): IpvsFieldNames[K] =>
    set !== undefined ? F[k] : IPVS_FILE_FIELDS[k];
  const names: IpvsFieldNames = {
    scheduler: pick('scheduler', flagged.scheduler),
    syncPeriod: pick('syncPeriod', flagged.syncPeriodMs),
    minSyncPeriod: pick('minSyncPeriod', flagged.minSyncPeriodMs),
    excludeCIDRs: pick('excludeCIDRs', flagged.excludeCIDRs),
    tcpTimeout: pick('tcpTimeout', flagged.tcpTimeoutMs),
    tcpFinTimeout: pick('tcpFinTimeout', flagged.tcpFinTimeoutMs),
    udpTimeout: pick('udpTimeout', flagged.udpTimeoutMs),
  };
  if (validate) checkIpvsConfig(merged, names, bad);
  return normalizeIpvsConfig(merged);
}
