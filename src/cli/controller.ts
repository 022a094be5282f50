// `svcnet controller --kubeconfig FILE [--fake-kubelet]`: the control-plane daemon (EndpointSlice,
// Endpoints and mirroring controllers, Deployment/ReplicaSet/StatefulSet controllers, a
// least-loaded scheduler, and optionally a fake kubelet). Wires real informers and the
// client-node KubeClient into the ControllerManager, logs JSON to stderr, and runs until
// SIGINT/SIGTERM.

import type { Command } from 'commander';
import { pino } from 'pino';
import { SvcnetError } from '../errors.js';
import { ClientNodeKubeClient } from '../kube/api-client.js';
import {
  createInformer,
  DEPLOYMENTS,
  ENDPOINT_SLICES,
  ENDPOINTS,
  loadKubeConfig,
  NODES,
  PODS,
  REPLICA_SETS,
  SERVICES,
  STATEFUL_SETS,
} from '../kube/client.js';
import type {
  Deployment,
  EndpointSlice,
  Endpoints,
  Node,
  Pod,
  ReplicaSet,
  Service,
  StatefulSet,
} from '../kube/types.js';
import type { ControllerKind } from '../controllers/manager.js';
import { CONTROLLER_KINDS, ControllerManager } from '../controllers/manager.js';
import { action } from './run.js';

interface ControllerOptions {
  kubeconfig: string;
  fakeKubelet?: boolean;
  maxEndpointsPerSlice: string;
  logLevel: string;
  controllers: string;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description(
      'run the EndpointSlice, Endpoints, mirroring, workload and scheduler controllers against an API server',
    )
    .requiredOption('--kubeconfig <file>', 'kubeconfig of the API server')
    .option('--fake-kubelet', 'mark scheduled pods Running/Ready with IPs and finish pod deletions')
    .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', '100')
    .option(
      '--controllers <list>',
      `comma-separated controllers to run (${CONTROLLER_KINDS.join(', ')}); on a real cluster ` +
        'whose kube-controller-manager runs the workload controllers, use ' +
        '"endpointslice,endpoints,mirroring"',
      'all',
    )
    .option('--log-level <level>', `log level (${LEVELS.join(', ')})`, 'info')
    .action(action('controller', runController));
}

async function runController(opts: ControllerOptions): Promise<undefined> {
  const max = Number(opts.maxEndpointsPerSlice);
  if (!Number.isInteger(max) || max < 1 || max > 1000)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--max-endpoints-per-slice: must be an integer 1-1000, got ${opts.maxEndpointsPerSlice}`,
    );
  if (!LEVELS.includes(opts.logLevel))
    throw new SvcnetError('INVALID_INPUT', `--log-level: must be one of ${LEVELS.join(', ')}`);
  const controllers = parseControllers(opts.controllers);
  let kc;
  try {
    kc = loadKubeConfig(opts.kubeconfig);
  } catch (e) {
    throw new SvcnetError(
      'INVALID_INPUT',
      `--kubeconfig ${opts.kubeconfig}: ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
  const log = pino(
    { level: opts.logLevel, base: { component: 'controller' } },
    pino.destination(2),
  );
  const manager = new ControllerManager({
    client: new ClientNodeKubeClient(kc),
    informers: {
      services: createInformer<Service>(kc, SERVICES),
      pods: createInformer<Pod>(kc, PODS),
      nodes: createInformer<Node>(kc, NODES),
      endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES),
      endpoints: createInformer<Endpoints>(kc, ENDPOINTS),
      deployments: createInformer<Deployment>(kc, DEPLOYMENTS),
      replicaSets: createInformer<ReplicaSet>(kc, REPLICA_SETS),
      statefulSets: createInformer<StatefulSet>(kc, STATEFUL_SETS),
    },
    log,
    fakeKubelet: opts.fakeKubelet === true,
    maxEndpointsPerSlice: max,
    controllers,
  });
  log.info(
    { server: kc.getCurrentCluster()?.server, fakeKubelet: opts.fakeKubelet === true },
    'Starting controllers',
  );
  await manager.start();
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  log.info({ stats: manager.stats }, 'Stopping controllers');
  await manager.stop();
  return undefined;
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
