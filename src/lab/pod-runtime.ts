// The real PodRuntime of the lab's node agent. A Pod's sandbox is a network namespace in the
// lab's private /run/netns with its own /etc/netns/<ns>/{resolv.conf,hosts} (which
// `ip netns exec` shows as /etc/... to the Pod's processes); its network comes from CNI
// through the PodNetwork seam; its container (pod-servers.ts) is a netexec server run by the
// node's pod host inside the Pod's namespace when the runtime has one (pod-host.ts: one
// process for all of a node's Pods), else a process: `svcnet netexec`, a svcnet subcommand
// or a shell command, started inside the namespace with POD_NAME,
// HOSTNAME and the container's env set, and started again in the same sandbox when the agent
// restarts the container (restartContainer; killContainer stops it for a failed liveness
// probe). Its output goes to the container's log (container-log-capture.ts), removed with
// the Pod. Its configMap volumes are materialised before the process starts (and before each
// restart) under volumeRoot, in the kubelet's layout, and updated in place by
// refreshConfigMap when the ConfigMap changes (configmap-volume.ts); they go with the Pod.
// A hostNetwork Pod gets no namespace and no CNI: its server runs in the
// node's namespace and its IP is the node's. Init containers and exec probes run their
// commands in the Pod's namespace (pod-exec.ts). Runs inside the node's network namespace, so
// readiness probes reach Pod IPs directly.

import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Ip } from '../os/ip.js';
import { IpSandboxNamespaces, type SandboxNamespaces } from '../os/netns-named.js';
import { RealExecer, type Execer } from '../os/exec.js';
import { netnsExecArgv } from '../os/netns.js';
import { netnsPath } from '../util/ip-ops.js';
import {
  adoptProcess,
  processGone,
  signalPid,
  startProcess,
  type ManagedProcess,
} from '../os/process.js';
import type { ConfigMap, Container, Pod, Probe } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import type { PodRuntime, StartedPod } from './agent.js';
import { ContainerLogs } from './container-log-capture.js';
import {
  containerEnv,
  execProbe,
  podCommandExecer,
  runInitContainer,
  type ContainerRun,
} from './pod-exec.js';
import {
  hostedContainer,
  isShellCommand,
  planPodServer,
  type PodServerPlan,
} from './pod-servers.js';
import type { PodHostClient } from './pod-host-client.js';
import {
  configMapVolumes,
  containerMounts,
  podVolumesRoot,
  projectFiles,
  volumeDir,
  writeVolume,
} from './configmap-volume.js';
import {
  formatResolvConf,
  parseResolvConf,
  podDNSConfig,
  type ResolvConf,
} from '../dns/resolvconf.js';

/** CNI, as the agent needs it: attach a Pod's namespace and report its address; detach. */
export interface PodNetwork {
  /** The Pod's address (IPv4 first) and, dual-stack, all of them. */
  add(req: PodNetworkRequest): Promise<{ ip: string; ips?: readonly string[] }>;
  /** Idempotent: a second DEL, or one for a namespace already gone, succeeds. */
  del(req: PodNetworkRequest): Promise<void>;
}

export interface PodNetworkRequest {
  readonly containerId: string;
  /** Path of the network namespace, e.g. /run/netns/p-1a2b3c. */
  readonly netnsPath: string;
  readonly ifName: string;
  readonly podNamespace: string;
  readonly podName: string;
  readonly podUid: string;
}

