// The thin write edge: hands a reconciler's operations to a KubeClient in order and returns
// what the informer cache must show afterwards (expectations). A delete of an object that is
// already gone is success. The first other failure stops the batch and is thrown (the caller
// requeues; the reconciler recomputes from fresh state next time).

import type { ApiKind, KubeClient } from '../kube/api-client.js';
import { isNotFound } from '../kube/api-client.js';
import type { KubeObject } from '../kube/types.js';
import type { Expectation } from './expectations.js';
import type { Operation } from './operations.js';

function present(kind: ApiKind, o: KubeObject): Expectation {
  return {
    kind,
    namespace: o.metadata?.namespace ?? '',
    name: o.metadata?.name ?? '',
    want: 'present',
    ...(o.metadata?.resourceVersion !== undefined
      ? { resourceVersion: o.metadata.resourceVersion }
      : {}),
  };
}

/** Applies operations in order; resolves to the expectations of the writes made. */
export async function applyOperations(
  client: KubeClient,
  ops: readonly Operation[],
): Promise<Expectation[]> {
  const out: Expectation[] = [];
  for (const op of ops) {
    switch (op.op) {
      case 'create':
        out.push(present(op.kind, await client.create(op.kind, op.object as never)));
        break;
      case 'update':
        out.push(present(op.kind, await client.update(op.kind, op.object as never)));
        break;
      case 'updateStatus':
        out.push(present(op.kind, await client.updateStatus(op.kind, op.object as never)));
        break;
      case 'delete':
        try {
          await client.delete(op.kind, op.namespace, op.name, {
            ...(op.uid !== undefined ? { uid: op.uid } : {}),
            ...(op.gracePeriodSeconds !== undefined
              ? { gracePeriodSeconds: op.gracePeriodSeconds }
              : {}),
          });
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        out.push({
          kind: op.kind,
          namespace: op.namespace,
          name: op.name,
          want: 'gone',
          ...(op.uid !== undefined ? { uid: op.uid } : {}),
        });
        break;
      case 'bind':
        await client.bind(op.namespace, op.name, op.nodeName);
        out.push({
          kind: 'Pod',
          namespace: op.namespace,
          name: op.name,
          want: 'present',
          nodeName: op.nodeName,
        });
        break;
    }
  }
  return out;
}
