import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { newTestApi, newTestApp } from './testing.js';

const TOKEN = 'test-token';
const TABLE =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const V2 =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
const V2BETA1 =
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

type Json = Record<string, unknown>;

/** Reads `a.b[0].c` out of parsed JSON. */
function q(o: unknown, path: string): unknown {
  let cur = o;
  for (const part of path.split(/\.|(?=\[)/)) {
    if (part === '') continue;
    const idx = /^\[(\d+)\]$/.exec(part);
    if (idx) cur = Array.isArray(cur) ? (cur as unknown[])[Number(idx[1])] : undefined;
    else cur = typeof cur === 'object' && cur !== null ? (cur as Json)[part] : undefined;
  }
  return cur;
}

function arr(o: unknown, path: string): Json[] {
  const v = q(o, path);
  return Array.isArray(v) ? (v as Json[]) : [];
}

function str(o: unknown, path: string): string {
  const v = q(o, path);
  return typeof v === 'string' ? v : '';
}

function setup(historySize?: number) {
  const api = newTestApi(historySize !== undefined ? { historySize } : {});
  const app = newTestApp(api, TOKEN);
  const req = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const init: RequestInit = {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', ...headers },
    };
    if (body !== undefined)
      init.body =
        body instanceof Uint8Array ? body : typeof body === 'string' ? body : JSON.stringify(body);
    const res = await app.request(path, init);
    return res;
  };
  const json = async (...args: Parameters<typeof req>) => {
    const res = await req(...args);
    return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
  };
  return { api, app, req, json };
}

const service = (name: string, extra: object = {}) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }], ...extra },
});

