// The thin write edge: hands a reconciler's operations to a KubeClient in order and returns
// what the informer cache must show afterwards (expectations). A delete of an object that is
// already gone is success. Runs of creations, bindings or deletions go out in slow-start
// batches of concurrent requests, as upstream's controllers send them. The first other
// failure stops the batch and is thrown (the caller requeues; the reconciler recomputes from
// fresh state next time).

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

/** The first batch of a run of like writes; each next batch doubles (upstream SlowStartInitialBatchSize). */
const SLOW_START_INITIAL_BATCH = 1;

/** Writes that may go out together: creations, bindings and deletions, each of its own object. */
function batchable(op: Operation): boolean {
  return op.op === 'create' || op.op === 'bind' || op.op === 'delete';
}

/**
 * Applies operations; resolves to the expectations of the writes made, in the order given.
 * A run of consecutive creations (or bindings, or deletions) goes out as the upstream
 * controllers send them, in slow-start batches of 1, 2, 4, … concurrent requests, so 300
 * Pods of a ReplicaSet are not 300 round trips one after another, while a failing one (a
 * quota, a bad template) stops the run after one request. Other writes go one at a time.
 */
export async function applyOperations(
  client: KubeClient,
  ops: readonly Operation[],
): Promise<Expectation[]> {
  const out: Expectation[] = [];
  for (let i = 0; i < ops.length;) {
    const first = ops[i];
    if (first === undefined) break;
    let end = i + 1;
    if (batchable(first)) while (end < ops.length && ops[end]?.op === first.op) end++;
    const run = ops.slice(i, end);
    for (let at = 0, size = SLOW_START_INITIAL_BATCH; at < run.length; at += size, size *= 2) {
      const batch = run.slice(at, at + size);
      const results = await Promise.allSettled(batch.map((op) => applyOne(client, op)));
      for (const r of results) if (r.status === 'fulfilled') out.push(r.value);
      const failed = results.find((r) => r.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    }
    i = end;
  }
  return out;
}

async function applyOne(client: KubeClient, op: Operation): Promise<Expectation> {
  switch (op.op) {
    case 'create':
      return present(op.kind, await client.create(op.kind, op.object as never));
    case 'update':
      return present(op.kind, await client.update(op.kind, op.object as never));
    case 'updateStatus':
      return present(op.kind, await client.updateStatus(op.kind, op.object as never));
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
      return {
        kind: op.kind,
        namespace: op.namespace,
        name: op.name,
        want: 'gone',
        ...(op.uid !== undefined ? { uid: op.uid } : {}),
      };
    case 'bind':
      await client.bind(op.namespace, op.name, op.nodeName);
      return {
        kind: 'Pod',
        namespace: op.namespace,
        name: op.name,
        want: 'present',
        nodeName: op.nodeName,
      };
  }
}
