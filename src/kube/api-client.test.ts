import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { collectionPath, listAll } from './api-client.js';

test('collection paths: core kinds under /api/v1, the others under their group', () => {
  assert.equal(collectionPath('Pod'), '/api/v1/pods');
  assert.equal(collectionPath('Node'), '/api/v1/nodes');
  assert.equal(collectionPath('Deployment'), '/apis/apps/v1/deployments');
  assert.equal(collectionPath('EndpointSlice'), '/apis/discovery.k8s.io/v1/endpointslices');
});

async function serve(
  handler: Parameters<typeof createServer>[1],
): Promise<{ kc: k8s.KubeConfig; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
        // client-node refuses http:// servers otherwise
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 'secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return { kc, server };
}

test('listAll: one GET with the kubeconfig token, the items as sent', async () => {
  const seen: string[] = [];
  const { kc, server } = await serve((req, res) => {
    seen.push(`${req.url ?? ''} ${req.headers.authorization ?? ''}`);
    res.end(JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'a' } }] }));
  });
  try {
    const pods = await listAll(kc, 'Pod', 2000);
    assert.deepEqual(pods, [{ metadata: { name: 'a' } }]);
    assert.deepEqual(seen, ['/api/v1/pods Bearer secret']);
  } finally {
    server.close();
  }
});

test('listAll: an error status rejects naming the path; silence rejects after the timeout', async () => {
  const { kc, server } = await serve((req, res) => {
    if (req.url === '/api/v1/nodes') {
      res.statusCode = 403;
      res.end('forbidden');
    }
    // anything else: never answered
  });
  try {
    await assert.rejects(listAll(kc, 'Node', 2000), /GET \/api\/v1\/nodes: 403 forbidden/);
    await assert.rejects(
      listAll(kc, 'Service', 200),
      /GET \/api\/v1\/services: no answer in 200 ms/,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
