// Configuration of `svcnet dns`: the YAML/JSON file given with --config, with the command
// line flags applied on top, validated as a whole (every field error is collected before
// failing). Defaults follow kubeadm's Corefile: zones <domain> in-addr.arpa ip6.arpa,
// `pods insecure`, `fallthrough in-addr.arpa ip6.arpa`, health :8080, ready :8181,
// prometheus :9153, `cache 30`, upstreams from resolv.conf, `health { lameduck 5s }`; the
// record TTL is the plugin's default 5 s. Pure: the caller reads the file.

import { parseYamlDocument } from '../kube/manifest.js';
import { ValidationError, type FieldError } from '../errors.js';
import type { PodMode, ResolverConfig } from './resolve.js';
import { parseUpstream, type UpstreamAddress } from './forward.js';
import { fqdn } from './wire.js';
import { parseDuration } from '../util/duration.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface DnsConfig {
  readonly resolver: ResolverConfig;
  readonly listen: HostPort;
  /** undefined disables that endpoint. */
  readonly health: HostPort | undefined;
  readonly ready: HostPort | undefined;
  readonly metrics: HostPort | undefined;
  /** Explicit upstreams; empty means the nameservers of `resolvConf`. */
  readonly upstreams: readonly UpstreamAddress[];
  readonly resolvConf: string;
  readonly cache: { readonly enabled: boolean; readonly maxTtl: number; readonly capacity: number };
  readonly transfer: boolean;
  /** Log "waiting for sync" and serve SERVFAIL for would-be NXDOMAINs until synced. */
  readonly startupTimeoutSeconds: number;
  readonly forwardTimeoutMs: number;
  /** Upstream queries in flight at once; more get REFUSED (forward's `max_concurrent`). */
  readonly forwardMaxConcurrent: number;
  /** kubernetes `labels`: only Services and EndpointSlices matching it exist; undefined: all. */
  readonly labelSelector: string | undefined;
  /** kubernetes `noendpoints`: EndpointSlices are not watched (no endpoint records). */
  readonly noEndpoints: boolean;
  /** How long to keep answering after SIGTERM/SIGINT, reporting not ready; 0 disables. */
  readonly lameduckMs: number;
  /** Processes answering queries (`workers`); undefined: one per CPU (the CLI decides). */
  readonly workers?: number | undefined;
}

/** The most `workers` a daemon forks. */
export const MAX_WORKERS = 64;

/** kubeadm's and kind's Corefile: `health { lameduck 5s }`. */
export const DEFAULT_LAMEDUCK_MS = 5000;

export interface DnsFlags {
  readonly listen?: string;
  readonly zone?: string;
  readonly upstream?: readonly string[];
  readonly healthListen?: string;
  readonly readyListen?: string;
  readonly metricsListen?: string;
  /** A Go duration (`5s`, `500ms`, `0`). */
  readonly lameduck?: string;
}

const KNOWN_KEYS = new Set([
  'zones',
  'ttl',
  'pods',
  'namespaces',
  'endpointPodNames',
  'ignoreEmptyService',
  'fallthrough',
  'zonal',
  'multiclusterZones',
  'localIPs',
  'listen',
  'healthListen',
  'readyListen',
  'metricsListen',
  'upstreams',
  'resolvConf',
  'cache',
  'transfer',
  'startupTimeoutSeconds',
  'forwardTimeoutMs',
  'lameduck',
  'workers',
]);

function fqdnLower(z: string): string {
  return fqdn(z.toLowerCase());
}

/** Parses `HOST:PORT`, `:PORT` or `[V6]:PORT`; `off` or '' disables (for optional ones). */
export function parseHostPort(text: string): HostPort | undefined {
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(text);
  const m = v6 ?? /^([^:]*):(\d+)$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return undefined;
  return { host: m[1] === '' ? '0.0.0.0' : (m[1] ?? '0.0.0.0'), port };
}