export interface PodRuntimeOptions {
  /** The Pods' namespaces through iproute2 when `namespaces` is not given. */
  readonly ip: Ip;
  /** Creates and deletes the Pods' namespaces (default: `ip netns` through `ip`). */
  readonly namespaces?: SandboxNamespaces;
  readonly network: PodNetwork;
  /** argv that runs the svcnet CLI (node + flags + script). */
  readonly self: readonly string[];
  /** The node's container log root (container-log-files.ts: one directory per Pod). */
  readonly logDir: string;
  /** Keeps the containers' output; default one over logDir. Shared with the kubelet API. */
  readonly logs?: ContainerLogs;
  readonly clusterDNS: string;
  readonly clusterDomain: string;
  /** The node's resolv.conf (default /etc/resolv.conf), as the kubelet's --resolv-conf. */
  readonly resolvConf?: string;
  /** kubeconfig for Pods that run an API-watching svcnet subcommand (the cluster DNS). */
  readonly kubeconfig?: string;
  /**
   * Where each running Pod's sandbox is recorded (netns, IP, server pid), so an agent that
   * restarts adopts its Pods instead of recreating them, as the kubelet does.
   */
  readonly recordDir?: string;
  /** How long to wait for a Pod's server to listen. */
  readonly startTimeoutMs?: number;
  /** Time of the start deadline, startedAt and the stop grace period; default the wall clock. */
  readonly clock?: Clock;
  /** Runs init containers and exec probes; default the real one. */
  readonly execer?: Execer;
  /** The node's InternalIP: a hostNetwork Pod's IP. */
  readonly nodeIP?: string;
  /** Dual-stack: both node addresses, a hostNetwork Pod's podIPs (default [nodeIP]). */
  readonly nodeIPs?: readonly string[];
  /** The node's name: a hostNetwork Pod's HOSTNAME. */
  readonly nodeName?: string;
  /** The ConfigMaps the agent knows (an informer's cache), for configMap volumes. */
  readonly configMap?: (namespace: string, name: string) => ConfigMap | undefined;
  /** Where Pods' volumes are materialised (`<root>/<uid>/volumes/...`); default logDir/../volumes. */
  readonly volumeRoot?: string;
  /**
   * The node's pod host: netexec containers run there, inside their Pod's namespace, instead
   * of as a process each (absent: a process each).
   */
  readonly podHost?: PodHostClient;
}

/** Network namespace name of a Pod: short, stable, unique per Pod instance (uid). */
export function podNetnsName(pod: Pod): string {
  const id = `${objectKey(pod)}/${pod.metadata?.uid ?? ''}`;
  return `pod-${createHash('sha256').update(id).digest('hex').slice(0, 12)}`;
}

/** The resolv.conf a Pod with dnsPolicy ClusterFirst gets. */
export function podResolvConf(namespace: string, clusterDNS: string, domain: string): string {
  return `nameserver ${clusterDNS}\nsearch ${namespace}.svc.${domain} svc.${domain} ${domain}\noptions ndots:5\n`;
}

/**
 * The resolv.conf the kubelet writes for this Pod: per its dnsPolicy (ClusterFirst: the
 * cluster DNS and search path plus the node's search domains; Default: the node's file;
 * None: nothing) with its dnsConfig merged in. `nodeResolvConf` is the node's file's text;
 * one that does not parse counts as empty. Throws on an unknown dnsPolicy.
 */
export function podResolvConfFor(
  pod: Pod,
  nodeResolvConf: string,
  clusterDNS: string,
  domain: string,
): string {
  let node: ResolvConf = { nameservers: [], searches: [], options: [] };
  try {
    node = parseResolvConf(nodeResolvConf);
  } catch {
    // the kubelet also carries on with what it has
  }
  const dnsConfig = pod.spec?.dnsConfig;
  return formatResolvConf(
    podDNSConfig({
      nodeResolvConf: node,
      clusterDNS: [clusterDNS],
      clusterDomain: domain,
      namespace: pod.metadata?.namespace ?? 'default',
      dnsPolicy: pod.spec?.dnsPolicy ?? 'ClusterFirst',
      hostNetwork: pod.spec?.hostNetwork ?? false,
      ...(dnsConfig === undefined ? {} : { dnsConfig }),
    }),
  );
}

/** A Pod's addresses: the first (IPv4 when it has one) and all of them. */
interface PodAddresses {
  readonly ip: string;
  readonly ips: readonly string[];
}

export function podHosts(pod: Pod, ips: readonly string[], domain: string): string {
  const name = pod.spec?.hostname ?? pod.metadata?.name ?? '';
  const sub = pod.spec?.subdomain;
  const fqdn = sub ? `${name}.${sub}.${pod.metadata?.namespace ?? 'default'}.svc.${domain} ` : '';
  // One line per Pod IP, as the kubelet writes a dual-stack Pod's hosts file.
  const own = ips.map((ip) => `${ip}\t${fqdn}${name}\n`).join('');
  return `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${own}`;
}

function readTextOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

function tcpConnect(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: timeoutMs });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => {
      resolve(false);
    });
  });
}

/** A probe's port: a number, or a container port name resolved from the Pod spec. */
export function probePort(pod: Pod, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? []) if (p.name === port) return p.containerPort;
  const n = Number(port);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * The container the Pod's one process stands for, whose log gets its output: the svcnet or
 * shell-command container the process runs, else the netexec one, else the first.
 */
