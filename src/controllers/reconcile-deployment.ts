// The Deployment controller's decision for one Deployment: the ReplicaSet for the current
// pod template (named `<deployment>-<pod-template-hash>`, hash computed from the template),
// scaling it to spec.replicas and the older ReplicaSets down as the new one becomes available
// (RollingUpdate; Recreate scales the old ones to zero first), pruning old ReplicaSets beyond
// revisionHistoryLimit, and the status kubectl reads. Simplified from upstream: maxSurge and
// maxUnavailable only shape the Available condition, not the step size. Pure.

import { LABEL_POD_TEMPLATE_HASH } from '../kube/names.js';
import type {
  Deployment,
  DeploymentStatus,
  PodTemplateSpec,
  ReplicaSet,
  WorkloadCondition,
} from '../kube/types.js';
import { canonicalJSON, deepEqual } from '../util/json.js';
import {
  ANNOTATION_DEPLOYMENT_REVISION,
  ANNOTATION_DESIRED_REPLICAS,
  ANNOTATION_MAX_REPLICAS,
} from './names.js';
import type { Operation } from './operations.js';
import { isControlledBy, nameOf, namespaceOf, ownerRefTo } from './reconcile-util.js';

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * The pod-template-hash of a template: FNV-32a over its canonical JSON (plus the collision
 * count when set), printed in decimal and each digit mapped onto Kubernetes' "safe" alphabet,
 * as upstream does. The hash is ours (upstream hashes Go's deep print); the shape matches.
 */
export function podTemplateHash(
  template: PodTemplateSpec | undefined,
  collisionCount?: number,
): string {
  let text = canonicalJSON(template ?? {});
  if (collisionCount !== undefined) text += `#${collisionCount}`;
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return Array.from(String(h), (c) =>
    SAFE_ALPHABET.charAt(c.charCodeAt(0) % SAFE_ALPHABET.length),
  ).join('');
}

export interface DeploymentInput {
  readonly deployment: Deployment;
  /** ReplicaSets of the namespace; only those the Deployment controls count. */
  readonly replicaSets: readonly ReplicaSet[];
  /** Now as RFC 3339, for condition timestamps. */
  readonly now: string;
}

/** Decides ReplicaSet writes and the status update for one Deployment. */
export function reconcileDeployment(input: DeploymentInput): Operation[] {
  const d = input.deployment;
  const owned = input.replicaSets.filter((rs) => isControlledBy(rs, d));
  const hash = podTemplateHash(d.spec?.template, d.status?.collisionCount);
  const desired = Math.max(0, d.spec?.replicas ?? 1);
  const ops: Operation[] = [];
  let newRS = owned.find((rs) => rs.metadata?.labels?.[LABEL_POD_TEMPLATE_HASH] === hash);
  const olds = owned.filter((rs) => rs !== newRS);
  const deleting = d.metadata?.deletionTimestamp !== undefined;

  if (!deleting && d.spec?.paused !== true) {
    const oldActive = olds.reduce(
      (n, rs) => n + Math.max(rs.spec?.replicas ?? 0, rs.status?.replicas ?? 0),
      0,
    );
    const recreate = d.spec?.strategy?.type === 'Recreate';
    const newTarget = recreate && oldActive > 0 ? 0 : desired;
    if (newRS === undefined) {
      newRS = newReplicaSet(d, hash, newTarget, maxRevision(olds) + 1);
      ops.push({ op: 'create', kind: 'ReplicaSet', object: newRS });
    } else {
      const updated = scaled(newRS, newTarget, desired);
      if (updated !== undefined) ops.push({ op: 'update', kind: 'ReplicaSet', object: updated });
    }
    // Old ReplicaSets give way as the new one becomes available.
    const newAvailable = newRS.status?.availableReplicas ?? 0;
    let allowed = recreate ? 0 : Math.max(0, desired - newAvailable);
    const byAge = [...olds].sort((a, b) =>
      (a.metadata?.creationTimestamp ?? '') < (b.metadata?.creationTimestamp ?? '') ? 1 : -1,
    );
    for (const rs of byAge) {
      const cur = rs.spec?.replicas ?? 0;
      const keep = Math.min(cur, allowed);
      allowed -= keep;
      const updated = scaled(rs, keep, desired);
      if (updated !== undefined) ops.push({ op: 'update', kind: 'ReplicaSet', object: updated });
    }
    // Prune empty old ReplicaSets beyond the history limit, oldest first.
    const limit = d.spec?.revisionHistoryLimit ?? 10;
    const empty = byAge.filter(
      (rs) => (rs.spec?.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0,
    );
    for (const rs of empty.slice(limit))
      ops.push({ op: 'delete', kind: 'ReplicaSet', namespace: namespaceOf(rs), name: nameOf(rs) });
  }

  const status = deploymentStatus(d, newRS, owned, desired, input.now);
  if (!deepEqual(d.status ?? {}, status)) {
    const next: Deployment = { ...d, status };
    ops.push({ op: 'updateStatus', kind: 'Deployment', object: next });
  }
  return ops;
}

function maxRevision(rss: readonly ReplicaSet[]): number {
  let max = 0;
  for (const rs of rss) {
    const r = Number(rs.metadata?.annotations?.[ANNOTATION_DEPLOYMENT_REVISION] ?? '0');
    if (Number.isFinite(r) && r > max) max = r;
  }
  return max;
}

function newReplicaSet(
  d: Deployment,
  hash: string,
  replicas: number,
  revision: number,
): ReplicaSet {
  const tmpl = structuredClone(d.spec?.template ?? {});
  const meta = (tmpl.metadata ??= {});
  meta.labels = { ...meta.labels, [LABEL_POD_TEMPLATE_HASH]: hash };
  const desired = d.spec?.replicas ?? 1;
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `${nameOf(d)}-${hash}`,
      namespace: namespaceOf(d),
      labels: { ...meta.labels },
      annotations: {
        [ANNOTATION_DESIRED_REPLICAS]: String(desired),
        [ANNOTATION_MAX_REPLICAS]: String(desired + maxSurge(d, desired)),
        [ANNOTATION_DEPLOYMENT_REVISION]: String(revision),
      },
      ownerReferences: [ownerRefTo(d, 'apps/v1', 'Deployment')],
    },
    spec: {
      replicas,
      selector: {
        ...d.spec?.selector,
        matchLabels: { ...d.spec?.selector?.matchLabels, [LABEL_POD_TEMPLATE_HASH]: hash },
      },
      template: tmpl,
      ...(d.spec?.minReadySeconds !== undefined ? { minReadySeconds: d.spec.minReadySeconds } : {}),
    },
  };
}

