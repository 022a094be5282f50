// The lab's proxies as what they are now: the Pods of the kube-system/kube-proxy DaemonSet,
// one per node (kube-proxy-addon.ts). `lab status` lists them from the API next to the
// supervisor's components (`describeProxyPods`, pure), and `lab restart proxy-NODE` (or
// `proxy` for every node) does what a kind user does to restart kube-proxy: it deletes the
// node's kube-proxy Pod, waits until the DaemonSet's new Pod on that node is Running and
// Ready, and says which Pod replaced which (`restartProxyPods`, over the KubeClient seam).
// The rules stay in the kernel meanwhile, as over any proxy restart.

import type { KubeClient } from '../kube/api-client.js';
import { isPodReady, isPodTerminating } from '../controllers/reconcile-util.js';
import type { Pod } from '../kube/types.js';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock } from '../util/clock.js';

export const PROXY_NAMESPACE = 'kube-system';
export const PROXY_SELECTOR = 'k8s-app=kube-proxy';

/** `proxy-NODE` (one node) or `proxy` (every node); undefined for other component names. */
export function proxyRestartTarget(
  component: string,
  nodes: readonly string[],
): readonly string[] | undefined {
  if (component === 'proxy' || component === 'proxies') return nodes;
  if (!component.startsWith('proxy-')) return undefined;
  const node = component.slice('proxy-'.length);
  return nodes.includes(node) ? [node] : undefined;
}

function restartsOf(p: Pod): number {
  return (p.status?.containerStatuses ?? []).reduce((n, c) => Math.max(n, c.restartCount), 0);
}

/** The proxy Pods per node as `lab status` shows them; `down` names nodes without a Ready one. */
export function describeProxyPods(
  pods: readonly Pod[],
  nodes: readonly string[],
): { text: string; down: string[] } {
  const down: string[] = [];
  const rows = nodes.map((node) => {
    const pod = pods.find((p) => p.spec?.nodeName === node && !isPodTerminating(p));
    const ready = pod !== undefined && pod.status?.phase === 'Running' && isPodReady(pod);
    if (!ready) down.push(`proxy-${node}`);
    const state = pod === undefined ? 'no pod' : ready ? 'ready' : (pod.status?.phase ?? 'Pending');
    const detail = pod === undefined ? '' : `pod ${PROXY_NAMESPACE}/${pod.metadata?.name ?? ''}`;
    return `  ${`proxy-${node}`.padEnd(32)} ${state.padEnd(10)} ${String(pod === undefined ? 0 : restartsOf(pod)).padStart(8)}  ${detail}`;
  });
  return {
    text: [
      `  ${'PROXY (DaemonSet kube-system/kube-proxy)'.padEnd(43)} ${'RESTARTS'.padStart(8)}  POD`,
      ...rows,
    ].join('\n'),
    down,
  };
}

/**
 * Deletes each node's kube-proxy Pod and waits (up to timeoutMs) until the DaemonSet's new
 * one there is Running and Ready. Returns one line per node.
 */
export async function restartProxyPods(
  client: KubeClient,
  nodes: readonly string[],
  timeoutMs = 60_000,
  clock: Clock = realClock,
): Promise<string[]> {
  const list = (): Promise<Pod[]> =>
    client.list('Pod', { namespace: PROXY_NAMESPACE, labelSelector: PROXY_SELECTOR });
  const before = await list();
  const old = new Map<string, Pod>();
  for (const node of nodes) {
    const pod = before.find((p) => p.spec?.nodeName === node && !isPodTerminating(p));
    if (pod === undefined)
      throw new SvcnetError(
        'NOT_FOUND',
        `lab restart: no kube-proxy Pod on node ${node} (kubectl -n ${PROXY_NAMESPACE} get pods -l ${PROXY_SELECTOR} -o wide)`,
      );
    old.set(node, pod);
    await client.delete('Pod', PROXY_NAMESPACE, pod.metadata?.name ?? '', {
      ...(pod.metadata?.uid === undefined ? {} : { uid: pod.metadata.uid }),
    });
  }
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const now = await list();
    const lines = nodes.map((node) => {
      const gone = old.get(node);
      const fresh = now.find(
        (p) =>
          p.spec?.nodeName === node &&
          p.metadata?.uid !== gone?.metadata?.uid &&
          !isPodTerminating(p) &&
          p.status?.phase === 'Running' &&
          isPodReady(p),
      );
      return fresh === undefined
        ? undefined
        : `proxy-${node}: pod ${gone?.metadata?.name ?? ''} deleted; ${fresh.metadata?.name ?? ''} is Ready`;
    });
    const done = lines.filter((l) => l !== undefined);
    if (done.length === lines.length) return done;
    if (clock.now() > deadline)
      throw new SvcnetError(
        'TIMEOUT',
        `lab restart: the DaemonSet's new kube-proxy Pod not Ready within ${String(timeoutMs)} ms on ${nodes.filter((_, i) => lines[i] === undefined).join(', ')}`,
      );
    await clock.sleep(250);
  }
}