export function serverContainerName(pod: Pod): string {
  const cs = pod.spec?.containers ?? [];
  const c =
    cs.find((x) => x.command?.[0] === 'svcnet') ??
    cs.find((x) => isShellCommand(x.command)) ??
    cs.find((x) => [...(x.command ?? []), ...(x.args ?? [])].includes('netexec')) ??
    cs[0];
  return c?.name ?? '';
}

/** What an agent leaves behind about a running Pod, for the next one. */
export interface SandboxRecord {
  readonly key: string;
  readonly uid: string;
  readonly netns: string;
  readonly ip: string;
  /** Every address of the Pod, IPv4 first (absent in records of older agents: [ip]). */
  readonly ips?: readonly string[];
  readonly pid: number;
  readonly startedAt: string;
  /** A hostNetwork Pod: no namespace or CNI attachment of its own. */
  readonly hostNetwork?: boolean;
  /** The container runs in the pod host (pid is the host's): its id and run there. */
  readonly hosted?: HostedRef;
}

/** A container in the pod host: its id (the sandbox name) and run. */
interface HostedRef {
  readonly id: string;
  readonly run: number;
}

/** The network namespace a process is in, as `net:[inode]`, or undefined. */
function netnsOfPid(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${String(pid)}/ns/net`);
  } catch {
    return undefined;
  }
}

/** The namespace a /run/netns file holds (the agent's own for a hostNetwork Pod), or undefined. */
function netnsOfFile(netns: string, hostNetwork: boolean): string | undefined {
  if (hostNetwork) return netnsOfPid(process.pid);
  try {
    return `net:[${String(statSync(netnsPath(netns)).ino)}]`;
  } catch {
    return undefined;
  }
}

interface Running {
  readonly pod: Pod;
  readonly netns: string;
  readonly ip: string;
  readonly ips: readonly string[];
  proc: ManagedProcess;
  hosted?: HostedRef;
}

/** The containerID of a pod host's run: no process of its own to signal. */
function hostedContainerID(hostPid: number, ref: HostedRef): string {
  return `svcnet://${String(hostPid)}/${ref.id}.${String(ref.run)}`;
}

export class LabPodRuntime implements PodRuntime {
  private readonly running = new Map<string, Running>();
  private readonly opts: PodRuntimeOptions;
  private readonly namespaces: SandboxNamespaces;
  /** The containers' output, per Pod and container (what `kubectl logs` reads). */
  readonly logs: ContainerLogs;

  constructor(opts: PodRuntimeOptions) {
    this.opts = opts;
    this.namespaces = opts.namespaces ?? new IpSandboxNamespaces(opts.ip);
    this.logs = opts.logs ?? new ContainerLogs(opts.logDir);
  }

  private request(pod: Pod, netns: string): PodNetworkRequest {
    return {
      containerId: pod.metadata?.uid ?? netns,
      netnsPath: netnsPath(netns),
      ifName: 'eth0',
      podNamespace: pod.metadata?.namespace ?? 'default',
      podName: pod.metadata?.name ?? '',
      podUid: pod.metadata?.uid ?? '',
    };
  }

  /** The Pod's namespace with CNI attached and its /etc files; returns its IPs. */
  private async createSandbox(pod: Pod, netns: string): Promise<PodAddresses> {
    await this.namespaces.create(netns);
    const added = await this.opts.network.add(this.request(pod, netns));
    const { ip } = added;
    const ips = added.ips ?? [ip];
    const etc = join('/etc/netns', netns);
    mkdirSync(etc, { recursive: true });
    // As the kubelet: from dnsPolicy and dnsConfig (the cluster DNS's own Pods use Default,
    // the node's resolv.conf).
    writeFileSync(
      join(etc, 'resolv.conf'),
      podResolvConfFor(
        pod,
        readTextOr(this.opts.resolvConf ?? '/etc/resolv.conf', ''),
        this.opts.clusterDNS,
        this.opts.clusterDomain,
      ),
    );
    writeFileSync(join(etc, 'hosts'), podHosts(pod, ips, this.opts.clusterDomain));
    return { ip, ips };
  }

