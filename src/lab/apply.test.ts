import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serverKubeConfig } from '../kube/kubeconfig.js';
import type { KubeObject } from '../kube/types.js';
import { applyObjects, carryOver } from './apply.js';

const live = {
  kind: 'Service',
  metadata: { name: 's', resourceVersion: '42' },
  spec: {
    type: 'NodePort',
    clusterIP: '10.96.3.4',
    clusterIPs: ['10.96.3.4'],
    ports: [{ port: 80, protocol: 'TCP', nodePort: 31234 }],
  },
};

test('a re-applied Service keeps its allocated clusterIP and nodePorts', () => {
  const next = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { type: 'NodePort', ports: [{ port: 80 }, { port: 81 }] },
  });
  // The live object's allocations (resourceVersion, clusterIP(s), port 80's nodePort) on the
  // new ports; the new port 81 gets none.
  assert.deepEqual(next, {
    ...live,
    spec: { ...live.spec, ports: [{ port: 80, nodePort: 31234 }, { port: 81 }] },
  });
});

test('a type change drops node ports; ExternalName takes no clusterIP', () => {
  const toCluster = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { ports: [{ port: 80 }] },
  });
  assert.deepEqual((toCluster.spec as { ports: unknown }).ports, [{ port: 80 }]);
  const toExternal = carryOver(live, {
    kind: 'Service',
    metadata: { name: 's' },
    spec: { type: 'ExternalName', externalName: 'example.org' },
  });
  assert.equal((toExternal.spec as { clusterIP?: string }).clusterIP, undefined);
});

test('other kinds only get the live resourceVersion', () => {
  assert.deepEqual(
    carryOver(
      { metadata: { resourceVersion: '7' }, spec: { replicas: 1 } },
      { kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 3 } },
    ),
    { kind: 'Deployment', metadata: { name: 'd', resourceVersion: '7' }, spec: { replicas: 3 } },
  );
});

test('a replace that conflicts with a controller write is read and tried again', async () => {
  // A fake API server: the Deployment exists; the first replace finds it modified (409).
  const puts: string[] = [];
  let version = 1;
  const server = createServer((req, res) => {
    const send = (code: number, body: object): true => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      return true;
    };
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const obj = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default', resourceVersion: String(version) },
        spec: { replicas: 1 },
      };
      if (req.method === 'GET' && req.url?.startsWith('/apis/apps/v1'))
        return send(200, req.url.includes('/deployments/web') ? obj : apiResources());
      if (req.method === 'GET' && req.url === '/apis') return send(200, { groups: [] });
      if (req.method === 'POST') return send(409, conflict('AlreadyExists'));
      if (req.method === 'PUT') {
        const sent = JSON.parse(body) as { metadata: { resourceVersion: string } };
        puts.push(sent.metadata.resourceVersion);
        if (puts.length === 1) {
          version++;
          return send(409, conflict('Conflict'));
        }
        return send(200, sent);
      }
      return send(404, conflict('NotFound'));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const kc = serverKubeConfig(`http://127.0.0.1:${String(port)}`);
    const done = await applyObjects(kc, [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: { replicas: 10 },
      } as KubeObject,
    ]);
    assert.deepEqual(done, [{ ref: 'deployment/web -n default', action: 'configured' }]);
    // The second replace carried the resourceVersion of a fresh read.
    assert.deepEqual(puts, ['1', '2']);
  } finally {
    server.close();
  }
});

function conflict(reason: string): object {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code: 409 };
}

function apiResources(): object {
  return {
    kind: 'APIResourceList',
    groupVersion: 'apps/v1',
    resources: [{ name: 'deployments', namespaced: true, kind: 'Deployment', verbs: ['get'] }],
  };
}
