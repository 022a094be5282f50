// The client side of `svcnet lab up|down|status|exec|kubeconfig`: starts the supervisor in its
// sandbox, waits for it to report ready, and finds it again from its state directory
// (/run/svcnet/lab/<name>/: run.json, state.json, components.json, lab.log, kubeconfig, and
// the API server's data dir apiserver/). Each run of a lab has its own folder, created whole
// with its run.json (run.ts) by `lab up`: nothing in a folder is read before run.json shows
// its run alive (pid and start time, so neither a zombie nor a reused pid passes), state.json
// and components.json count only with that run's id, and the API server is trusted only when
// it proves to hold the certificate the run recorded. A folder whose run is dead is a leftover
// of a crashed run and is swept by the next `lab up` before it starts.
import { connect as tlsConnect } from 'node:tls';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { HttpKubeClient, listAll } from '../kube/api-client.js';
import { loadKubeConfig } from '../kube/client.js';
import type { EndpointSlice, KubeObject, Node, Service } from '../kube/types.js';
import { RealExecer, type ExecResult, type Execer } from '../os/exec.js';
import { runAttached, signalPid, spawnDetached } from '../os/process.js';
import { netnsExecArgv } from '../os/netns.js';
import { applyObjects, type Applied } from './apply.js';
import { ensureLabBinaries } from './binaries.js';
import type { ComponentOptions, LabProxyMode } from './components.js';
import {
  describeProxyPods,
  PROXY_NAMESPACE,
  PROXY_SELECTOR,
  proxyRestartTarget,
  restartProxyPods,
} from './proxy-pods.js';
import { podNetnsName } from './pod-runtime.js';
import {
  identify,
  isRunning,
  newRunId,
  processStartTime,
  readRunRecord,
  runAlive,
  writeRunRecord,
  type RunRecord,
} from './run.js';
import { sandboxCommand, sandboxInitPid } from './sandbox.js';
import type { LabIpFamily, LabPlan, LabPodNetwork } from './topology.js';
import { natSaveCommand } from './iptables-variant.js';
import {
  COMPONENTS_FILE,
  CONTROL_SOCKET,
  HOST_KUBECONFIG,
  kubeconfigCA,
  STATE_FILE,
  type ComponentsRecord,
  type LabState,
} from './supervisor.js';
import type { ComponentStatus } from './keeper.js';
import {
  clusterProblems,
  expectedEndpointRules,
  expectedNftEndpoints,
  missingEndpoints,
  programmedNftEndpoints,
  proxySettled,
  unprogrammedEndpoints,
} from './wait.js';

export const LAB_ROOT = process.env.SVCNET_LAB_ROOT ?? '/run/svcnet/lab';

export function stateDirOf(name: string): string {
  return join(LAB_ROOT, name);
}

export interface RunningLab {
  /** The run (run.json) this lab's state belongs to. */
  readonly runId: string;
  readonly unsharePid: number;
  readonly initPid: number;
  readonly state: LabState;
  readonly stateDir: string;
  /** The run record the lab was found by: its supervisor's identity guards every signal. */
  readonly run: RunRecord & { readonly supervisor: NonNullable<RunRecord['supervisor']> };
}

