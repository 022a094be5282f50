// What the controllers' unit tests share beyond the builders of kube/testing.ts: the spec of
// the Service they reconcile, a name → Node map, and `applyToStore`, which plays a reconciler's
// operations against a plain object list the way an API server would (names for generateName,
// uids, resourceVersions), so tests can check that a second pass is a no-op.

import type { ApiKind } from '../kube/api-client.js';
import type { ServiceSpecOptions } from '../kube/testing.js';
import type { KubeObject, Node } from '../kube/types.js';
import type { Operation } from './operations.js';

/**
 * The Service spec the controllers' tests reconcile, less its selector: clusterIP 10.96.0.10 and
 * port 3000 → targetPort 80 named http. Build one with `service()` from kube/testing.ts.
 */
export const SVC_SPEC: ServiceSpecOptions = {
  clusterIP: '10.96.0.10',
  ports: [{ name: 'http', port: 3000, targetPort: 80, protocol: 'TCP' }],
};

export function nodeMap(...nodes: Node[]): Map<string, Node> {
  return new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
}

let nameSeq = 0;

/**
 * Applies operations of one kind to a list as an API server would, returning the new list:
 * creates get a name (generateName + counter), uid and resourceVersion; updates replace by
 * name and bump resourceVersion; deletes remove by name.
 */
export function applyToStore<T extends KubeObject>(
  kind: ApiKind,
  store: readonly T[],
  ops: readonly Operation[],
): T[] {
  let out = [...store];
  for (const op of ops) {
    if (op.op !== 'bind' && op.kind !== kind) continue;
    if (op.op === 'create') {
      nameSeq += 1;
      const o = structuredClone(op.object) as T;
      const meta = (o.metadata ??= {});
      meta.name ??= `${meta.generateName ?? ''}x${String(nameSeq)}`;
      meta.uid = `uid-${meta.name}`;
      meta.resourceVersion = '1';
      out.push(o);
    } else if (op.op === 'update' || op.op === 'updateStatus') {
      const name = op.object.metadata?.name;
      out = out.map((o) => (o.metadata?.name === name ? (structuredClone(op.object) as T) : o));
    } else if (op.op === 'delete') {
      out = out.filter((o) => o.metadata?.name !== op.name);
    }
  }
  return out;
}
