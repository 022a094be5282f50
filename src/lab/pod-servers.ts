// What a lab Pod runs: the lab has no container images, so every Pod runs one `svcnet netexec`
// process serving the ports its containers declare (TCP as HTTP, UDP as netexec's UDP
// commands). A container that already asks for agnhost's netexec (`args: [netexec,
// --http-port=8080, --udp-port=8081]`, as Kubernetes' e2e Pods do) gets exactly those
// ports. A Pod that declares no port at all serves HTTP on 80, like the nginx of the
// Service walkthroughs. A container whose command is `svcnet SUBCOMMAND ...` runs that
// svcnet subcommand instead (the lab's cluster DNS Pods run `svcnet dns`), with the lab's
// kubeconfig added when the subcommand takes one and the container did not give it, its
// `$(VAR)` references expanded from the container's env as the kubelet expands them, and its
// paths under a configMap volume's mountPath rewritten to the volume's directory
// (configmap-volume.ts: the kube-proxy Pod's `--config /var/lib/kube-proxy/config.conf`). A
// container whose command is a shell (`command: [sh, -c, SCRIPT]`, also bash/ash/dash, with or
// without a path) runs that command and its args as they are, on the machine's own sh, inside
// the Pod's network namespace (as init containers and exec probes run): the lab's way to have
// a container that exits on its own, e.g. `exit 1` for CrashLoopBackOff; it serves nothing
// unless its script does, and counts as started once the process is. In the lab a netexec
// plan is not a process at all: `hostedContainer` turns it into the request the node's pod
// host (pod-host.ts) serves inside the Pod's namespace. Pure.

import type { Container, Pod } from '../kube/types.js';
import { join } from 'node:path';
import { netnsPath } from '../util/ip-ops.js';
import { rewriteArg, type MountRewrite } from './configmap-volume.js';
import type { HostedContainer } from './pod-host-protocol.js';

export interface PodServerPlan {
  readonly tcpPorts: readonly number[];
  readonly udpPorts: readonly number[];
  readonly delayShutdownSeconds: number;
  /** Arguments after the svcnet CLI: `netexec ...`, or the container's own svcnet command. */
  readonly args: readonly string[];
  /** A shell container's whole argv (command then args), run instead of the svcnet CLI. */
  readonly command?: readonly string[];
}

export interface PodServerOptions {
  /** kubeconfig given to `svcnet` containers whose subcommand watches the API. */
  readonly kubeconfig?: string;
  /** The container's env, for `$(VAR)` in its command and args. */
  readonly envOf?: (c: Container) => Readonly<Record<string, string>>;
  /** The container's configMap mounts, for paths in its command and args. */
  readonly mountsOf?: (c: Container) => readonly MountRewrite[];
}

/**
 * The kubelet's expansion of a command or args word: `$(NAME)` becomes the env value when
 * NAME is defined and stays as written otherwise; `$$` is a literal `$`.
 */
export function expandVars(word: string, env: Readonly<Record<string, string>>): string {
  return word.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name: string | undefined) =>
    name === undefined ? '$' : (env[name] ?? all),
  );
}

/** svcnet subcommands that take `--kubeconfig`. */
const NEEDS_KUBECONFIG = new Set(['dns', 'proxy', 'controller', 'flannel']);

function flagValue(words: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === flag) return words[i + 1];
    if (w.startsWith(`${flag}=`)) return w.slice(flag.length + 1);
  }
  return undefined;
}

function portOf(v: string | undefined): number | undefined {
  const n = Number(v);
  return v !== undefined && Number.isInteger(n) && n >= 1 && n <= 65535 ? n : undefined;
}

function declaredPorts(pod: Pod, tcp: Set<number>, udp: Set<number>): void {
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? []) {
      if ((p.protocol ?? 'TCP') === 'UDP') udp.add(p.containerPort);
      else if ((p.protocol ?? 'TCP') === 'TCP') tcp.add(p.containerPort);
    }
}

const ascending = (a: number, b: number): number => a - b;

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);

