import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectionPath, HttpKubeClient, listAll } from './api-client.js';
import { serverKubeConfig, type KubeConfig } from './kubeconfig.js';
import { KubeApiError } from './rest.js';

test('collection paths: core kinds under /api/v1, the others under their group', () => {
  assert.equal(collectionPath('Pod'), '/api/v1/pods');
  assert.equal(collectionPath('Node'), '/api/v1/nodes');
  assert.equal(collectionPath('Deployment'), '/apis/apps/v1/deployments');
  assert.equal(collectionPath('EndpointSlice'), '/apis/discovery.k8s.io/v1/endpointslices');
});

async function serve(
  handler: Parameters<typeof createServer>[1],
): Promise<{ kc: KubeConfig; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { kc: serverKubeConfig(`http://127.0.0.1:${String(port)}`, { token: 'secret' }), server };
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
    await assert.rejects(listAll(kc, 'Node', 2000), /GET \/api\/v1\/nodes: HTTP 403: forbidden/);
    await assert.rejects(
      listAll(kc, 'Service', 200),
      /GET \/api\/v1\/services: no answer in 200 ms/,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('HttpKubeClient: each verb on its path, errors by status, bind falls back to a patch', async () => {
  const seen: string[] = [];
  const { kc, server } = await serve((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push(
        `${req.method ?? ''} ${req.url ?? ''} ${req.headers['content-type'] ?? ''} ${body}`,
      );
      res.setHeader('content-type', 'application/json');
      if (req.url?.endsWith('/missing')) {
        res.statusCode = 404;
        res.end(
          JSON.stringify({
            kind: 'Status',
            reason: 'NotFound',
            message: 'pods "missing" not found',
            code: 404,
          }),
        );
      } else if (req.url?.endsWith('/binding')) {
        res.statusCode = 405;
        res.end('{}');
      } else if (req.method === 'POST' && req.url?.includes('/services')) {
        res.statusCode = 409;
        res.end(
          JSON.stringify({
            kind: 'Status',
            reason: 'AlreadyExists',
            message: 'services "s" already exists',
            code: 409,
          }),
        );
      } else
        res.end(
          JSON.stringify(
            req.method === 'GET' && !req.url?.includes('/pods/')
              ? { items: [{ metadata: { name: 'a' } }] }
              : { metadata: { name: 'a' } },
          ),
        );
    });
  });
  const c = new HttpKubeClient(kc);
  try {
    assert.equal(await c.get('Pod', 'default', 'missing'), undefined);
    assert.deepEqual(await c.get('Pod', 'default', 'a'), {
      metadata: { name: 'a' },
      kind: 'Pod',
      apiVersion: 'v1',
    });
    assert.equal(
      (await c.list('Deployment', { namespace: 'web', labelSelector: 'app=x' })).length,
      1,
    );
    await assert.rejects(
      c.create('Service', { metadata: { name: 's', namespace: 'default' } }),
      (e: unknown) =>
        e instanceof KubeApiError &&
        e.code === 'CONFLICT' &&
        e.reason === 'AlreadyExists' &&
        /already exists/.test(e.message),
    );
    await c.updateStatus('Node', { metadata: { name: 'n1' } });
    await c.delete('Pod', 'default', 'a', { gracePeriodSeconds: 0 });
    await c.bind('default', 'a', 'n1');
    assert.deepEqual(
      seen.map((l) => l.split(' ').slice(0, 3).join(' ')),
      [
        'GET /api/v1/namespaces/default/pods/missing ',
        'GET /api/v1/namespaces/default/pods/a ',
        'GET /apis/apps/v1/namespaces/web/deployments?labelSelector=app%3Dx ',
        'POST /api/v1/namespaces/default/services application/json',
        'PUT /api/v1/nodes/n1/status application/json',
        'DELETE /api/v1/namespaces/default/pods/a application/json',
        'POST /api/v1/namespaces/default/pods/a/binding application/json',
        'PATCH /api/v1/namespaces/default/pods/a application/merge-patch+json',
      ],
    );
    assert.match(seen[5] ?? '', /"gracePeriodSeconds":0/);
    assert.match(seen[7] ?? '', /\{"spec":\{"nodeName":"n1"\}\}/);
  } finally {
    kc.close();
    server.close();
  }
});
