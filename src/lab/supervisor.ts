// The lab supervisor: PID 1 of the lab sandbox (see sandbox.ts). It builds the lab network
// from the topology plan, starts the components in the node namespaces (components.ts), gives
// the host an API endpoint on 127.0.0.1 (a TCP listener forwarding to the API server's unix
// socket; nothing else touches the host's network namespace), writes the host kubeconfig,
// applies the add-ons (deploy/coredns.yaml and deploy/kube-proxy.yaml with the lab's values,
// and flannel's ConfigMap), and records its state for `lab status` / `lab exec`, each
// record stamped with the run id `lab up` gave it (run.ts) and the fingerprint of the API
// server certificate this run created, so no client takes a dead run's state for its own. Once
// the lab is up, a component that exits is started again (keeper.ts, the kubelet's
// restartPolicy Always with its CrashLoopBackOff; `lab restart` goes through it too), and each
// component's state, pid and restart count is written to components.json for `lab status`.
// The API server among them: it keeps its objects, token and certificate in its data dir
// (components.ts), so the host kubeconfig written once stays valid across its restarts. On
// SIGTERM it stops the components and tears the network down. If it is killed instead, the
// kernel does the teardown: every process of the sandbox dies with it, and every namespace
// with its private mounts.

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Execer } from '../os/exec.js';
import type { Ip } from '../os/ip.js';
import { loadKubeConfig } from '../kube/client.js';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock } from '../util/clock.js';
import { certFingerprint, readRunRecord } from './run.js';
import { applyNetworkScript, deleteNamespaces } from './network.js';
import { mountPrivateDirs } from './sandbox.js';
import type { IptablesVariant } from '../netfilter/iptables/backend.js';
import { waitForTermination } from '../os/process.js';
import { networkScript, type LabPlan } from './topology.js';
import {
  labPaths,
  planComponents,
  type ComponentOptions,
  type LabProxyMode,
} from './components.js';
import { startComponents, stopComponents, type RunningComponent } from './run-components.js';
import { startForwarder, type Forwarder } from './forward.js';
import { ComponentKeeper, type ComponentStatus } from './keeper.js';
import { applyObjects } from './apply.js';
import { flannelAddon } from './flannel-addon.js';
import { corednsAddon } from './coredns-addon.js';
import { kubeProxyAddon } from './kube-proxy-addon.js';
import { writeSecretFile } from '../util/secret-file.js';

export interface LabState {
  /** The run that wrote this state (run.json's runId); a reader trusts no other. */
  readonly runId: string;
  readonly status: 'starting' | 'ready' | 'failed' | 'stopping';
  readonly plan: LabPlan;
  readonly cni: ComponentOptions['cni'];
  /** The node proxies' mode (absent in states written before it existed: iptables). */
  readonly proxyMode?: LabProxyMode;
  /** The node proxies' iptables backend (iptables mode; absent in older states). */
  readonly iptablesVariant?: IptablesVariant;
  readonly startedAt: string;
  readonly readyAt?: string;
  readonly error?: string;
  /** The host's API endpoint (https://127.0.0.1:PORT) and the kubeconfig that names it. */
  readonly apiServer?: string;
  readonly kubeconfig?: string;
  /** SHA-256 fingerprint of the API server certificate (its own CA) this run created. */
  readonly apiServerCA?: string;
}

export const STATE_FILE = 'state.json';
export const HOST_KUBECONFIG = 'kubeconfig';
/** The components' states (ComponentsRecord), rewritten on every change. */
export const COMPONENTS_FILE = 'components.json';

export interface ComponentsRecord {
  /** The run that wrote it (run.json's runId); a reader trusts no other. */
  readonly runId: string;
  readonly updatedAt: string;
  /** Pids are in the lab sandbox's PID namespace. */
  readonly components: readonly ComponentStatus[];
}

export function writeComponents(stateDir: string, record: ComponentsRecord): void {
  const tmp = join(stateDir, `${COMPONENTS_FILE}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, join(stateDir, COMPONENTS_FILE));
}

export function writeState(stateDir: string, state: LabState): void {
  const tmp = join(stateDir, `${STATE_FILE}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, join(stateDir, STATE_FILE));
}

