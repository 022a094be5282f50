// The StatefulSet controller's decision for one StatefulSet: pods named `<sts>-<ordinal>` with
// hostname = pod name and subdomain = spec.serviceName (so DNS gives each a stable name).
// OrderedReady (the default) creates one pod at a time in increasing ordinal order, waiting
// for the previous one to be Running and Ready, and removes surplus pods one at a time from
// the highest ordinal down; Parallel does both at once. Failed pods are deleted to be
// recreated. Template updates (rolling pod replacement) are not handled. Pure.

import type { Pod, StatefulSet, StatefulSetStatus } from '../kube/types.js';
import { deepEqual } from '../util/json.js';
import {
  LABEL_CONTROLLER_REVISION_HASH,
  LABEL_POD_INDEX,
  LABEL_STATEFULSET_POD_NAME,
} from './names.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import { podTemplateHash } from './reconcile-deployment.js';
import { isPodAvailable } from './reconcile-replicaset.js';
import {
  isControlledBy,
  isPodReady,
  isPodTerminating,
  nameOf,
  namespaceOf,
  ownerRefTo,
} from './reconcile-util.js';

export interface StatefulSetInput {
  readonly statefulSet: StatefulSet;
  /** Pods of the namespace; only those controlled by the StatefulSet count. */
  readonly pods: readonly Pod[];
  /** Now, ms since epoch (for minReadySeconds). */
  readonly now: number;
}

/** The ordinal of a pod of this set (`<sts>-<n>`), or undefined. */
export function podOrdinal(sts: StatefulSet, pod: Pod): number | undefined {
  const prefix = `${nameOf(sts)}-`;
  const name = nameOf(pod);
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  return /^(0|[1-9][0-9]*)$/.test(rest) ? Number(rest) : undefined;
}

function isRunningAndReady(p: Pod): boolean {
  return p.status?.phase === 'Running' && isPodReady(p);
}

/** Decides pod creations/deletions and the status update for one StatefulSet. */
export function reconcileStatefulSet(input: StatefulSetInput): Operation[] {
  const sts = input.statefulSet;
  const replicas = Math.max(0, sts.spec?.replicas ?? 1);
  const start = sts.spec?.ordinals?.start ?? 0;
  const parallel = sts.spec?.podManagementPolicy === 'Parallel';
  const byOrdinal = new Map<number, Pod>();
  for (const p of input.pods) {
    if (!isControlledBy(p, sts)) continue;
    const o = podOrdinal(sts, p);
    if (o !== undefined) byOrdinal.set(o, p);
  }
  const revision = `${nameOf(sts)}-${podTemplateHash(sts.spec?.template)}`;
  const ops: Operation[] = [];
  if (sts.metadata?.deletionTimestamp === undefined) {
    let blocked = false;
    for (let o = start; o < start + replicas && !blocked; o++) {
      const pod = byOrdinal.get(o);
      if (pod === undefined) {
        ops.push({ op: 'create', kind: 'Pod', object: statefulPod(sts, o, revision) });
        if (!parallel) blocked = true;
        continue;
      }
      if (pod.status?.phase === 'Failed' && !isPodTerminating(pod)) {
        ops.push(deleteObject('Pod', pod));
        if (!parallel) blocked = true;
        continue;
      }
      if (!parallel && (isPodTerminating(pod) || !isRunningAndReady(pod))) blocked = true;
    }
    // Scale down: the highest surplus ordinal first, one at a time unless Parallel, and only
    // once every wanted pod is Running and Ready (OrderedReady).
    if (!blocked || parallel) {
      const condemned = [...byOrdinal.entries()]
        .filter(([o]) => o < start || o >= start + replicas)
        .sort(([a], [b]) => b - a);
      for (const [, pod] of condemned) {
        if (isPodTerminating(pod)) {
          if (!parallel) break;
          continue;
        }
        ops.push(deleteObject('Pod', pod));
        if (!parallel) break;
      }
    }
  }
  const status = statefulSetStatus(sts, [...byOrdinal.values()], revision, input.now);
  if (!deepEqual(sts.status ?? {}, status)) {
    const next: StatefulSet = { ...sts, status };
    ops.push({ op: 'updateStatus', kind: 'StatefulSet', object: next });
  }
  return ops;
}

/** The pod of ordinal `o`. */
export function statefulPod(sts: StatefulSet, o: number, revision: string): Pod {
  const tmpl = sts.spec?.template;
  const name = `${nameOf(sts)}-${o}`;
  const spec = structuredClone(tmpl?.spec ?? { containers: [] });
  spec.hostname = name;
  const svc = sts.spec?.serviceName;
  if (svc !== undefined && svc !== '') spec.subdomain = svc;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: namespaceOf(sts),
      labels: {
        ...tmpl?.metadata?.labels,
        [LABEL_CONTROLLER_REVISION_HASH]: revision,
        [LABEL_STATEFULSET_POD_NAME]: name,
        [LABEL_POD_INDEX]: String(o),
      },
      ...(tmpl?.metadata?.annotations !== undefined
        ? { annotations: { ...tmpl.metadata.annotations } }
        : {}),
      ownerReferences: [ownerRefTo(sts, 'apps/v1', 'StatefulSet')],
    },
    spec,
  };
}

function statefulSetStatus(
  sts: StatefulSet,
  pods: readonly Pod[],
  revision: string,
  now: number,
): StatefulSetStatus {
  const live = pods.filter((p) => p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded');
  const current = live.filter(
    (p) => p.metadata?.labels?.[LABEL_CONTROLLER_REVISION_HASH] === revision,
  );
  const status: StatefulSetStatus = {
    replicas: live.length,
    readyReplicas: live.filter(isPodReady).length,
    currentReplicas: current.length,
    updatedReplicas: current.length,
    availableReplicas: live.filter((p) => isPodAvailable(p, sts.spec?.minReadySeconds ?? 0, now))
      .length,
    currentRevision: revision,
    updateRevision: revision,
  };
  const gen = sts.metadata?.generation;
  if (gen !== undefined) status.observedGeneration = gen;
  if (sts.status?.collisionCount !== undefined) status.collisionCount = sts.status.collisionCount;
  return status;
}
