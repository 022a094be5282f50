import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ServiceSpec } from '../kube/types.js';
import { SERVICES } from './resources.js';
import { createApiServer } from './server.js';
import { newTestApi, type TestApi } from './testing.js';

// Every change of spec.type, through every way the server updates a Service, against what
// kube-apiserver stores and allocates (strategy.go dropTypeDependentFields, storage/alloc.go).

const TOKEN = 't';
const PATH = '/api/v1/namespaces/default/services';

type Shape = 'ClusterIP' | 'Headless' | 'NodePort' | 'LoadBalancer' | 'LocalLB' | 'ExternalName';
type Method = 'put' | 'merge' | 'strategic' | 'json' | 'apply';
type Json = Record<string, unknown>;
interface Svc {
  spec: ServiceSpec;
  status?: Json;
}

const SHAPES: readonly Shape[] = [
  'ClusterIP',
  'Headless',
  'NodePort',
  'LoadBalancer',
  'LocalLB',
  'ExternalName',
];
const METHODS: readonly Method[] = ['put', 'merge', 'strategic', 'json', 'apply'];

/** The type fields of each shape, as a client writes them. */
const FIELDS: Record<Shape, Json> = {
  ClusterIP: { type: 'ClusterIP' },
  Headless: { type: 'ClusterIP', clusterIP: 'None' },
  NodePort: { type: 'NodePort' },
  LoadBalancer: { type: 'LoadBalancer' },
  LocalLB: { type: 'LoadBalancer', externalTrafficPolicy: 'Local' },
  ExternalName: { type: 'ExternalName', externalName: 'example.com' },
};

const hasNodePorts = (s: Shape): boolean =>
  s === 'NodePort' || s === 'LoadBalancer' || s === 'LocalLB';
const hasIP = (s: Shape): boolean => s !== 'ExternalName' && s !== 'Headless';

/** What the client sets (undefined: removes) to turn `from` into `to`. */
function change(from: Shape, to: Shape): Json {
  const out: Json = { ...FIELDS[to] };
  if (from === 'ExternalName') out.externalName = undefined;
  if (from === 'LocalLB' && to === 'LoadBalancer') out.externalTrafficPolicy = 'Cluster';
  return out;
}

function setup(): {
  api: TestApi;
  call: (m: string, p: string, b: unknown, ct?: string) => Promise<{ status: number; body: Json }>;
} {
  const api = newTestApi();
  const app = createApiServer({ store: api.store, token: TOKEN, now: () => api.clock.now });
  const call = async (method: string, path: string, body: unknown, ct = 'application/json') => {
    const init: RequestInit = {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': ct },
    };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.request(path, init);
    return { status: res.status, body: (await res.json()) as Json };
  };
  return { api, call };
}

function manifest(name: string, fields: Json): Json {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }], ...fields },
  };
}

/** Sends the type change `fields` by `method`. */
async function update(
  call: ReturnType<typeof setup>['call'],
  name: string,
  method: Method,
  fields: Json,
): Promise<{ status: number; body: Json }> {
  const url = `${PATH}/${name}`;
  const nullFor = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v ?? null]));
  switch (method) {
    case 'put': {
      const got = (await call('GET', url, undefined)).body;
      const spec = { ...(got.spec as Json), ...fields };
      for (const [k, v] of Object.entries(fields))
        if (v === undefined) Reflect.deleteProperty(spec, k);
      return call('PUT', url, { ...got, spec });
    }
    case 'merge':
      return call('PATCH', url, { spec: nullFor }, 'application/merge-patch+json');
    case 'strategic':
      return call('PATCH', url, { spec: nullFor }, 'application/strategic-merge-patch+json');
    case 'json':
      return call(
        'PATCH',
        url,
        Object.entries(fields).map(([k, v]) =>
          v === undefined
            ? { op: 'remove', path: `/spec/${k}` }
            : { op: 'add', path: `/spec/${k}`, value: v },
        ),
        'application/json-patch+json',
      );
    case 'apply': {
      const kept = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
      return call(
        'PATCH',
        `${url}?fieldManager=test`,
        manifest(name, kept),
        'application/apply-patch+yaml',
      );
    }
  }
}

/** Creating another Service with `fields` succeeds: the value is free again. */
function assertFree(api: TestApi, fields: Json, what: string): void {
  assert.doesNotThrow(() => api.store.create(SERVICES, 'default', manifest('probe', fields)), what);
  api.store.delete(SERVICES, 'default', 'probe');
}

function inNodePortRange(p: number | undefined): boolean {
  return p !== undefined && p >= 30000 && p <= 32767;
}

