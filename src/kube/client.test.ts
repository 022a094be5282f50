// The resource table of client.ts against a loopback HTTP server: every spec's list method
// asks for the spec's own watch path (with the selectors), and its model name reads the
// answer back, so a row whose kind, plural or group disagree fails here. A server without
// ServiceCIDRs (404) gives an informer error that isResourceNotServed recognises.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import * as client from './client.js';
import { isResourceNotServed } from './service-cidr.js';
import { toWire } from './wire.js';

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

/** A kubeconfig for the loopback test server (plain HTTP, as client-node allows it). */
function kubeConfigFor(server: Server): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

test('each ResourceSpec lists its own path with the selectors and reads items as its model', async () => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        metadata: { resourceVersion: '7' },
        items: [{ metadata: { name: 'x', creationTimestamp: '2026-01-02T03:04:05.000Z' } }],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kc = kubeConfigFor(server);
  try {
    for (const [name, spec] of Object.entries(SPECS)) {
      seen.length = 0;
      const list = await spec.list(kc, 'app=web', 'metadata.name=x');
      assert.deepEqual(
        seen,
        [`${spec.path}?fieldSelector=metadata.name%3Dx&labelSelector=app%3Dweb`],
        name,
      );
      assert.equal(list.metadata?.resourceVersion, '7', name);
      assert.deepEqual(
        JSON.parse(JSON.stringify(list.items.map((i) => toWire(i, spec.model)))),
        [{ metadata: { name: 'x', creationTimestamp: '2026-01-02T03:04:05.000Z' } }],
        name,
      );
    }
  } finally {
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
    if (!(req.url ?? '').includes('watch=true')) {
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

test('one keep-alive agent per KubeConfig: requests reuse connections instead of a TLS handshake each', async () => {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', skipTLSVerify: false }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const agentOf = async (k: k8s.KubeConfig): Promise<unknown> => {
    const opts: { agent?: unknown } = {};
    await k.applyToHTTPSOptions(opts);
    return opts.agent;
  };
  const before = [await agentOf(kc), await agentOf(kc)];
  assert.notEqual(before[0], before[1], "client-node's own: a new agent per request");
  client.reuseConnections(kc);
  const a = (await agentOf(kc)) as { keepAlive?: boolean };
  assert.equal(await agentOf(kc), a);
  assert.equal(a.keepAlive, true);
});