/** state.json if it was written by run `runId`; a missing, torn or other run's file is no state. */
function readRunState(stateDir: string, runId: string): LabState | undefined {
  try {
    const state = JSON.parse(readFileSync(join(stateDir, STATE_FILE), 'utf8')) as Partial<LabState>;
    return state.runId === runId ? (state as LabState) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The components' states the supervisor of this run last wrote (pids in the lab sandbox's PID
 * namespace); undefined before the lab is up or when the file is another run's.
 */
export function readComponents(lab: RunningLab): readonly ComponentStatus[] | undefined {
  try {
    const rec = JSON.parse(
      readFileSync(join(lab.stateDir, COMPONENTS_FILE), 'utf8'),
    ) as Partial<ComponentsRecord>;
    return rec.runId === lab.runId && Array.isArray(rec.components) ? rec.components : undefined;
  } catch {
    return undefined;
  }
}

/** `lab status`'s component table; `down` lists what is not running (restarting, backoff). */
export function describeComponents(
  components: readonly ComponentStatus[],
  now: number,
): { text: string; down: string[] } {
  const rows = components.map((c) => {
    const detail =
      c.state === 'running'
        ? `pid ${String(c.pid ?? '?')}`
        : [
            c.nextStartAt !== undefined
              ? `next start in ${String(Math.max(0, Math.ceil((c.nextStartAt - now) / 1000)))} s`
              : 'starting',
            ...(c.lastExit !== undefined ? [c.lastExit] : []),
          ].join('; ');
    return `  ${c.name.padEnd(32)} ${c.state.padEnd(10)} ${String(c.restarts).padStart(8)}  ${detail}`;
  });
  return {
    text: [
      `  ${'COMPONENT'.padEnd(32)} ${'STATE'.padEnd(10)} ${'RESTARTS'.padStart(8)}  DETAIL`,
      ...rows,
    ].join('\n'),
    down: components.filter((c) => c.state !== 'running').map((c) => c.name),
  };
}

/**
 * The running lab of that name, or undefined: only a folder whose run.json names a live
 * supervisor is read further, and only state written by that run counts (a dead run's files
 * stay until the next `lab up` sweeps them; a starting lab has no ready state yet).
 */
export function findLab(name: string): RunningLab | undefined {
  const stateDir = stateDirOf(name);
  const run = readRunRecord(stateDir);
  const supervisor = run?.supervisor;
  if (!run || !supervisor || !isRunning(supervisor)) return undefined;
  const initPid = sandboxInitPid(supervisor.pid);
  const state = initPid === undefined ? undefined : readRunState(stateDir, run.runId);
  // Checked again after reading: a supervisor that died meanwhile leaves no running lab.
  if (initPid === undefined || state === undefined || !isRunning(supervisor)) return undefined;
  return {
    runId: run.runId,
    unsharePid: supervisor.pid,
    initPid,
    state,
    stateDir,
    run: { ...run, supervisor },
  };
}

/** Folders `lab up` is still filling before it renames them into place (see labUp). */
const NEW_PREFIX = '.new-';
/** A half-made folder older than this, without a run record, was left by a crashed `lab up`. */
const HALF_MADE_MS = 60_000;

/** Whether the folder holds a run that may still be alive (see run.ts). */
function folderAlive(dir: string, entry: string): boolean {
  const run = readRunRecord(dir);
  if (run) return runAlive(run);
  if (entry.startsWith(NEW_PREFIX)) {
    try {
      return Date.now() - statSync(dir).mtimeMs < HALF_MADE_MS;
    } catch {
      return false;
    }
  }
  // A folder of a lab started before run records existed: its supervisor's pid file.
  try {
    const pid = Number(readFileSync(join(dir, 'unshare.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && processStartTime(pid) !== undefined;
  } catch {
    return false;
  }
}

/**
 * Removes what dead runs left: their whole folders (state, logs, IPAM files, kubeconfig).
 * Their namespaces, mounts and processes died with their sandboxes. Returns the names swept.
 */
export function sweepDeadLabs(): string[] {
  if (!existsSync(LAB_ROOT)) return [];
  const swept: string[] = [];
  for (const entry of readdirSync(LAB_ROOT)) {
    const dir = join(LAB_ROOT, entry);
    if (folderAlive(dir, entry)) continue;
    rmSync(dir, { recursive: true, force: true });
    if (!entry.startsWith(NEW_PREFIX)) swept.push(entry);
  }
  return swept;
}

/**
 * The host kubeconfig of the lab, checked against the run's state: the file the supervisor
 * named in this run's folder, pointing at the run's API endpoint, trusting exactly the
 * certificate the run recorded (so every TLS connection made with it verifies the server).
 */
export function labKubeconfigText(lab: RunningLab): string {
  const { state } = lab;
  const path = join(lab.stateDir, HOST_KUBECONFIG);
  if (state.kubeconfig !== path || state.apiServer === undefined || !state.apiServerCA)
    throw new SvcnetError(
      'NOT_FOUND',
      `lab ${state.plan.name} has no API server yet (${state.status})`,
    );
  const text = readFileSync(path, 'utf8');
  const server = /^\s*server:\s*(\S+)\s*$/m.exec(text)?.[1];
  if (server !== state.apiServer)
    throw new SvcnetError(
      'CONFLICT',
      `${path}: clusters[0].cluster.server: ${server ?? '(none)'} is not this run's API server ${state.apiServer}`,
    );
  if (
    /insecure-skip-tls-verify:\s*true/.test(text) ||
    kubeconfigCA(text, path) !== state.apiServerCA
  )
    throw new SvcnetError(
      'CONFLICT',
      `${path}: clusters[0].cluster.certificate-authority-data: not the certificate of run ${lab.runId}`,
    );
  return text;
}

/**
 * Proves the API endpoint is this run's API server: a TLS handshake that verifies the server
 * against the run's certificate and compares its fingerprint. Something else listening on the
 * port (a dead run's port taken over) fails here, before any request is sent to it.
 */
export function verifyApiServer(lab: RunningLab, timeoutMs = 5000): Promise<void> {
  const text = labKubeconfigText(lab);
  const caData = /^\s*certificate-authority-data:\s*(\S+)\s*$/m.exec(text)?.[1] ?? '';
  const ca = Buffer.from(caData, 'base64').toString('utf8');
  const url = new URL(lab.state.apiServer ?? '');
  const want = lab.state.apiServerCA;
  return new Promise((resolve, reject) => {
    const fail = (why: string): void => {
      sock.destroy();
      reject(
        new SvcnetError(
          'CONFLICT',
          `API server ${url.origin} is not lab run ${lab.runId}'s: ${why}`,
        ),
      );
    };
    const sock = tlsConnect({ host: url.hostname, port: Number(url.port), ca, timeout: timeoutMs });
    sock.once('secureConnect', () => {
      const got = sock.getPeerCertificate().fingerprint256;
      if (got !== want) {
        fail(`certificate ${got} (want ${want ?? ''})`);
        return;
      }
      sock.end();
      resolve();
    });
    sock.once('timeout', () => {
      fail(`no TLS handshake within ${String(timeoutMs)} ms`);
    });
    sock.once('error', (e: Error) => {
      fail(e.message);
    });
  });
}

/** A client config for the lab, from its kubeconfig once labKubeconfigText() has checked it. */
export function labKubeConfig(lab: RunningLab): ReturnType<typeof loadKubeConfig> {
  labKubeconfigText(lab);
  return loadKubeConfig(join(lab.stateDir, HOST_KUBECONFIG));
}

export interface UpOptions {
  readonly name: string;
  readonly nodes: number;
  readonly cni: ComponentOptions['cni'];
  /** Every node's proxy mode (default iptables). */
  readonly proxyMode?: LabProxyMode;
  /** The LoadBalancer address pool (`--lb-pool`; default lb-pool.ts DEFAULT_LB_POOL). */
  readonly lbPool?: string;
  /** `--ip-family`: ipv4 (default) or dual (IPv4 and IPv6 addresses everywhere). */
  readonly ipFamily?: LabIpFamily;
  /** `--pod-network`: kindnet (default), flannel, flannel-host-gw or kubenet (topology.ts). */
  readonly podNetwork?: LabPodNetwork;
  /** Manifests applied once the cluster is up, in order (Namespaces first). */
  readonly objects?: readonly KubeObject[];
  readonly timeoutMs?: number;
  /** Tear the lab down when this process exits, however it exits (tests). */
  readonly lifeline?: boolean;
  /** Progress lines for the user (stderr). */
  readonly progress?: (msg: string) => void;
  /** Time of the deadline, the polls and the timings; default the wall clock. */
  readonly clock?: Clock;
}

export interface UpResult extends RunningLab {
  readonly applied: readonly Applied[];
  /** Milliseconds from the call to: supervisor ready (components up), cluster ready. */
  readonly timings: { readonly components: number; readonly ready: number };
}

/** Starts the lab, applies the manifests and waits until it all serves; throws with the log's tail if it fails. */
export async function labUp(opts: UpOptions): Promise<UpResult> {
  const clock = opts.clock ?? realClock;
  const t0 = clock.now();
  const progress = opts.progress ?? (() => undefined);
  if (process.getuid?.() !== 0)
    throw new SvcnetError(
      'INVALID_INPUT',
      'lab up: must run as root (it creates network namespaces)',
    );
  // Dead runs' folders go first: nothing of theirs can be read as this run's afterwards.
  const swept = sweepDeadLabs();
  if (swept.length > 0) progress(`swept leftovers of dead lab(s): ${swept.join(', ')}`);
  const stateDir = stateDirOf(opts.name);
  const busy = (): SvcnetError => {
    const existing = findLab(opts.name);
    return new SvcnetError(
      'CONFLICT',
      existing
        ? `lab ${opts.name} is already running (pid ${String(existing.unsharePid)}); run \`svcnet lab down\` first`
        : `lab ${opts.name} is being started or stopped by another svcnet (${stateDir})`,
    );
  };
  if (existsSync(stateDir)) throw busy();
  const bins = await ensureLabBinaries();
  const runId = newRunId();
  const starter = identify(process.pid);
  if (!starter) throw new SvcnetError('INTERNAL', 'lab up: cannot read /proc/self/stat');
  // The folder appears whole, run record inside: a rename onto an existing folder fails, so
  // two `lab up` of one name cannot both start, and no reader ever sees a folder without it.
  mkdirSync(LAB_ROOT, { recursive: true });
  const fresh = mkdtempSync(join(LAB_ROOT, NEW_PREFIX));
  writeRunRecord(fresh, { runId, starter });
  try {
    renameSync(fresh, stateDir);
  } catch (e) {
    rmSync(fresh, { recursive: true, force: true });
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTEMPTY') throw busy();
    throw e;
  }
  const logFile = join(stateDir, 'lab.log');
  const { cmd, args } = sandboxCommand([
    ...bins.self,
    'lab',
    'supervise',
    '--name',
    opts.name,
    '--run-id',
    runId,
    '--nodes',
    String(opts.nodes),
    '--cni',
    opts.cni,
    '--proxy-mode',
    opts.proxyMode ?? 'iptables',
    ...(opts.lbPool === undefined ? [] : ['--lb-pool', opts.lbPool]),
    ...(opts.ipFamily === undefined ? [] : ['--ip-family', opts.ipFamily]),
    ...(opts.podNetwork === undefined ? [] : ['--pod-network', opts.podNetwork]),
    '--cni-bin-dir',
    bins.cniBinDir,
    '--state-dir',
    stateDir,
    ...(opts.lifeline === true ? ['--lifeline'] : []),
  ]);
  const pid = spawnDetached(cmd, args, logFile, undefined, opts.lifeline === true);
  // Our own child: it cannot be reaped (and its pid reused) before this process waits for it.
  const supervisor = identify(pid);
  const deadline = t0 + (opts.timeoutMs ?? 120_000);
  const fail = (why: string): SvcnetError => {
    const log = existsSync(logFile)
      ? readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')
      : '';
    if (supervisor && isRunning(supervisor)) process.kill(pid, 'SIGKILL');
    return new SvcnetError(
      'INTERNAL',
      `lab ${opts.name} failed to start: ${why}\n${log}\n(component logs: ${join(stateDir, 'logs')})`,
    );
  };
  if (!supervisor) throw fail('the supervisor exited at once');
  const run = { runId, starter, supervisor };
  writeRunRecord(stateDir, run);
  let lab: RunningLab | undefined;
  while (!lab) {
    const state = readRunState(stateDir, runId);
    if (state?.status === 'ready') {
      const initPid = sandboxInitPid(pid);
      if (initPid !== undefined) lab = { runId, unsharePid: pid, initPid, state, stateDir, run };
    }
    if (state?.status === 'failed' || !isRunning(supervisor))
      throw fail(state?.error ?? 'the supervisor exited');
    if (clock.now() > deadline) throw fail('timed out');
    if (!lab) await clock.sleep(50);
  }
  try {
    await verifyApiServer(lab);
  } catch (e) {
    throw fail(e instanceof Error ? e.message : String(e));
  }
  const components = clock.now() - t0;
  progress(
    `components up in ${String(components)} ms (API server ${lab.state.apiServer ?? ''}); waiting for nodes, Pods and proxies`,
  );
  const kc = loadKubeConfig(lab.state.kubeconfig);
  const applied = opts.objects?.length ? await applyObjects(kc, opts.objects) : [];
  try {
    await waitForCluster(lab, kc, deadline, clock);
  } catch (e) {
    throw fail(e instanceof Error ? e.message : String(e));
  }
  return { ...lab, applied, timings: { components, ready: clock.now() - t0 } };
}

/** How often `lab up` looks at the cluster: six lists through the API server each time. */
const POLL_MS = 500;

/**
 * What a node's proxy has not programmed of what the API server lists, read from its kernel:
 * the nat table in iptables mode, the `ip kube-proxy` table in nftables mode.
 */
async function unprogrammedOnNode(
  lab: RunningLab,
  n: { readonly name: string; readonly netns: string },
  view: {
    readonly services: readonly Service[];
    readonly endpointSlices: readonly EndpointSlice[];
    readonly node: Node | undefined;
  },
): Promise<string[]> {
  if (lab.state.proxyMode === 'nftables') {
    const expected = expectedNftEndpoints(view.services, view.endpointSlices, view.node, n.name);
    if (expected.size === 0) return [];
    const table = await inLab(lab, n.netns, ['nft', 'list', 'table', 'ip', 'kube-proxy']);
    return missingEndpoints(expected, programmedNftEndpoints(table.stdout));
  }
  const expected = expectedEndpointRules(view.services, view.endpointSlices, view.node, n.name);
  if (expected.size === 0) return [];
  // The nat table of the backend the node's proxy programs (iptables-variant.ts).
  const nat = await inLab(lab, n.netns, natSaveCommand(lab.state.iptablesVariant));
  return unprogrammedEndpoints(expected, nat.stdout);
}

/** How long one round of waitForCluster's lists may take before it is tried again. */
const LIST_ROUND_MS = 10_000;

/**
 * `p`, or a rejection with `why` once `ms` of `clock` have passed. A list that never settles
 * may hold no socket either, so something must keep the process alive meanwhile: realClock's
 * timers are unref'd (they never do), and `lab up` exited 13 with nothing printed when the
 * event loop ran dry under such a list. A ref'd Node timer of the same length holds it.
 */
function withDeadline<T>(p: Promise<T>, ms: number, clock: Clock, why: string): Promise<T> {
  let timer: TimerHandle | undefined;
  const keepAlive = setTimeout(() => undefined, ms + 1000);
  const late = new Promise<never>((_, reject) => {
    timer = clock.setTimeout(() => {
      reject(new Error(why));
    }, ms);
  });
  return Promise.race([p, late]).finally(() => {
    clock.clearTimeout(timer);
    clearTimeout(keepAlive);
  });
}

/** Polls until clusterProblems() is empty and every node's proxy has programmed all changes. */
export async function waitForCluster(
  lab: RunningLab,
  kc: ReturnType<typeof loadKubeConfig>,
  deadline: number,
  clock: Clock = realClock,
): Promise<void> {
  const nodeNames = lab.state.plan.nodes.map((n) => n.name);
  let problems: string[] = ['not checked yet'];
  while (problems.length > 0) {
    if (clock.now() > deadline)
      throw new SvcnetError('TIMEOUT', `cluster not ready: ${problems.slice(0, 8).join('; ')}`);
    try {
      // A list that never answers (a connection the busy API server dropped under it) must
      // not hold `lab up` past its deadline: the round is given up after LIST_ROUND_MS and
      // tried again.
      const [nodes, pods, deployments, statefulSets, daemonSets, services, endpointSlices] =
        await withDeadline(
          Promise.all([
            listAll(kc, 'Node', LIST_ROUND_MS),
            listAll(kc, 'Pod', LIST_ROUND_MS),
            listAll(kc, 'Deployment', LIST_ROUND_MS),
            listAll(kc, 'StatefulSet', LIST_ROUND_MS),
            listAll(kc, 'DaemonSet', LIST_ROUND_MS),
            listAll(kc, 'Service', LIST_ROUND_MS),
            listAll(kc, 'EndpointSlice', LIST_ROUND_MS),
          ]),
          LIST_ROUND_MS,
          clock,
          'listing the cluster took too long',
        );
      problems = clusterProblems(
        { nodes, pods, deployments, statefulSets, daemonSets, services, endpointSlices },
        nodeNames,
      );
      if (problems.length === 0) {
        // The informers of the proxies see the last EndpointSlice write a moment after us.
        await clock.sleep(200);
        for (const n of lab.state.plan.nodes) {
          const metrics = await inLab(lab, n.netns, [
            'curl',
            '-sf',
            '-m',
            '2',
            'http://127.0.0.1:10249/metrics',
          ]);
          if (!proxySettled(metrics.stdout)) {
            problems.push(`proxy on ${n.name} not synced`);
            continue;
          }
          // Settled only means nothing its informers delivered is pending: check that every
          // endpoint the API server lists for this node is in its kernel rules.
          const missing = await unprogrammedOnNode(lab, n, {
            services,
            endpointSlices,
            node: nodes.find((x) => x.metadata?.name === n.name),
          });
          if (missing.length > 0)
            problems.push(
              `proxy on ${n.name} has not programmed ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${String(missing.length - 3)} more` : ''}`,
            );
        }
      }
    } catch (e) {
      problems = [e instanceof Error ? e.message : String(e)];
    }
    if (problems.length > 0) await clock.sleep(POLL_MS);
  }
}

/** Runs a command in a lab namespace and captures its output. */
export function inLab(
  lab: RunningLab,
  netns: string,
  argv: readonly string[],
  execer: Execer = new RealExecer(),
): Promise<ExecResult> {
  return execer.run({
    cmd: 'nsenter',
    args: ['-t', String(lab.initPid), '-m', '-p', '--', ...netnsExecArgv(netns, argv)],
  });
}

/**
 * Stops the lab: SIGTERM to the supervisor, then SIGKILL after the grace period; removes its
 * folder if it is still this run's. A dead run's leftovers are swept too. False when no lab
 * of that name was running.
 */
export async function labDown(
  name: string,
  graceMs = 15_000,
  clock: Clock = realClock,
): Promise<boolean> {
  const lab = findLab(name);
  if (!lab) {
    sweepDeadLabs();
    return false;
  }
  const sup = lab.run.supervisor;
  signalPid(lab.initPid, 'SIGTERM'); // it may have died since findLab()
  const deadline = clock.now() + graceMs;
  while (isRunning(sup) && clock.now() < deadline) await clock.sleep(50);
  if (isRunning(sup)) signalPid(sup.pid, 'SIGKILL');
  while (isRunning(sup)) await clock.sleep(20);
  if (readRunRecord(lab.stateDir)?.runId === lab.runId)
    rmSync(lab.stateDir, { recursive: true, force: true });
  return true;
}

/** `[namespace/]name` of a Pod target. */
function splitPodRef(target: string): { namespace: string; name: string } {
  const t = target.replace(/^pods?\//, '');
  const i = t.indexOf('/');
  return i < 0
    ? { namespace: 'default', name: t }
    : { namespace: t.slice(0, i), name: t.slice(i + 1) };
}

/**
 * Network namespace of a node (by name or netns), of the hub or the outside host, or of a
 * running Pod (`[ns/]name`).
 */
export async function resolveTarget(lab: RunningLab, target: string): Promise<string> {
  const node = lab.state.plan.nodes.find((n) => n.name === target || n.netns === target);
  if (node) return node.netns;
  if (target === lab.state.plan.hubNetns) return target;
  // A lab started before the outside host existed has none in its plan.
  const outside = (lab.state.plan as Partial<LabPlan>).outside;
  if (outside !== undefined && target === outside.netns) return target;
  const { namespace, name } = splitPodRef(target);
  const pod =
    lab.state.kubeconfig === undefined
      ? undefined
      : await new HttpKubeClient(labKubeConfig(lab)).get('Pod', namespace, name);
  if (pod?.status?.podIP) {
    // A hostNetwork Pod has no namespace of its own: it runs in its node's.
    const host = pod.spec?.hostNetwork === true ? pod.spec.nodeName : undefined;
    const hostNode = lab.state.plan.nodes.find((n) => n.name === host);
    return hostNode ? hostNode.netns : podNetnsName(pod);
  }
  const known = lab.state.plan.nodes.map((n) => n.name).join(', ');
  throw new SvcnetError(
    'INVALID_INPUT',
    pod
      ? `lab exec: pod ${namespace}/${name} is not running yet (phase ${pod.status?.phase ?? 'Pending'})`
      : `lab exec: no node named ${JSON.stringify(target)} and no pod ${namespace}/${name} (nodes: ${known}; outside; pods: [namespace/]name)`,
  );
}

/**
 * Runs a command inside a lab namespace, attached to the terminal; returns its exit code. It
 * joins the sandbox's PID namespace too, so anything it leaves running dies with the lab.
 */
export async function labExec(
  name: string,
  target: string,
  argv: readonly string[],
): Promise<number> {
  const lab = findLab(name);
  if (!lab) throw new SvcnetError('NOT_FOUND', `lab ${name} is not running`);
  if (argv.length === 0)
    throw new SvcnetError('INVALID_INPUT', 'lab exec: missing command after --');
  const netns = await resolveTarget(lab, target);
  return runAttached('nsenter', [
    '-t',
    String(lab.initPid),
    '-m',
    '-p',
    '--',
    ...netnsExecArgv(netns, argv),
  ]);
}

/**
 * The proxies (kube-proxy DaemonSet Pods) per node, from the API, as `lab status` lists them;
 * when the API cannot be asked, a line saying so and where to look.
 */
export async function describeLabProxies(
  lab: RunningLab,
): Promise<{ text: string; down: string[] }> {
  const nodes = lab.state.plan.nodes.map((n) => n.name);
  try {
    const pods = await new HttpKubeClient(labKubeConfig(lab)).list('Pod', {
      namespace: PROXY_NAMESPACE,
      labelSelector: PROXY_SELECTOR,
    });
    return describeProxyPods(pods, nodes);
  } catch (e) {
    // Unknown is not down: with the API server away the proxies keep serving their rules, and
    // the API server's own row already makes `lab status` fail.
    return {
      text: `  proxies: unknown, cannot list the kube-proxy Pods (${e instanceof Error ? e.message : String(e)}); kubectl -n ${PROXY_NAMESPACE} get pods -l ${PROXY_SELECTOR}`,
      down: [],
    };
  }
}

/**
 * Restarts one component: `agent-NODE`, `controller`, `apiserver`, ... through the
 * supervisor; `proxy-NODE` (or `proxy`: every node) by deleting the node's kube-proxy Pod
 * for its DaemonSet to replace (proxy-pods.ts), as on kind.
 */
export async function labRestart(name: string, component: string): Promise<string> {
  const lab = findLab(name);
  if (!lab) throw new SvcnetError('NOT_FOUND', `lab ${name} is not running`);
  const proxyNodes = proxyRestartTarget(
    component,
    lab.state.plan.nodes.map((n) => n.name),
  );
  if (proxyNodes !== undefined)
    return (await restartProxyPods(new HttpKubeClient(labKubeConfig(lab)), proxyNodes)).join('\n');
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: join(lab.stateDir, CONTROL_SOCKET),
        method: 'POST',
        path: `/restart/${component}`,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          if (res.statusCode === 200) resolve(body.trim());
          else
            reject(
              new SvcnetError(
                res.statusCode === 404 ? 'INVALID_INPUT' : 'INTERNAL',
                `lab restart: ${body.trim()}`,
              ),
            );
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