  /** The node's IP for a hostNetwork Pod (nothing to create), else a fresh sandbox's. */
  private async sandboxIP(pod: Pod, netns: string): Promise<PodAddresses> {
    if (pod.spec?.hostNetwork !== true) return this.createSandbox(pod, netns);
    if (this.opts.nodeIP === undefined)
      throw new Error(`pod ${objectKey(pod)}: spec.hostNetwork: the agent was given no node IP`);
    return { ip: this.opts.nodeIP, ips: this.opts.nodeIPs ?? [this.opts.nodeIP] };
  }

  /**
   * Creates the sandbox, runs `beforeServer` (the init containers) once it exists, then
   * starts the Pod's container process; resolves once it listens (or has exited: the agent
   * restarts it). A failure removes the sandbox.
   */
  async start(pod: Pod, beforeServer?: (ip: string) => Promise<void>): Promise<StartedPod> {
    const key = objectKey(pod);
    const netns = podNetnsName(pod);
    try {
      const addrs = await this.sandboxIP(pod, netns);
      await beforeServer?.(addrs.ip);
      return await this.launch(pod, netns, addrs);
    } catch (e) {
      // The sandbox goes; the logs stay, to tell why (the Pod's deletion removes them).
      await this.teardown(key, 0, netns, pod);
      throw e;
    }
  }

  /** Starts the Pod's container process again in its sandbox, as the kubelet restarts one. */
  async restartContainer(pod: Pod): Promise<StartedPod> {
    const key = objectKey(pod);
    const r = this.running.get(key);
    if (r === undefined) throw new Error(`pod ${key}: no sandbox to restart its container in`);
    return this.launch(pod, r.netns, r);
  }

  /** Stops the container process (SIGTERM, SIGKILL after the grace period); keeps the sandbox. */
  async killContainer(key: string, graceSeconds: number): Promise<void> {
    const r = this.running.get(key);
    if (r) await this.terminate(r.proc, graceSeconds);
  }

  /** Starts the process, waits until it listens or exits, records it. */
  private async launch(pod: Pod, netns: string, addrs: PodAddresses): Promise<StartedPod> {
    const { ip, ips } = addrs;
    const key = objectKey(pod);
    const hostNetwork = pod.spec?.hostNetwork === true;
    this.syncVolumes(pod);
    const nodeName = this.opts.nodeName ?? '';
    const plan = planPodServer(pod, {
      ...(this.opts.kubeconfig === undefined ? {} : { kubeconfig: this.opts.kubeconfig }),
      envOf: (c) => containerEnv(pod, c, nodeName),
      mountsOf: (c) => containerMounts(this.volumeRoot(), pod, c),
    });
    const host = this.opts.podHost;
    if (host !== undefined && plan.command === undefined && plan.args[0] === 'netexec')
      return this.launchHosted(host, pod, netns, addrs, plan);
    const argv = plan.command ?? [...this.opts.self, ...plan.args];
    const [cmd, ...args] = hostNetwork ? argv : netnsExecArgv(netns, argv);
    if (cmd === undefined) throw new Error(`pod ${key}: no server command`);
    const clock = this.opts.clock ?? realClock;
    // The container's startedAt, as the kubelet reports it: when its process started.
    const startedAt = new Date(clock.now()).toISOString();
    const container =
      plan.command === undefined
        ? pod.spec?.containers.find((c) => c.command?.[0] === 'svcnet')
        : pod.spec?.containers.find((c) => isShellCommand(c.command));
    const capture = this.logs.capture(pod, serverContainerName(pod));
    let proc: ManagedProcess;
    try {
      proc = startProcess(cmd, args, capture.output, {
        ...(container === undefined ? {} : containerEnv(pod, container, this.opts.nodeName ?? '')),
        POD_NAME: pod.spec?.hostname ?? pod.metadata?.name ?? '',
        POD_NAMESPACE: pod.metadata?.namespace ?? 'default',
      });
    } finally {
      capture.spawned();
    }
    this.running.set(key, { pod, netns, ip, ips, proc });
    const ended = { yes: false };
    void proc.exited.then(() => {
      ended.yes = true;
      this.logs.exited(capture.path);
    });
    const port = plan.command === undefined ? plan.tcpPorts[0] : undefined;
    const deadline = clock.now() + (this.opts.startTimeoutMs ?? 20_000);
    // Listening is what "started" means to clients; UDP-only Pods and commands are taken as
    // started at once, and so is a process that already ended (the agent restarts it).
    while (port !== undefined && !ended.yes && !(await tcpConnect(ip, port, 500))) {
      if (clock.now() > deadline) {
        proc.signal('SIGKILL');
        throw new Error(`pod ${key}: server did not listen on ${ip}:${String(port)}`);
      }
      await clock.sleep(50);
    }
    const started = { ip, ips, startedAt };
    this.record(pod, netns, proc.pid, started);
    return { ...started, pid: proc.pid, exited: proc.exited };
  }

