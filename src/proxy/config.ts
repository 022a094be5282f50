// KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) files: parsing, validation that
// names every bad or unknown field, and kube-proxy's defaults (masqueradeBit 14,
// syncPeriod 30s, minSyncPeriod 1s, localhostNodePorts true, detectLocalMode ClusterCIDR,
// conntrack maxPerCore 32768 / min 131072, ...). As kube-proxy does, zero values of the
// periods and of clientConnection qps/burst mean "default", and null means unset: the
// `config.conf` that kubeadm and kind ship (`syncPeriod: 0s`, `masqueradeBit: null`) loads.
// Durations use Go's syntax ("1m30s"). `resolveProxyConfig` overlays the daemon's flags on
// such a file (or on the defaults) into the `ProxyDaemonConfig` the proxy runs with, the way
// dns/config.ts `buildDnsConfig` does for the DNS server. The `ipvs:` section's values,
// defaults, checks and `--ipvs-*` flags are in ipvs/config.ts; in ipvs mode its periods
// drive the sync runner.
// Pure: callers read the file. Throws ValidationError (INVALID_INPUT) listing every problem.

import { parseYamlDocument } from '../kube/manifest.js';
import { SvcnetError, ValidationError } from '../errors.js';
import type { FieldError } from '../errors.js';
import type { IptablesVariantSetting } from '../netfilter/iptables/variant.js';
import { formatCIDR, parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import type { ConntrackSettings } from './node-setup.js';
import { parseDuration } from '../util/duration.js';
import {
  DEFAULT_IPVS_MODE_CONFIG,
  IPVS_FILE_FIELDS,
  checkIpvsConfig,
  normalizeIpvsConfig,
  resolveIpvsConfig,
} from './ipvs/config.js';
import type { IpvsFlags, IpvsModeConfig } from './ipvs/config.js';

export const KUBE_PROXY_CONFIG_API_VERSION = 'kubeproxy.config.k8s.io/v1alpha1';
export const KUBE_PROXY_CONFIG_KIND = 'KubeProxyConfiguration';

export type ProxyMode = 'iptables' | 'nftables' | 'ipvs' | 'kernelspace';
export type DetectLocalMode =
  'ClusterCIDR' | 'NodeCIDR' | 'BridgeInterface' | 'InterfaceNamePrefix';

export interface IptablesModeConfig {
  readonly masqueradeBit: number;
  readonly masqueradeAll: boolean;
  readonly localhostNodePorts: boolean;
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
}

export interface ConntrackConfig {
  readonly maxPerCore: number;
  readonly min: number;
  readonly tcpEstablishedTimeoutMs: number;
  readonly tcpCloseWaitTimeoutMs: number;
  readonly tcpBeLiberal: boolean;
  /** 0 means "leave the kernel's value". */
  readonly udpTimeoutMs: number;
  readonly udpStreamTimeoutMs: number;
}

/** A validated, defaulted KubeProxyConfiguration. */
export interface KubeProxyConfig {
  readonly mode: ProxyMode;
  readonly featureGates: Readonly<Record<string, boolean>>;
  readonly clientConnection: {
    readonly kubeconfig: string;
    readonly qps: number;
    readonly burst: number;
    readonly contentType: string;
    readonly acceptContentTypes: string;
  };
  readonly hostnameOverride: string;
  readonly bindAddress: string;
  readonly healthzBindAddress: string;
  readonly metricsBindAddress: string;
  readonly bindAddressHardFail: boolean;
  readonly enableProfiling: boolean;
  readonly iptables: IptablesModeConfig;
  readonly nftables: Omit<IptablesModeConfig, 'localhostNodePorts'>;
  /** The `ipvs:` section (ipvs/config.ts). */
  readonly ipvs: IpvsModeConfig;
  /** The effective sync periods (top-level fields, else the mode's). */
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  readonly detectLocalMode: DetectLocalMode;
  readonly detectLocal: { readonly bridgeInterface: string; readonly interfaceNamePrefix: string };
  /** clusterCIDR split on commas: at most one per IP family. */
  readonly clusterCIDRs: readonly string[];
  /** CIDRs and keywords; empty means all local addresses (iptables' default). */
  readonly nodePortAddresses: readonly string[];
  readonly oomScoreAdj: number;
  readonly conntrack: ConntrackConfig;
  readonly configSyncPeriodMs: number;
  /** `iptables.svcnetVariant`, a svcnet extension: the iptables backend (default auto). */
  readonly iptablesVariant: IptablesVariantSetting;
}

const SECOND = 1000;

type FieldSpec =
  | 'string'
  | 'bool'
  | 'int'
  | 'number'
  | 'duration'
  | 'stringList'
  | 'boolMap'
  | 'object'
  | { readonly [key: string]: FieldSpec };

const SYNC = { syncPeriod: 'duration', minSyncPeriod: 'duration' } as const;

const SCHEMA: Record<string, FieldSpec> = {
  apiVersion: 'string',
  kind: 'string',
  featureGates: 'boolMap',
  clientConnection: {
    kubeconfig: 'string',
    acceptContentTypes: 'string',
    contentType: 'string',
    qps: 'number',
    burst: 'int',
  },
  logging: 'object',
  hostnameOverride: 'string',
  bindAddress: 'string',
  healthzBindAddress: 'string',
  metricsBindAddress: 'string',
  bindAddressHardFail: 'bool',
  enableProfiling: 'bool',
  showHiddenMetricsForVersion: 'string',
  mode: 'string',
  iptables: {
    masqueradeBit: 'int',
    masqueradeAll: 'bool',
    localhostNodePorts: 'bool',
    ...SYNC,
    // svcnet extension (no upstream field starts with "svcnet"): the iptables backend.
    svcnetVariant: 'string',
  },
  ipvs: {
    ...SYNC,
    scheduler: 'string',
    excludeCIDRs: 'stringList',
    strictARP: 'bool',
    tcpTimeout: 'duration',
    tcpFinTimeout: 'duration',
    udpTimeout: 'duration',
  },
  nftables: { masqueradeBit: 'int', masqueradeAll: 'bool', ...SYNC },
  winkernel: 'object',
  ...SYNC,
  detectLocalMode: 'string',
  detectLocal: { bridgeInterface: 'string', interfaceNamePrefix: 'string' },
  clusterCIDR: 'string',
  nodePortAddresses: 'stringList',
  oomScoreAdj: 'int',
  conntrack: {
    maxPerCore: 'int',
    min: 'int',
    tcpEstablishedTimeout: 'duration',
    tcpCloseWaitTimeout: 'duration',
    tcpBeLiberal: 'bool',
    udpTimeout: 'duration',
    udpStreamTimeout: 'duration',
  },
  configSyncPeriod: 'duration',
  portRange: 'string',
  windowsRunAsService: 'bool',
};

type Raw = Record<string, unknown>;

function isObject(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkValue(
  spec: FieldSpec,
  v: unknown,
  field: string,
  add: (f: string, m: string) => void,
) {
  const show = JSON.stringify(v) ?? String(v);
  if (typeof spec === 'object') {
    if (!isObject(v)) {
      add(field, `must be an object, got ${show}`);
      return;
    }
    for (const [k, sub] of Object.entries(v)) {
      const s = spec[k];
      if (s === undefined) add(`${field}.${k}`, 'unknown field');
      else if (sub !== null) checkValue(s, sub, `${field}.${k}`, add);
    }
    return;
  }
  const ok: Record<string, (x: unknown) => boolean> = {
    string: (x) => typeof x === 'string',
    bool: (x) => typeof x === 'boolean',
    int: (x) => typeof x === 'number' && Number.isInteger(x),
    number: (x) => typeof x === 'number' && Number.isFinite(x),
    duration: (x) => typeof x === 'string' && parseDuration(x) !== undefined,
    stringList: (x) => Array.isArray(x) && x.every((e) => typeof e === 'string'),
    boolMap: (x) => isObject(x) && Object.values(x).every((e) => typeof e === 'boolean'),
    object: (x) => isObject(x),
  };
  const what: Record<string, string> = {
    string: 'a string',
    bool: 'true or false',
    int: 'an integer',
    number: 'a number',
    duration: 'a duration such as "30s" or "1m0s"',
    stringList: 'a list of strings',
    boolMap: 'a map of names to true/false',
    object: 'an object',
  };
  if (!(ok[spec]?.(v) ?? false)) add(field, `must be ${what[spec] ?? spec}, got ${show}`);
}

function get(raw: Raw, path: string): unknown {
  let cur: unknown = raw;
  for (const k of path.split('.')) cur = isObject(cur) ? cur[k] : undefined;
  return cur;
}

function str(raw: Raw, path: string, dflt: string): string {
  const v = get(raw, path);
  return typeof v === 'string' && v !== '' ? v : dflt;
}

function num(raw: Raw, path: string, dflt: number): number {
  const v = get(raw, path);
  return typeof v === 'number' ? v : dflt;
}

function bool(raw: Raw, path: string, dflt: boolean): boolean {
  const v = get(raw, path);
  return typeof v === 'boolean' ? v : dflt;
}

function dur(raw: Raw, path: string, dflt: number): number {
  const v = get(raw, path);
  return typeof v === 'string' ? (parseDuration(v) ?? dflt) : dflt;
}

const MODES = new Set(['iptables', 'nftables', 'ipvs', 'kernelspace']);
const DETECT_MODES = new Set(['ClusterCIDR', 'NodeCIDR', 'BridgeInterface', 'InterfaceNamePrefix']);
const NODE_PORT_KEYWORDS = new Set(['primary', 'localhost', 'all']);
const IPTABLES_VARIANTS = new Set(['auto', 'legacy', 'nft']);

function checkHostPort(raw: Raw, field: string, add: (f: string, m: string) => void) {
  const v = get(raw, field);
  if (typeof v !== 'string' || v === '') return;
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(v);
  const host = m?.[1] ?? m?.[2] ?? '';
  const port = Number(m?.[3] ?? NaN);
  if (!m || (host !== '' && !parseIPSloppy(host)) || port > 65535)
    add(field, `must be IP:port (e.g. 0.0.0.0:10256), got ${JSON.stringify(v)}`);
}

function checkSemantics(raw: Raw, add: (f: string, m: string) => void): void {
  if (raw.apiVersion !== KUBE_PROXY_CONFIG_API_VERSION)
    add(
      'apiVersion',
      `must be ${KUBE_PROXY_CONFIG_API_VERSION}, got ${JSON.stringify(raw.apiVersion)}`,
    );
  if (raw.kind !== KUBE_PROXY_CONFIG_KIND)
    add('kind', `must be ${KUBE_PROXY_CONFIG_KIND}, got ${JSON.stringify(raw.kind)}`);
  const mode = get(raw, 'mode');
  if (typeof mode === 'string' && mode !== '' && !MODES.has(mode))
    add(
      'mode',
      `must be one of iptables, nftables, ipvs, kernelspace, got ${JSON.stringify(mode)}`,
    );
  for (const t of ['iptables', 'nftables']) {
    const bit = get(raw, `${t}.masqueradeBit`);
    if (typeof bit === 'number' && (bit < 0 || bit > 31))
      add(`${t}.masqueradeBit`, `must be 0-31, got ${bit}`);
  }
  // Zero periods are not errors: kube-proxy defaults them (kubeadm and kind write `0s`).
  for (const f of [
    'syncPeriod',
    'iptables.syncPeriod',
    'nftables.syncPeriod',
    'ipvs.syncPeriod',
    'configSyncPeriod',
    'minSyncPeriod',
    'iptables.minSyncPeriod',
    'nftables.minSyncPeriod',
    'ipvs.minSyncPeriod',
  ]) {
    // ipvs mode: checkIpvsConfig below reports the ipvs periods.
    if (get(raw, 'mode') === 'ipvs' && f.startsWith('ipvs.')) continue;
    const v = get(raw, f);
    if (typeof v === 'string' && (parseDuration(v) ?? 0) < 0)
      add(f, `must not be negative, got ${JSON.stringify(v)}`);
  }
  const detect = get(raw, 'detectLocalMode');
  if (typeof detect === 'string' && detect !== '' && !DETECT_MODES.has(detect))
    add(
      'detectLocalMode',
      `must be one of ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix, got ${JSON.stringify(detect)}`,
    );
  // --- ipvs section: checked in ipvs mode only, as kube-proxy does (ipvs/config.ts).
  if (get(raw, 'mode') === 'ipvs') checkIpvsConfig(ipvsSectionOf(raw), IPVS_FILE_FIELDS, add);
  if (detect === 'BridgeInterface' && str(raw, 'detectLocal.bridgeInterface', '') === '')
    add('detectLocal.bridgeInterface', 'required when detectLocalMode is BridgeInterface');
  if (detect === 'InterfaceNamePrefix' && str(raw, 'detectLocal.interfaceNamePrefix', '') === '')
    add('detectLocal.interfaceNamePrefix', 'required when detectLocalMode is InterfaceNamePrefix');
  checkClusterCIDR(raw, add);
  checkIptablesVariant(get(raw, 'iptables.svcnetVariant'), 'iptables.svcnetVariant', add);
  const bind = get(raw, 'bindAddress');
  if (typeof bind === 'string' && bind !== '' && !parseIPSloppy(bind))
    add('bindAddress', `must be an IP address, got ${JSON.stringify(bind)}`);
  checkHostPort(raw, 'healthzBindAddress', add);
  checkHostPort(raw, 'metricsBindAddress', add);
  const npa = get(raw, 'nodePortAddresses');
  if (Array.isArray(npa))
    npa.forEach((e, i) => {
      if (typeof e === 'string' && !NODE_PORT_KEYWORDS.has(e) && !parseCIDRSloppy(e))
        add(
          `nodePortAddresses[${i}]`,
          `must be a CIDR or one of primary, localhost, all, got ${JSON.stringify(e)}`,
        );
    });
  const oom = get(raw, 'oomScoreAdj');
  if (typeof oom === 'number' && (oom < -1000 || oom > 1000))
    add('oomScoreAdj', `must be -1000..1000, got ${oom}`);
  for (const f of [
    'conntrack.maxPerCore',
    'conntrack.min',
    'clientConnection.burst',
    'clientConnection.qps',
  ]) {
    const v = get(raw, f);
    if (typeof v === 'number' && v < 0) add(f, `must not be negative, got ${v}`);
  }
}

function checkIptablesVariant(v: unknown, field: string, add: (f: string, m: string) => void) {
  if (typeof v === 'string' && v !== '' && !IPTABLES_VARIANTS.has(v))
    add(field, `must be auto, legacy or nft, got ${JSON.stringify(v)}`);
}

function checkClusterCIDR(raw: Raw, add: (f: string, m: string) => void): void {
  const v = get(raw, 'clusterCIDR');
  if (typeof v !== 'string' || v === '') return;
  const parts = v.split(',').map((s) => s.trim());
  const families = new Set<string>();
  for (const p of parts) {
    const c = parseCIDRSloppy(p);
    if (!c)
      add(
        'clusterCIDR',
        `must be a CIDR or a comma-separated dual-stack pair, got ${JSON.stringify(v)}`,
      );
    else if (families.has(c.family))
      add('clusterCIDR', `has two ${c.family} CIDRs: ${JSON.stringify(v)}`);
    else families.add(c.family);
  }
}

/** The `ipvs:` section as typed values with kube-proxy's defaults (not yet validated). */
function ipvsSectionOf(raw: Raw): IpvsModeConfig {
  const d = DEFAULT_IPVS_MODE_CONFIG;
  const cidrs = get(raw, 'ipvs.excludeCIDRs');
  return {
    scheduler: str(raw, 'ipvs.scheduler', d.scheduler),
    syncPeriodMs: durNonZero(raw, 'ipvs.syncPeriod', d.syncPeriodMs),
    minSyncPeriodMs: dur(raw, 'ipvs.minSyncPeriod', d.minSyncPeriodMs),
    excludeCIDRs: Array.isArray(cidrs) ? (cidrs as string[]) : d.excludeCIDRs,
    strictARP: bool(raw, 'ipvs.strictARP', d.strictARP),
    tcpTimeoutMs: dur(raw, 'ipvs.tcpTimeout', d.tcpTimeoutMs),
    tcpFinTimeoutMs: dur(raw, 'ipvs.tcpFinTimeout', d.tcpFinTimeoutMs),
    udpTimeoutMs: dur(raw, 'ipvs.udpTimeout', d.udpTimeoutMs),
  };
}

/** A duration whose zero value means "default", as kube-proxy's defaulting treats it. */
function durNonZero(raw: Raw, path: string, dflt: number): number {
  const v = dur(raw, path, dflt);
  return v === 0 ? dflt : v;
}

/** A number whose zero value means "default" (clientConnection.qps and burst). */
function numNonZero(raw: Raw, path: string, dflt: number): number {
  const v = num(raw, path, dflt);
  return v === 0 ? dflt : v;
}

function build(raw: Raw): KubeProxyConfig {
  const mode = str(raw, 'mode', 'iptables') as ProxyMode;
  const iptables: IptablesModeConfig = {
    masqueradeBit: num(raw, 'iptables.masqueradeBit', 14),
    masqueradeAll: bool(raw, 'iptables.masqueradeAll', false),
    localhostNodePorts: bool(raw, 'iptables.localhostNodePorts', true),
    syncPeriodMs: durNonZero(raw, 'iptables.syncPeriod', 30 * SECOND),
    minSyncPeriodMs: dur(raw, 'iptables.minSyncPeriod', SECOND),
  };
  const nftables = {
    masqueradeBit: num(raw, 'nftables.masqueradeBit', 14),
    masqueradeAll: bool(raw, 'nftables.masqueradeAll', false),
    syncPeriodMs: durNonZero(raw, 'nftables.syncPeriod', 30 * SECOND),
    minSyncPeriodMs: dur(raw, 'nftables.minSyncPeriod', SECOND),
  };
  const ipvs = normalizeIpvsConfig(ipvsSectionOf(raw));
  const modeSync = mode === 'nftables' ? nftables : mode === 'ipvs' ? ipvs : iptables;
  const clusterCIDR = str(raw, 'clusterCIDR', '');
  const gates = get(raw, 'featureGates');
  return {
    mode,
    featureGates: isObject(gates) ? (gates as Record<string, boolean>) : {},
    clientConnection: {
      kubeconfig: str(raw, 'clientConnection.kubeconfig', ''),
      qps: numNonZero(raw, 'clientConnection.qps', 5),
      burst: numNonZero(raw, 'clientConnection.burst', 10),
      contentType: str(raw, 'clientConnection.contentType', 'application/vnd.kubernetes.protobuf'),
      acceptContentTypes: str(raw, 'clientConnection.acceptContentTypes', ''),
    },
    hostnameOverride: str(raw, 'hostnameOverride', ''),
    bindAddress: str(raw, 'bindAddress', ''),
    healthzBindAddress: str(raw, 'healthzBindAddress', '0.0.0.0:10256'),
    metricsBindAddress: str(raw, 'metricsBindAddress', '127.0.0.1:10249'),
    bindAddressHardFail: bool(raw, 'bindAddressHardFail', false),
    enableProfiling: bool(raw, 'enableProfiling', false),
    iptables,
    ipvs,
    nftables,
    syncPeriodMs: durNonZero(raw, 'syncPeriod', modeSync.syncPeriodMs),
    minSyncPeriodMs: dur(raw, 'minSyncPeriod', modeSync.minSyncPeriodMs),
    detectLocalMode: str(raw, 'detectLocalMode', 'ClusterCIDR') as DetectLocalMode,
    detectLocal: {
      bridgeInterface: str(raw, 'detectLocal.bridgeInterface', ''),
      interfaceNamePrefix: str(raw, 'detectLocal.interfaceNamePrefix', ''),
    },
    clusterCIDRs: clusterCIDR === '' ? [] : clusterCIDR.split(',').map((s) => s.trim()),
    nodePortAddresses: (get(raw, 'nodePortAddresses') as string[] | undefined) ?? [],
    oomScoreAdj: num(raw, 'oomScoreAdj', -999),
    conntrack: {
      maxPerCore: num(raw, 'conntrack.maxPerCore', 32768),
      min: num(raw, 'conntrack.min', 131072),
      tcpEstablishedTimeoutMs: dur(raw, 'conntrack.tcpEstablishedTimeout', 24 * 3600 * SECOND),
      tcpCloseWaitTimeoutMs: dur(raw, 'conntrack.tcpCloseWaitTimeout', 3600 * SECOND),
      tcpBeLiberal: bool(raw, 'conntrack.tcpBeLiberal', false),
      udpTimeoutMs: dur(raw, 'conntrack.udpTimeout', 0),
      udpStreamTimeoutMs: dur(raw, 'conntrack.udpStreamTimeout', 0),
    },
    configSyncPeriodMs: durNonZero(raw, 'configSyncPeriod', 15 * 60 * SECOND),
    iptablesVariant: str(raw, 'iptables.svcnetVariant', 'auto') as IptablesVariantSetting,
  };
}

/** The proxy modes svcnet implements; the others are valid kube-proxy modes not built yet. */
export const BUILT_PROXY_MODES: readonly ProxyMode[] = ['iptables', 'nftables'];

/** The modes the proxy daemon (`svcnet proxy`) runs. */
export type DaemonProxyMode = 'iptables' | 'nftables' | 'ipvs';
export const DAEMON_PROXY_MODES: readonly DaemonProxyMode[] = ['iptables', 'nftables', 'ipvs'];

/**
 * Throws INVALID_INPUT (CLI exit 2) when `mode` is a valid kube-proxy mode svcnet does not
 * implement yet (`built`, default BUILT_PROXY_MODES): a configuration that asks for ipvs must
 * never get iptables rules silently. `source` names where the mode came from (`--mode`, or
 * `FILE: mode`). An empty mode is iptables, as in kube-proxy.
 */
export function requireBuiltProxyMode<M extends ProxyMode = ProxyMode>(
  mode: string,
  source: string,
  built: readonly M[] = BUILT_PROXY_MODES as readonly M[],
): M {
  const m = mode === '' ? 'iptables' : mode;
  if ((built as readonly string[]).includes(m)) return m as M;
  throw new SvcnetError(
    'INVALID_INPUT',
    MODES.has(m)
      ? `${source}: proxy mode ${JSON.stringify(m)} is not built yet (svcnet implements ${built.join(', ')} only)`
      : `${source}: must be one of iptables, nftables, ipvs, kernelspace, got ${JSON.stringify(m)}`,
  );
}

/** kube-proxy's defaults (what an empty KubeProxyConfiguration means). */
export function defaultKubeProxyConfig(): KubeProxyConfig {
  return build({ apiVersion: KUBE_PROXY_CONFIG_API_VERSION, kind: KUBE_PROXY_CONFIG_KIND });
}

/**
 * Parses and validates a KubeProxyConfiguration document (YAML or JSON) read from `path`.
 * Unknown fields, wrong types and bad values all fail, each naming its field; the result
 * carries kube-proxy's defaults for everything not set.
 */
export function parseKubeProxyConfiguration(text: string, path: string): KubeProxyConfig {
  const errors: FieldError[] = [];
  const object = `KubeProxyConfiguration ${path}`;
  const add = (field: string, message: string) => errors.push({ object, field, message });
  const parsed = parseYamlDocument(path, text);
  if (parsed.error !== undefined) throw new ValidationError([parsed.error]);
  const raw: unknown = parsed.value;
  if (!isObject(raw)) {
    add('', 'must be a YAML/JSON object');
    throw new ValidationError(errors);
  }
  for (const [k, v] of Object.entries(raw)) {
    const spec = SCHEMA[k];
    if (spec === undefined) add(k, 'unknown field');
    else if (v !== null) checkValue(spec, v, k, add);
  }
  if (errors.length === 0) checkSemantics(raw, add);
  if (errors.length > 0) throw new ValidationError(errors);
  return build(raw);
}

/** The effective settings of one proxy (KubeProxyConfiguration after defaults and flags). */
export interface ProxyDaemonConfig {
  /** The dataplane programmed (`--proxy-mode`, else the file's `mode`; default iptables). */
  readonly mode: DaemonProxyMode;
  /** The `ipvs:` settings after the `--ipvs-*` flags (used in ipvs mode). */
  readonly ipvs: IpvsModeConfig;
  readonly nodeName: string;
  /** IP families to program; IPv4 first. */
  readonly families: readonly IPFamily[];
  /** Canonical CIDRs (any family). */
  readonly clusterCIDRs: readonly string[];
  readonly detectLocalMode: DetectLocalMode;
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
  readonly masqueradeAll: boolean;
  readonly masqueradeBit: number;
  readonly localhostNodePorts: boolean;
  readonly nodePortAddresses: readonly string[];
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  /** `ADDR:PORT`; empty disables the server. */
  readonly healthzBindAddress: string;
  readonly metricsBindAddress: string;
  readonly conntrack: ConntrackSettings;
  /** How often the canary is checked (default: the sync period, as kube-proxy). */
  readonly canaryIntervalMs: number;
  /** `auto` detects like kube-proxy's image (netfilter/iptables/variant.ts); otherwise forced. */
  readonly iptablesVariant: IptablesVariantSetting;
}

/** The `svcnet proxy` flags that override the file (as given on the command line). */
export interface ProxyConfigFlags extends IpvsFlags {
  /** `--proxy-mode` (or its alias `--mode`). */
  readonly proxyMode?: string;
  readonly hostnameOverride?: string;
  readonly clusterCidr?: string;
  readonly detectLocalMode?: string;
  readonly podBridgeInterface?: string;
  readonly podInterfaceNamePrefix?: string;
  readonly masqueradeAll?: boolean;
  readonly iptablesMasqueradeBit?: string;
  readonly iptablesLocalhostNodeports?: string;
  readonly iptablesSyncPeriod?: string;
  readonly iptablesMinSyncPeriod?: string;
  readonly nodeportAddresses?: string;
  readonly healthzBindAddress?: string;
  readonly metricsBindAddress?: string;
  readonly conntrackMaxPerCore?: string;
  readonly conntrackMin?: string;
  readonly conntrackTcpTimeoutEstablished?: string;
  readonly conntrackTcpTimeoutCloseWait?: string;
  readonly conntrackTcpBeLiberal?: boolean;
  readonly conntrackUdpTimeout?: string;
  readonly conntrackUdpTimeoutStream?: string;
  readonly iptablesVariant?: string;
  readonly canaryInterval?: string;
}

/** kube-proxy's defaults (KubeProxyConfiguration v1alpha1, iptables mode, Linux). */
export function defaultProxyConfig(nodeName: string): ProxyDaemonConfig {
  return resolveProxyConfig({}, undefined, nodeName);
}

function familiesOf(cidrs: readonly string[]): IPFamily[] {
  const fams = new Set(cidrs.map((c) => parseCIDRSloppy(c)?.family));
  const out: IPFamily[] = [];
  if (fams.has('IPv4') || fams.size === 0) out.push('IPv4');
  if (fams.has('IPv6')) out.push('IPv6');
  return out;
}

/** Readers of flag text that report a bad value (naming the flag) and return undefined. */
function flagReaders(bad: (field: string, message: string) => void) {
  const int = (flag: string, text: string | undefined, min: number, max: number) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max) {
      bad(flag, `must be an integer ${min}-${max}, got ${JSON.stringify(text)}`);
      return undefined;
    }
    return n;
  };
  const duration = (flag: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const ms = parseDuration(text.trim());
    if (ms === undefined || ms < 0)
      bad(flag, `must be a duration like 1s, 500ms or 1h30m, got ${JSON.stringify(text)}`);
    return ms === undefined || ms < 0 ? undefined : Math.round(ms);
  };
  const boolean = (flag: string, text: string | undefined): boolean | undefined => {
    if (text === undefined) return undefined;
    if (text === 'true' || text === '') return true;
    if (text === 'false') return false;
    bad(flag, `must be true or false, got ${JSON.stringify(text)}`);
    return undefined;
  };
  const seconds = (flag: string, text: string | undefined): number | undefined => {
    const ms = duration(flag, text);
    return ms === undefined ? undefined : ms / 1000;
  };
  const list = (text: string): string[] =>
    text
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  return { int, duration, boolean, seconds, list };
}

