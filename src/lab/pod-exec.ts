// Running a command "in a container" of a lab Pod, as the node agent does for exec probes and
// init containers. The lab has no images or mount namespaces: a container's command runs on
// the machine inside the Pod's network namespace through `ip netns exec` (which also shows the
// Pod's /etc/netns/<ns>/{resolv.conf,hosts} as /etc/..., as `svcnet lab exec` does), or in the
// node's namespace itself for a hostNetwork Pod; with HOSTNAME and the container's env set
// (literal values, and fieldRef values the Pod object holds), as the kubelet sets them.
// Everything goes through the Execer seam.

import type { Execer } from '../os/exec.js';
import { netnsExecer } from '../os/netns.js';
import type { Container, Pod, Probe } from '../kube/types.js';

/** What a command of a container saw: exit code (or none when it could not run) and output. */
export interface ContainerRun {
  /** The exit code; undefined when the command could not be started or timed out. */
  readonly exitCode: number | undefined;
  readonly output: string;
}

/** Where a Pod's commands run: the node's own namespace (hostNetwork) or the Pod's. */
export function podCommandExecer(inner: Execer, pod: Pod, netns: string): Execer {
  return pod.spec?.hostNetwork === true ? inner : netnsExecer(inner, netns);
}

/** The value of an env fieldRef the lab can give (the Downward API); '' for any other. */
export function fieldRefValue(pod: Pod, fieldPath: string, nodeName: string): string {
  const m = pod.metadata;
  const hostNetwork = pod.spec?.hostNetwork === true;
  const byPath: Record<string, string | undefined> = {
    'metadata.name': m?.name,
    'metadata.namespace': m?.namespace ?? 'default',
    'metadata.uid': m?.uid,
    'spec.nodeName': pod.spec?.nodeName ?? nodeName,
    'spec.serviceAccountName': pod.spec?.serviceAccountName ?? 'default',
    'status.hostIP': pod.status?.hostIP,
    'status.podIP': pod.status?.podIP ?? (hostNetwork ? pod.status?.hostIP : undefined),
  };
  const label = /^metadata\.labels\['(.+)'\]$/.exec(fieldPath);
  if (label) return m?.labels?.[label[1] ?? ''] ?? '';
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(fieldPath);
  if (annotation) return m?.annotations?.[annotation[1] ?? ''] ?? '';
  return byPath[fieldPath] ?? '';
}

/** The environment of a container's processes: HOSTNAME as the kubelet sets it, then env. */
export function containerEnv(
  pod: Pod,
  container: Container | undefined,
  nodeName: string,
): Record<string, string> {
  const hostname =
    pod.spec?.hostNetwork === true ? nodeName : (pod.spec?.hostname ?? pod.metadata?.name ?? '');
  const env: Record<string, string> = { HOSTNAME: hostname };
  for (const e of container?.env ?? []) {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    env[e.name] = e.value ?? (ref === undefined ? '' : fieldRefValue(pod, ref, nodeName));
  }
  return env;
}

/** Runs argv in the Pod with a deadline; never rejects. */
export async function runInPod(
  execer: Execer,
  argv: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<ContainerRun> {
  const [cmd, ...args] = argv;
  if (cmd === undefined) return { exitCode: 0, output: '' };
  try {
    const r = await execer.run({ cmd, args, env, timeoutMs });
    return { exitCode: r.code, output: `${r.stdout}${r.stderr}` };
  } catch (e) {
    return { exitCode: undefined, output: e instanceof Error ? e.message : String(e) };
  }
}

/** The container whose probe this is (for its env), if any. */
function probeOwner(pod: Pod, probe: Probe): Container | undefined {
  return pod.spec?.containers.find(
    (c) => c.readinessProbe === probe || c.livenessProbe === probe || c.startupProbe === probe,
  );
}

/**
 * One exec probe: the command in the Pod within timeoutSeconds (default 1, as the kubelet);
 * exit 0 passes, anything else, a timeout or a command that cannot run fails.
 */
export async function execProbe(
  execer: Execer,
  pod: Pod,
  probe: Probe,
  nodeName: string,
): Promise<boolean> {
  const command = probe.exec?.command ?? [];
  if (command.length === 0) return false; // the API server refuses these; fail safe
  const timeoutMs = Math.max(1, probe.timeoutSeconds ?? 1) * 1000;
  const env = containerEnv(pod, probeOwner(pod, probe), nodeName);
  return (await runInPod(execer, command, env, timeoutMs)).exitCode === 0;
}

/** Longest an init container may run before it counts as failed. */
export const INIT_CONTAINER_TIMEOUT_MS = 10 * 60_000;

/**
 * Runs an init container to completion: its command then args. One without a command would
 * run its image's entrypoint, which the lab does not have: it completes at once (exit 0).
 */
export function runInitContainer(
  execer: Execer,
  pod: Pod,
  container: Container,
  nodeName: string,
): Promise<ContainerRun> {
  const argv =
    container.command === undefined ? [] : [...container.command, ...(container.args ?? [])];
  return runInPod(execer, argv, containerEnv(pod, container, nodeName), INIT_CONTAINER_TIMEOUT_MS);
}