  /** The netexec container as a run in the node's pod host; resolves once it listens. */
  private async launchHosted(
    host: PodHostClient,
    pod: Pod,
    netns: string,
    addrs: PodAddresses,
    plan: PodServerPlan,
  ): Promise<StartedPod> {
    const key = objectKey(pod);
    const hostNetwork = pod.spec?.hostNetwork === true;
    const startedAt = new Date((this.opts.clock ?? realClock).now()).toISOString();
    const capture = this.logs.capture(pod, serverContainerName(pod));
    const hostname = pod.spec?.hostname ?? pod.metadata?.name ?? '';
    const spec = hostedContainer(
      plan,
      netns,
      hostNetwork ? undefined : netns,
      hostname,
      capture.fifos,
    );
    if (spec === undefined) throw new Error(`pod ${key}: not a netexec container`);
    let run;
    try {
      run = await host.start(spec);
    } finally {
      capture.spawned();
    }
    const proc: ManagedProcess = { pid: run.pid, exited: run.exited, signal: run.signal };
    void run.exited.then(() => {
      this.logs.exited(capture.path);
    });
    const hosted = { id: run.id, run: run.run };
    this.running.set(key, { pod, netns, ip: addrs.ip, ips: addrs.ips, proc, hosted });
    const started = { ip: addrs.ip, ips: addrs.ips, startedAt };
    this.record(pod, netns, run.pid, started, hosted);
    return {
      ...started,
      pid: run.pid,
      containerID: hostedContainerID(run.pid, hosted),
      exited: run.exited,
    };
  }

  /** Writes the sandbox record a restarted agent adopts the Pod from. */
  private record(
    pod: Pod,
    netns: string,
    pid: number,
    started: { ip: string; ips: readonly string[]; startedAt: string },
    hosted?: HostedRef,
  ): void {
    const path = this.recordPath(netns);
    if (path === undefined) return;
    const rec: SandboxRecord = {
      key: objectKey(pod),
      uid: pod.metadata?.uid ?? '',
      netns,
      pid,
      ...started,
      ...(pod.spec?.hostNetwork === true ? { hostNetwork: true } : {}),
      ...(hosted === undefined ? {} : { hosted }),
    };
    writeFileSync(path, `${JSON.stringify(rec)}\n`);
  }

  private volumeRoot(): string {
    return this.opts.volumeRoot ?? join(this.opts.logDir, '..', 'volumes');
  }

  /**
   * Writes the Pod's configMap volumes from the ConfigMaps as they are now (the atomic
   * `..data` swap when one changed). A missing ConfigMap that is not optional fails the start,
   * naming it, as the kubelet's CreateContainerConfigError. Returns the volumes rewritten.
   */
  syncVolumes(pod: Pod): string[] {
    const written: string[] = [];
    const ns = pod.metadata?.namespace ?? 'default';
    for (const vol of configMapVolumes(pod)) {
      const cm = this.opts.configMap?.(ns, vol.configMap);
      if (cm === undefined && !vol.optional)
        throw new Error(
          `pod ${objectKey(pod)}: volume ${vol.volume}: configmap ${ns}/${vol.configMap} not found`,
        );
      const files = cm === undefined ? new Map<string, string>() : projectFiles(cm, vol);
      if (writeVolume(volumeDir(this.volumeRoot(), pod, vol.volume), files))
        written.push(vol.volume);
    }
    return written;
  }

  /**
   * The ConfigMap `namespace/name` changed: rewrites the volumes of the running Pods that
   * mount it. Returns `pod/volume` of each volume rewritten; a failure is the caller's to log.
   */
  refreshConfigMap(namespace: string, name: string): string[] {
    const updated: string[] = [];
    for (const [key, r] of this.running) {
      if ((r.pod.metadata?.namespace ?? 'default') !== namespace) continue;
      if (!configMapVolumes(r.pod).some((v) => v.configMap === name)) continue;
      for (const v of this.syncVolumes(r.pod)) updated.push(`${key}/${v}`);
    }
    return updated;
  }