function resolveConntrack(
  flags: ProxyConfigFlags,
  file: ConntrackConfig,
  read: ReturnType<typeof flagReaders>,
): ConntrackSettings {
  const sec = (ms: number): number => ms / 1000;
  return {
    maxPerCore:
      read.int('--conntrack-max-per-core', flags.conntrackMaxPerCore, 0, 2 ** 31) ??
      file.maxPerCore,
    min: read.int('--conntrack-min', flags.conntrackMin, 0, 2 ** 31) ?? file.min,
    tcpEstablishedTimeoutSeconds:
      read.seconds('--conntrack-tcp-timeout-established', flags.conntrackTcpTimeoutEstablished) ??
      sec(file.tcpEstablishedTimeoutMs),
    tcpCloseWaitTimeoutSeconds:
      read.seconds('--conntrack-tcp-timeout-close-wait', flags.conntrackTcpTimeoutCloseWait) ??
      sec(file.tcpCloseWaitTimeoutMs),
    tcpBeLiberal: flags.conntrackTcpBeLiberal ?? file.tcpBeLiberal,
    udpTimeoutSeconds:
      read.seconds('--conntrack-udp-timeout', flags.conntrackUdpTimeout) ?? sec(file.udpTimeoutMs),
    udpStreamTimeoutSeconds:
      read.seconds('--conntrack-udp-timeout-stream', flags.conntrackUdpTimeoutStream) ??
      sec(file.udpStreamTimeoutMs),
  };
}

