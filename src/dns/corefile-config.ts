// What a Corefile means to `svcnet dns`: the parsed server block (corefile.ts) mapped onto the
// same DnsConfig the YAML file gives, with CoreDNS's plugin and option names. One server
// block for the root zone (`.:53`, as kubeadm and kind ship); plugins kubernetes (required),
// forward, cache, health, ready, prometheus, errors, log, loop, reload, loadbalance, bind.
// Options svcnet accepts without acting on them (forward's `policy`, the `log`, `loop` and
// `loadbalance` plugins, …) are returned in `notImplemented` so the daemon says so when it
// starts, and docs/config.md lists them; an unknown plugin or option, or a bad argument, is
// an error naming it and its line. Every error is collected before failing. Pure.

import { SvcnetError } from '../errors.js';
import { parseLabelSelector } from '../kube/selectors.js';
import { parseDuration } from '../util/duration.js';
import { parseHostPort, type DnsConfig, type HostPort } from './config.js';
import { corefileAt, parseCorefile, type Directive } from './corefile.js';
import { parseUpstream, type UpstreamAddress } from './forward.js';
import type { PodMode } from './resolve.js';
import { fqdn } from './wire.js';

export interface CorefileSettings {
  readonly config: DnsConfig;
  /** kubernetes `kubeconfig FILE [CONTEXT]`; `--kubeconfig` wins over it. */
  readonly kubeconfig: { readonly file: string; readonly context: string | undefined } | undefined;
  /** `forward . /etc/resolv.conf` reads upstreams from config.resolvConf; false without forward. */
  readonly forward: boolean;
  /** `reload [INTERVAL]`: how often to look at the file besides inotify; undefined: no reload. */
  readonly reloadMs: number | undefined;
  /** Plugins and options accepted but not acted on, for one log line each at start. */
  readonly notImplemented: readonly { readonly line: number; readonly what: string }[];
}

/** kind's and kubeadm's reload default (CoreDNS: 30s). */
const DEFAULT_RELOAD_MS = 30_000;

type Options = Record<string, 'implemented' | 'accepted'>;
const KUBERNETES_OPTIONS: Options = {
  pods: 'implemented',
  fallthrough: 'implemented',
  ttl: 'implemented',
  endpoint_pod_names: 'implemented',
  ignore: 'implemented',
  noendpoints: 'implemented',
  namespaces: 'implemented',
  labels: 'implemented',
  kubeconfig: 'implemented',
};
const FORWARD_OPTIONS: Options = {
  max_concurrent: 'implemented',
  policy: 'accepted',
  expire: 'accepted',
  max_fails: 'accepted',
  health_check: 'accepted',
  prefer_udp: 'accepted',
};
const CACHE_OPTIONS: Options = {
  success: 'implemented',
  disable: 'implemented',
  denial: 'accepted',
  prefetch: 'accepted',
  serve_stale: 'accepted',
  servfail: 'accepted',
  keepttl: 'accepted',
};
const ERRORS_OPTIONS: Options = { consolidate: 'accepted', stacktrace: 'accepted' };

/** Collects the problems and the unimplemented settings, and checks arguments. */
class Checker {
  readonly errors: string[] = [];
  readonly notImplemented: { line: number; what: string }[] = [];
  private readonly file: string;
  constructor(file: string) {
    this.file = file;
  }

  err(line: number, message: string): void {
    this.errors.push(corefileAt(this.file, line, message));
  }

  accepted(line: number, what: string): void {
    this.notImplemented.push({ line, what });
  }

  /** The directive's block lines that are implemented; unknown ones are errors. */
  options(d: Directive, known: Options): Directive[] {
    for (const o of d.block ?? []) {
      const kind = known[o.name];
      if (kind === undefined)
        this.err(o.line, `unknown option ${JSON.stringify(o.name)} of plugin ${d.name}`);
      else if (kind === 'accepted') this.accepted(o.line, `${d.name} option ${o.name}`);
    }
    return (d.block ?? []).filter((o) => known[o.name] === 'implemented');
  }

  noBlock(d: Directive): void {
    if (d.block !== undefined) this.err(d.line, `plugin ${d.name} takes no block`);
  }

  maxArgs(d: Directive, n: number): void {
    if (d.args.length > n) this.err(d.line, `${d.name}: too many arguments (${d.args.join(' ')})`);
  }