  private recordPath(netns: string): string | undefined {
    return this.opts.recordDir === undefined
      ? undefined
      : join(this.opts.recordDir, `${netns}.json`);
  }

  /**
   * Takes over a Pod a previous agent started: its record matches the Pod's uid and its
   * server still runs inside the Pod's namespace. Otherwise removes whatever that attempt
   * left and returns undefined, so the Pod is started afresh.
   */
  async adopt(pod: Pod): Promise<StartedPod | undefined> {
    const netns = podNetnsName(pod);
    const path = this.recordPath(netns);
    if (path === undefined || !existsSync(path)) return undefined;
    let rec: SandboxRecord | undefined;
    try {
      rec = JSON.parse(readFileSync(path, 'utf8')) as SandboxRecord;
    } catch {
      rec = undefined;
    }
    const key = objectKey(pod);
    if (rec?.hosted !== undefined && rec.uid === pod.metadata?.uid)
      return this.adoptHosted(pod, netns, rec, rec.hosted);
    const live =
      rec !== undefined &&
      rec.hosted === undefined &&
      rec.uid === pod.metadata?.uid &&
      !processGone(rec.pid) &&
      netnsOfFile(netns, rec.hostNetwork === true) !== undefined &&
      netnsOfPid(rec.pid) === netnsOfFile(netns, rec.hostNetwork === true);
    if (!live || rec === undefined) {
      if (rec !== undefined && rec.hosted === undefined && !processGone(rec.pid))
        signalPid(rec.pid, 'SIGKILL');
      await this.stop(key, 0, netns, pod);
      return undefined;
    }
    const proc = adoptProcess(rec.pid);
    const log = this.logs.reattach(pod, serverContainerName(pod));
    if (log !== undefined)
      void proc.exited.then(() => {
        this.logs.exited(log);
      });
    const ips = rec.ips ?? [rec.ip];
    this.running.set(key, { pod, netns, ip: rec.ip, ips, proc });
    return { ip: rec.ip, ips, startedAt: rec.startedAt, pid: rec.pid, exited: proc.exited };
  }

  /** adopt() of a Pod whose container a pod host runs: taken over while the host runs it. */
  private async adoptHosted(
    pod: Pod,
    netns: string,
    rec: SandboxRecord,
    ref: HostedRef,
  ): Promise<StartedPod | undefined> {
    const key = objectKey(pod);
    const run = await this.opts.podHost?.find(ref.id, ref.run);
    const hostNetwork = rec.hostNetwork === true;
    if (run === undefined || netnsOfFile(netns, hostNetwork) === undefined) {
      await this.opts.podHost?.forget(ref.id).catch(() => undefined);
      await this.stop(key, 0, netns, pod);
      return undefined;
    }
    const proc: ManagedProcess = { pid: run.pid, exited: run.exited, signal: run.signal };
    const log = this.logs.reattach(pod, serverContainerName(pod));
    if (log !== undefined)
      void proc.exited.then(() => {
        this.logs.exited(log);
      });
    const ips = rec.ips ?? [rec.ip];
    this.running.set(key, { pod, netns, ip: rec.ip, ips, proc, hosted: ref });
    return {
      ip: rec.ip,
      ips,
      startedAt: rec.startedAt,
      pid: run.pid,
      containerID: hostedContainerID(run.pid, ref),
      exited: proc.exited,
    };
  }

