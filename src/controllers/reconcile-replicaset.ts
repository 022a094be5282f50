// The ReplicaSet controller's decision for one ReplicaSet: create pods from the template
// (generateName `<rs>-`, controller ownerReference) or delete the least valuable ones until
// the active pods match spec.replicas, and the status kubectl reads (replicas, ready,
// available, fullyLabeled, observedGeneration). Only pods the ReplicaSet controls count;
// orphans are not adopted. Pure.

import { matchesSelectorMap } from '../kube/selectors.js';
import type { Pod, ReplicaSet, ReplicaSetStatus } from '../kube/types.js';
import { deepEqual } from '../util/json.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import {
  isControlledBy,
  isPodActive,
  isPodReady,
  nameOf,
  namespaceOf,
  ownerRefTo,
} from './reconcile-util.js';

/** Upper bound of pod creations or deletions per sync (upstream burstReplicas). */
export const BURST_REPLICAS = 500;

export interface ReplicaSetInput {
  readonly replicaSet: ReplicaSet;
  /** Pods of the namespace; only those controlled by the ReplicaSet count. */
  readonly pods: readonly Pod[];
  /** Now, ms since epoch (for minReadySeconds). */
  readonly now: number;
}

/** Decides pod creations/deletions and the status update for one ReplicaSet. */
export function reconcileReplicaSet(input: ReplicaSetInput): Operation[] {
  const rs = input.replicaSet;
  const owned = input.pods.filter((p) => isControlledBy(p, rs));
  const active = owned.filter(isPodActive);
  const want = Math.max(0, rs.spec?.replicas ?? 1);
  const ops: Operation[] = [];
  if (rs.metadata?.deletionTimestamp === undefined) {
    if (active.length < want) {
      const n = Math.min(want - active.length, BURST_REPLICAS);
      for (let i = 0; i < n; i++)
        ops.push({ op: 'create', kind: 'Pod', object: podFromTemplate(rs) });
    } else if (active.length > want) {
      const victims = rankForDeletion(active).slice(
        0,
        Math.min(active.length - want, BURST_REPLICAS),
      );
      for (const p of victims) ops.push(deleteObject('Pod', p));
    }
  }
  const status = replicaSetStatus(rs, active, input.now);
  if (!deepEqual(rs.status ?? {}, status)) {
    const next: ReplicaSet = { ...rs, status };
    ops.push({ op: 'updateStatus', kind: 'ReplicaSet', object: next });
  }
  return ops;
}

/** A new pod for a ReplicaSet, from its template. */
export function podFromTemplate(rs: ReplicaSet): Pod {
  const tmpl = rs.spec?.template;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${nameOf(rs)}-`,
      namespace: namespaceOf(rs),
      labels: { ...tmpl?.metadata?.labels },
      ...(tmpl?.metadata?.annotations !== undefined
        ? { annotations: { ...tmpl.metadata.annotations } }
        : {}),
      ownerReferences: [ownerRefTo(rs, 'apps/v1', 'ReplicaSet')],
    },
    spec: structuredClone(tmpl?.spec ?? { containers: [] }),
  };
}

/** Is the pod available: Ready for at least minReadySeconds? */
export function isPodAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  if (!isPodReady(pod)) return false;
  if (minReadySeconds <= 0) return true;
  const ready = (pod.status?.conditions ?? []).find((c) => c.type === 'Ready');
  const since = Date.parse(ready?.lastTransitionTime ?? '');
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

function replicaSetStatus(rs: ReplicaSet, active: readonly Pod[], now: number): ReplicaSetStatus {
  const tmplLabels = rs.spec?.template?.metadata?.labels ?? {};
  const minReady = rs.spec?.minReadySeconds ?? 0;
  const status: ReplicaSetStatus = {
    replicas: active.length,
    fullyLabeledReplicas: active.filter((p) => matchesSelectorMap(tmplLabels, p.metadata?.labels))
      .length,
    readyReplicas: active.filter(isPodReady).length,
    availableReplicas: active.filter((p) => isPodAvailable(p, minReady, now)).length,
  };
  const gen = rs.metadata?.generation;
  if (gen !== undefined) status.observedGeneration = gen;
  if (rs.status?.conditions !== undefined) status.conditions = rs.status.conditions;
  return status;
}

/**
 * Orders pods so the ones to delete first come first: unscheduled before scheduled, pending
 * before running, not ready before ready, then the newest first.
 */
export function rankForDeletion(pods: readonly Pod[]): Pod[] {
  const score = (p: Pod): [number, number, number, string] => [
    (p.spec?.nodeName ?? '') === '' ? 0 : 1,
    p.status?.phase === 'Running'
      ? 2
      : p.status?.phase === 'Pending' || p.status?.phase === undefined
        ? 0
        : 1,
    isPodReady(p) ? 1 : 0,
    p.metadata?.creationTimestamp ?? '',
  ];
  return [...pods].sort((a, b) => {
    const x = score(a);
    const y = score(b);
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
    // Newer (larger timestamp) first; then by name for determinism.
    if (x[3] !== y[3]) return x[3] < y[3] ? 1 : -1;
    return nameOf(a) < nameOf(b) ? 1 : -1;
  });
}