  address(d: Directive, dflt: string): HostPort | undefined {
    this.noBlock(d);
    this.maxArgs(d, 1);
    const text = d.args[0] ?? dflt;
    const hp = parseHostPort(text);
    if (!hp)
      this.err(
        d.line,
        `${d.name}: not an address: ${JSON.stringify(text)} (want :PORT or HOST:PORT)`,
      );
    return hp;
  }

  duration(line: number, what: string, text: string | undefined): number | undefined {
    const ms = text === undefined ? undefined : parseDuration(text);
    if (ms === undefined || ms < 0)
      this.err(line, `${what}: not a duration: ${JSON.stringify(text ?? '')}`);
    return ms;
  }

  integer(
    line: number,
    what: string,
    text: string | undefined,
    min: number,
    max: number,
  ): number | undefined {
    const v = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
    if (v >= min && v <= max) return v;
    this.err(line, `${what}: must be an integer ${min}-${max}, got ${JSON.stringify(text ?? '')}`);
    return undefined;
  }
}

const zonesOf = (names: readonly string[]): string[] => names.map((z) => fqdn(z.toLowerCase()));

/** The settings as the plugins fill them in, before they become a DnsConfig. */
interface Draft {
  listen: HostPort;
  resolver: {
    zones: string[];
    ttl: number;
    pods: PodMode;
    namespaces: string[];
    endpointPodNames: boolean;
    ignoreEmptyService: boolean;
    fallthrough: string[] | undefined;
  };
  hasKubernetes: boolean;
  labelSelector: string | undefined;
  noEndpoints: boolean;
  kubeconfig: CorefileSettings['kubeconfig'];
  forward: boolean;
  upstreams: UpstreamAddress[];
  resolvConf: string;
  forwardMaxConcurrent: number;
  cache: { enabled: boolean; maxTtl: number; capacity: number };
  cacheDisabled: { line: number; zones: string[] }[];
  health: HostPort | undefined;
  lameduckMs: number;
  ready: HostPort | undefined;
  metrics: HostPort | undefined;
  reloadMs: number | undefined;
}

function kubernetesOption(o: Directive, c: Checker, draft: Draft): void {
  const at = `kubernetes ${o.name}`;
  const r = draft.resolver;
  switch (o.name) {
    case 'pods':
      if (o.args.length !== 1 || !['disabled', 'insecure', 'verified'].includes(o.args[0] ?? ''))
        c.err(o.line, `${at}: must be disabled, insecure or verified`);
      else r.pods = o.args[0] as PodMode;
      return;
    case 'fallthrough':
      r.fallthrough = zonesOf(o.args);
      return;
    case 'ttl': {
      c.maxArgs(o, 1);
      r.ttl = c.integer(o.line, at, o.args[0], 0, 3600) ?? r.ttl;
      return;
    }
    case 'endpoint_pod_names':
      c.maxArgs(o, 0);
      r.endpointPodNames = true;
      return;
    case 'ignore':
      if (o.args.length !== 1 || o.args[0] !== 'empty_service')
        c.err(o.line, `${at}: only "ignore empty_service" exists`);
      r.ignoreEmptyService = true;
      return;
    case 'noendpoints':
      c.maxArgs(o, 0);
      draft.noEndpoints = true;
      return;
    case 'namespaces':
      r.namespaces = [...o.args];
      return;
    case 'labels':
      try {
        parseLabelSelector(o.args.join(' '));
        draft.labelSelector = o.args.join(' ');
      } catch (e) {
        c.err(o.line, `${at}: ${e instanceof Error ? e.message : String(e)}`);
      }
      return;
    case 'kubeconfig':
      if (o.args.length < 1 || o.args.length > 2) c.err(o.line, `${at}: want FILE [CONTEXT]`);
      else draft.kubeconfig = { file: o.args[0] ?? '', context: o.args[1] };
      return;
  }
}

function kubernetesPlugin(d: Directive, c: Checker, draft: Draft): void {
  draft.hasKubernetes = true;
  if (d.args.length === 0)
    c.err(d.line, 'kubernetes: name its zones (e.g. cluster.local in-addr.arpa ip6.arpa)');
  draft.resolver.zones = zonesOf(d.args);
  for (const o of c.options(d, KUBERNETES_OPTIONS)) kubernetesOption(o, c, draft);
}

