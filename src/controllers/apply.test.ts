import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../kube/api-client.js';
import type { KubeObject } from '../kube/types.js';
import { applyOperations } from './apply.js';
import type { Operation } from './operations.js';

function pod(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'default', name } };
}

/** A client whose creations take a tick and record how many were in flight at once. */
function slowClient(failOn?: string): {
  client: KubeClient;
  sent: string[];
  maxInFlight: () => number;
} {
  let inFlight = 0;
  let max = 0;
  const sent: string[] = [];
  const client = {
    create: async (_kind: string, o: KubeObject) => {
      sent.push(o.metadata?.name ?? '');
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      if (o.metadata?.name === failOn) throw new Error(`quota: ${failOn}`);
      return { ...o, metadata: { ...o.metadata, resourceVersion: '1' } };
    },
  } as unknown as KubeClient;
  return { client, sent, maxInFlight: () => max };
}

test('a run of creations goes out in slow-start batches of 1, 2, 4, ...', async () => {
  const { client, sent, maxInFlight } = slowClient();
  const ops: Operation[] = Array.from({ length: 7 }, (_, i) => ({
    op: 'create',
    kind: 'Pod',
    object: pod(`p${String(i)}`),
  }));
  const out = await applyOperations(client, ops);
  assert.deepEqual(
    out.map((e) => e.name),
    ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6'],
  );
  assert.equal(sent.length, 7);
  assert.equal(maxInFlight(), 4);
});

test('a failing creation stops the run after its batch', async () => {
  const { client, sent } = slowClient('p0');
  const ops: Operation[] = Array.from({ length: 5 }, (_, i) => ({
    op: 'create',
    kind: 'Pod',
    object: pod(`p${String(i)}`),
  }));
  await assert.rejects(applyOperations(client, ops), /quota: p0/);
  assert.deepEqual(sent, ['p0'], 'one request, not five');
});
