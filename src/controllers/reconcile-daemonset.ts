// The DaemonSet controller's decision for one DaemonSet: one pod on every Node it should run on
// (the template's nodeSelector matches the Node's labels and its tolerations, plus the ones
// upstream adds to every daemon pod, tolerate the Node's NoSchedule/NoExecute taints), none
// elsewhere. Pods are created bound (spec.nodeName), named `<ds>-` + five generated
// characters, owned by the DaemonSet and labelled with the template's hash
// (controller-revision-hash) and pod-template-generation. A failed pod is deleted to be
// recreated; a second pod on a Node is deleted. RollingUpdate replaces pods of an old
// template at most maxUnavailable Nodes at a time (old unavailable pods go first, at no cost);
// OnDelete waits for the user to delete them. A Node whose pod is terminating gets its new pod
// only once the old one is gone (hostNetwork pods would fight over their ports). Status holds
// the counts `kubectl get ds` and `kubectl rollout status` read. The template history
// (ControllerRevisions, for `rollout history` and `rollout undo`) is kept by
// reconcile-daemonset-history.ts. Node affinity is not evaluated and maxSurge is not honoured
// (pods are replaced in place). Pure.

import { matchesSelectorMap } from '../kube/selectors.js';
import type {
  ControllerRevision,
  DaemonSet,
  DaemonSetStatus,
  Node,
  Pod,
  Toleration,
} from '../kube/types.js';
import { deepEqual } from '../util/json.js';
import { LABEL_CONTROLLER_REVISION_HASH } from './names.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import { reconcileDaemonSetHistory } from './reconcile-daemonset-history.js';
import { podTemplateHash, resolveIntOrPercent } from './reconcile-deployment.js';
import { BURST_REPLICAS, isPodAvailable } from './reconcile-replicaset.js';
import { tolerates } from './reconcile-scheduler.js';
import {
  isControlledBy,
  isPodReady,
  isPodTerminal,
  isPodTerminating,
  nameOf,
  namespaceOf,
  ownerRefTo,
} from './reconcile-util.js';

export const LABEL_POD_TEMPLATE_GENERATION = 'pod-template-generation';

export interface DaemonSetInput {
  readonly daemonSet: DaemonSet;
  readonly nodes: readonly Node[];
  /** Pods of the namespace; only those controlled by the DaemonSet count. */
  readonly pods: readonly Pod[];
  /** ControllerRevisions of the namespace; only those controlled by the DaemonSet count. */
  readonly revisions?: readonly ControllerRevision[];
  /** Now, ms since epoch (for minReadySeconds). */
  readonly now: number;
}

/** Tolerations upstream adds to every daemon pod (AddOrUpdateDaemonPodTolerations). */
export function daemonPodTolerations(hostNetwork: boolean): Toleration[] {
  const t = (key: string, effect: 'NoSchedule' | 'NoExecute'): Toleration => ({
    key,
    operator: 'Exists',
    effect,
  });
  return [
    t('node.kubernetes.io/not-ready', 'NoExecute'),
    t('node.kubernetes.io/unreachable', 'NoExecute'),
    t('node.kubernetes.io/disk-pressure', 'NoSchedule'),
    t('node.kubernetes.io/memory-pressure', 'NoSchedule'),
    t('node.kubernetes.io/pid-pressure', 'NoSchedule'),
    t('node.kubernetes.io/unschedulable', 'NoSchedule'),
    ...(hostNetwork ? [t('node.kubernetes.io/network-unavailable', 'NoSchedule')] : []),
  ];
}

function podTolerations(ds: DaemonSet): Toleration[] {
  const spec = ds.spec?.template?.spec;
  const own = spec?.tolerations ?? [];
  const extra = daemonPodTolerations(spec?.hostNetwork === true).filter(
    (d) => !own.some((o) => o.key === d.key && o.effect === d.effect),
  );
  return [...own, ...extra];
}