/** The lameduck in milliseconds from a Go duration (flag or file), default 5 s. */
function lameduckOf(v: unknown, err: (field: string, message: string) => void): number {
  if (v === undefined) return DEFAULT_LAMEDUCK_MS;
  const ms = typeof v === 'string' ? parseDuration(v.trim()) : undefined;
  if (ms !== undefined && ms >= 0 && ms <= 3_600_000) return ms;
  err('lameduck', `must be a duration from 0 to 1h (e.g. 5s, 500ms, 0), got ${JSON.stringify(v)}`);
  return DEFAULT_LAMEDUCK_MS;
}

/** Whether `v` is a valid `workers` (an integer 1..MAX_WORKERS). */
export function isWorkerCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_WORKERS;
}

/** `workers` of the file; undefined when not given (one per CPU). */
function workersOf(v: unknown, err: (field: string, message: string) => void): number | undefined {
  if (v === undefined || isWorkerCount(v)) return v;
  err('workers', `must be an integer 1-${MAX_WORKERS}, got ${JSON.stringify(v)}`);
  return undefined;
}

/**
 * Builds the configuration from the file's text (may be undefined) and the flags. Throws
 * ValidationError naming `source` and each bad field.
 */
export function buildDnsConfig(
  fileText: string | undefined,
  flags: DnsFlags,
  source = '--config',
): DnsConfig {
  const errors: FieldError[] = [];
  const err = (field: string, message: string): void => {
    errors.push({ object: source, field, message });
  };
  let raw: Record<string, unknown> = {};
  if (fileText !== undefined) {
    const parsed = parseYamlDocument(source, fileText);
    const doc = parsed.value;
    if (parsed.error !== undefined) throw new ValidationError([parsed.error]);
    if (doc === null || doc === undefined) raw = {};
    else if (typeof doc !== 'object' || Array.isArray(doc)) err('', 'must be a mapping');
    else raw = doc as Record<string, unknown>;
  }
  for (const k of Object.keys(raw)) if (!KNOWN_KEYS.has(k)) err(k, 'unknown field');

  const strList = (key: string, dflt: readonly string[]): string[] => {
    const v = raw[key];
    if (v === undefined) return [...dflt];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      err(key, 'must be a list of strings');
      return [...dflt];
    }
    return v as string[];
  };
  const bool = (key: string, dflt: boolean): boolean => {
    const v = raw[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'boolean') {
      err(key, `must be true or false, got ${JSON.stringify(v)}`);
      return dflt;
    }
    return v;
  };
  const num = (key: string, dflt: number, min: number, max: number): number => {
    const v = raw[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      err(key, `must be an integer ${min}-${max}, got ${JSON.stringify(v)}`);
      return dflt;
    }
    return v;
  };
  const hostPort = (key: string, flag: string | undefined, dflt: string): HostPort | undefined => {
    const v = flag ?? raw[key] ?? dflt;
    if (typeof v !== 'string') {
      err(key, 'must be a string HOST:PORT');
      return undefined;
    }
    if (v === '' || v === 'off') return undefined;
    const hp = parseHostPort(v);
    if (!hp) err(key, `must be HOST:PORT, :PORT or [IPv6]:PORT, got ${JSON.stringify(v)}`);
    return hp;
  };

  let zones = strList('zones', ['cluster.local', 'in-addr.arpa', 'ip6.arpa']).map(fqdnLower);
  if (flags.zone !== undefined) {
    const z = fqdnLower(flags.zone);
    if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+$/.test(z))
      err('zone', `not a domain name: ${flags.zone}`);
    zones = [z, ...zones.filter((x) => x !== 'cluster.local.' && x !== z)];
  }
  const pods = raw.pods ?? 'insecure';
  if (pods !== 'disabled' && pods !== 'insecure' && pods !== 'verified')
    err('pods', `must be disabled, insecure or verified, got ${JSON.stringify(pods)}`);
  const fallthroughRaw = raw.fallthrough;
  let fallthrough: string[] | undefined = ['in-addr.arpa.', 'ip6.arpa.'];
  if (fallthroughRaw === null || fallthroughRaw === false) fallthrough = undefined;
  else if (fallthroughRaw === true) fallthrough = [];
  else if (fallthroughRaw !== undefined) fallthrough = strList('fallthrough', []).map(fqdnLower);
  const localIPs = strList('localIPs', []);

  const upstreamTexts =
    flags.upstream && flags.upstream.length > 0 ? flags.upstream : strList('upstreams', []);
  const upstreams: UpstreamAddress[] = [];
  upstreamTexts.forEach((u, i) => {
    try {
      upstreams.push(parseUpstream(u));
    } catch (e) {
      err(`upstreams[${i}]`, e instanceof Error ? e.message : String(e));
    }
  });
  const cacheRaw = raw.cache ?? {};
  let cache = { enabled: true, maxTtl: 30, capacity: 9984 };
  if (cacheRaw === false) cache = { ...cache, enabled: false };
  else if (typeof cacheRaw !== 'object' || cacheRaw === null || Array.isArray(cacheRaw))
    err('cache', 'must be a mapping or false');
  else {
    const c = cacheRaw as Record<string, unknown>;
    if (c.maxTtl !== undefined) {
      if (
        typeof c.maxTtl === 'number' &&
        Number.isInteger(c.maxTtl) &&
        c.maxTtl >= 1 &&
        c.maxTtl <= 86400
      )
        cache.maxTtl = c.maxTtl;
      else err('cache.maxTtl', 'must be an integer 1-86400');
    }
    if (c.capacity !== undefined) {
      if (typeof c.capacity === 'number' && Number.isInteger(c.capacity) && c.capacity >= 1)
        cache.capacity = c.capacity;
      else err('cache.capacity', 'must be a positive integer');
    }
  }
  const resolvConf = raw.resolvConf ?? '/etc/resolv.conf';
  if (typeof resolvConf !== 'string') err('resolvConf', 'must be a path');

  const cfg: DnsConfig = {
    resolver: {
      zones,
      ttl: num('ttl', 5, 0, 3600),
      pods: pods as PodMode,
      namespaces: strList('namespaces', []),
      endpointPodNames: bool('endpointPodNames', false),
      ignoreEmptyService: bool('ignoreEmptyService', false),
      fallthrough,
      zonal: bool('zonal', false),
      multiclusterZones: strList('multiclusterZones', []).map(fqdnLower),
      localIPs,
    },
    listen: hostPort('listen', flags.listen, '0.0.0.0:53') ?? { host: '0.0.0.0', port: 53 },
    health: hostPort('healthListen', flags.healthListen, ':8080'),
    ready: hostPort('readyListen', flags.readyListen, ':8181'),
    metrics: hostPort('metricsListen', flags.metricsListen, ':9153'),
    upstreams,
    resolvConf: typeof resolvConf === 'string' ? resolvConf : '/etc/resolv.conf',
    cache,
    transfer: bool('transfer', false),
    startupTimeoutSeconds: num('startupTimeoutSeconds', 5, 0, 3600),
    forwardTimeoutMs: num('forwardTimeoutMs', 2000, 10, 60000),
    forwardMaxConcurrent: 1000,
    labelSelector: undefined,
    noEndpoints: false,
    lameduckMs: lameduckOf(flags.lameduck ?? raw.lameduck, err),
    workers: workersOf(raw.workers, err),
  };
  if (errors.length > 0) throw new ValidationError(errors);
  return cfg;
}

/**
 * The settings that differ between `old` and `next` but cannot change in a running daemon
 * (named as CoreDNS's Corefile or svcnet's YAML calls them), for the reload's log line.
 * `hasPodInformer`: whether the daemon watches Pods, which `pods verified` needs.
 */
export function fieldsNeedingRestart(
  old: DnsConfig,
  next: DnsConfig,
  hasPodInformer: boolean,
): string[] {
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  const out: string[] = [];
  if (!same(old.listen, next.listen)) out.push('listen');
  if (!same(old.health, next.health)) out.push('health');
  if (!same(old.ready, next.ready)) out.push('ready');
  if (!same(old.metrics, next.metrics)) out.push('prometheus');
  if (!same(old.cache, next.cache)) out.push('cache');
  if (old.lameduckMs !== next.lameduckMs) out.push('lameduck');
  if (old.labelSelector !== next.labelSelector) out.push('labels');
  if (old.noEndpoints !== next.noEndpoints) out.push('noendpoints');
  if (next.resolver.pods === 'verified' && old.resolver.pods !== 'verified' && !hasPodInformer)
    out.push('pods verified');
  return out;
}
