// EndpointSlice and Endpoints reconcile cost: one Service backed by N pods, from scratch
// (all slices created) and as a steady-state re-sync (nothing to write), plus a one-pod
// change in a large Service (one slice rewritten). Prints ms per reconcile and the writes.

import { reconcileEndpoints } from '../src/controllers/reconcile-endpoints.js';
import { reconcileEndpointSlices } from '../src/controllers/reconcile-endpointslice.js';
import { SVC_SPEC, applyToStore, nodeMap } from '../src/controllers/test-builders.js';
import { node, pod, service as buildService } from '../src/kube/testing.js';
import type { EndpointSlice, Endpoints, Pod } from '../src/kube/types.js';

function podsOf(n: number): Pod[] {
  return Array.from({ length: n }, (_, i) =>
    pod(`p-${i}`, {
      ip: `10.${Math.floor(i / 65536) + 1}.${Math.floor(i / 256) % 256}.${i % 256}`,
      node: `node-${i % 50}`,
    }),
  );
}

function time<T>(iterations: number, fn: () => T): { ms: number; last: T } {
  let last = fn();
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) last = fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6 / iterations, last };
}

export function run(): Promise<void> {
  const nodes = nodeMap(
    ...Array.from({ length: 50 }, (_, i) => node(`node-${i}`, { zone: `z${i % 3}` })),
  );
  const service = buildService(
    'web',
    { ...SVC_SPEC, selector: { app: 'web' } },
    { metadata: { uid: 'svc-uid-web' } },
  );
  for (const n of [100, 1000, 10_000]) {
    const pods = podsOf(n);
    const iters = n >= 10_000 ? 5 : 30;
    const fresh = time(iters, () =>
      reconcileEndpointSlices({ service, pods, nodes, existing: [] }),
    );
    const slices = applyToStore<EndpointSlice>('EndpointSlice', [], fresh.last.operations);
    const steady = time(iters, () =>
      reconcileEndpointSlices({ service, pods, nodes, existing: slices }),
    );
    const changed = [...pods];
    changed[Math.floor(n / 2)] = pod(`p-${Math.floor(n / 2)}`, {
      ip: '10.250.0.1',
      node: 'node-1',
      ready: false,
    });
    const one = time(iters, () =>
      reconcileEndpointSlices({ service, pods: changed, nodes, existing: slices }),
    );
    const epFresh = time(iters, () =>
      reconcileEndpoints({ service, namespace: 'default', name: 'web', pods, existing: undefined }),
    );
    const ep = applyToStore<Endpoints>('Endpoints', [], epFresh.last.operations)[0];
    const epSteady = time(iters, () =>
      reconcileEndpoints({ service, namespace: 'default', name: 'web', pods, existing: ep }),
    );
    process.stdout.write(
      `pods=${n}: slices fresh ${fresh.ms.toFixed(2)} ms (${fresh.last.operations.length} creates), ` +
        `steady ${steady.ms.toFixed(2)} ms (${steady.last.operations.length} writes), ` +
        `one pod changed ${one.ms.toFixed(2)} ms (${one.last.operations.length} write); ` +
        `endpoints fresh ${epFresh.ms.toFixed(2)} ms, steady ${epSteady.ms.toFixed(2)} ms (${epSteady.last.operations.length} writes)\n`,
    );
  }
  return Promise.resolve();
}
