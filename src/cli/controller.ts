// `svcnet controller --kubeconfig FILE [--fake-kubelet]`: the control-plane daemon (EndpointSlice,
// Endpoints and mirroring controllers, Deployment/ReplicaSet/StatefulSet controllers, a
// least-loaded scheduler, and optionally a fake kubelet). Wires real informers and the
// HTTP KubeClient into the ControllerManager, logs to stderr (text on a terminal, JSON
// otherwise), serves /healthz on --healthz-bind-address when given (bound before anything
// else starts, the client library included: a taken port exits 1 with one line at once), and
// runs until SIGINT/SIGTERM.

import { waitForTermination } from '../os/process.js';
import { createServer } from 'node:http';
import type { Command } from 'commander';
import { SvcnetError } from '../errors.js';
import type { ControllerKind } from '../controllers/kinds.js';
import { CONTROLLER_KINDS, controllerInformers } from '../controllers/kinds.js';
import type { ApiKind } from '../kube/api-client.js';
import type { ResourceSpec } from '../kube/client.js';
import { parseBindAddress } from '../proxy/listen.js';
import { closeQuietly } from '../util/close.js';
import { listenFailed } from '../util/listen-error.js';
import {
  addLogFlags,
  daemonAction,
  daemonCommand,
  daemonKubeConfig,
  daemonLogger,
} from './daemon.js';

interface ControllerOptions {
  kubeconfig?: string;
  fakeKubelet?: boolean;
  maxEndpointsPerSlice: string;
  controllers: string;
  healthzBindAddress: string;
  v?: string;
  loggingFormat?: string;
  logLevel?: string;
}

export function registerControllerCommand(program: Command): void {
  const cmd = daemonCommand(
    program,
    'controller',
    'run the EndpointSlice, Endpoints, mirroring, workload and scheduler controllers against an API server',
    'kubeconfig of the API server (default: $KUBECONFIG, else the in-cluster config)',
  )
    .option('--fake-kubelet', 'mark scheduled pods Running/Ready with IPs and finish pod deletions')
    .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', '100')
    .option(
      '--controllers <list>',
      `comma-separated controllers to run (${CONTROLLER_KINDS.join(', ')}); on a real cluster ` +
        'whose kube-controller-manager runs the workload controllers, use ' +
        '"endpointslice,endpoints,mirroring"',
      'all',
    )
    .option(
      '--healthz-bind-address <addr:port>',
      '/healthz endpoint, 200 once the controllers run (default "": disabled; kube-controller-manager uses :10257)',
      '',
    );
  addLogFlags(cmd).action(daemonAction('controller', runController));
}

async function runController(opts: ControllerOptions): Promise<undefined> {
  const max = Number(opts.maxEndpointsPerSlice);
  if (!Number.isInteger(max) || max < 1 || max > 1000)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--max-endpoints-per-slice: must be an integer 1-1000, got ${opts.maxEndpointsPerSlice}`,
    );
  const controllers = parseControllers(opts.controllers);
  const log = daemonLogger('controller', opts);
  // /healthz is bound before the client library loads (seconds), so a taken port exits 1 at
  // once; it answers 503 until the controllers run. A failure after this ends the process.
  let running = false;
  const healthz =
    opts.healthzBindAddress === ''
      ? undefined
      : await listenHealthz(opts.healthzBindAddress, () => running);
  const kc = await daemonKubeConfig(opts.kubeconfig);
  const { HttpKubeClient } = await import('../kube/api-client.js');
  const {
    CONTROLLER_REVISIONS,
    createInformer,
    DAEMON_SETS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    NODES,
    PODS,
    REPLICA_SETS,
    SERVICES,
    STATEFUL_SETS,
  } = await import('../kube/client.js');
  const { ControllerManager } = await import('../controllers/manager.js');
  const specs: Record<ApiKind, ResourceSpec> = {
    Service: SERVICES,
    Pod: PODS,
    Node: NODES,
    EndpointSlice: ENDPOINT_SLICES,
    Endpoints: ENDPOINTS,
    Deployment: DEPLOYMENTS,
    ReplicaSet: REPLICA_SETS,
    StatefulSet: STATEFUL_SETS,
    DaemonSet: DAEMON_SETS,
    ControllerRevision: CONTROLLER_REVISIONS,
  };
  const manager = new ControllerManager({
    client: new HttpKubeClient(kc),
    informers: controllerInformers((kind) => createInformer(kc, specs[kind])),
    log,
    fakeKubelet: opts.fakeKubelet === true,
    maxEndpointsPerSlice: max,
    controllers,
  });
  log.info(
    { server: kc.getCurrentCluster().server, fakeKubelet: opts.fakeKubelet === true },
    'Starting controllers',
  );
  await manager.start();
  running = true;
  await waitForTermination();
  log.info({ stats: manager.stats }, 'Stopping controllers');
  await manager.stop();
  healthz?.closeAllConnections();
  await closeQuietly(healthz);
  return undefined;
}

/** Binds /healthz (and /readyz) or throws LISTEN_FAILED naming --healthz-bind-address. */
async function listenHealthz(text: string, isRunning: () => boolean) {
  const at = parseBindAddress(text, '--healthz-bind-address');
  const srv = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz') {
      res.writeHead(404).end('not found');
      return;
    }
    const ok = isRunning();
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'starting');
  });
  await new Promise<void>((resolve, reject) => {
    srv.once('error', (e) => {
      reject(listenFailed('/healthz', at.host, at.port, '--healthz-bind-address', e));
    });
    srv.listen(at.port, at.host, () => {
      srv.removeAllListeners('error');
      resolve();
    });
  });
  return srv;
}

/** Parses `--controllers` (`all` or a comma list of CONTROLLER_KINDS). */
export function parseControllers(list: string): ReadonlySet<ControllerKind> {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 1 && names[0] === 'all') return new Set(CONTROLLER_KINDS);
  const known = new Set<string>(CONTROLLER_KINDS);
  const bad = names.filter((n) => !known.has(n));
  if (bad.length > 0 || names.length === 0)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--controllers: unknown controller(s) ${bad.join(', ') || '(none given)'}; expected all or some of ${CONTROLLER_KINDS.join(', ')}`,
    );
  return new Set(names as ControllerKind[]);
}
