// The writes a reconciler asks for, as data. Pure reconcilers return `Operation[]`; the
// controller edge hands them to a KubeClient (see apply.ts) in order.

import type { ApiKind } from '../kube/api-client.js';
import type { KubeObject } from '../kube/types.js';

export type Operation =
  | { readonly op: 'create'; readonly kind: ApiKind; readonly object: KubeObject }
  | { readonly op: 'update'; readonly kind: ApiKind; readonly object: KubeObject }
  | { readonly op: 'updateStatus'; readonly kind: ApiKind; readonly object: KubeObject }
  | {
      readonly op: 'delete';
      readonly kind: ApiKind;
      readonly namespace: string;
      readonly name: string;
      /** Precondition: only delete the object with this uid. */
      readonly uid?: string;
      readonly gracePeriodSeconds?: number;
    }
  | {
      readonly op: 'bind';
      readonly namespace: string;
      readonly name: string;
      readonly nodeName: string;
    };

/**
 * Deletes `obj`, only if it is still the object the reconciler saw (its uid, when known, is
 * the precondition: a replacement under the same name is left alone).
 */
export function deleteObject(
  kind: ApiKind,
  obj: KubeObject,
  opts: { readonly gracePeriodSeconds?: number } = {},
): Operation {
  const uid = obj.metadata?.uid;
  return {
    op: 'delete',
    kind,
    namespace: obj.metadata?.namespace ?? '',
    name: obj.metadata?.name ?? '',
    ...opts,
    ...(uid !== undefined ? { uid } : {}),
  };
}

/** One line per operation, for logs and test assertions: `create Pod default/web-`. */
export function describeOperation(o: Operation): string {
  switch (o.op) {
    case 'create': {
      const m = o.object.metadata;
      const ns = m?.namespace !== undefined && m.namespace !== '' ? `${m.namespace}/` : '';
      return `create ${o.kind} ${ns}${m?.name ?? m?.generateName ?? ''}`;
    }
    case 'update':
    case 'updateStatus': {
      const m = o.object.metadata;
      const ns = m?.namespace !== undefined && m.namespace !== '' ? `${m.namespace}/` : '';
      return `${o.op} ${o.kind} ${ns}${m?.name ?? ''}`;
    }
    case 'delete':
      return `delete ${o.kind} ${o.namespace !== '' ? `${o.namespace}/` : ''}${o.name}`;
    case 'bind':
      return `bind Pod ${o.namespace}/${o.name} ${o.nodeName}`;
  }
}