/** The cluster kubeconfig with its server replaced by the host endpoint. */
export function hostKubeconfig(clusterKubeconfig: string, server: string, labName: string): string {
  return clusterKubeconfig
    .replace(/^(\s*server:\s*).*$/m, `$1${server}`)
    .replace(/\bsvcnet-admin\b/g, `${labName}-admin`)
    .replace(/(name|cluster|current-context|context): svcnet\b/g, `$1: ${labName}`)
    .replace(/^(\s*-\s*name:\s*)svcnet$/gm, `$1${labName}`);
}

export const CONTROL_SOCKET = 'control.sock';

/**
 * The supervisor's control endpoint (HTTP on a unix socket in the state directory):
 * `POST /restart/NAME` stops a component and starts it again, as `svcnet lab restart` asks.
 */
function serveControl(
  path: string,
  restart: (name: string) => Promise<number | undefined>,
): Promise<Server> {
  const server = createServer((req, res) => {
    const m = /^\/restart\/([-a-z0-9]+)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !m) {
      res.writeHead(404).end('unknown request\n');
      return;
    }
    restart(m[1] ?? '').then(
      (pid) => {
        if (pid === undefined) res.writeHead(404).end(`no component named ${m[1] ?? ''}\n`);
        else res.writeHead(200).end(`${m[1] ?? ''} restarted\n`);
      },
      (e: unknown) => {
        res.writeHead(500).end(`${e instanceof Error ? e.message : String(e)}\n`);
      },
    );
  });
  rmSync(path, { force: true });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      resolve(server);
    });
  });
}

/** Resolves when stdin reaches its end: the lab's owner (a test run) has gone away. */
function ownerGone(): Promise<void> {
  return new Promise((resolve) => {
    process.stdin.on('data', () => undefined);
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    process.stdin.once('error', () => {
      resolve();
    });
  });
}

export interface SupervisorOptions {
  /** The run id `lab up` wrote to run.json in stateDir before starting this supervisor. */
  readonly runId: string;
  /** Tear down when stdin closes (the starter holds the other end: a lifeline). */
  readonly lifeline?: boolean;
  readonly plan: LabPlan;
  readonly stateDir: string;
  readonly execer: Execer;
  /** Builds the lab network (RealIp over the same execer in production). */
  readonly ip: Ip;
  readonly components: ComponentOptions;
  /** argv prefix that runs the svcnet CLI (the components are `self + args`). */
  readonly self: readonly string[];
  readonly log: (msg: string) => void;
}

async function waitForKubeconfig(
  path: string,
  timeoutMs: number,
  clock: Clock = realClock,
): Promise<string> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    try {
      const text = readFileSync(path, 'utf8');
      if (text.includes('current-context:')) return text;
    } catch {
      // not written yet
    }
    if (clock.now() > deadline) throw new Error(`API server kubeconfig ${path} not written`);
    await clock.sleep(50);
  }
}

/**
 * The fingerprint of the CA in a kubeconfig (certificate-authority-data); throws when the
 * kubeconfig trusts no CA, as a lab API server without one could not prove who it is.
 */
export function kubeconfigCA(kubeconfig: string, file: string): string {
  const m = /^\s*certificate-authority-data:\s*(\S+)\s*$/m.exec(kubeconfig);
  if (!m?.[1])
    throw new SvcnetError(
      'INVALID_INPUT',
      `${file}: clusters[0].cluster.certificate-authority-data: missing (the lab API server must serve HTTPS)`,
    );
  return certFingerprint(Buffer.from(m[1], 'base64').toString('utf8'));
}

/**
 * From `lab up` on, a component that exits is started again, as the kubelet does for a static
 * Pod (an API server killed comes back on its data dir); every change is written to
 * components.json.
 */
