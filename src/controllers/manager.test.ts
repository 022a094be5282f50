// The controller manager against an in-memory cluster (the API server's Store behind a
// StoreKubeClient, informers following Store.watch, a FakeClock): the Service walkthrough at the reconcile level (Deployment of 3 + Service →
// Running pods spread over nodes → slices and Endpoints; scale to 2; delete), conflicts
// retried, and one failing object not stopping the rest.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StoreKubeClient } from '../apiserver/store-kube-client.js';
import { newTestApi } from '../apiserver/testing.js';
import type { ApiKind, ApiKindMap, KubeClient } from '../kube/api-client.js';
import { KubeApiError } from '../kube/api-client.js';
import type { Deployment, Endpoints, Pod, Service } from '../kube/types.js';
import { createFakeCluster } from './fake-cluster.js';
import type { ControllerKind } from './kinds.js';
import type { Log } from './manager.js';
import { ControllerManager } from './manager.js';
import { node } from '../kube/testing.js';
import { FakeClock } from '../util/clock.js';

interface Logged {
  level: string;
  msg: string;
  obj: object;
}

function memoryLog(): Log & { lines: Logged[] } {
  const lines: Logged[] = [];
  const at =
    (level: string) =>
    (obj: object, msg: string): void => {
      lines.push({ level, msg, obj });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const deployment: Deployment = {
  metadata: { name: 'web', namespace: 'default' },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'nginx', image: 'nginx', ports: [{ containerPort: 80 }] }] },
    },
  },
};

const service: Service = {
  metadata: { name: 'web', namespace: 'default' },
  spec: {
    selector: { app: 'web' },
    ports: [{ port: 3000, targetPort: 80, protocol: 'TCP' }],
    clusterIP: '10.96.0.20',
  },
};

/**
 * A cluster on a fresh test API whose store runs on `clock`, three nodes, and a manager
 * writing through `Client` (a StoreKubeClient, or a subclass that injects failures).
 */
async function setup(
  clock: FakeClock,
  controllers?: ReadonlySet<ControllerKind>,
  Client: typeof StoreKubeClient = StoreKubeClient,
) {
  const api = newTestApi({ now: () => clock.now() });
  const cluster = createFakeCluster(api);
  const client = new Client(api.store, { now: api.now });
  for (let i = 1; i <= 3; i++) {
    const n = node(`node-${i}`, {
      podCIDR: `10.244.${i}.0/24`,
      ip: `172.18.0.${i + 1}`,
      zone: `zone-${i}`,
    });
    delete n.metadata!.uid;
    await client.create('Node', n);
  }
  const log = memoryLog();
  const manager = new ControllerManager({
    client,
    informers: cluster.informers,
    log,
    clock,
    fakeKubelet: true,
    resyncPeriodMs: 0,
    ...(controllers !== undefined ? { controllers } : {}),
  });
  await manager.startInformers();
  return { api, client, manager, log };
}

async function readyEndpointIPs(client: KubeClient): Promise<string[]> {
  const eps = (await client.list('Endpoints')).find((e: Endpoints) => e.metadata?.name === 'web');
  return (eps?.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip)).sort();
}

/** The slices of Service default/web (bootstrap made the `kubernetes` one beside them). */
const WEB_SLICES = 'kubernetes.io/service-name=web';

async function sliceIPs(client: KubeClient): Promise<string[]> {
  return (await client.list('EndpointSlice', { labelSelector: WEB_SLICES }))
    .flatMap((s) =>
      (s.endpoints ?? [])
        .filter((e) => e.conditions?.ready === true)
        .map((e) => e.addresses[0] ?? ''),
    )
    .sort();
}

