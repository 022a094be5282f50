// client.ts's informer against a loopback HTTP server: the resource table's paths, list then
// watch with the selectors and resourceVersion, events in order with the old object, resuming
// after the server ends a watch, relisting after 410 Gone, the backoff and its reset, and a
// server without ServiceCIDRs (404) as an error that isResourceNotServed recognises.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from './client.js';
import { serverKubeConfig, type KubeConfig } from './kubeconfig.js';
import { isResourceNotServed } from './service-cidr.js';
import type { KubeObject } from './types.js';

const SPECS = {
  SERVICES: client.SERVICES,
  ENDPOINT_SLICES: client.ENDPOINT_SLICES,
  NODES: client.NODES,
  PODS: client.PODS,
  ENDPOINTS: client.ENDPOINTS,
  DEPLOYMENTS: client.DEPLOYMENTS,
  REPLICA_SETS: client.REPLICA_SETS,
  STATEFUL_SETS: client.STATEFUL_SETS,
  NAMESPACES: client.NAMESPACES,
  SERVICE_CIDRS: client.SERVICE_CIDRS,
};

/** A config for the loopback test server. */
function kubeConfigFor(server: Server): KubeConfig {
  return serverKubeConfig(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
    token: 't',
  });
}

test("each ResourceSpec is its kind's collection path", () => {
  assert.deepEqual(Object.fromEntries(Object.entries(SPECS).map(([k, v]) => [k, v.path])), {
    SERVICES: '/api/v1/services',
    ENDPOINT_SLICES: '/apis/discovery.k8s.io/v1/endpointslices',
    NODES: '/api/v1/nodes',
    PODS: '/api/v1/pods',
    ENDPOINTS: '/api/v1/endpoints',
    DEPLOYMENTS: '/apis/apps/v1/deployments',
    REPLICA_SETS: '/apis/apps/v1/replicasets',
    STATEFUL_SETS: '/apis/apps/v1/statefulsets',
    NAMESPACES: '/api/v1/namespaces',
    SERVICE_CIDRS: '/apis/networking.k8s.io/v1/servicecidrs',
  });
});

const obj = (name: string, rv: string, extra: object = {}): object => ({
  metadata: { name, namespace: 'default', resourceVersion: rv },
  ...extra,
});

test('an informer lists with its selectors, watches from the list, follows events and relists after 410 Gone', async () => {
  const seen: string[] = [];
  let lists = 0;
  let watches = 0;
  const server = createServer((req, res) => {
    const url = req.url ?? '';
    seen.push(url);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!url.includes('watch=1')) {
      lists++;
      res.end(
        JSON.stringify(
          lists === 1
            ? { metadata: { resourceVersion: '7' }, items: [obj('a', '5'), obj('b', '6')] }
            : { metadata: { resourceVersion: '20' }, items: [obj('a', '9'), obj('c', '19')] },
        ),
      );
      return;
    }
    watches++;
    const ev = (type: string, o: object): string => `${JSON.stringify({ type, object: o })}\n`;
    if (watches === 1) {
      // A modification split across writes, a deletion, then the server ends the watch.
      const m = ev('MODIFIED', obj('a', '8', { spec: { x: 1 } }));
      res.write(m.slice(0, 10));
      setTimeout(() => {
        res.write(
          m.slice(10) +
            ev('DELETED', obj('b', '9')) +
            ev('BOOKMARK', { metadata: { resourceVersion: '10' } }),
        );
        res.end();
      }, 20).unref();
    } else if (watches === 2) {
      res.end(
        ev('ERROR', {
          kind: 'Status',
          code: 410,
          reason: 'Expired',
          message: 'too old resource version',
        }),
      );
    } else res.flushHeaders(); // open until the informer stops
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const informer = client.createInformer<KubeObject>(kubeConfigFor(server), client.SERVICES, {
    labelSelector: 'app=web',
    fieldSelector: 'metadata.name=x',
  });
  const events: string[] = [];
  let watching!: () => void;
  const third = new Promise<void>((r) => (watching = r));
  informer.addHandlers({
    onAdd: (o) => {
      events.push(`add ${o.metadata?.name ?? ''}@${o.metadata?.resourceVersion ?? ''}`);
      if (o.metadata?.name === 'c') watching();
    },
    onUpdate: (o, n) =>
      events.push(
        `update ${n.metadata?.name ?? ''} ${o.metadata?.resourceVersion ?? ''}->${n.metadata?.resourceVersion ?? ''}`,
      ),
    onDelete: (o) => events.push(`delete ${o.metadata?.name ?? ''}`),
    onSynced: () => events.push('synced'),
    onError: (e) => events.push(`error ${String(e)}`),
  });
  try {
    await informer.start();
    assert.equal(informer.hasSynced(), true);
    await third;
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(events, [
      'add a@5',
      'add b@6',
      'synced',
      'update a 5->8',
      'delete b',
      // 410: relisted at once, no error, no backoff; a is newer, c is new, b stays gone
      'update a 8->9',
      'add c@19',
    ]);
    const sel = 'labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx';
    assert.equal(seen[0], `/api/v1/services?${sel}`);
    assert.match(
      seen[1] ?? '',
      new RegExp(
        `^/api/v1/services\\?${sel}&resourceVersion=7&allowWatchBookmarks=true&timeoutSeconds=\\d+&watch=1$`,
      ),
    );
    // The server's end of the first watch resumes from the bookmark, without a list.
    assert.match(seen[2] ?? '', /resourceVersion=10&/);
    assert.equal(seen[3], `/api/v1/services?${sel}`);
    assert.match(seen[4] ?? '', /resourceVersion=20&/);
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
      ['a', 'c'],
    );
  } finally {
    await informer.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a 404 for servicecidrs reaches the informer error handler as "not served"', async () => {
  const server = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'the server could not find the requested resource',
        reason: 'NotFound',
        code: 404,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kc = kubeConfigFor(server);
  const informer = client.createInformer(kc, client.SERVICE_CIDRS, { initialBackoffMs: 60_000 });
  try {
    const err = await new Promise<unknown>((resolve) => {
      informer.addHandlers({ onError: resolve });
      void informer.start();
    });
    assert.equal(isResourceNotServed(err), true, String(err));
  } finally {
    await informer.stop();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an informer whose watch reopens after failures starts the next outage from the first delay', async () => {
  // The API server restarting: list once, then a watch that ends, three refused watches, a
  // watch that opens (no list: it resumes from its resourceVersion) and ends, then refusals.
  let watches = 0;
  const server = createServer((req, res) => {
    if (!(req.url ?? '').includes('watch=1')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ metadata: { resourceVersion: '7' }, items: [] }));
      return;
    }
    watches++;
    if (watches === 1 || watches === 5) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      setTimeout(() => res.end(), watches === 1 ? 0 : 200).unref();
      return;
    }
    if (watches > 6) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      return; // stays open until the informer stops
    }
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 503 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const informer = client.createInformer(kubeConfigFor(server), client.SERVICES, {
    initialBackoffMs: 50,
    maxBackoffMs: 1000,
  });
  const errors: string[] = [];
  try {
    await new Promise<void>((resolve) => {
      informer.addHandlers({
        onError: (e) => {
          const { failures, retryInMs } = e as { failures: number; retryInMs: number };
          errors.push(`${String(failures)}@${String(retryInMs)}`);
          if (errors.length === 4) resolve();
        },
      });
      void informer.start();
    });
    // Without the reset the fourth would be failure 4, retrying in 400 ms.
    assert.deepEqual(errors, ['1@50', '2@100', '3@200', '1@50']);
  } finally {
    await informer.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