/** Whether a container's command is a shell the lab runs as it is. */
export function isShellCommand(command: readonly string[] | undefined): boolean {
  const first = command?.[0];
  return first !== undefined && SHELLS.has(first.slice(first.lastIndexOf('/') + 1));
}

export function planPodServer(pod: Pod, opts: PodServerOptions = {}): PodServerPlan {
  const tcp = new Set<number>();
  const udp = new Set<number>();
  const own = pod.spec?.containers.find((c) => c.command?.[0] === 'svcnet');
  if (own) {
    declaredPorts(pod, tcp, udp);
    const env = opts.envOf?.(own) ?? {};
    const mounts = opts.mountsOf?.(own) ?? [];
    const args = [...(own.command ?? []).slice(1), ...(own.args ?? [])].map((w) =>
      rewriteArg(expandVars(w, env), mounts),
    );
    const wantsKubeconfig = NEEDS_KUBECONFIG.has(args[0] ?? '');
    if (wantsKubeconfig && opts.kubeconfig !== undefined && !args.includes('--kubeconfig'))
      args.push('--kubeconfig', opts.kubeconfig);
    return {
      tcpPorts: [...tcp].sort(ascending),
      udpPorts: [...udp].sort(ascending),
      delayShutdownSeconds: 0,
      args,
    };
  }
  const shell = pod.spec?.containers.find((c) => isShellCommand(c.command));
  if (shell) {
    declaredPorts(pod, tcp, udp);
    return {
      tcpPorts: [...tcp].sort(ascending),
      udpPorts: [...udp].sort(ascending),
      delayShutdownSeconds: 0,
      args: [],
      command: [...(shell.command ?? []), ...(shell.args ?? [])],
    };
  }
  let delay = 0;
  for (const c of pod.spec?.containers ?? []) {
    const words = [...(c.command ?? []), ...(c.args ?? [])];
    if (words.includes('netexec')) {
      tcp.add(portOf(flagValue(words, '--http-port')) ?? 8080);
      const u = flagValue(words, '--udp-port');
      if (u !== '-1') udp.add(portOf(u) ?? 8081);
      const d = Number(flagValue(words, '--delay-shutdown') ?? '0');
      if (Number.isFinite(d) && d > delay) delay = d;
    }
  }
  declaredPorts(pod, tcp, udp);
  if (tcp.size === 0 && udp.size === 0) tcp.add(80);
  const tcpPorts = [...tcp].sort(ascending);
  const udpPorts = [...udp].sort(ascending);
  const args = [
    'netexec',
    '--http-port',
    String(tcpPorts[0] ?? -1),
    '--udp-port',
    String(udpPorts[0] ?? -1),
  ];
  for (const p of tcpPorts.slice(1)) args.push('--extra-port', `${p}/tcp`);
  for (const p of udpPorts.slice(1)) args.push('--extra-port', `${p}/udp`);
  if (delay > 0) args.push('--delay-shutdown', String(delay));
  return { tcpPorts, udpPorts, delayShutdownSeconds: delay, args };
}

/** The pod host's container for a netexec plan, or undefined for any other plan. */
export function hostedContainer(
  plan: PodServerPlan,
  id: string,
  netns: string | undefined,
  hostname: string,
  fifos: { stdout: string; stderr: string },
): HostedContainer | undefined {
  if (plan.command !== undefined || plan.args[0] !== 'netexec') return undefined;
  const extra = [
    ...plan.tcpPorts.slice(1).map((port) => ({ port, protocol: 'tcp' as const })),
    ...plan.udpPorts.slice(1).map((port) => ({ port, protocol: 'udp' as const })),
  ];
  return {
    id,
    ...(netns === undefined
      ? {}
      : {
          netns: netnsPath(netns),
          resolvConf: join('/etc/netns', netns, 'resolv.conf'),
          hosts: join('/etc/netns', netns, 'hosts'),
        }),
    hostname,
    httpPort: plan.tcpPorts[0] ?? -1,
    udpPort: plan.udpPorts[0] ?? -1,
    extraPorts: extra,
    delayShutdownSeconds: plan.delayShutdownSeconds,
    stdout: fifos.stdout,
    stderr: fifos.stderr,
  };
}
