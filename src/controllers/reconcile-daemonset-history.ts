// A DaemonSet's template history, as the DaemonSet controller keeps it: one ControllerRevision
// per template the DaemonSet has had, named `<ds>-<hash>` after the template's hash (the same
// value as its Pods' controller-revision-hash label), owned by the DaemonSet, labelled with the
// template's labels plus that hash, and holding as `data` the strategic merge patch that puts
// the template back (`{"spec":{"template":{…,"$patch":"replace"}}}`). The current template's
// revision has the highest number: a new template gets max+1, and a template that comes back
// (`kubectl rollout undo`) has its old revision renumbered to max+1. Revisions that are neither
// current nor still worn by a Pod are pruned, oldest first, down to revisionHistoryLimit
// (default 10). `kubectl rollout history ds/NAME` lists these, and `rollout undo` sends a
// revision's `data` back as a patch. Pure.

import type { ControllerRevision, DaemonSet, Pod } from '../kube/types.js';
import { LABEL_CONTROLLER_REVISION_HASH } from './names.js';
import type { Operation } from './operations.js';
import { deleteObject } from './operations.js';
import { isControlledBy, nameOf, namespaceOf, ownerRefTo } from './reconcile-util.js';

/** Upstream's default `spec.revisionHistoryLimit` for DaemonSets. */
export const DEFAULT_REVISION_HISTORY_LIMIT = 10;

/** Longest name prefix upstream keeps before `-<hash>` (a name stays ≤ 253 characters). */
const MAX_PREFIX = 223;

/** The patch that restores `ds`'s current template (what `rollout undo` sends). */
export function templatePatch(ds: DaemonSet): { spec: { template: Record<string, unknown> } } {
  const template = structuredClone(ds.spec?.template ?? {}) as Record<string, unknown>;
  return { spec: { template: { ...template, $patch: 'replace' } } };
}

/** The ControllerRevision of `ds`'s current template, numbered `revision`. */
export function daemonSetRevisionObject(
  ds: DaemonSet,
  hash: string,
  revision: number,
): ControllerRevision {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: `${nameOf(ds).slice(0, MAX_PREFIX)}-${hash}`,
      namespace: namespaceOf(ds),
      labels: { ...ds.spec?.template?.metadata?.labels, [LABEL_CONTROLLER_REVISION_HASH]: hash },
      ownerReferences: [ownerRefTo(ds, 'apps/v1', 'DaemonSet')],
    },
    data: templatePatch(ds),
    revision,
  };
}

/**
 * The writes that bring `ds`'s history up to date: create or renumber the current template's
 * revision, and prune old ones. `revisions` and `pods` may hold other owners' objects.
 */
export function reconcileDaemonSetHistory(
  ds: DaemonSet,
  hash: string,
  revisions: readonly ControllerRevision[],
  pods: readonly Pod[],
): Operation[] {
  if (ds.metadata?.deletionTimestamp !== undefined) return [];
  const own = revisions.filter((r) => isControlledBy(r, ds));
  const hashOf = (r: ControllerRevision): string | undefined =>
    r.metadata?.labels?.[LABEL_CONTROLLER_REVISION_HASH];
  const max = own.reduce((m, r) => Math.max(m, r.revision), 0);
  const ops: Operation[] = [];
  const current = own.find((r) => hashOf(r) === hash);
  if (current === undefined)
    ops.push({
      op: 'create',
      kind: 'ControllerRevision',
      object: daemonSetRevisionObject(ds, hash, max + 1),
    });
  else if (current.revision < max) {
    const renumbered: ControllerRevision = { ...current, revision: max + 1 };
    ops.push({ op: 'update', kind: 'ControllerRevision', object: renumbered });
  }
  const worn = new Set(
    pods
      .filter((p) => isControlledBy(p, ds))
      .map((p) => p.metadata?.labels?.[LABEL_CONTROLLER_REVISION_HASH]),
  );
  const old = own
    .filter((r) => hashOf(r) !== hash && !worn.has(hashOf(r)))
    .sort((a, b) => a.revision - b.revision);
  const limit = Math.max(0, ds.spec?.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT);
  for (const r of old.slice(0, Math.max(0, old.length - limit)))
    ops.push(deleteObject('ControllerRevision', r));
  return ops;
}
