// `svcnet ui`: the web page that shows the Service network — the cluster map, each node's
// rules and packet traces — live from an API server's watch (src/ui/). Loopback by default;
// a non-loopback --listen needs a bearer token (the kubeconfig user's, or one generated and
// printed at start). Node rules come from --rules NODE=FILE, else svcnet's planner renders
// them from the cluster's objects.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { EndpointSlice, Node, Pod, Service } from '../kube/types.js';
import { SvcnetError } from '../errors.js';
import { listenFailed } from '../util/listen-error.js';
import { addLogFlags, daemonAction, daemonKubeConfig, daemonLogger } from './daemon.js';
import { collect } from './run.js';
import type { LiveRulesReader } from '../ui/cluster.js';

export interface UiFlags {
  kubeconfig?: string;
  listen: string;
  rules?: string[];
  token?: string;
  v?: string;
  loggingFormat?: string;
  logLevel?: string;
}

/** `--rules NODE=FILE`... → node → file; INVALID_INPUT naming the bad one. */
export function parseRulesFlags(values: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  values.forEach((v, i) => {
    const m = /^([^=]+)=(.+)$/.exec(v);
    if (!m)
      throw new SvcnetError(
        'INVALID_INPUT',
        `--rules[${i}]: want NODE=FILE, got ${JSON.stringify(v)}`,
      );
    const [, node = '', file = ''] = m;
    if (!existsSync(file))
      throw new SvcnetError('INVALID_INPUT', `--rules[${i}]: ${file}: no such file`);
    out.set(node, file);
  });
  return out;
}

/**
 * Runs the UI until SIGINT/SIGTERM; `live` reads lab nodes' rules and `liveRoutes` their
 * routing dumps (`svcnet lab ui`).
 */
export async function runUi(
  flags: UiFlags,
  live?: LiveRulesReader,
  liveRoutes?: LiveRulesReader,
): Promise<void> {
  const log = daemonLogger('ui', flags);
  const files = parseRulesFlags(flags.rules ?? []);
  const { parseListen, isLoopback, startUi, DEFAULT_ASSETS_DIR } = await import('../ui/daemon.js');
  const { host, port } = parseListen(flags.listen);
  const kc = await daemonKubeConfig(flags.kubeconfig);
  let token = flags.token;
  if (token === undefined && !isLoopback(host))
    token = kc.getCurrentUser().token ?? randomBytes(24).toString('base64url');
  const { createInformer, ENDPOINT_SLICES, NODES, PODS, SERVICES } =
    await import('../kube/client.js');
  const { InformerCluster } = await import('../ui/cluster.js');
  const cluster = new InformerCluster(
    {
      nodes: createInformer<Node>(kc, NODES),
      pods: createInformer<Pod>(kc, PODS),
      services: createInformer<Service>(kc, SERVICES),
      endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES),
    },
    files,
    live,
  );
  await cluster.start();
  if (!existsSync(`${DEFAULT_ASSETS_DIR}index.html`))
    log.warn(
      { assetsDir: DEFAULT_ASSETS_DIR },
      'The page is not built: run `npm run build:ui`; the API works meanwhile',
    );
  const ui = await startUi(flags.listen, {
    cluster,
    rules: cluster,
    ...(liveRoutes !== undefined ? { routes: liveRoutes } : {}),
    assetsDir: DEFAULT_ASSETS_DIR,
    ...(token !== undefined ? { token } : {}),
  }).catch((e: unknown) => {
    if (e instanceof SvcnetError) throw e;
    throw listenFailed('svcnet ui', host, port, '--listen', e);
  });
  const open = token !== undefined ? `${ui.url}?token=${encodeURIComponent(token)}` : ui.url;
  log.info({ url: ui.url, authenticated: token !== undefined }, 'UI listening');
  process.stdout.write(`svcnet ui: open ${open}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      log.info('Shutting down');
      void Promise.all([ui.close(), cluster.stop()]).then(() => {
        resolve();
      });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** Adds the flags `svcnet ui` and `svcnet lab ui` share. */
export function addUiFlags(cmd: Command): Command {
  return addLogFlags(
    cmd
      .option('--listen <addr:port>', 'address and port to serve the page on', '127.0.0.1:8080')
      .option(
        '--rules <node=file>',
        "a node's ruleset (iptables-save, svcnet render output or nft list ruleset) (repeatable)",
        collect,
      )
      .option(
        '--token <token>',
        "bearer token required on a non-loopback --listen (default: the kubeconfig user's, else random, printed)",
      ),
  );
}

/** Registers `svcnet ui`. */
export function registerUiCommand(program: Command): void {
  addUiFlags(
    program
      .command('ui')
      .description(
        "serve a web page showing the Service network: cluster map, each node's rules and packet traces, live",
      )
      .option(
        '--kubeconfig <file>',
        'kubeconfig of the cluster (default: $KUBECONFIG, in-cluster)',
      ),
  ).action(daemonAction('ui', (flags: UiFlags) => runUi(flags)));
}
