// The client side of `svcnet lab up|down|status|exec`: starts the supervisor in its sandbox,
// waits for it to report ready, and finds it again from its state directory
// (/run/svcnet/lab/<name>/: unshare.pid, state.json, lab.log). A state directory whose
// supervisor is dead is a leftover of a crashed run and is swept by the next `lab up`.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { ClientNodeKubeClient } from '../kube/api-client.js';
import { loadKubeConfig } from '../kube/client.js';
import type { KubeObject } from '../kube/types.js';
import { RealExecer, type ExecResult, type Execer } from '../os/exec.js';
import { runAttached, spawnDetached } from '../os/process.js';
import { applyObjects, type Applied } from './apply.js';
import { ensureLabBinaries } from './binaries.js';
import type { ComponentOptions } from './components.js';
import { podNetnsName } from './pod-runtime.js';
import { isAlive, sandboxCommand, sandboxInitPid } from './sandbox.js';
import { CONTROL_SOCKET, STATE_FILE, type LabState } from './supervisor.js';
import {
  clusterProblems,
  expectedEndpointRules,
  proxySettled,
  unprogrammedEndpoints,
} from './wait.js';

export const LAB_ROOT = process.env.SVCNET_LAB_ROOT ?? '/run/svcnet/lab';

export function stateDirOf(name: string): string {
  return join(LAB_ROOT, name);
}

export interface RunningLab {
  readonly unsharePid: number;
  readonly initPid: number;
  readonly state: LabState;
  readonly stateDir: string;
}