describe('API server over HTTP', () => {
  it('requires the bearer token except on health and version endpoints', async () => {
    const { app } = setup();
    const denied = await app.request('/api/v1/namespaces');
    assert.equal(denied.status, 401);
    assert.equal(((await denied.json()) as Json).reason, 'Unauthorized');
    const wrong = await app.request('/api/v1/namespaces', {
      headers: { Authorization: 'Bearer nope' },
    });
    assert.equal(wrong.status, 401);
    assert.equal((await app.request('/healthz')).status, 200);
    assert.equal((await app.request('/version')).status, 200);
  });

  it('negotiates aggregated discovery v2, v2beta1 and legacy', async () => {
    const { json } = setup();
    const v2 = await json('GET', '/apis', undefined, { Accept: V2 });
    assert.equal(
      v2.headers.get('content-type'),
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    const apps = arr(v2.body, 'items').find((g) => q(g, 'metadata.name') === 'apps');
    const deploy = arr(apps, 'versions[0].resources').find((r) => r.resource === 'deployments');
    assert.deepEqual(q(deploy, 'categories'), ['all']);
    assert.deepEqual(q(deploy, 'shortNames'), ['deploy']);
    assert.ok(
      arr(deploy, 'subresources').some(
        (x) => x.subresource === 'scale' && q(x, 'responseKind.kind') === 'Scale',
      ),
    );
    const beta = await json('GET', '/api', undefined, { Accept: V2BETA1 });
    assert.equal(q(beta.body, 'apiVersion'), 'apidiscovery.k8s.io/v2beta1');
    const svc = arr(beta.body, 'items[0].versions[0].resources').find(
      (r) => r.resource === 'services',
    );
    assert.deepEqual(q(svc, 'shortNames'), ['svc']);
    const legacy = await json('GET', '/api', undefined, { Accept: 'application/json' });
    assert.equal(q(legacy.body, 'kind'), 'APIVersions');
    const list = await json('GET', '/apis/discovery.k8s.io/v1');
    assert.ok(
      arr(list.body, 'resources').some(
        (r) => r.name === 'endpointslices' && r.kind === 'EndpointSlice',
      ),
    );
  });

  it('serves OpenAPI v3 with fieldValidation on every PATCH', async () => {
    const { json } = setup();
    const root = await json('GET', '/openapi/v3');
    const url = str(q(root.body, 'paths'), 'apis/apps/v1.serverRelativeURL');
    assert.match(url, /^\/openapi\/v3\/apis\/apps\/v1\?hash=/);
    const doc = await json('GET', url);
    const patch = q(
      (q(doc.body, 'paths') as Json)['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'],
      'patch',
    );
    assert.deepEqual((patch as Json)['x-kubernetes-group-version-kind'], {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
    });
    assert.ok(arr(patch, 'parameters').some((p) => p.name === 'fieldValidation'));
  });

  it('creates, lists as a Table and reports 422 with causes', async () => {
    const { json } = setup();
    const created = await json('POST', '/api/v1/namespaces/default/services', service('web'));
    assert.equal(created.status, 201);
    assert.match(str(created.body, 'spec.clusterIP'), /^10\.(9[6-9]|10[0-9]|11[01])\./);
    const table = await json('GET', '/api/v1/namespaces/default/services?limit=500', undefined, {
      Accept: TABLE,
    });
    assert.equal(q(table.body, 'kind'), 'Table');
    const web = arr(table.body, 'rows').find((r) => q(r, 'cells[0]') === 'web');
    assert.deepEqual((q(web, 'cells') as unknown[]).slice(1, 5), [
      'ClusterIP',
      q(created.body, 'spec.clusterIP'),
      '<none>',
      '80/TCP',
    ]);
    const bad = await json(
      'POST',
      '/api/v1/namespaces/default/services',
      service('bad', { ports: [{ port: 0 }] }),
    );
    assert.equal(bad.status, 422);
    assert.equal(q(bad.body, 'kind'), 'Status');
    assert.equal(q(bad.body, 'reason'), 'Invalid');
    assert.deepEqual(q(bad.body, 'details.causes[0]'), {
      reason: 'FieldValueInvalid',
      field: 'spec.ports[0].port',
      message: 'Invalid value: 0: must be 1-65535',
    });
    assert.equal((await json('GET', '/api/v1/namespaces/default/services/bad')).status, 404);
  });

  it('rejects a stale update with 409 and patches in every patch type', async () => {
    const { json } = setup();
    const created = await json('POST', '/api/v1/namespaces/default/services', service('web'));
    const upd = await json('PUT', '/api/v1/namespaces/default/services/web', {
      ...created.body,
      metadata: { ...(q(created.body, 'metadata') as Json), labels: { a: 'b' } },
    });
    assert.equal(upd.status, 200);
    const stale = await json('PUT', '/api/v1/namespaces/default/services/web', created.body);
    assert.equal(stale.status, 409);
    assert.equal(q(stale.body, 'reason'), 'Conflict');
    const merge = await json(
      'PATCH',
      '/api/v1/namespaces/default/services/web',
      { metadata: { labels: { c: 'd' } } },
      { 'Content-Type': 'application/merge-patch+json' },
    );
    assert.deepEqual(q(merge.body, 'metadata.labels'), { a: 'b', c: 'd' });
    const smp = await json(
      'PATCH',
      '/api/v1/namespaces/default/services/web',
      { spec: { ports: [{ port: 80, name: 'http' }] } },
      { 'Content-Type': 'application/strategic-merge-patch+json' },
    );
    assert.deepEqual(q(smp.body, 'spec.ports'), [
      { port: 80, targetPort: 8080, protocol: 'TCP', name: 'http' },
    ]);
    const jp = await json(
      'PATCH',
      '/api/v1/namespaces/default/services/web',
      [{ op: 'replace', path: '/spec/sessionAffinity', value: 'ClientIP' }],
      { 'Content-Type': 'application/json-patch+json' },
    );
    assert.equal(q(jp.body, 'spec.sessionAffinityConfig.clientIP.timeoutSeconds'), 10800);
    const ssa = await json(
      'PATCH',
      '/api/v1/namespaces/default/services/ssa?fieldManager=kubectl&force=false',
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: ssa\nspec:\n  ports:\n  - port: 53\n    protocol: UDP\n',
      { 'Content-Type': 'application/apply-patch+yaml' },
    );
    assert.equal(ssa.status, 201);
    assert.equal(q(ssa.body, 'spec.ports[0].protocol'), 'UDP');
  });

  it('scales a deployment through the scale subresource', async () => {
    const { json } = setup();
    const deploy = {
      metadata: { name: 'd' },
      spec: {
        selector: { matchLabels: { app: 'd' } },
        template: {
          metadata: { labels: { app: 'd' } },
          spec: { containers: [{ name: 'c', image: 'nginx' }] },
        },
      },
    };
    assert.equal(
      (await json('POST', '/apis/apps/v1/namespaces/default/deployments', deploy)).status,
      201,
    );
    const scale = await json(
      'PATCH',
      '/apis/apps/v1/namespaces/default/deployments/d/scale',
      { spec: { replicas: 2 } },
      { 'Content-Type': 'application/merge-patch+json' },
    );
    assert.equal(q(scale.body, 'kind'), 'Scale');
    assert.equal(q(scale.body, 'apiVersion'), 'autoscaling/v1');
    assert.equal(q(scale.body, 'spec.replicas'), 2);
    assert.equal(q(scale.body, 'status.selector'), 'app=d');
    const got = await json('GET', '/apis/apps/v1/namespaces/default/deployments/d');
    assert.equal(q(got.body, 'spec.replicas'), 2);
    assert.equal(q(got.body, 'metadata.generation'), 2);
  });

  it('accepts kubectl 1.33 protobuf bodies and answers JSON', async () => {
    const { json } = setup();
    const body = new Uint8Array(
      readFileSync(new URL('testdata/kubectl-1.33-create-deployment.pb', import.meta.url)),
    );
    const res = await json(
      'POST',
      '/apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-create&fieldValidation=Strict',
      body,
      {
        'Content-Type': 'application/vnd.kubernetes.protobuf',
        Accept: 'application/vnd.kubernetes.protobuf,application/json',
      },
    );
    assert.equal(res.status, 201);
    assert.equal(q(res.body, 'spec.replicas'), 3);
    assert.equal(q(res.body, 'spec.template.spec.containers[0].image'), 'nginx:1.25');
    const dup = await json('POST', '/apis/apps/v1/namespaces/default/deployments', body, {
      'Content-Type': 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(dup.status, 409);
    assert.equal(q(dup.body, 'message'), 'deployments.apps "web" already exists');
  });

  it('streams watch events (Table rows for kubectl get -w) and 410 for a too-old resourceVersion', async () => {
    const { req, json } = setup(4);
    const list = await json('GET', '/api/v1/namespaces/default/pods', undefined, { Accept: TABLE });
    const res = await req(
      'GET',
      `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${str(list.body, 'metadata.resourceVersion')}`,
      undefined,
      { Accept: TABLE },
    );
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await json('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'p1' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    await json('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'p2' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    let text = '';
    while (text.split('\n').length < 3) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    const [first, second] = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    assert.equal(q(first, 'type'), 'ADDED');
    assert.equal(q(first, 'object.kind'), 'Table');
    assert.equal(q(first, 'object.columnDefinitions[0].name'), 'Name');
    assert.deepEqual((q(first, 'object.rows[0].cells') as unknown[]).slice(0, 3), [
      'p1',
      '0/1',
      'Pending',
    ]);
    assert.deepEqual(q(second, 'object.columnDefinitions'), []);
    assert.equal(q(second, 'object.rows[0].cells[0]'), 'p2');

    for (let i = 3; i < 8; i++)
      await json('POST', '/api/v1/namespaces/default/pods', {
        metadata: { name: `p${i}` },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      });
    const old = await req(
      'GET',
      `/api/v1/pods?watch=true&resourceVersion=${str(list.body, 'metadata.resourceVersion')}`,
    );
    const line = JSON.parse((await old.text()).trim()) as Json;
    assert.equal(q(line, 'type'), 'ERROR');
    assert.equal(q(line, 'object.code'), 410);
    assert.equal(q(line, 'object.reason'), 'Expired');
  });
});