describe('Service type changes as kube-apiserver makes them', () => {
  for (const from of SHAPES)
    for (const to of SHAPES) {
      if (from === to) continue;
      // clusterIP is immutable: ClusterIP <-> headless is not a type change.
      if (
        (from === 'ClusterIP' && to === 'Headless') ||
        (to === 'ClusterIP' && from === 'Headless')
      )
        continue;
      if (to === 'Headless' && from !== 'ExternalName') continue;
      for (const method of METHODS)
        it(`${from} -> ${to} by ${method}`, async () => {
          const { api, call } = setup();
          const old = api.store.create(
            SERVICES,
            'default',
            manifest('s', FIELDS[from]),
          ) as unknown as Svc;
          const o = old.spec;
          const oldNodePort = o.ports?.[0]?.nodePort;
          const res = await update(call, 's', method, change(from, to));

          if (from === 'Headless' && hasNodePorts(to)) {
            assert.equal(res.status, 422, JSON.stringify(res.body));
            const causes = (res.body.details as { causes: { field: string }[] }).causes;
            assert.deepEqual(
              causes.map((c) => c.field),
              ['spec.clusterIPs[0]'],
            );
            assert.equal(api.services.nodePorts.used, 0, 'nothing allocated by a refused update');
            return;
          }
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const stored = api.store.get(SERVICES, 'default', 's') as unknown as Svc;
          assert.deepEqual(res.body.spec, stored.spec, 'the response is what was stored');
          const s = stored.spec;
          const want = FIELDS[to];
          assert.equal(s.type, want.type);
          if (to === 'ExternalName') assert.equal(s.externalName, 'example.com');

          // cluster IP and IP family fields
          if (to === 'ExternalName') {
            assert.equal(s.clusterIP, undefined);
            assert.equal(s.clusterIPs, undefined);
            assert.equal(s.ipFamilies, undefined);
            assert.equal(s.ipFamilyPolicy, undefined);
          } else {
            if (to === 'Headless') assert.equal(s.clusterIP, 'None');
            else if (from === 'ExternalName')
              assert.match(s.clusterIP ?? '', /^10\.(9[6-9]|10[0-9]|11[01])\./);
            else assert.equal(s.clusterIP, o.clusterIP);
            assert.deepEqual(s.clusterIPs, [s.clusterIP]);
            assert.deepEqual(s.ipFamilies, ['IPv4']);
            assert.equal(s.ipFamilyPolicy, 'SingleStack');
          }
          assert.equal(s.internalTrafficPolicy, to === 'ExternalName' ? undefined : 'Cluster');

          // node ports, health check node port, traffic policy, load balancer fields
          const np = s.ports?.[0]?.nodePort;
          if (!hasNodePorts(to)) assert.equal(np, undefined);
          else if (hasNodePorts(from)) assert.equal(np, oldNodePort);
          else assert.ok(inNodePortRange(np), String(np));
          if (to !== 'LocalLB') assert.equal(s.healthCheckNodePort, undefined);
          else if (from === 'LocalLB') assert.equal(s.healthCheckNodePort, o.healthCheckNodePort);
          else assert.ok(inNodePortRange(s.healthCheckNodePort));
          const etp = !hasNodePorts(to)
            ? undefined
            : to === 'LocalLB' || (to === 'NodePort' && from === 'LocalLB')
              ? 'Local'
              : 'Cluster';
          assert.equal(s.externalTrafficPolicy, etp);
          assert.equal(
            s.allocateLoadBalancerNodePorts,
            to === 'LoadBalancer' || to === 'LocalLB' ? true : undefined,
          );
          assert.deepEqual(stored.status?.loadBalancer, {});

          // the allocators: what the Service holds now, nothing more; freed values reusable
          const held = [np, s.healthCheckNodePort].filter((p) => p !== undefined);
          assert.equal(api.services.nodePorts.used, held.length, 'node ports held');
          for (const p of held) assert.ok(api.services.nodePorts.has(p));
          const ipAlloc = api.services.ipAllocators[0];
          assert.ok(ipAlloc);
          assert.equal(ipAlloc.used, 1 + (hasIP(to) ? 1 : 0), 'cluster IPs held (with kubernetes)');
          if (hasIP(to)) assert.ok(ipAlloc.has(s.clusterIP ?? ''));
          if (oldNodePort !== undefined && np !== oldNodePort)
            assertFree(
              api,
              { type: 'NodePort', ports: [{ port: 80, nodePort: oldNodePort }] },
              'node port',
            );
          if (o.healthCheckNodePort !== undefined && s.healthCheckNodePort === undefined)
            assertFree(
              api,
              { type: 'NodePort', ports: [{ port: 80, nodePort: o.healthCheckNodePort }] },
              'health check node port',
            );
          if (hasIP(from) && !hasIP(to)) assertFree(api, { clusterIP: o.clusterIP }, 'cluster IP');
        });
    }
});