describe('ControllerManager on an in-memory cluster', () => {
  test('Deployment + Service → spread Running pods → slices and Endpoints; scale; delete', async () => {
    const clock = new FakeClock();
    const { api, client, manager } = await setup(clock);
    await client.create('Deployment', structuredClone(deployment));
    await client.create('Service', structuredClone(service));
    await manager.runUntilIdle();

    const pods = await client.list('Pod');
    assert.equal(pods.length, 3);
    assert.deepEqual(pods.map((p: Pod) => p.spec?.nodeName).sort(), ['node-1', 'node-2', 'node-3']);
    assert.ok(pods.every((p) => p.status?.phase === 'Running'));
    const ips = pods.map((p) => p.status?.podIP ?? '').sort();
    assert.deepEqual(await readyEndpointIPs(client), ips);
    assert.deepEqual(await sliceIPs(client), ips);
    const d = await client.get('Deployment', 'default', 'web');
    assert.deepEqual(
      [
        d?.status?.replicas,
        d?.status?.readyReplicas,
        d?.status?.availableReplicas,
        d?.status?.updatedReplicas,
      ],
      [3, 3, 3, 3],
    );
    // Converged: another pass writes nothing (the store's resourceVersion stays).
    const rv = api.store.resourceVersion;
    manager.resyncAll();
    await manager.runUntilIdle();
    assert.equal(api.store.resourceVersion, rv);

    await client.patch('Deployment', 'default', 'web', { spec: { replicas: 2 } });
    await manager.runUntilIdle();
    assert.equal((await client.list('Pod')).length, 2);
    assert.equal((await readyEndpointIPs(client)).length, 2);
    assert.equal((await sliceIPs(client)).length, 2);

    await client.delete('Deployment', 'default', 'web');
    await manager.runUntilIdle();
    assert.equal((await client.list('Pod')).length, 0);
    assert.deepEqual(await readyEndpointIPs(client), []);
    const placeholder = await client.list('EndpointSlice', { labelSelector: WEB_SLICES });
    assert.equal(placeholder.length, 1);
    assert.deepEqual(placeholder[0]?.endpoints, []);

    await client.delete('Service', 'default', 'web');
    await manager.runUntilIdle();
    assert.deepEqual(await client.list('EndpointSlice', { labelSelector: WEB_SLICES }), []);
    assert.equal(await client.get('Endpoints', 'default', 'web'), undefined);
  });

  test('one object that keeps failing is logged, counted and retried; the others proceed', async () => {
    const clock = new FakeClock();
    let failures = 0;
    class Flaky extends StoreKubeClient {
      override updateStatus<K extends ApiKind>(
        kind: K,
        obj: ApiKindMap[K],
      ): Promise<ApiKindMap[K]> {
        if (kind === 'Pod' && obj.metadata?.name?.startsWith('bad-') === true) {
          failures += 1;
          return Promise.reject(new KubeApiError(500, 'InternalError', 'etcd is on fire'));
        }
        return super.updateStatus(kind, obj);
      }
    }
    const { client, manager, log } = await setup(clock, undefined, Flaky);
    await client.create('Pod', {
      metadata: { name: 'bad-1', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }], nodeName: 'node-1' },
    });
    await client.create('Pod', {
      metadata: { name: 'good-1', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'nginx' }], nodeName: 'node-2' },
    });
    await manager.runUntilIdle();
    assert.equal((await client.get('Pod', 'default', 'good-1'))?.status?.phase, 'Running');
    assert.equal(failures, 1);
    assert.ok(log.lines.some((l) => l.level === 'warn' && l.msg === 'Sync failed; retrying'));
    // The retry comes after a backoff on the injected clock.
    clock.advanceSync(1000);
    await manager.runUntilIdle();
    const after = failures as number;
    assert.ok(after >= 2, `failures: ${after}`);
    assert.ok(manager.stats.errors >= 2);
  });

  test('a 409 Conflict from a stale cache is retried quietly and converges', async () => {
    const clock = new FakeClock();
    let conflicts = 1;
    class Conflicting extends StoreKubeClient {
      override update<K extends ApiKind>(kind: K, obj: ApiKindMap[K]): Promise<ApiKindMap[K]> {
        if (kind === 'EndpointSlice' && conflicts > 0) {
          conflicts -= 1;
          return Promise.reject(new KubeApiError(409, 'Conflict', 'the object has been modified'));
        }
        return super.update(kind, obj);
      }
    }
    const { client, manager, log } = await setup(clock, undefined, Conflicting);
    await client.create('Service', structuredClone(service));
    await client.create('Deployment', structuredClone(deployment));
    await manager.runUntilIdle();
    clock.advanceSync(1000);
    await manager.runUntilIdle();
    assert.equal((await sliceIPs(client)).length, 3);
    assert.equal(manager.stats.conflicts, 1);
    assert.ok(!log.lines.some((l) => l.level === 'warn' || l.level === 'error'));
  });

  test('--controllers limits what runs: only slices, no Endpoints, no workloads', async () => {
    const clock = new FakeClock();
    const { client, manager } = await setup(clock, new Set<ControllerKind>(['endpointslice']));
    await client.create('Deployment', structuredClone(deployment));
    await client.create('Service', structuredClone(service));
    await client.create('Pod', {
      metadata: { name: 'manual', namespace: 'default', labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'nginx' }], nodeName: 'node-1' },
    });
    await manager.runUntilIdle();
    assert.deepEqual(await client.list('ReplicaSet'), []);
    assert.equal(await client.get('Endpoints', 'default', 'web'), undefined);
    // The fake kubelet still runs (it is its own switch) and the slice follows the pod.
    assert.equal((await sliceIPs(client)).length, 1);
  });

  // [sig-network] Endpoint should test the lifecycle of an Endpoint [Conformance]: an Endpoints
  // object created by hand for a Service that does not exist stays (kube-controller-manager
  // queues a Service's key on Service and Pod events only); it goes when its Service is deleted.
  test('an Endpoints without a Service is left alone; deleting its Service removes it', async () => {
    const clock = new FakeClock();
    const { client, manager } = await setup(clock);
    await client.create('Endpoints', {
      metadata: { name: 'by-hand', namespace: 'default', labels: { test: 'endpoint' } },
      subsets: [{ addresses: [{ ip: '10.0.0.24' }], ports: [{ name: 'http', port: 80 }] }],
    });
    await client.update('Endpoints', {
      ...((await client.get('Endpoints', 'default', 'by-hand')) as Endpoints),
      subsets: [{ addresses: [{ ip: '10.0.0.25' }], ports: [{ name: 'http', port: 80 }] }],
    });
    await manager.runUntilIdle();
    const kept = await client.get('Endpoints', 'default', 'by-hand');
    assert.equal(kept?.subsets?.[0]?.addresses?.[0]?.ip, '10.0.0.25');
    // A Service with a selector gets its own Endpoints, and when
    // it is deleted, its Endpoints go.
    await client.create('Service', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'web' }, ports: [{ port: 3000, targetPort: 80, protocol: 'TCP' }] },
    });
    await manager.runUntilIdle();
    assert.ok(await client.get('Endpoints', 'default', 'web'));
    await client.delete('Service', 'default', 'web');
    await manager.runUntilIdle();
    assert.equal(await client.get('Endpoints', 'default', 'web'), undefined);
    assert.ok(await client.get('Endpoints', 'default', 'by-hand'), 'the orphan stays');
  });
});