function readPid(stateDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(stateDir, 'unshare.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function readState(stateDir: string): LabState | undefined {
  try {
    return JSON.parse(readFileSync(join(stateDir, STATE_FILE), 'utf8')) as LabState;
  } catch {
    return undefined;
  }
}

/** The running lab of that name, or undefined (a dead one's files stay until the next `lab up`). */
export function findLab(name: string): RunningLab | undefined {
  const stateDir = stateDirOf(name);
  if (!existsSync(stateDir)) return undefined;
  const unsharePid = readPid(stateDir);
  const initPid = unsharePid === undefined ? undefined : sandboxInitPid(unsharePid);
  const state = readState(stateDir);
  if (
    unsharePid === undefined ||
    initPid === undefined ||
    !isAlive(unsharePid) ||
    state === undefined
  )
    return undefined;
  return { unsharePid, initPid, state, stateDir };
}

/**
 * Removes what dead labs left: their state folders (logs, IPAM files, kubeconfig). Their
 * namespaces, mounts and processes died with their sandboxes. Returns the names swept.
 */
export function sweepDeadLabs(): string[] {
  if (!existsSync(LAB_ROOT)) return [];
  const swept: string[] = [];
  for (const name of readdirSync(LAB_ROOT)) {
    if (findLab(name)) continue;
    const dir = stateDirOf(name);
    const pid = readPid(dir);
    // A lab still starting has its pid file and a live supervisor: findLab() may not see
    // its state yet, so only the supervisor's death marks it dead.
    if (pid !== undefined && isAlive(pid)) continue;
    rmSync(dir, { recursive: true, force: true });
    swept.push(name);
  }
  return swept;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface UpOptions {
  readonly name: string;
  readonly nodes: number;
  readonly cni: ComponentOptions['cni'];
  /** Manifests applied once the cluster is up, in order (Namespaces first). */
  readonly objects?: readonly KubeObject[];
  readonly timeoutMs?: number;
  /** Tear the lab down when this process exits, however it exits (tests). */
  readonly lifeline?: boolean;
  /** Progress lines for the user (stderr). */
  readonly progress?: (msg: string) => void;
}

export interface UpResult extends RunningLab {
  readonly applied: readonly Applied[];
  /** Milliseconds from the call to: supervisor ready (components up), cluster ready. */
  readonly timings: { readonly components: number; readonly ready: number };
}

/** Starts the lab, applies the manifests and waits until it all serves; throws with the log's tail if it fails. */
export async function labUp(opts: UpOptions): Promise<UpResult> {
  const t0 = Date.now();
  const progress = opts.progress ?? (() => undefined);
  if (process.getuid?.() !== 0)
    throw new SvcnetError(
      'INVALID_INPUT',
      'lab up: must run as root (it creates network namespaces)',
    );
  const swept = sweepDeadLabs();
  if (swept.length > 0) progress(`swept leftovers of dead lab(s): ${swept.join(', ')}`);
  const existing = findLab(opts.name);
  if (existing)
    throw new SvcnetError(
      'CONFLICT',
      `lab ${opts.name} is already running (pid ${existing.unsharePid}); run \`svcnet lab down\` first`,
    );
  const bins = await ensureLabBinaries();
  const stateDir = stateDirOf(opts.name);
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, 'lab.log');
  const { cmd, args } = sandboxCommand([
    ...bins.self,
    'lab',
    'supervise',
    '--name',
    opts.name,
    '--nodes',
    String(opts.nodes),
    '--cni',
    opts.cni,
    '--cni-bin-dir',
    bins.cniBinDir,
    '--state-dir',
    stateDir,
    ...(opts.lifeline === true ? ['--lifeline'] : []),
  ]);
  const pid = spawnDetached(cmd, args, logFile, undefined, opts.lifeline === true);
  writeFileSync(join(stateDir, 'unshare.pid'), `${String(pid)}\n`);
  const deadline = t0 + (opts.timeoutMs ?? 120_000);
  const fail = (why: string): SvcnetError => {
    const log = existsSync(logFile)
      ? readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')
      : '';
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    return new SvcnetError(
      'INTERNAL',
      `lab ${opts.name} failed to start: ${why}\n${log}\n(component logs: ${join(stateDir, 'logs')})`,
    );
  };
  let lab: RunningLab | undefined;
  while (!lab) {
    const state = readState(stateDir);
    if (state?.status === 'ready') {
      const initPid = sandboxInitPid(pid);
      if (initPid !== undefined) lab = { unsharePid: pid, initPid, state, stateDir };
    }
    if (state?.status === 'failed' || !isAlive(pid))
      throw fail(state?.error ?? 'the supervisor exited');
    if (Date.now() > deadline) throw fail('timed out');
    if (!lab) await sleep(50);
  }
  const components = Date.now() - t0;
  progress(`components up in ${String(components)} ms; waiting for nodes, Pods and proxies`);
  const kc = loadKubeConfig(lab.state.kubeconfig);
  const applied = opts.objects?.length ? await applyObjects(kc, opts.objects) : [];
  try {
    await waitForCluster(lab, kc, deadline);
  } catch (e) {
    throw fail(e instanceof Error ? e.message : String(e));
  }
  return { ...lab, applied, timings: { components, ready: Date.now() - t0 } };
}

/**
 * A node's nat table, from whichever iptables backend its proxy programs (the proxy picks the
 * one holding kube-proxy's chains, else the system default).
 */
const NAT_DUMP =
  'iptables-save -t nat 2>/dev/null | grep -q "^:KUBE-SERVICES" && exec iptables-save -t nat; exec iptables-legacy-save -t nat 2>/dev/null';

/** How often `lab up` looks at the cluster: six lists through the API server each time. */
const POLL_MS = 500;

/** Polls until clusterProblems() is empty and every node's proxy has programmed all changes. */
export async function waitForCluster(
  lab: RunningLab,
  kc: ReturnType<typeof loadKubeConfig>,
  deadline: number,
): Promise<void> {
  const client = new ClientNodeKubeClient(kc);
  const nodeNames = lab.state.plan.nodes.map((n) => n.name);
  let problems: string[] = ['not checked yet'];
  while (problems.length > 0) {
    if (Date.now() > deadline)
      throw new SvcnetError('TIMEOUT', `cluster not ready: ${problems.slice(0, 8).join('; ')}`);
    try {
      const [nodes, pods, deployments, statefulSets, services, endpointSlices] = await Promise.all([
        client.list('Node'),
        client.list('Pod'),
        client.list('Deployment'),
        client.list('StatefulSet'),
        client.list('Service'),
        client.list('EndpointSlice'),
      ]);
      problems = clusterProblems(
        { nodes, pods, deployments, statefulSets, services, endpointSlices },
        nodeNames,
      );
      if (problems.length === 0) {
        // The informers of the proxies see the last EndpointSlice write a moment after us.
        await sleep(200);
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
          const expected = expectedEndpointRules(
            services,
            endpointSlices,
            nodes.find((x) => x.metadata?.name === n.name),
            n.name,
          );
          if (expected.size === 0) continue;
          const nat = await inLab(lab, n.netns, ['sh', '-c', NAT_DUMP]);
          const missing = unprogrammedEndpoints(expected, nat.stdout);
          if (missing.length > 0)
            problems.push(
              `proxy on ${n.name} has not programmed ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${String(missing.length - 3)} more` : ''}`,
            );
        }
      }
    } catch (e) {
      problems = [e instanceof Error ? e.message : String(e)];
    }
    if (problems.length > 0) await sleep(POLL_MS);
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
    args: ['-t', String(lab.initPid), '-m', '-p', '--', 'ip', 'netns', 'exec', netns, ...argv],
  });
}

/** Stops the lab: SIGTERM to the supervisor, then SIGKILL after the grace period. */
export async function labDown(name: string, graceMs = 15_000): Promise<boolean> {
  const lab = findLab(name);
  if (!lab) return false;
  process.kill(lab.initPid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(lab.unsharePid) && Date.now() < deadline) await sleep(50);
  if (isAlive(lab.unsharePid)) process.kill(lab.unsharePid, 'SIGKILL');
  while (isAlive(lab.unsharePid)) await sleep(20);
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

/** Network namespace of a node (by name or netns) or of a running Pod (`[ns/]name`). */
export async function resolveTarget(lab: RunningLab, target: string): Promise<string> {
  const node = lab.state.plan.nodes.find((n) => n.name === target || n.netns === target);
  if (node) return node.netns;
  if (target === lab.state.plan.hubNetns) return target;
  const { namespace, name } = splitPodRef(target);
  const pod =
    lab.state.kubeconfig === undefined
      ? undefined
      : await new ClientNodeKubeClient(loadKubeConfig(lab.state.kubeconfig)).get(
          'Pod',
          namespace,
          name,
        );
  if (pod?.status?.podIP) return podNetnsName(pod);
  const known = lab.state.plan.nodes.map((n) => n.name).join(', ');
  throw new SvcnetError(
    'INVALID_INPUT',
    pod
      ? `lab exec: pod ${namespace}/${name} is not running yet (phase ${pod.status?.phase ?? 'Pending'})`
      : `lab exec: no node named ${JSON.stringify(target)} and no pod ${namespace}/${name} (nodes: ${known}; pods: [namespace/]name)`,
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
    'ip',
    'netns',
    'exec',
    netns,
    ...argv,
  ]);
}

/** Asks the supervisor to restart one component (`proxy-NODE`, `agent-NODE`, `controller`, ...). */
export async function labRestart(name: string, component: string): Promise<string> {
  const lab = findLab(name);
  if (!lab) throw new SvcnetError('NOT_FOUND', `lab ${name} is not running`);
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
