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

/** Maps the Corefile's text (see the file header). Throws INVALID_INPUT listing every problem. */
export function corefileToDnsConfig(
  text: string,
  file: string,
  env: Readonly<Record<string, string | undefined>> = {},
): CorefileSettings {
  const blocks = parseCorefile(text, file, env);
  const errors: string[] = [];
  const notImplemented: { line: number; what: string }[] = [];
  const err = (line: number, message: string): void => {
    errors.push(corefileAt(file, line, message));
  };
  const block = blocks[0];
  if (block === undefined)
    throw new SvcnetError('INVALID_INPUT', `Corefile ${file}: no server block`);
  for (const extra of blocks.slice(1))
    err(extra.line, 'only one server block is supported (svcnet dns serves one root zone)');

  let listen: HostPort = { host: '0.0.0.0', port: 53 };
  for (const key of block.keys) {
    const m = /^(?:dns:\/\/)?([^:]*)(?::(\d+))?$/.exec(key);
    const port = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!m || m[1] !== '.' || port < 1 || port > 65535)
      err(
        block.line,
        `server block key ${JSON.stringify(key)}: only the root zone "." is supported, as ".:PORT"`,
      );
    else listen = { ...listen, port };
  }

  const seen = new Set<string>();
  /** The directive's block lines, each checked against `known`. */
  const options = (d: Directive, known: Options): Directive[] => {
    for (const o of d.block ?? []) {
      const kind = known[o.name];
      if (kind === undefined)
        err(o.line, `unknown option ${JSON.stringify(o.name)} of plugin ${d.name}`);
      else if (kind === 'accepted')
        notImplemented.push({ line: o.line, what: `${d.name} option ${o.name}` });
    }
    return (d.block ?? []).filter((o) => known[o.name] === 'implemented');
  };
  const noBlock = (d: Directive): void => {
    if (d.block !== undefined) err(d.line, `plugin ${d.name} takes no block`);
  };
  const maxArgs = (d: Directive, n: number): void => {
    if (d.args.length > n) err(d.line, `${d.name}: too many arguments (${d.args.join(' ')})`);
  };
  const address = (d: Directive, dflt: string): HostPort | undefined => {
    maxArgs(d, 1);
    const text = d.args[0] ?? dflt;
    const hp = parseHostPort(text);
    if (!hp)
      err(d.line, `${d.name}: not an address: ${JSON.stringify(text)} (want :PORT or HOST:PORT)`);
    return hp;
  };
  const duration = (line: number, what: string, text: string | undefined): number | undefined => {
    const ms = text === undefined ? undefined : parseDuration(text);
    if (ms === undefined || ms < 0)
      err(line, `${what}: not a duration: ${JSON.stringify(text ?? '')}`);
    return ms;
  };
  const integer = (
    line: number,
    what: string,
    text: string | undefined,
    min: number,
    max: number,
  ): number | undefined => {
    const v = text !== undefined && /^\d+$/.test(text) ? Number(text) : NaN;
    if (!(v >= min && v <= max)) {
      err(line, `${what}: must be an integer ${min}-${max}, got ${JSON.stringify(text ?? '')}`);
      return undefined;
    }
    return v;
  };
  const zones = (names: readonly string[]): string[] => names.map((z) => fqdn(z.toLowerCase()));

  let kube: Directive | undefined;
  let resolver = {
    zones: [] as string[],
    ttl: 5,
    pods: 'disabled' as PodMode,
    namespaces: [] as string[],
    endpointPodNames: false,
    ignoreEmptyService: false,
    fallthrough: undefined as string[] | undefined,
  };
  let labelSelector: string | undefined;
  let noEndpoints = false;
  let kubeconfig: CorefileSettings['kubeconfig'];
  let forward = false;
  const upstreams: UpstreamAddress[] = [];
  let resolvConf = '/etc/resolv.conf';
  let forwardMaxConcurrent = 1000;
  let cache = { enabled: false, maxTtl: 3600, capacity: 9984 };
  let health: HostPort | undefined;
  let lameduckMs = 0;
  let ready: HostPort | undefined;
  let metrics: HostPort | undefined;
  let reloadMs: number | undefined;
  const cacheDisabled: { line: number; zones: string[] }[] = [];

  for (const d of block.directives) {
    if (seen.has(d.name)) err(d.line, `plugin ${d.name} appears twice`);
    seen.add(d.name);
    switch (d.name) {
      case 'kubernetes': {
        kube = d;
        if (d.args.length === 0)
          err(d.line, 'kubernetes: name its zones (e.g. cluster.local in-addr.arpa ip6.arpa)');
        resolver = { ...resolver, zones: zones(d.args) };
        for (const o of options(d, KUBERNETES_OPTIONS)) {
          const at = `kubernetes ${o.name}`;
          switch (o.name) {
            case 'pods':
              if (
                o.args.length !== 1 ||
                !['disabled', 'insecure', 'verified'].includes(o.args[0] ?? '')
              )
                err(o.line, `${at}: must be disabled, insecure or verified`);
              else resolver = { ...resolver, pods: o.args[0] as PodMode };
              break;
            case 'fallthrough':
              resolver = { ...resolver, fallthrough: zones(o.args) };
              break;
            case 'ttl': {
              maxArgs(o, 1);
              const ttl = integer(o.line, at, o.args[0], 0, 3600);
              if (ttl !== undefined) resolver = { ...resolver, ttl };
              break;
            }
            case 'endpoint_pod_names':
              maxArgs(o, 0);
              resolver = { ...resolver, endpointPodNames: true };
              break;
            case 'ignore':
              if (o.args.length !== 1 || o.args[0] !== 'empty_service')
                err(o.line, `${at}: only "ignore empty_service" exists`);
              resolver = { ...resolver, ignoreEmptyService: true };
              break;
            case 'noendpoints':
              maxArgs(o, 0);
              noEndpoints = true;
              break;
            case 'namespaces':
              resolver = { ...resolver, namespaces: [...o.args] };
              break;
            case 'labels':
              try {
                parseLabelSelector(o.args.join(' '));
                labelSelector = o.args.join(' ');
              } catch (e) {
                err(o.line, `${at}: ${e instanceof Error ? e.message : String(e)}`);
              }
              break;
            case 'kubeconfig':
              if (o.args.length < 1 || o.args.length > 2) err(o.line, `${at}: want FILE [CONTEXT]`);
              else kubeconfig = { file: o.args[0] ?? '', context: o.args[1] };
              break;
          }
        }
        break;
      }
      case 'forward': {
        forward = true;
        const [from, ...to] = d.args;
        if (from !== '.') err(d.line, 'forward: only "forward . TO..." (every name) is supported');
        if (to.length === 0) err(d.line, 'forward: name an upstream or a resolv.conf file');
        for (const t of to) {
          if (t.startsWith('/')) resolvConf = t;
          else
            try {
              upstreams.push(parseUpstream(t.replace(/^dns:\/\//, '')));
            } catch {
              err(
                d.line,
                `forward: not an upstream address: ${JSON.stringify(t)} (want ADDR[:PORT], [IPv6]:PORT or a resolv.conf path)`,
              );
            }
        }
        if (to.some((t) => t.startsWith('/')) && upstreams.length > 0)
          err(d.line, 'forward: give either a resolv.conf file or addresses, not both');
        for (const o of options(d, FORWARD_OPTIONS)) {
          maxArgs(o, 1);
          const n = integer(o.line, 'forward max_concurrent', o.args[0], 1, 1_000_000);
          if (n !== undefined) forwardMaxConcurrent = n;
        }
        break;
      }
      case 'cache': {
        cache = { ...cache, enabled: true };
        if (d.args[0] !== undefined) {
          const ttl = integer(d.line, 'cache TTL', d.args[0], 1, 86400);
          if (ttl !== undefined) cache = { ...cache, maxTtl: ttl };
        }
        if (d.args.slice(1).some((z) => z !== '.'))
          err(d.line, 'cache: zones other than "." are not supported');
        for (const o of options(d, CACHE_OPTIONS)) {
          if (o.name === 'disable') {
            if (o.args[0] !== 'success' && o.args[0] !== 'denial')
              err(o.line, 'cache disable: want success|denial [ZONES...]');
            cacheDisabled.push({ line: o.line, zones: zones(o.args.slice(1)) });
            continue;
          }
          maxArgs(o, 3);
          const cap = integer(o.line, 'cache success CAPACITY', o.args[0], 1, 10_000_000);
          if (cap !== undefined) cache = { ...cache, capacity: cap };
          if (o.args[1] !== undefined) {
            const ttl = integer(o.line, 'cache success TTL', o.args[1], 1, 86400);
            if (ttl !== undefined) cache = { ...cache, maxTtl: ttl };
          }
          if (o.args[2] !== undefined)
            notImplemented.push({ line: o.line, what: 'cache success MINTTL' });
        }
        break;
      }
      case 'health':
        health = address(d, ':8080');
        for (const o of d.block ?? []) {
          if (o.name !== 'lameduck') {
            err(o.line, `unknown option ${JSON.stringify(o.name)} of plugin health`);
            continue;
          }
          maxArgs(o, 1);
          const ms = duration(o.line, 'health lameduck', o.args[0]);
          if (ms !== undefined) lameduckMs = ms;
        }
        break;
      case 'ready':
        noBlock(d);
        ready = address(d, ':8181');
        break;
      case 'prometheus':
        noBlock(d);
        metrics = address(d, ':9153');
        break;
      case 'reload':
        noBlock(d);
        maxArgs(d, 2);
        reloadMs =
          d.args[0] === undefined ? DEFAULT_RELOAD_MS : duration(d.line, 'reload', d.args[0]);
        if (d.args[1] !== undefined) notImplemented.push({ line: d.line, what: 'reload JITTER' });
        break;
      case 'bind':
        noBlock(d);
        if (d.args.length !== 1 || parseHostPort(`${d.args[0] ?? ''}:1`) === undefined)
          err(d.line, 'bind: give one address (svcnet listens on one)');
        else listen = { ...listen, host: d.args[0] ?? '0.0.0.0' };
        break;
      case 'errors':
        // Failures are always logged; the options shape only how.
        options(d, ERRORS_OPTIONS);
        break;
      case 'log':
      case 'loop':
      case 'loadbalance':
        notImplemented.push({ line: d.line, what: `plugin ${d.name}` });
        if (d.block !== undefined) err(d.line, `plugin ${d.name}: options are not supported`);
        break;
      default:
        err(d.line, `unknown plugin ${JSON.stringify(d.name)}`);
    }
  }
  // The cache holds forwarded answers only: `disable` of cluster zones is what it does anyway.
  for (const dis of cacheDisabled)
    if (dis.zones.length === 0 || dis.zones.some((z) => !resolver.zones.includes(z)))
      notImplemented.push({ line: dis.line, what: 'cache disable of zones outside kubernetes' });
  if (kube === undefined)
    err(block.line, 'no kubernetes plugin: svcnet dns serves the cluster zones from it');
  if (errors.length > 0) throw new SvcnetError('INVALID_INPUT', errors.join('; '));
  const config: DnsConfig = {
    resolver: { ...resolver, zonal: false, multiclusterZones: [], localIPs: [] },
    listen,
    health,
    ready,
    metrics,
    upstreams,
    resolvConf,
    cache,
    transfer: false,
    startupTimeoutSeconds: 5,
    forwardTimeoutMs: 2000,
    forwardMaxConcurrent,
    labelSelector,
    noEndpoints,
    lameduckMs,
  };
  return { config, kubeconfig, forward, reloadMs, notImplemented };
}