/** The 422's message and cause fields. */
function refusal(res: { status: number; body: Json }): { message: string; fields: string[] } {
  assert.equal(res.status, 422, JSON.stringify(res.body));
  const causes = (res.body.details as { causes: { field: string }[] }).causes;
  return { message: String(res.body.message), fields: causes.map((c) => c.field) };
}

const MERGE = 'application/merge-patch+json';

describe('Service type changes: what the client changed is still validated', () => {
  it('refuses externalTrafficPolicy on a ClusterIP Service without externalIPs', async () => {
    const { call } = setup();
    const res = await call('POST', PATH, manifest('x', { externalTrafficPolicy: 'Cluster' }));
    assert.equal(
      refusal(res).message,
      'Service "x" is invalid: spec.externalTrafficPolicy: Invalid value: "Cluster": may only be set for externally-accessible services',
    );
  });

  it('refuses a policy, node port, class or health check port set anew with the type, and leaks nothing', async () => {
    const { api, call } = setup();
    await call('POST', PATH, manifest('np', { type: 'NodePort' }));
    await call(
      'POST',
      PATH,
      manifest('lb', {
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        loadBalancerClass: 'a.example/lb',
      }),
    );
    const held = api.services.nodePorts.used;
    const np = (await call('GET', `${PATH}/np`, undefined)).body as unknown as Svc;
    const cases: [string, Json, string][] = [
      ['np', { type: 'ClusterIP', externalTrafficPolicy: 'Local' }, 'spec.externalTrafficPolicy'],
      [
        'np',
        { type: 'ClusterIP', ports: [{ name: 'http', port: 80, nodePort: 30999 }] },
        'spec.ports[0].nodePort',
      ],
      [
        'np',
        {
          type: 'ExternalName',
          externalName: 'example.com',
          clusterIP: '10.96.0.77',
          clusterIPs: ['10.96.0.77'],
        },
        'spec.clusterIP',
      ],
      ['lb', { type: 'NodePort', loadBalancerClass: 'b.example/lb' }, 'spec.loadBalancerClass'],
      [
        'lb',
        { externalTrafficPolicy: 'Cluster', healthCheckNodePort: 30998 },
        'spec.healthCheckNodePort',
      ],
    ];
    for (const [name, spec, field] of cases) {
      const r = refusal(await call('PATCH', `${PATH}/${name}`, { spec }, MERGE));
      assert.deepEqual(r.fields, [field], JSON.stringify(spec));
      assert.match(
        r.message,
        new RegExp(`^Service "${name}" is invalid: ${field.replace(/[[\].]/g, '\\$&')}: `),
      );
    }
    assert.equal(api.services.nodePorts.used, held, 'no node port taken or freed');
    assert.ok(!api.services.nodePorts.has(30999) && !api.services.nodePorts.has(30998));
    const after = api.store.get(SERVICES, 'default', 'np') as unknown as Svc;
    assert.deepEqual(after.spec, np.spec);
    // The same class, left as it was, goes with the type.
    const ok = await call('PATCH', `${PATH}/lb`, { spec: { type: 'NodePort' } }, MERGE);
    assert.equal(ok.status, 200);
    const s = (ok.body as unknown as Svc).spec;
    assert.equal(s.loadBalancerClass, undefined);
    assert.equal(s.allocateLoadBalancerNodePorts, undefined);
    assert.equal(s.healthCheckNodePort, undefined);
    assert.equal(s.externalTrafficPolicy, 'Local');
  });
});

describe('Service type changes: externalIPs and allocateLoadBalancerNodePorts', () => {
  it('a ClusterIP Service with externalIPs defaults, keeps and accepts externalTrafficPolicy', async () => {
    const { api, call } = setup();
    const eip = { externalIPs: ['192.0.2.10'] };
    const c = await call('POST', PATH, manifest('c', eip));
    assert.equal((c.body as unknown as Svc).spec.externalTrafficPolicy, 'Cluster');
    await call(
      'POST',
      PATH,
      manifest('n', { ...eip, type: 'NodePort', externalTrafficPolicy: 'Local' }),
    );
    const port = (api.store.get(SERVICES, 'default', 'n') as unknown as Svc).spec.ports?.[0]
      ?.nodePort;
    const toClusterIP = await call('PATCH', `${PATH}/n`, { spec: { type: 'ClusterIP' } }, MERGE);
    assert.equal(toClusterIP.status, 200, JSON.stringify(toClusterIP.body));
    const s = (toClusterIP.body as unknown as Svc).spec;
    assert.equal(s.externalTrafficPolicy, 'Local');
    assert.equal(s.ports?.[0]?.nodePort, undefined);
    assert.ok(port !== undefined && !api.services.nodePorts.has(port));
    // Without its externalIPs the Service is no longer externally accessible.
    const noEIP = await call('PATCH', `${PATH}/n`, { spec: { externalIPs: null } }, MERGE);
    assert.equal((noEIP.body as unknown as Svc).spec.externalTrafficPolicy, undefined);
  });

  it('allocateLoadBalancerNodePorts=false: no ports picked, named ones reserved, kept when turned off', async () => {
    const { api, call } = setup();
    const off = { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false };
    const a = await call('POST', PATH, manifest('a', off));
    assert.equal((a.body as unknown as Svc).spec.ports?.[0]?.nodePort, undefined);
    assert.equal(api.services.nodePorts.used, 0);
    await call(
      'POST',
      PATH,
      manifest('b', { ...off, ports: [{ name: 'http', port: 80, nodePort: 30100 }] }),
    );
    assert.ok(api.services.nodePorts.has(30100));
    await call('POST', PATH, manifest('c', { type: 'LoadBalancer' }));
    const port = (api.store.get(SERVICES, 'default', 'c') as unknown as Svc).spec.ports?.[0]
      ?.nodePort;
    // kube-apiserver does not free node ports when allocation is turned off; the client
    // removes them itself.
    const c = await call(
      'PATCH',
      `${PATH}/c`,
      { spec: { allocateLoadBalancerNodePorts: false } },
      MERGE,
    );
    assert.equal((c.body as unknown as Svc).spec.ports?.[0]?.nodePort, port);
    assert.ok(port !== undefined && api.services.nodePorts.has(port));
  });
});