function keepComponents(
  opts: SupervisorOptions,
  specs: ReturnType<typeof planComponents>,
  running: readonly RunningComponent[],
): ComponentKeeper {
  const logDir = join(opts.stateDir, 'logs');
  const record = (): void => {
    try {
      writeComponents(opts.stateDir, {
        runId: opts.runId,
        updatedAt: new Date().toISOString(),
        components: keeper.status(),
      });
    } catch (e) {
      opts.log(`cannot write ${COMPONENTS_FILE}: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const keeper: ComponentKeeper = new ComponentKeeper(specs, running, {
    start: async (spec) => {
      const [again] = await startComponents([spec], opts.self, logDir);
      if (again === undefined) throw new SvcnetError('INTERNAL', `${spec.name} did not start`);
      return again;
    },
    stop: (cs) => stopComponents(cs),
    clock: realClock,
    log: opts.log,
    onChange: record,
  });
  record();
  return keeper;
}

/** Builds the lab and serves until SIGTERM/SIGINT; resolves after the teardown. */
export async function superviseLab(opts: SupervisorOptions): Promise<void> {
  const { plan, stateDir, execer, log, runId } = opts;
  // The folder must be this run's before anything is written into it: a supervisor started
  // for a run that was swept (its starter died) must not write over another run's state.
  const run = readRunRecord(stateDir);
  if (run?.runId !== runId)
    throw new SvcnetError(
      'CONFLICT',
      `lab ${plan.name}: ${stateDir} belongs to run ${run?.runId ?? '(none)'}, not to this run ${runId}`,
    );
  const startedAt = new Date().toISOString();
  const base = {
    runId,
    plan,
    startedAt,
    cni: opts.components.cni,
    proxyMode: opts.components.proxyMode ?? 'iptables',
    ...(opts.components.iptablesVariant
      ? { iptablesVariant: opts.components.iptablesVariant }
      : {}),
  };
  writeState(stateDir, { status: 'starting', ...base });
  const script = networkScript(plan);
  const paths = labPaths(stateDir);
  const logDir = join(stateDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  let running: RunningComponent[] = [];
  let forwarder: Forwarder | undefined;
  let ready: Pick<LabState, 'apiServer' | 'kubeconfig' | 'apiServerCA'>;
  try {
    await mountPrivateDirs(execer);
    await applyNetworkScript(opts.ip, execer, script);
    log(`network ready: ${plan.nodes.length} nodes`);
    const specs = planComponents(plan, paths, opts.components);
    running = await startComponents(specs, opts.self, logDir);
    const clusterKc = await waitForKubeconfig(paths.clusterKubeconfig, 30_000);
    const apiServerCA = kubeconfigCA(clusterKc, paths.clusterKubeconfig);
    forwarder = await startForwarder({ host: '127.0.0.1', port: 0 }, { path: paths.apiSocket });
    const port = 'port' in forwarder.listening ? forwarder.listening.port : 0;
    const apiServer = `https://127.0.0.1:${String(port)}`;
    const kubeconfig = join(stateDir, HOST_KUBECONFIG);
    writeSecretFile(kubeconfig, hostKubeconfig(clusterKc, apiServer, plan.name));
    await applyObjects(loadKubeConfig(kubeconfig), [
      ...corednsAddon(plan),
      ...flannelAddon(plan, stateDir),
      ...kubeProxyAddon(plan, {
        proxyMode: opts.components.proxyMode ?? 'iptables',
        ...(opts.components.iptablesVariant === undefined
          ? {}
          : { iptablesVariant: opts.components.iptablesVariant }),
      }),
    ]);
    ready = { apiServer, kubeconfig, apiServerCA };
    log(`components started; API server ${apiServer}`);
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    writeState(stateDir, { status: 'failed', ...base, error });
    await stopComponents(running);
    throw e;
  }
  const keeper = keepComponents(opts, planComponents(plan, paths, opts.components), running);
  const control = await serveControl(join(stateDir, CONTROL_SOCKET), (name) =>
    keeper.restart(name),
  );
  writeState(stateDir, { status: 'ready', ...base, ...ready, readyAt: new Date().toISOString() });
  log(`lab ${plan.name} ready`);
  await Promise.race([
    waitForTermination(),
    ...(opts.lifeline === true
      ? [
          ownerGone().then(() => {
            log('owner gone');
          }),
        ]
      : []),
  ]);
  control.close();
  process.stdin.destroy(); // the lifeline, if any: nothing may keep the supervisor alive now
  log(`lab ${plan.name} stopping`);
  writeState(stateDir, { status: 'stopping', ...base, ...ready });
  await keeper.stop();
  await forwarder.close();
  await deleteNamespaces(opts.ip, script.namespaces);
}
