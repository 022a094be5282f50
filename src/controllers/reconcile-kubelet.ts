// The fake kubelet's decision for one node, so the control plane works without a data plane:
// every live pod bound to the node becomes Running and Ready (conditions PodScheduled,
// Initialized, ContainersReady, Ready True; one running container status per container),
// with pod IPs allocated from the node's podCIDR(s) (the lowest free address from .2 up,
// distinct per node, skipping addresses live pods already hold), hostIP from the node's
// InternalIP, and startTime; a pod being gracefully deleted is deleted for good (grace 0).
// No probes, no containers: this is what `--fake-kubelet` means. Pure.

import { runningPodStatus } from '../kube/pod-status.js';
import type { Node, Pod } from '../kube/types.js';
import type { ParsedCIDR } from '../util/ip.js';
import { cidrAddress, cidrSize, formatIP, parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import { isPodReady, isPodTerminal, isPodTerminating, nameOf, podIPs } from './reconcile-util.js';

export interface KubeletInput {
  readonly node: Node;
  /** Pods bound to this node (spec.nodeName === node name). */
  readonly pods: readonly Pod[];
  /** Now as RFC 3339. */
  readonly now: string;
}

export interface KubeletResult {
  readonly operations: Operation[];
  readonly warnings: string[];
}

/** The node's pod CIDRs (spec.podCIDRs, else spec.podCIDR), parsed. */
export function nodePodCIDRs(node: Node): ParsedCIDR[] {
  const texts =
    node.spec?.podCIDRs ?? (node.spec?.podCIDR !== undefined ? [node.spec.podCIDR] : []);
  const out: ParsedCIDR[] = [];
  for (const t of texts) {
    const c = parseCIDRSloppy(t);
    if (c !== undefined && !out.some((o) => o.family === c.family)) out.push(c);
  }
  return out;
}

/** The node's InternalIP addresses (first per family). */
export function nodeInternalIPs(node: Node): string[] {
  return (node.status?.addresses ?? [])
    .filter((a) => a.type === 'InternalIP')
    .map((a) => a.address);
}

function needsStart(pod: Pod): boolean {
  return (
    !isPodTerminal(pod) &&
    !isPodTerminating(pod) &&
    (pod.status?.phase !== 'Running' || !isPodReady(pod) || podIPs(pod).length === 0)
  );
}

/** Decides status updates and final deletions for the pods of one node. */
export function reconcileKubelet(input: KubeletInput): KubeletResult {
  const { node, now } = input;
  const nodeName = nameOf(node);
  const operations: Operation[] = [];
  const warnings: string[] = [];
  const pods = [...input.pods].sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : 1));

  for (const pod of pods)
    if (isPodTerminating(pod)) operations.push(deleteObject('Pod', pod, { gracePeriodSeconds: 0 }));

  const starting = pods.filter(needsStart);
  if (starting.length === 0) return { operations, warnings };
  const cidrs = nodePodCIDRs(node);
  if (cidrs.length === 0) {
    warnings.push(`Node ${nodeName}: no spec.podCIDR; ${starting.length} pod(s) left Pending`);
    return { operations, warnings };
  }
  const used = new Set<string>();
  for (const p of pods) if (!isPodTerminal(p)) for (const ip of podIPs(p)) used.add(canonical(ip));
  const hostIPs = nodeInternalIPs(node);

  for (const pod of starting) {
    let ips = podIPs(pod);
    if (ips.length === 0) {
      ips = [];
      for (const c of cidrs) {
        const ip = allocate(c, used);
        if (ip === undefined) {
          warnings.push(
            `Node ${nodeName}: podCIDR ${formatIP({ family: c.family, value: c.base })}/${c.prefix} is full`,
          );
          continue;
        }
        used.add(ip);
        ips.push(ip);
      }
      if (ips.length === 0) continue;
    }
    operations.push({
      op: 'updateStatus',
      kind: 'Pod',
      object: runningPod(pod, ips, hostIPs, now),
    });
  }
  return { operations, warnings };
}

function canonical(ip: string): string {
  const p = parseIPSloppy(ip);
  return p === undefined ? ip : formatIP(p);
}

/** Lowest free host address of the CIDR from offset 2 (.0 is the network, .1 the gateway). */
function allocate(c: ParsedCIDR, used: ReadonlySet<string>): string | undefined {
  const size = cidrSize(c);
  const last = c.family === 'IPv4' ? size - 1n : size; // IPv4 broadcast excluded
  const limit = last < 65536n ? last : 65536n;
  for (let off = 2n; off < limit; off++) {
    const ip = cidrAddress(c, off);
    if (ip === undefined) break;
    const text = formatIP(ip);
    if (!used.has(text)) return text;
  }
  return undefined;
}

function runningPod(pod: Pod, ips: string[], hostIPs: string[], now: string): Pod {
  const hostIP = hostIPs[0];
  const status = runningPodStatus({
    containers: pod.spec?.containers ?? [],
    podIPs: ips,
    ...(hostIP !== undefined ? { hostIP, hostIPs } : {}),
    startTime: pod.status?.startTime ?? now,
    now,
    ready: true,
    previous: pod.status?.conditions ?? [],
  });
  return { ...pod, status: { ...pod.status, ...status } };
}