function forwardPlugin(d: Directive, c: Checker, draft: Draft): void {
  draft.forward = true;
  const [from, ...to] = d.args;
  if (from !== '.') c.err(d.line, 'forward: only "forward . TO..." (every name) is supported');
  if (to.length === 0) c.err(d.line, 'forward: name an upstream or a resolv.conf file');
  for (const t of to) {
    if (t.startsWith('/')) draft.resolvConf = t;
    else
      try {
        draft.upstreams.push(parseUpstream(t.replace(/^dns:\/\//, '')));
      } catch {
        c.err(
          d.line,
          `forward: not an upstream address: ${JSON.stringify(t)} (want ADDR[:PORT], [IPv6]:PORT or a resolv.conf path)`,
        );
      }
  }
  if (to.some((t) => t.startsWith('/')) && draft.upstreams.length > 0)
    c.err(d.line, 'forward: give either a resolv.conf file or addresses, not both');
  for (const o of c.options(d, FORWARD_OPTIONS)) {
    c.maxArgs(o, 1);
    draft.forwardMaxConcurrent =
      c.integer(o.line, 'forward max_concurrent', o.args[0], 1, 1_000_000) ??
      draft.forwardMaxConcurrent;
  }
}

function cachePlugin(d: Directive, c: Checker, draft: Draft): void {
  const cache = draft.cache;
  cache.enabled = true;
  if (d.args[0] !== undefined)
    cache.maxTtl = c.integer(d.line, 'cache TTL', d.args[0], 1, 86400) ?? cache.maxTtl;
  if (d.args.slice(1).some((z) => z !== '.'))
    c.err(d.line, 'cache: zones other than "." are not supported');
  for (const o of c.options(d, CACHE_OPTIONS)) {
    if (o.name === 'disable') {
      if (o.args[0] !== 'success' && o.args[0] !== 'denial')
        c.err(o.line, 'cache disable: want success|denial [ZONES...]');
      draft.cacheDisabled.push({ line: o.line, zones: zonesOf(o.args.slice(1)) });
      continue;
    }
    c.maxArgs(o, 3);
    cache.capacity =
      c.integer(o.line, 'cache success CAPACITY', o.args[0], 1, 10_000_000) ?? cache.capacity;
    if (o.args[1] !== undefined)
      cache.maxTtl = c.integer(o.line, 'cache success TTL', o.args[1], 1, 86400) ?? cache.maxTtl;
    if (o.args[2] !== undefined) c.accepted(o.line, 'cache success MINTTL');
  }
}

function healthPlugin(d: Directive, c: Checker, draft: Draft): void {
  draft.health = c.address({ ...d, block: undefined }, ':8080');
  for (const o of d.block ?? []) {
    if (o.name !== 'lameduck') {
      c.err(o.line, `unknown option ${JSON.stringify(o.name)} of plugin health`);
      continue;
    }
    c.maxArgs(o, 1);
    draft.lameduckMs = c.duration(o.line, 'health lameduck', o.args[0]) ?? draft.lameduckMs;
  }
}

/** One plugin of the server block onto the draft. */
function plugin(d: Directive, c: Checker, draft: Draft): void {
  switch (d.name) {
    case 'kubernetes':
      kubernetesPlugin(d, c, draft);
      return;
    case 'forward':
      forwardPlugin(d, c, draft);
      return;
    case 'cache':
      cachePlugin(d, c, draft);
      return;
    case 'health':
      healthPlugin(d, c, draft);
      return;
    case 'ready':
      draft.ready = c.address(d, ':8181');
      return;
    case 'prometheus':
      draft.metrics = c.address(d, ':9153');
      return;
    case 'reload':
      c.noBlock(d);
      c.maxArgs(d, 2);
      draft.reloadMs =
        d.args[0] === undefined ? DEFAULT_RELOAD_MS : c.duration(d.line, 'reload', d.args[0]);
      if (d.args[1] !== undefined) c.accepted(d.line, 'reload JITTER');
      return;
    case 'bind':
      c.noBlock(d);
      if (d.args.length !== 1 || parseHostPort(`${d.args[0] ?? ''}:1`) === undefined)
        c.err(d.line, 'bind: give one address (svcnet listens on one)');
      else draft.listen = { ...draft.listen, host: d.args[0] ?? '0.0.0.0' };
      return;
    case 'errors':
      // Failures are always logged; the options shape only how.
      c.options(d, ERRORS_OPTIONS);
      return;
    case 'log':
    case 'loop':
    case 'loadbalance':
      c.accepted(d.line, `plugin ${d.name}`);
      if (d.block !== undefined) c.err(d.line, `plugin ${d.name}: options are not supported`);
      return;
    default:
      c.err(d.line, `unknown plugin ${JSON.stringify(d.name)}`);
  }
}

/** The listen port from the server block's keys: only the root zone, `.:PORT`. */
function serverPort(keys: readonly string[], line: number, c: Checker): number {
  let port = 53;
  for (const key of keys) {
    const m = /^(?:dns:\/\/)?([^:]*)(?::(\d+))?$/.exec(key);
    const p = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!m || m[1] !== '.' || p < 1 || p > 65535)
      c.err(
        line,
        `server block key ${JSON.stringify(key)}: only the root zone "." is supported, as ".:PORT"`,
      );
    else port = p;
  }
  return port;
}

/** Maps the Corefile's text (see the file header). Throws INVALID_INPUT listing every problem. */
export function corefileToDnsConfig(
  text: string,
  file: string,
  env: Readonly<Record<string, string | undefined>> = {},
): CorefileSettings {
  const blocks = parseCorefile(text, file, env);
  const c = new Checker(file);
  const block = blocks[0];
  if (block === undefined)
    throw new SvcnetError('INVALID_INPUT', `Corefile ${file}: no server block`);
  for (const extra of blocks.slice(1))
    c.err(extra.line, 'only one server block is supported (svcnet dns serves one root zone)');
  const draft: Draft = {
    listen: { host: '0.0.0.0', port: serverPort(block.keys, block.line, c) },
    resolver: {
      zones: [],
      ttl: 5,
      pods: 'disabled',
      namespaces: [],
      endpointPodNames: false,
      ignoreEmptyService: false,
      fallthrough: undefined,
    },
    hasKubernetes: false,
    labelSelector: undefined,
    noEndpoints: false,
    kubeconfig: undefined,
    forward: false,
    upstreams: [],
    resolvConf: '/etc/resolv.conf',
    forwardMaxConcurrent: 1000,
    cache: { enabled: false, maxTtl: 3600, capacity: 9984 },
    cacheDisabled: [],
    health: undefined,
    lameduckMs: 0,
    ready: undefined,
    metrics: undefined,
    reloadMs: undefined,
  };
  const seen = new Set<string>();
  for (const d of block.directives) {
    if (seen.has(d.name)) c.err(d.line, `plugin ${d.name} appears twice`);
    seen.add(d.name);
    plugin(d, c, draft);
  }
  // The cache holds forwarded answers only: `disable` of cluster zones is what it does anyway.
  for (const dis of draft.cacheDisabled)
    if (dis.zones.length === 0 || dis.zones.some((z) => !draft.resolver.zones.includes(z)))
      c.accepted(dis.line, 'cache disable of zones outside kubernetes');
  if (!draft.hasKubernetes)
    c.err(block.line, 'no kubernetes plugin: svcnet dns serves the cluster zones from it');
  if (c.errors.length > 0) throw new SvcnetError('INVALID_INPUT', c.errors.join('; '));
  const config: DnsConfig = {
    resolver: { ...draft.resolver, zonal: false, multiclusterZones: [], localIPs: [] },
    listen: draft.listen,
    health: draft.health,
    ready: draft.ready,
    metrics: draft.metrics,
    upstreams: draft.upstreams,
    resolvConf: draft.resolvConf,
    cache: draft.cache,
    transfer: false,
    startupTimeoutSeconds: 5,
    forwardTimeoutMs: 2000,
    forwardMaxConcurrent: draft.forwardMaxConcurrent,
    labelSelector: draft.labelSelector,
    noEndpoints: draft.noEndpoints,
    lameduckMs: draft.lameduckMs,
  };
  return {
    config,
    kubeconfig: draft.kubeconfig,
    forward: draft.forward,
    reloadMs: draft.reloadMs,
    notImplemented: c.notImplemented,
  };
}
