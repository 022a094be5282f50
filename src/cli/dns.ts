// `svcnet dns`: the cluster DNS daemon (CoreDNS's kubernetes + forward + cache + health +
// ready + prometheus plugins in one process). Flags override the --config file; --corefile
// takes CoreDNS's Corefile instead (no flags beside it) and, with `reload`, follows its
// changes (src/dns/corefile-reload.ts). Logs go to stderr (text on a terminal, JSON
// otherwise). On SIGTERM or SIGINT it goes into lameduck as CoreDNS with
// `health { lameduck 5s }`: /ready answers 503 while queries are still answered for
// --lameduck, then it closes and exits 0; a second signal cuts the lameduck short. A bad
// flag, config file, Corefile or kubeconfig exits 2, a listener that cannot bind exits 1,
// each with one line and before anything serves. --workers N (default one per CPU; the
// config file's `workers:`) answers queries from N cluster worker processes; in those, this
// command runs src/dns/workers.ts's worker loop instead (the primary sends it everything).

import { availableParallelism } from 'node:os';
import { onTerminationSignals } from '../os/process.js';
import type { Command } from 'commander';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { SvcnetError } from '../errors.js';
import type { EndpointSlice, KubeObject, Pod, Service } from '../kube/types.js';
import type { Logger } from 'pino';
import { buildDnsConfig, isWorkerCount, MAX_WORKERS, type DnsConfig } from '../dns/config.js';
import { corefileToDnsConfig, type CorefileSettings } from '../dns/corefile-config.js';
import { reloadCorefile } from '../dns/corefile-reload.js';
import { realClock } from '../util/clock.js';
import { parseUpstream, type UpstreamAddress } from '../dns/forward.js';
import { parseResolvConf } from '../dns/resolvconf.js';
import { holdListenAddresses } from '../util/listen-hold.js';
import {
  addLogFlags,
  daemonAction,
  daemonCommand,
  daemonKubeConfig,
  daemonLogger,
} from './daemon.js';
import { collect, readInput } from './run.js';

interface DnsOptions {
  kubeconfig?: string;
  listen?: string;
  zone?: string;
  upstream?: string[];
  config?: string;
  corefile?: string;
  healthListen?: string;
  readyListen?: string;
  metricsListen?: string;
  lameduck?: string;
  workers?: string;
  v?: string;
  loggingFormat?: string;
  logLevel?: string;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readInput(path);
  } catch (e) {
    if (e instanceof SvcnetError)
      throw new SvcnetError(e.code, `${what} ${e.message}`, { cause: e });
    throw e;
  }
}

/** The flags that --corefile replaces (the Corefile says all of it). */
const CONFIG_FLAGS = [
  ['listen', '--listen'],
  ['zone', '--zone'],
  ['upstream', '--upstream'],
  ['config', '--config'],
  ['healthListen', '--health-listen'],
  ['readyListen', '--ready-listen'],
  ['metricsListen', '--metrics-listen'],
  ['lameduck', '--lameduck'],
] as const;

/** What the daemon runs with, from --corefile or from --config and the flags. */
interface Loaded {
  readonly config: DnsConfig;
  /** Corefile only: forward's absence means no upstreams at all (not resolv.conf's). */
  readonly forward: boolean;
  readonly corefile: { readonly text: string; readonly settings: CorefileSettings } | undefined;
}

async function loadConfig(opts: DnsOptions): Promise<Loaded> {
  if (opts.corefile !== undefined) {
    const given = CONFIG_FLAGS.filter(([k]) => opts[k] !== undefined).map(([, f]) => f);
    if (given.length > 0)
      throw new SvcnetError(
        'INVALID_INPUT',
        `--corefile: the Corefile gives every setting; drop ${given.join(', ')}`,
      );
    const text = await readText(opts.corefile, '--corefile');
    const settings = corefileToDnsConfig(text, opts.corefile, process.env);
    return { config: settings.config, forward: settings.forward, corefile: { text, settings } };
  }
  const fileText = opts.config !== undefined ? await readText(opts.config, '--config') : undefined;
  const config = buildDnsConfig(
    fileText,
    {
      ...(opts.listen !== undefined ? { listen: opts.listen } : {}),
      ...(opts.zone !== undefined ? { zone: opts.zone } : {}),
      ...(opts.upstream !== undefined ? { upstream: opts.upstream } : {}),
      ...(opts.healthListen !== undefined ? { healthListen: opts.healthListen } : {}),
      ...(opts.readyListen !== undefined ? { readyListen: opts.readyListen } : {}),
      ...(opts.metricsListen !== undefined ? { metricsListen: opts.metricsListen } : {}),
      ...(opts.lameduck !== undefined ? { lameduck: opts.lameduck } : {}),
    },
    opts.config ?? '--config',
  );
  return { config, forward: true, corefile: undefined };
}

/** The upstreams: the configured ones, else resolv.conf's nameservers (none without forward). */
async function upstreamsOf(
  config: DnsConfig,
  forward: boolean,
  log: Logger,
): Promise<UpstreamAddress[]> {
  if (config.upstreams.length > 0 || !forward) return [...config.upstreams];
  const rc = parseResolvConf(await readText(config.resolvConf, 'resolv.conf'), config.resolvConf);
  const upstreams = rc.nameservers.map((n) => parseUpstream(n.includes(':') ? `[${n}]:53` : n));
  if (upstreams.length === 0)
    log.warn(
      { resolvConf: config.resolvConf },
      'No upstream nameservers; non-cluster names get SERVFAIL',
    );
  return upstreams;
}