describe('Service type changes: the e2e jig and dry runs', () => {
  it('ClusterIP -> NodePort -> ExternalName -> ClusterIP by GET-modify-PUT', async () => {
    const { api, call } = setup();
    const created = await call('POST', PATH, manifest('jig', {}));
    const firstIP = (created.body as unknown as Svc).spec.clusterIP ?? '';
    const put = async (edit: (s: Json) => void): Promise<Svc> => {
      const got = (await call('GET', `${PATH}/jig`, undefined)).body;
      const spec = got.spec as Json;
      edit(spec);
      const res = await call('PUT', `${PATH}/jig`, got);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body as unknown as Svc;
    };
    const np = await put((s) => (s.type = 'NodePort'));
    assert.equal(np.spec.clusterIP, firstIP);
    assert.equal(api.services.nodePorts.used, 1);
    const ext = await put((s) => {
      s.type = 'ExternalName';
      s.externalName = 'example.com';
    });
    assert.equal(ext.spec.externalTrafficPolicy, undefined);
    assert.equal(ext.spec.clusterIP, undefined);
    assert.equal(api.services.nodePorts.used, 0);
    assert.ok(!api.services.ipAllocators[0]?.has(firstIP));
    const back = await put((s) => {
      s.type = 'ClusterIP';
      delete s.externalName;
    });
    assert.ok(api.services.ipAllocators[0]?.has(back.spec.clusterIP ?? ''));
    assert.deepEqual(back.spec.ipFamilies, ['IPv4']);
    assert.equal(back.spec.internalTrafficPolicy, 'Cluster');
  });

  it("a load balancer's ingress status goes with the type, other status stays", async () => {
    const { api, call } = setup();
    await call('POST', PATH, manifest('lb', { type: 'LoadBalancer' }));
    const cur = api.store.get(SERVICES, 'default', 'lb');
    const ingress = { ingress: [{ ip: '192.0.2.1', ipMode: 'VIP' }] };
    const conditions = [{ type: 'Probe', status: 'True', reason: 'R', message: '' }];
    api.store.update(
      SERVICES,
      'default',
      'lb',
      { ...cur, status: { loadBalancer: ingress, conditions } },
      { subresource: 'status' },
    );
    const relabelled = await call(
      'PATCH',
      `${PATH}/lb`,
      { metadata: { labels: { a: 'b' } } },
      MERGE,
    );
    assert.deepEqual((relabelled.body.status as Json).loadBalancer, ingress);
    const res = await call('PATCH', `${PATH}/lb`, { spec: { type: 'NodePort' } }, MERGE);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.status, { loadBalancer: {}, conditions });
  });

  it('a dry-run type change answers the result and keeps the allocations', async () => {
    const { api, call } = setup();
    await call('POST', PATH, manifest('d', { type: 'NodePort' }));
    const before = api.store.get(SERVICES, 'default', 'd') as unknown as Svc;
    const port = before.spec.ports?.[0]?.nodePort ?? 0;
    const res = await call('PATCH', `${PATH}/d?dryRun=All`, { spec: { type: 'ClusterIP' } }, MERGE);
    assert.equal(res.status, 200);
    assert.equal((res.body as unknown as Svc).spec.ports?.[0]?.nodePort, undefined);
    assert.deepEqual(api.store.get(SERVICES, 'default', 'd'), before);
    assert.ok(api.services.nodePorts.has(port));
  });
});
