// pods/binding as kube-apiserver applies it: the scheduler's write that sets spec.nodeName
// once (409 when the pod is already bound or being deleted) and records the PodScheduled
// condition in status. Pure over the Store; errors are ApiErrors.

import { clone } from '../util/json.js';
import { formatTime } from './object.js';
import { PODS } from './resources.js';
import { ApiError } from './status.js';
import type { Store } from './store.js';

/** Binds pod `ns/name` to `node`; `now` stamps PodScheduled's lastTransitionTime. */
export function bindPod(
  store: Store,
  ns: string | undefined,
  name: string,
  node: string,
  opts: { readonly now: number; readonly dryRun: boolean },
): void {
  if (node === '')
    throw new ApiError(422, 'Invalid', 'Binding.core "" is invalid: target.name: Required value');
  const pod = store.get(PODS, ns, name);
  const spec = (pod.spec ?? {}) as { nodeName?: string };
  if (spec.nodeName !== undefined && spec.nodeName !== '')
    throw ApiError.conflict(
      '',
      'pods',
      name,
      `pod ${name} is already assigned to node "${spec.nodeName}"`,
    );
  if (pod.metadata.deletionTimestamp !== undefined)
    throw ApiError.conflict(
      '',
      'pods',
      name,
      `pod ${name} is being deleted, cannot be assigned to a host`,
    );
  const next = clone(pod);
  (next as Record<string, unknown>).spec = { ...spec, nodeName: node };
  const status = clone((pod.status ?? {}) as { conditions?: object[] });
  status.conditions = [
    ...(status.conditions ?? []).filter((x) => (x as { type?: string }).type !== 'PodScheduled'),
    {
      type: 'PodScheduled',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: formatTime(opts.now),
    },
  ];
  const updated = store.update(PODS, ns, name, next, { dryRun: opts.dryRun });
  if (opts.dryRun) return;
  const withStatus = clone(updated);
  withStatus.status = status;
  store.update(PODS, ns, name, withStatus, { subresource: 'status' });
}
