import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeletServer, listenKubelet, parseKubeletPath } from '../lab/kubelet-server.js';
import { startApiServer, type RunningApiServer } from './daemon.js';
import { containerOf, kubeletPath, kubeletSocketPath, parseStreamPath } from './kubelet-proxy.js';

let dir: string;
let api: RunningApiServer;
let plainApi: RunningApiServer;
let kubelet: Server;
const seen: string[] = [];

function pod(name: string, nodeName: string | undefined, containers: string[]): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(nodeName === undefined ? {} : { nodeName }),
      containers: containers.map((c) => ({ name: c, image: 'agnhost' })),
    },
  };
}

async function call(server: RunningApiServer, path: string, init?: RequestInit): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    ...init,
    headers: {
      Authorization: `Bearer ${server.token}`,
      'Content-Type': 'application/json',
      ...(init?.headers as Record<string, string> | undefined),
    },
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svcnet-kubelet-proxy-'));
  kubelet = kubeletServer({
    containerLogs(target, _req, res) {
      seen.push(`logs ${target.namespace}/${target.pod}/${target.container ?? ''}`);
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(`line of ${target.container ?? ''} tail=${target.query.get('tailLines') ?? ''}\n`);
      return Promise.resolve();
    },
    stream(target, req, socket) {
      seen.push(`${target.endpoint} ${req.url ?? ''}`);
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n',
      );
      socket.pipe(socket);
    },
  });
  await listenKubelet(kubelet, kubeletSocketPath(dir, 'node-1'));
  api = await startApiServer({ listen: '127.0.0.1:0', insecureHttp: true, kubeletSocketDir: dir });
  plainApi = await startApiServer({ listen: '127.0.0.1:0', insecureHttp: true });
  for (const [server, body] of [
    [api, pod('web', 'node-1', ['web'])],
    [api, pod('two', 'node-1', ['a', 'b'])],
    [api, pod('pending', undefined, ['web'])],
    [api, pod('elsewhere', 'node-9', ['web'])],
    [plainApi, pod('web', 'node-1', ['web'])],
  ] as const) {
    const r = await call(server, '/api/v1/namespaces/default/pods', {
      method: 'POST',
      body: JSON.stringify(body),
    });
    assert.equal(r.status, 201, await r.text());
  }
});

after(async () => {
  await api.close();
  await plainApi.close();
  await new Promise((r) => kubelet.close(r));
  rmSync(dir, { recursive: true, force: true });
});

test('pods/log is the kubelet answer for the only container, query passed on', async () => {
  const r = await call(api, '/api/v1/namespaces/default/pods/web/log?tailLines=5');
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'line of web tail=5\n');
  assert.ok(seen.includes('logs default/web/web'));
});

test('pods/log of a two-container Pod needs a container, as kube-apiserver says it', async () => {
  const r = await call(api, '/api/v1/namespaces/default/pods/two/log');
  assert.equal(r.status, 400);
  assert.match(
    ((await r.json()) as { message: string }).message,
    /a container name must be specified for pod two, choose one of: \[a b\]/,
  );
  const b = await call(api, '/api/v1/namespaces/default/pods/two/log?container=b');
  assert.equal(await b.text(), 'line of b tail=\n');
  const wrong = await call(api, '/api/v1/namespaces/default/pods/two/log?container=c');
  assert.equal(wrong.status, 400);
  assert.match(await wrong.text(), /container c is not valid for pod two/);
});

test('pods/log: no node yet, an unreachable node, an API server without kubelets: 400/500', async () => {
  const pending = await call(api, '/api/v1/namespaces/default/pods/pending/log');
  assert.equal(pending.status, 400);
  assert.match(await pending.text(), /pod pending does not have a host assigned/);
  const gone = await call(api, '/api/v1/namespaces/default/pods/elsewhere/log');
  assert.equal(gone.status, 500);
  assert.match(await gone.text(), /node node-9: kubelet not reachable/);
  const plain = await call(plainApi, '/api/v1/namespaces/default/pods/web/log');
  assert.equal(plain.status, 400);
  assert.match(await plain.text(), /--kubelet-socket-dir/);
});

/** An upgrade request on the API server: the status line and what came back after it. */
function upgrade(
  server: RunningApiServer,
  path: string,
  token = server.token,
): Promise<{ status: number; echoed: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(path, server.url);
    const req = request({
      host: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      headers: { Authorization: `Bearer ${token}`, Connection: 'Upgrade', Upgrade: 'test' },
    });
    req.once('upgrade', (res, socket) => {
      socket.once('data', (d: Buffer) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, echoed: d.toString() });
      });
      socket.write('ping');
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, echoed: body });
      });
    });
    req.once('error', reject);
    req.end();
  });
}

test('exec and portforward upgrades reach the kubelet with its paths and pipe both ways', async () => {
  const exec = await upgrade(
    api,
    '/api/v1/namespaces/default/pods/web/exec?command=hostname&stdout=true',
  );
  assert.deepEqual(exec, { status: 101, echoed: 'ping' });
  assert.ok(seen.includes('exec /exec/default/web/web?command=hostname&stdout=true'), seen.join());
  const pf = await upgrade(api, '/api/v1/namespaces/default/pods/web/portforward?ports=80');
  assert.deepEqual(pf, { status: 101, echoed: 'ping' });
  assert.ok(seen.includes('portForward /portForward/default/web?ports=80'));
});

test('upgrades: a wrong token is 401, an unknown Pod 404, no kubelets 400 (as Status JSON)', async () => {
  const bad = await upgrade(api, '/api/v1/namespaces/default/pods/web/exec?command=x', 'nope');
  assert.equal(bad.status, 401);
  const missing = await upgrade(api, '/api/v1/namespaces/default/pods/nope/exec?command=x');
  assert.equal(missing.status, 404);
  assert.match(missing.echoed, /"reason":"NotFound"/);
  const plain = await upgrade(plainApi, '/api/v1/namespaces/default/pods/web/exec?command=x');
  assert.equal(plain.status, 400);
  assert.match(plain.echoed, /--kubelet-socket-dir/);
  const noUpgrade = await call(api, '/api/v1/namespaces/default/pods/web/exec?command=x', {
    method: 'POST',
  });
  assert.equal(noUpgrade.status, 400);
  assert.match(await noUpgrade.text(), /Upgrade request required/);
});

test('paths: the kubelet API and the API server shapes parse both ways', () => {
  assert.equal(
    kubeletPath('log', 'ns', 'p', 'c', new URLSearchParams('follow=true&container=c')),
    '/containerLogs/ns/p/c?follow=true',
  );
  assert.deepEqual(parseKubeletPath('/containerLogs/ns/p/c?follow=true'), {
    endpoint: 'containerLogs',
    namespace: 'ns',
    pod: 'p',
    container: 'c',
    query: new URLSearchParams('follow=true'),
  });
  assert.equal(parseKubeletPath('/portForward/ns/p/extra'), undefined);
  assert.equal(parseKubeletPath('/exec/ns/p'), undefined);
  assert.equal(parseKubeletPath('/metrics'), undefined);
  assert.equal(parseStreamPath('/api/v1/namespaces/a/pods/b/log'), undefined);
  assert.equal(parseStreamPath('/api/v1/namespaces/a/pods/b/attach?x=1')?.sub, 'attach');
  const annotated = {
    metadata: {
      name: 'p',
      annotations: { 'kubectl.kubernetes.io/default-container': 'b' },
    },
    spec: { containers: [{ name: 'a' }, { name: 'b' }] },
  } as unknown as Parameters<typeof containerOf>[0];
  assert.equal(containerOf(annotated, null), 'b');
});