/**
 * Resolves the effective config: kube-proxy's defaults ← the KubeProxyConfiguration file
 * (`file`, parsed by `parseKubeProxyConfiguration`; absent means defaults) ← flags given
 * explicitly. Collects every bad flag value before failing (ValidationError naming the flag).
 */
export function resolveProxyConfig(
  flags: ProxyConfigFlags,
  file: KubeProxyConfig | undefined,
  defaultNodeName: string,
): ProxyDaemonConfig {
  const errors: FieldError[] = [];
  const bad = (field: string, message: string): void => {
    errors.push({ object: 'svcnet proxy', field, message });
  };
  const read = flagReaders(bad);
  const f = file ?? defaultKubeProxyConfig();
  const nodeName =
    (flags.hostnameOverride ?? f.hostnameOverride).trim().toLowerCase() || defaultNodeName;
  const clusterCIDRs: string[] = [];
  for (const part of read.list(flags.clusterCidr ?? f.clusterCIDRs.join(','))) {
    const c = parseCIDRSloppy(part);
    if (c === undefined) bad('--cluster-cidr', `not a CIDR: ${JSON.stringify(part)}`);
    else clusterCIDRs.push(formatCIDR(c));
  }
  // An empty --detect-local-mode means the default, as an empty field in the file does.
  const mode =
    flags.detectLocalMode === '' ? 'ClusterCIDR' : (flags.detectLocalMode ?? f.detectLocalMode);
  if (!DETECT_MODES.has(mode))
    bad(
      '--detect-local-mode',
      `must be one of ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix, got ${JSON.stringify(mode)}`,
    );
  const nodePortAddresses =
    flags.nodeportAddresses !== undefined
      ? read.list(flags.nodeportAddresses)
      : f.nodePortAddresses;
  for (const a of nodePortAddresses)
    if (!NODE_PORT_KEYWORDS.has(a) && parseCIDRSloppy(a) === undefined)
      bad(
        '--nodeport-addresses',
        `must be CIDRs or primary, localhost, all; got ${JSON.stringify(a)}`,
      );
  // An empty flag, like an empty field, means the default (the file's value, else auto).
  const variant = flags.iptablesVariant || f.iptablesVariant;
  checkIptablesVariant(variant, '--iptables-variant', bad);
  const proxyMode =
    flags.proxyMode === undefined || flags.proxyMode === '' ? f.mode : flags.proxyMode;
  if (!(DAEMON_PROXY_MODES as readonly string[]).includes(proxyMode))
    bad(
      '--proxy-mode',
      `proxy mode ${JSON.stringify(proxyMode)} is not built yet (svcnet implements ${DAEMON_PROXY_MODES.join(', ')} only)`,
    );
  // The mode's section of the file (nftables: or iptables:) holds its masquerade settings;
  // the iptables-named flags set them in either mode, as kube-proxy's flags do.
  const modeSection = proxyMode === 'nftables' ? f.nftables : f.iptables;
  const masqueradeBit =
    read.int('--iptables-masquerade-bit', flags.iptablesMasqueradeBit, 0, 31) ??
    modeSection.masqueradeBit;
  // --- ipvs: in ipvs mode ipvs.syncPeriod/minSyncPeriod and --ipvs-*-sync-period drive the
  // runner and the --iptables-* periods are ignored, as kube-proxy does.
  const isIpvs = proxyMode === 'ipvs';
  const ipvsFile =
    f.mode === 'ipvs'
      ? { ...f.ipvs, syncPeriodMs: f.syncPeriodMs, minSyncPeriodMs: f.minSyncPeriodMs }
      : f.ipvs;
  const ipvs = resolveIpvsConfig(flags, ipvsFile, read, bad, isIpvs);
  const iptSyncPeriodMs = read.duration('--iptables-sync-period', flags.iptablesSyncPeriod);
  const iptMinSyncPeriodMs = read.duration(
    '--iptables-min-sync-period',
    flags.iptablesMinSyncPeriod,
  );
  const syncPeriodMs = isIpvs ? ipvs.syncPeriodMs : (iptSyncPeriodMs ?? f.syncPeriodMs);
  const minSyncPeriodMs = isIpvs ? ipvs.minSyncPeriodMs : (iptMinSyncPeriodMs ?? f.minSyncPeriodMs);
  if (!isIpvs && syncPeriodMs <= 0) bad('--iptables-sync-period', 'must be greater than 0');
  const cfg: ProxyDaemonConfig = {
    mode: proxyMode as DaemonProxyMode,
    ipvs,
    nodeName,
    families: familiesOf(clusterCIDRs),
    clusterCIDRs,
    detectLocalMode: mode as DetectLocalMode,
    bridgeInterface: flags.podBridgeInterface ?? f.detectLocal.bridgeInterface,
    interfaceNamePrefix: flags.podInterfaceNamePrefix ?? f.detectLocal.interfaceNamePrefix,
    masqueradeAll: flags.masqueradeAll ?? modeSection.masqueradeAll,
    masqueradeBit,
    localhostNodePorts:
      read.boolean('--iptables-localhost-nodeports', flags.iptablesLocalhostNodeports) ??
      f.iptables.localhostNodePorts,
    nodePortAddresses,
    syncPeriodMs,
    minSyncPeriodMs,
    healthzBindAddress: flags.healthzBindAddress ?? f.healthzBindAddress,
    metricsBindAddress: flags.metricsBindAddress ?? f.metricsBindAddress,
    conntrack: resolveConntrack(flags, f.conntrack, read),
    // kube-proxy's iptables monitor polls the canary every syncPeriod (30 s by default); each
    // round costs a few iptables processes per family, which a 1 s poll made a tenth of the
    // proxy's CPU on a busy node.
    canaryIntervalMs: read.duration('--canary-interval', flags.canaryInterval) ?? syncPeriodMs,
    iptablesVariant: variant as ProxyDaemonConfig['iptablesVariant'],
  };
  if (errors.length > 0) throw new ValidationError(errors);
  return cfg;
}
