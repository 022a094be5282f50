// The lab scheduler's decision: bind every unscheduled, live pod (default scheduler) to the
// schedulable node with the fewest live pods, counting the bindings made in this same pass so
// a burst of pods spreads out. A node is schedulable when it is not cordoned, its Ready
// condition is not False/Unknown, and it has no NoSchedule/NoExecute taint the pod does not
// tolerate. Ties go to the node name that sorts first. Pure.

import type { Node, Pod, Taint, Toleration } from '../kube/types.js';
import type { Operation } from './operations.js';
import { isPodActive, nameOf, namespaceOf } from './reconcile-util.js';

export interface SchedulerInput {
  readonly pods: readonly Pod[];
  readonly nodes: readonly Node[];
  /** Scheduler name this instance serves (pods with another spec.schedulerName are left alone). */
  readonly schedulerName?: string;
}

export interface SchedulerResult {
  readonly operations: Operation[];
  /** Pods that could not be placed (no schedulable node). */
  readonly unschedulable: string[];
}

export function isNodeSchedulable(node: Node): boolean {
  if (node.spec?.unschedulable === true) return false;
  const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready');
  return ready === undefined || ready.status === 'True';
}

export function tolerates(tols: readonly Toleration[], taint: Taint): boolean {
  return tols.some(
    (t) =>
      (t.effect === undefined || t.effect === '' || t.effect === taint.effect) &&
      (t.operator === 'Exists'
        ? t.key === undefined || t.key === '' || t.key === taint.key
        : t.key === taint.key && (t.value ?? '') === (taint.value ?? '')),
  );
}

function fits(pod: Pod, node: Node): boolean {
  const tols = pod.spec?.tolerations ?? [];
  return (node.spec?.taints ?? []).every(
    (t) => t.effect === 'PreferNoSchedule' || tolerates(tols, t),
  );
}

/** Decides the bindings for all pending pods. */
export function reconcileScheduler(input: SchedulerInput): SchedulerResult {
  const schedulerName = input.schedulerName ?? 'default-scheduler';
  const load = new Map<string, number>();
  const nodes = input.nodes
    .filter(isNodeSchedulable)
    .sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : 1));
  for (const n of nodes) load.set(nameOf(n), 0);
  for (const p of input.pods) {
    const nn = p.spec?.nodeName ?? '';
    if (nn !== '' && isPodActive(p) && load.has(nn)) load.set(nn, (load.get(nn) ?? 0) + 1);
  }
  const pending = input.pods
    .filter(
      (p) =>
        (p.spec?.nodeName ?? '') === '' &&
        isPodActive(p) &&
        (p.spec?.schedulerName ?? 'default-scheduler') === schedulerName,
    )
    .sort((a, b) => {
      const ta = a.metadata?.creationTimestamp ?? '';
      const tb = b.metadata?.creationTimestamp ?? '';
      if (ta !== tb) return ta < tb ? -1 : 1;
      const ka = `${namespaceOf(a)}/${nameOf(a)}`;
      const kb = `${namespaceOf(b)}/${nameOf(b)}`;
      return ka < kb ? -1 : 1;
    });
  const operations: Operation[] = [];
  const unschedulable: string[] = [];
  for (const pod of pending) {
    let best: string | undefined;
    let bestLoad = Infinity;
    for (const n of nodes) {
      if (!fits(pod, n)) continue;
      const l = load.get(nameOf(n)) ?? 0;
      if (l < bestLoad) {
        best = nameOf(n);
        bestLoad = l;
      }
    }
    if (best === undefined) {
      unschedulable.push(`${namespaceOf(pod)}/${nameOf(pod)}`);
      continue;
    }
    load.set(best, bestLoad + 1);
    operations.push({ op: 'bind', namespace: namespaceOf(pod), name: nameOf(pod), nodeName: best });
  }
  return { operations, unschedulable };
}