/** The ReplicaSet with new replicas/annotations, or undefined when nothing changes. */
function scaled(rs: ReplicaSet, replicas: number, desired: number): ReplicaSet | undefined {
  const ann = rs.metadata?.annotations ?? {};
  const wantDesired = String(desired);
  if (
    (rs.spec?.replicas ?? 0) === replicas &&
    (replicas === 0 || ann[ANNOTATION_DESIRED_REPLICAS] === wantDesired)
  )
    return undefined;
  return {
    ...rs,
    metadata: {
      ...rs.metadata,
      annotations: { ...ann, [ANNOTATION_DESIRED_REPLICAS]: wantDesired },
    },
    spec: { ...rs.spec, replicas },
  };
}

/** Resolves an int-or-percent against a total (percent rounded up for surge, down otherwise). */
export function resolveIntOrPercent(
  v: number | string | undefined,
  total: number,
  fallback: string,
  roundUp: boolean,
): number {
  const val = v ?? fallback;
  if (typeof val === 'number') return val;
  const m = /^([0-9]+)%$/.exec(val);
  if (m === null) return Number.isFinite(Number(val)) ? Number(val) : 0;
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

function maxSurge(d: Deployment, desired: number): number {
  if (d.spec?.strategy?.type === 'Recreate') return 0;
  return resolveIntOrPercent(d.spec?.strategy?.rollingUpdate?.maxSurge, desired, '25%', true);
}

function maxUnavailable(d: Deployment, desired: number): number {
  if (d.spec?.strategy?.type === 'Recreate') return 0;
  const v = resolveIntOrPercent(
    d.spec?.strategy?.rollingUpdate?.maxUnavailable,
    desired,
    '25%',
    false,
  );
  return Math.min(v, desired);
}

function deploymentStatus(
  d: Deployment,
  newRS: ReplicaSet | undefined,
  owned: readonly ReplicaSet[],
  desired: number,
  now: string,
): DeploymentStatus {
  const sum = (f: (rs: ReplicaSet) => number | undefined): number =>
    owned.reduce((n, rs) => n + (f(rs) ?? 0), 0);
  const replicas = sum((rs) => rs.status?.replicas);
  const readyReplicas = sum((rs) => rs.status?.readyReplicas);
  const availableReplicas = sum((rs) => rs.status?.availableReplicas);
  const updatedReplicas = newRS?.status?.replicas ?? 0;
  const status: DeploymentStatus = {
    replicas,
    updatedReplicas,
    readyReplicas,
    availableReplicas,
    unavailableReplicas: Math.max(0, Math.max(desired, replicas) - availableReplicas),
  };
  const gen = d.metadata?.generation;
  if (gen !== undefined) status.observedGeneration = gen;
  if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
  const minAvailable = desired - maxUnavailable(d, desired);
  const available = availableReplicas >= minAvailable;
  const rsName = newRS !== undefined ? nameOf(newRS) : '';
  const complete =
    updatedReplicas === desired && replicas === desired && availableReplicas === desired;
  const conds: WorkloadCondition[] = [
    {
      type: 'Available',
      status: available ? 'True' : 'False',
      reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
      message: available
        ? 'Deployment has minimum availability.'
        : 'Deployment does not have minimum availability.',
    },
    {
      type: 'Progressing',
      status: 'True',
      reason: complete ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
      message: complete
        ? `ReplicaSet "${rsName}" has successfully progressed.`
        : `ReplicaSet "${rsName}" is progressing.`,
    },
  ];
  status.conditions = conds.map((c) => withTimes(c, d.status?.conditions, now));
  return status;
}

/** Keeps the old timestamps of an unchanged condition so that a no-op sync writes nothing. */
function withTimes(
  c: WorkloadCondition,
  old: readonly WorkloadCondition[] | undefined,
  now: string,
): WorkloadCondition {
  const prev = old?.find((o) => o.type === c.type);
  if (
    prev !== undefined &&
    prev.status === c.status &&
    prev.reason === c.reason &&
    prev.message === c.message
  )
    return prev;
  const transition = prev !== undefined && prev.status === c.status ? prev.lastTransitionTime : now;
  return { ...c, lastUpdateTime: now, lastTransitionTime: transition ?? now };
}