/** --workers, else the config file's `workers`, else one per CPU. */
function workerCount(opts: DnsOptions, config: DnsConfig): number {
  if (opts.workers === undefined) return config.workers ?? availableParallelism();
  const n = /^\d+$/.test(opts.workers) ? Number(opts.workers) : NaN;
  if (!isWorkerCount(n))
    throw new SvcnetError(
      'INVALID_INPUT',
      `--workers: must be an integer 1-${MAX_WORKERS}, got ${JSON.stringify(opts.workers)}`,
    );
  return n;
}

async function runDns(opts: DnsOptions): Promise<undefined> {
  // The worker's module (and the DNS stack) load only in a worker (workers.ts WORKER_ENV).
  const worker =
    process.env.SVCNET_DNS_WORKER === '1' ? await import('../dns/workers.js') : undefined;
  if (worker?.isDnsWorker()) {
    // A worker of `--workers N`: the primary sends the configuration and the index.
    const log = daemonLogger('dns', opts);
    await worker.runDnsWorker(log);
    log.flush();
    process.exit();
  }
  const { config, forward, corefile } = await loadConfig(opts);
  const workers = workerCount(opts, config);
  const log = daemonLogger('dns', opts);
  for (const n of corefile?.settings.notImplemented ?? [])
    log.warn(
      { file: opts.corefile, line: n.line, setting: n.what },
      'Corefile setting accepted but not implemented',
    );
  const upstreams = await upstreamsOf(config, forward, log);
  // Held while the client library loads (seconds), so a taken port exits 1 at once; the
  // daemon binds them for real (whole or not at all) once the hold is released.
  const hold = await holdListenAddresses([
    { what: 'DNS', ...config.listen, flag: '--listen', udp: true },
    ...(config.health ? [{ what: '/health', ...config.health, flag: '--health-listen' }] : []),
    ...(config.ready ? [{ what: '/ready', ...config.ready, flag: '--ready-listen' }] : []),
    ...(config.metrics ? [{ what: '/metrics', ...config.metrics, flag: '--metrics-listen' }] : []),
  ]);
  const fromCorefile = corefile?.settings.kubeconfig;
  // The Corefile's `kubeconfig FILE CONTEXT` (an error names the file and the context).
  const kc = await daemonKubeConfig(
    opts.kubeconfig ?? fromCorefile?.file,
    opts.kubeconfig === undefined ? fromCorefile?.context : undefined,
  );
  // The daemon and the client library load only once the flags and files are known good.
  const { createInformer, ENDPOINT_SLICES, NAMESPACES, PODS, SERVICES } =
    await import('../kube/client.js');
  const { DnsDaemon } = await import('../dns/daemon.js');
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const daemon = new DnsDaemon({
    config,
    services: createInformer<Service>(kc, SERVICES),
    endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES),
    namespaces: createInformer<KubeObject>(kc, NAMESPACES),
    ...(config.resolver.pods === 'verified' ? { pods: createInformer<Pod>(kc, PODS) } : {}),
    upstreams,
    registry,
    log,
    workers,
  });
  await hold.release();
  await daemon.start();
  const reload =
    corefile?.settings.reloadMs !== undefined && opts.corefile !== undefined
      ? reloadCorefile({
          path: opts.corefile,
          loaded: corefile.text,
          parse: (text) => corefileToDnsConfig(text, opts.corefile ?? '', process.env),
          apply: async (next) => {
            const ups = await upstreamsOf(next.config, next.forward, log);
            const needsRestart = daemon.reconfigure(next.config, ups);
            if (JSON.stringify(next.kubeconfig) !== JSON.stringify(corefile.settings.kubeconfig))
              needsRestart.push('kubeconfig');
            return needsRestart;
          },
          intervalMs: corefile.settings.reloadMs,
          clock: realClock,
          log,
        })
      : undefined;
  // The first signal starts the lameduck, a later one ends it; both settle the same promise.
  let off = (): void => undefined;
  const closed = new Promise<void>((resolve, reject) => {
    off = onTerminationSignals((signal) => {
      daemon.shutdown(signal).then(resolve, reject);
    });
  });
  try {
    await closed;
  } finally {
    off();
    reload?.close();
  }
  log.flush();
  return undefined;
}

/** Registers `svcnet dns`. */
export function registerDnsCommand(program: Command): void {
  const cmd = daemonCommand(
    program,
    'dns',
    'cluster DNS server for Services and Pods (CoreDNS kubernetes-plugin compatible)',
    'kubeconfig of the API server to watch (default: $KUBECONFIG, else the in-cluster config)',
  )
    .option('--listen <addr:port>', 'DNS listen address (UDP and TCP)', undefined)
    .option('--zone <domain>', 'cluster domain (default cluster.local)')
    .option(
      '--upstream <addr:port>',
      'upstream nameserver for other names (repeatable; default: resolv.conf)',
      collect,
    )
    .option('--config <file>', 'YAML/JSON configuration file (see src/dns/config.ts)')
    .option(
      '--corefile <file>',
      "CoreDNS's Corefile instead of --config and the flags (docs/config.md lists the plugins)",
    )
    .option(
      '--health-listen <addr:port>',
      '/health endpoint (default :8080; "" disables, as does "off")',
    )
    .option(
      '--ready-listen <addr:port>',
      '/ready endpoint (default :8181; "" disables, as does "off")',
    )
    .option(
      '--metrics-listen <addr:port>',
      '/metrics endpoint (default :9153; "" disables, as does "off")',
    )
    .option(
      '--lameduck <duration>',
      'after SIGTERM/SIGINT, keep answering this long with /ready 503 (default 5s; 0 disables)',
    )
    .option(
      '--workers <n>',
      'processes answering queries on the one address (default: one per CPU; 1 answers in this process)',
    );
  addLogFlags(cmd).action(daemonAction('dns', runDns));
}