/** Should a pod of `ds` run on `node`: nodeSelector matches and every hard taint is tolerated. */
export function shouldRunOn(ds: DaemonSet, node: Node): boolean {
  if (node.metadata?.deletionTimestamp !== undefined) return false;
  const sel = ds.spec?.template?.spec?.nodeSelector ?? {};
  if (!matchesSelectorMap(sel, node.metadata?.labels)) return false;
  const tols = podTolerations(ds);
  return (node.spec?.taints ?? []).every(
    (t) => t.effect === 'PreferNoSchedule' || tolerates(tols, t),
  );
}

/** The revision label value of the DaemonSet's current template. */
export function daemonSetRevision(ds: DaemonSet): string {
  return podTemplateHash(ds.spec?.template);
}

/** A new pod of `ds` bound to `nodeName`. */
export function daemonPod(ds: DaemonSet, nodeName: string): Pod {
  const tmpl = ds.spec?.template;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${nameOf(ds)}-`,
      namespace: namespaceOf(ds),
      labels: {
        ...tmpl?.metadata?.labels,
        [LABEL_CONTROLLER_REVISION_HASH]: daemonSetRevision(ds),
        [LABEL_POD_TEMPLATE_GENERATION]: String(ds.metadata?.generation ?? 1),
      },
      ...(tmpl?.metadata?.annotations !== undefined
        ? { annotations: { ...tmpl.metadata.annotations } }
        : {}),
      ownerReferences: [ownerRefTo(ds, 'apps/v1', 'DaemonSet')],
    },
    spec: {
      ...structuredClone(tmpl?.spec ?? { containers: [] }),
      nodeName,
      tolerations: podTolerations(ds),
    },
  };
}

interface NodeState {
  readonly node: string;
  readonly shouldRun: boolean;
  /** Live pods (neither terminal nor terminating), oldest first. */
  readonly live: Pod[];
  readonly terminating: Pod[];
  readonly failed: Pod[];
}

function byAge(a: Pod, b: Pod): number {
  const x = a.metadata?.creationTimestamp ?? '';
  const y = b.metadata?.creationTimestamp ?? '';
  if (x !== y) return x < y ? -1 : 1;
  return nameOf(a) < nameOf(b) ? -1 : 1;
}

function nodeStates(input: DaemonSetInput): NodeState[] {
  const ds = input.daemonSet;
  const byNode = new Map<string, Pod[]>();
  for (const p of input.pods) {
    if (!isControlledBy(p, ds)) continue;
    const n = p.spec?.nodeName ?? '';
    byNode.set(n, [...(byNode.get(n) ?? []), p]);
  }
  const names = new Set([...input.nodes.map(nameOf), ...byNode.keys()]);
  const nodes = new Map(input.nodes.map((n) => [nameOf(n), n]));
  return [...names].sort().map((name) => {
    const node = nodes.get(name);
    const pods = (byNode.get(name) ?? []).sort(byAge);
    return {
      node: name,
      shouldRun: node !== undefined && shouldRunOn(ds, node),
      live: pods.filter((p) => !isPodTerminal(p) && !isPodTerminating(p)),
      terminating: pods.filter((p) => isPodTerminating(p)),
      failed: pods.filter((p) => isPodTerminal(p) && !isPodTerminating(p)),
    };
  });
}

/** Decides pod creations/deletions and the status update for one DaemonSet. */
export function reconcileDaemonSet(input: DaemonSetInput): Operation[] {
  const ds = input.daemonSet;
  const states = nodeStates(input);
  const revision = daemonSetRevision(ds);
  const minReady = ds.spec?.minReadySeconds ?? 0;
  const available = (p: Pod): boolean => isPodAvailable(p, minReady, input.now);
  const isNew = (p: Pod): boolean =>
    p.metadata?.labels?.[LABEL_CONTROLLER_REVISION_HASH] === revision;
  const creates: Operation[] = [];
  const deletes: Operation[] = [];
  if (ds.metadata?.deletionTimestamp === undefined) {
    for (const s of states) {
      for (const p of s.failed) deletes.push(deleteObject('Pod', p));
      if (!s.shouldRun) {
        for (const p of s.live) deletes.push(deleteObject('Pod', p));
        continue;
      }
      // Keep the oldest live pod; any other is surplus.
      for (const p of s.live.slice(1)) deletes.push(deleteObject('Pod', p));
      if (s.live.length === 0 && s.terminating.length === 0)
        creates.push({ op: 'create', kind: 'Pod', object: daemonPod(ds, s.node) });
    }
    if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate')
      deletes.push(...rollingUpdateDeletes(ds, states, isNew, available));
  }
  // The history first, as upstream: the current template's revision exists before its Pods.
  const ops = [
    ...(input.revisions === undefined
      ? []
      : reconcileDaemonSetHistory(ds, revision, input.revisions, input.pods)),
    ...deletes.slice(0, BURST_REPLICAS),
    ...creates.slice(0, BURST_REPLICAS),
  ];
  const status = daemonSetStatus(ds, states, isNew, available);
  if (!deepEqual(ds.status ?? {}, status)) {
    const next: DaemonSet = { ...ds, status };
    ops.push({ op: 'updateStatus', kind: 'DaemonSet', object: next });
  }
  return ops;
}

/**
 * Old-template pods to delete now: every unavailable one (it costs nothing), then available
 * ones while fewer than maxUnavailable wanted Nodes are without an available pod.
 */
function rollingUpdateDeletes(
  ds: DaemonSet,
  states: readonly NodeState[],
  isNew: (p: Pod) => boolean,
  available: (p: Pod) => boolean,
): Operation[] {
  const wanted = states.filter((s) => s.shouldRun);
  const ru = ds.spec?.updateStrategy?.rollingUpdate;
  let budget = resolveIntOrPercent(ru?.maxUnavailable, wanted.length, '1', true);
  if (budget <= 0 && resolveIntOrPercent(ru?.maxSurge, wanted.length, '0', true) <= 0) budget = 1;
  let unavailable = wanted.filter((s) => !s.live.some(available)).length;
  const out: Operation[] = [];
  const oldAvailable: Pod[] = [];
  for (const s of wanted) {
    const pod = s.live[0];
    if (pod === undefined || isNew(pod)) continue;
    if (available(pod)) oldAvailable.push(pod);
    else out.push(deleteObject('Pod', pod));
  }
  for (const pod of oldAvailable) {
    if (unavailable >= budget) break;
    out.push(deleteObject('Pod', pod));
    unavailable += 1;
  }
  return out;
}

function daemonSetStatus(
  ds: DaemonSet,
  states: readonly NodeState[],
  isNew: (p: Pod) => boolean,
  available: (p: Pod) => boolean,
): DaemonSetStatus {
  const wanted = states.filter((s) => s.shouldRun);
  const scheduled = wanted.filter((s) => s.live.length > 0);
  const numberAvailable = scheduled.filter((s) => s.live.some(available)).length;
  const status: DaemonSetStatus = {
    currentNumberScheduled: scheduled.length,
    numberMisscheduled: states.filter((s) => !s.shouldRun && s.live.length > 0).length,
    desiredNumberScheduled: wanted.length,
    numberReady: scheduled.filter((s) => s.live.some(isPodReady)).length,
    updatedNumberScheduled: scheduled.filter((s) => s.live.some(isNew)).length,
    numberAvailable,
  };
  if (wanted.length - numberAvailable > 0)
    status.numberUnavailable = wanted.length - numberAvailable;
  const gen = ds.metadata?.generation;
  if (gen !== undefined) status.observedGeneration = gen;
  if (ds.status?.conditions !== undefined) status.conditions = ds.status.conditions;
  return status;
}