  /**
   * Removes the sandboxes recorded for Pods that no longer exist (deleted outright while no
   * agent was running): kills the server, CNI DEL, deletes the namespace. Returns their keys.
   */
  async sweep(existingUids: ReadonlySet<string>): Promise<string[]> {
    const dir = this.opts.recordDir;
    if (dir === undefined || !existsSync(dir)) return [];
    const swept: string[] = [];
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
      let rec: SandboxRecord;
      try {
        rec = JSON.parse(readFileSync(join(dir, f), 'utf8')) as SandboxRecord;
      } catch {
        rmSync(join(dir, f), { force: true });
        continue;
      }
      if (existingUids.has(rec.uid)) continue;
      if (rec.hosted !== undefined)
        await this.opts.podHost?.forget(rec.hosted.id).catch(() => undefined);
      else if (!processGone(rec.pid)) signalPid(rec.pid, 'SIGKILL');
      const [namespace = 'default', name = ''] = rec.key.split('/');
      const gone: Pod = {
        metadata: { namespace, name, uid: rec.uid },
        spec: { containers: [], ...(rec.hostNetwork === true ? { hostNetwork: true } : {}) },
      };
      await this.stop(rec.key, 0, rec.netns, gone);
      swept.push(rec.key);
    }
    return swept;
  }

  /** Stops the Pod's process, removes its sandbox and then its logs. */
  async stop(key: string, graceSeconds: number, netnsHint?: string, podHint?: Pod): Promise<void> {
    const pod = this.running.get(key)?.pod ?? podHint;
    try {
      await this.teardown(key, graceSeconds, netnsHint, podHint);
    } finally {
      if (pod !== undefined) this.logs.remove(pod);
    }
  }

  private async teardown(
    key: string,
    graceSeconds: number,
    netnsHint?: string,
    podHint?: Pod,
  ): Promise<void> {
    const r = this.running.get(key);
    const netns = r?.netns ?? netnsHint;
    const pod = r?.pod ?? podHint;
    if (r) {
      await this.terminate(r.proc, graceSeconds);
      this.running.delete(key);
      if (r.hosted !== undefined)
        await this.opts.podHost?.forget(r.hosted.id).catch(() => undefined);
    }
    if (netns === undefined || pod === undefined) return;
    if (pod.metadata?.uid)
      rmSync(podVolumesRoot(this.volumeRoot(), pod), { recursive: true, force: true });
    if (pod.spec?.hostNetwork === true) {
      // Nothing was created but the record: no namespace, no CNI attachment.
      const path = this.recordPath(netns);
      if (path !== undefined) rmSync(path, { force: true });
      return;
    }
    try {
      await this.opts.network.del(this.request(pod, netns));
    } finally {
      // The namespace goes even when CNI DEL fails, so a retry starts from scratch.
      await this.namespaces.remove(netns).catch(() => false);
      rmSync(join('/etc/netns', netns), { recursive: true, force: true });
      const path = this.recordPath(netns);
      if (path !== undefined) rmSync(path, { force: true });
    }
  }

  /** SIGTERM, wait up to graceSeconds for the exit, then SIGKILL. */
  private async terminate(proc: ManagedProcess, graceSeconds: number): Promise<void> {
    proc.signal('SIGTERM');
    const timedOut = Symbol('timeout');
    const clock = this.opts.clock ?? realClock;
    let timer: TimerHandle | undefined;
    const res = await Promise.race([
      proc.exited,
      new Promise<symbol>((resolve) => {
        timer = clock.setTimeout(() => {
          resolve(timedOut);
        }, graceSeconds * 1000);
      }),
    ]);
    clock.clearTimeout(timer);
    if (res === timedOut) {
      proc.signal('SIGKILL');
      await proc.exited;
    }
  }

  async probe(pod: Pod, ip: string, probe: Probe): Promise<boolean> {
    const timeoutMs = Math.max(1, probe.timeoutSeconds ?? 1) * 1000;
    if (probe.httpGet) {
      const port = probePort(pod, probe.httpGet.port);
      if (port === undefined) return false;
      try {
        const res = await fetch(
          `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}${probe.httpGet.path ?? '/'}`,
          { signal: AbortSignal.timeout(timeoutMs) },
        );
        return res.status >= 200 && res.status < 400;
      } catch {
        return false;
      }
    }
    if (probe.tcpSocket) {
      const port = probePort(pod, probe.tcpSocket.port);
      return port !== undefined && tcpConnect(ip, port, timeoutMs);
    }
    if (probe.exec) return execProbe(this.commands(pod), pod, probe, this.opts.nodeName ?? '');
    return true; // a handler the lab does not run (gRPC): taken as passing
  }

  /** Where the Pod's commands run (its namespace, or the node's for hostNetwork). */
  private commands(pod: Pod): Execer {
    return podCommandExecer(this.opts.execer ?? new RealExecer(), pod, podNetnsName(pod));
  }

  /** Runs one init container to completion in the Pod's sandbox; its output is its log's next run. */
  async runInit(pod: Pod, container: Container): Promise<ContainerRun> {
    const run = await runInitContainer(
      this.commands(pod),
      pod,
      container,
      this.opts.nodeName ?? '',
    );
    try {
      this.logs.writeInit(pod, container.name, run.output);
    } catch {
      // the log is for people; a Pod runs without it
    }
    return run;
  }
}
