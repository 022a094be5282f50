// `svcnet dns`: the cluster DNS daemon (CoreDNS's kubernetes + forward + cache + health +
// ready + prometheus plugins in one process). Flags override the --config file. Logs go to
// stderr (text on a terminal, JSON otherwise). On SIGTERM or SIGINT it goes into lameduck as
// CoreDNS with `health { lameduck 5s }`: /ready answers 503 while queries are still answered
// for --lameduck, then it closes and exits 0; a second signal cuts the lameduck short. A bad
// flag, config file or kubeconfig exits 2, a listener that cannot bind exits 1, each with one
// line and before anything serves.

import { onTerminationSignals } from '../os/process.js';
import type { Command } from 'commander';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { SvcnetError } from '../errors.js';
import type { EndpointSlice, KubeObject, Pod, Service } from '../kube/types.js';
import { buildDnsConfig } from '../dns/config.js';
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
  healthListen?: string;
  readyListen?: string;
  metricsListen?: string;
  lameduck?: string;
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

async function runDns(opts: DnsOptions): Promise<undefined> {
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
  const log = daemonLogger('dns', opts);
  let upstreams: UpstreamAddress[] = [...config.upstreams];
  if (upstreams.length === 0) {
    const rc = parseResolvConf(await readText(config.resolvConf, 'resolv.conf'), config.resolvConf);
    upstreams = rc.nameservers.map((n) => parseUpstream(n.includes(':') ? `[${n}]:53` : n));
    if (upstreams.length === 0)
      log.warn(
        { resolvConf: config.resolvConf },
        'No upstream nameservers; non-cluster names get SERVFAIL',
      );
  }
  // Held while the client library loads (seconds), so a taken port exits 1 at once; the
  // daemon binds them for real (whole or not at all) once the hold is released.
  const hold = await holdListenAddresses([
    { what: 'DNS', ...config.listen, flag: '--listen', udp: true },
    ...(config.health ? [{ what: '/health', ...config.health, flag: '--health-listen' }] : []),
    ...(config.ready ? [{ what: '/ready', ...config.ready, flag: '--ready-listen' }] : []),
    ...(config.metrics ? [{ what: '/metrics', ...config.metrics, flag: '--metrics-listen' }] : []),
  ]);
  const kc = await daemonKubeConfig(opts.kubeconfig);
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
  });
  await hold.release();
  await daemon.start();
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
    );
  addLogFlags(cmd).action(daemonAction('dns', runDns));
}
