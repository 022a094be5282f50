// svcnet ui's API end to end in memory: FakeInformers behind InformerCluster, the hono app
// answering Request objects. The snapshot joins Services with their slices and lists their
// DNS names; rules are annotated from kube-proxy's comments; a trace of a Pod to a Service
// with 3 endpoints gives 3 outcomes of 1/3, each with the hop to its endpoint's node; bad
// trace queries get 400 naming the field; a token locks every route; a change reaches SSE
// subscribers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { FakeInformer } from '../kube/informer.js';
import { endpoint, node, pod, service, slice } from '../kube/testing.js';
import type { EndpointSlice, Node, Pod, Service } from '../kube/types.js';
import type {
  ApiError,
  ClusterSnapshot,
  RulesView,
  ServiceInfo,
  TraceResponse,
} from './api-types.js';
import { InformerCluster } from './cluster.js';
import { createUiApp } from './server.js';

const WEB = ['10.244.1.11', '10.244.1.12', '10.244.2.13'];

function cluster(files = new Map<string, string>()) {
  const informers = {
    nodes: new FakeInformer<Node>([
      node('node-a', { ip: '172.18.0.3', podCIDR: '10.244.1.0/24' }),
      node('node-b', { ip: '172.18.0.4', podCIDR: '10.244.2.0/24' }),
    ]),
    pods: new FakeInformer<Pod>([
      pod('default/client', { ip: '10.244.1.5', labels: { app: 'client' } }),
      ...WEB.map((ip, i) =>
        pod(`default/web-${i}`, { ip, node: ip.startsWith('10.244.2.') ? 'node-b' : 'node-a' }),
      ),
    ]),
    services: new FakeInformer<Service>([
      service('default/web', {
        clusterIP: '10.96.0.20',
        clusterIPs: ['10.96.0.20'],
        ports: [{ name: 'http', port: 3000, targetPort: 8080, protocol: 'TCP' }],
      }),
      service('default/db', { clusterIP: 'None' }),
    ]),
    endpointSlices: new FakeInformer<EndpointSlice>([
      slice(
        'default/web',
        WEB.map((ip, i) =>
          endpoint(ip, {
            conditions: { ready: true },
            targetRef: { kind: 'Pod', namespace: 'default', name: `web-${i}` },
          }),
        ),
      ),
      slice('default/db', [
        endpoint('10.244.1.30', { hostname: 'db-0', conditions: { ready: true } }),
      ]),
    ]),
  };
  const c = new InformerCluster(informers, files, undefined, 5);
  return { c, informers, app: createUiApp({ cluster: c, rules: c, assetsDir: '/nonexistent' }) };
}

async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

test('snapshot: a Service with its endpoints and DNS names (ClusterIP and headless)', async () => {
  const { c, app } = cluster();
  await c.start();
  const snap = await json<ClusterSnapshot>(await app.request('/api/snapshot'));
  const web = snap.services.find((s) => s.name === 'web') as ServiceInfo;
  assert.equal(web.endpoints.length, 3);
  assert.deepEqual(
    web.endpoints.map((e) => e.pod),
    ['default/web-0', 'default/web-1', 'default/web-2'],
  );
  assert.deepEqual(
    web.dns.map((d) => `${d.type} ${d.name} ${d.value}`),
    [
      'A web.default.svc.cluster.local 10.96.0.20',
      'SRV _http._tcp.web.default.svc.cluster.local 0 100 3000 web.default.svc.cluster.local',
    ],
  );
  const db = snap.services.find((s) => s.name === 'db') as ServiceInfo;
  assert.ok(db.headless);
  assert.ok(
    db.dns.some((d) => d.name === 'db-0.db.default.svc.cluster.local' && d.value === '10.244.1.30'),
  );
  assert.deepEqual(
    snap.rules.map((r) => `${r.node} ${r.origin}`),
    ['node-a rendered', 'node-b rendered'],
  );
});

test('rules: rendered for a node, each endpoint rule annotated with its Service and endpoint', async () => {
  const { c, app } = cluster();
  await c.start();
  const view = await json<RulesView>(await app.request('/api/nodes/node-a/rules'));
  assert.equal(view.format, 'iptables');
  const rules = view.tables.flatMap((t) => t.chains.flatMap((ch) => ch.rules));
  for (const ip of WEB)
    assert.ok(
      rules.some((r) => r.servicePort === 'default/web:http' && r.endpoint === `${ip}:8080`),
      ip,
    );
  assert.match(view.raw, /^\*nat$/m);
  const missing = await app.request('/api/nodes/nowhere/rules');
  assert.equal(missing.status, 404);
  assert.equal((await json<ApiError>(missing)).error.field, 'node');
});

test('rules: a --rules file is read as given (nft text too)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-ui-'));
  const file = join(dir, 'node-a.nft');
  writeFileSync(
    file,
    'table ip kube-proxy {\n\tchain services {\n\t\tip daddr 10.96.0.20 tcp dport 3000 jump service-X-default/web/tcp/http comment "default/web:http cluster IP"\n\t}\n\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n}\n',
  );
  const { c, app } = cluster(new Map([['node-a', file]]));
  await c.start();
  const view = await json<RulesView>(await app.request('/api/nodes/node-a/rules'));
  assert.equal(view.origin, 'file');
  assert.equal(view.format, 'nft');
  const [services, pre] = view.tables[0]?.chains ?? [];
  assert.ok(services !== undefined && pre !== undefined);
  assert.equal(services.rules[0]?.servicePort, 'default/web:http');
  assert.equal(services.rules[0].role, 'cluster IP');
  assert.match(pre.policy, /^type nat hook prerouting/);
  assert.equal(pre.rules[0]?.target, 'services');
});

test('trace: a Pod to a Service port with 3 endpoints gives 3 outcomes of 1/3', async () => {
  const { c, app } = cluster();
  await c.start();
  const res = await app.request('/api/trace?src=pod/default/client&dst=service/default/web/3000');
  assert.equal(res.status, 200);
  const t = await json<TraceResponse>(res);
  assert.equal(t.node, 'node-a');
  assert.equal(t.packet.origin, 'pod');
  assert.deepEqual(
    t.outcomes
      .map((o) => [Math.round(o.probability * 1000) / 1000, o.dnat, o.endpointObject])
      .sort(),
    WEB.map((ip, i) => [0.333, `${ip}:8080`, `Pod default/web-${i}`]),
  );
  assert.equal(t.outcomes.find((o) => o.dnat === '10.244.2.13:8080')?.nextNode, 'node-b');
  // The hop, from the objects: node-b's InternalIP and the podCIDR holding the Pod IP.
  assert.deepEqual(t.outcomes.find((o) => o.dnat === '10.244.2.13:8080')?.hop, {
    source: 'objects',
    fromNode: 'node-a',
    toNode: 'node-b',
    podIP: '10.244.2.13',
    toNodeIP: '172.18.0.4',
    podCIDR: '10.244.2.0/24',
  });
  assert.equal(t.outcomes.find((o) => o.dnat === '10.244.1.11:8080')?.hop?.toNode, 'node-a');
  // The port by name, and the NodePort-less Service refused for nodeport/.
  const byName = await app.request('/api/trace?src=node/node-b&dst=service/default/web/http');
  assert.equal((await json<TraceResponse>(byName)).outcomes.length, 3);
});

test('trace: with the node routes (lab ui), each hop also says the route taken', async () => {
  const { c } = cluster();
  await c.start();
  const dump = `# ip route
10.244.1.0/24 dev cni0 proto kernel scope link src 10.244.1.1
10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink
# ip neigh
10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT
# bridge fdb show
aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
# ip -d link show
4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN
    vxlan id 1 local 172.18.0.3 dev eth0 srcport 0 0 dstport 8472 nolearning
`;
  const q = '/api/trace?src=pod/default/client&dst=service/default/web/3000';
  const withRoutes = createUiApp({
    cluster: c,
    rules: c,
    assetsDir: '/nonexistent',
    routes: (node) => Promise.resolve(node === 'node-a' ? dump : undefined),
  });
  const t = await json<TraceResponse>(await withRoutes.request(q));
  const remote = t.outcomes.find((o) => o.dnat === '10.244.2.13:8080')?.hop;
  assert.equal(remote?.source, 'routes');
  assert.equal(remote.toNode, 'node-b');
  assert.equal(
    remote.route?.summary,
    'via flannel.1, next hop 10.244.2.0 (aa:bb:cc:dd:ee:ff): encapsulated in VXLAN id 1 to 172.18.0.4 UDP 8472',
  );
  assert.equal(remote.route.route, '10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink');
  const local = t.outcomes.find((o) => o.dnat === '10.244.1.11:8080')?.hop;
  assert.equal(local?.route?.kind, 'local-link');
  // A reader that fails leaves the hops to the objects and says why in a note.
  const failing = createUiApp({
    cluster: c,
    rules: c,
    assetsDir: '/nonexistent',
    routes: () =>
      Promise.reject(new SvcnetError('EXEC_FAILED', 'bridge fdb show on node-a: no bridge')),
  });
  const f = await json<TraceResponse>(await failing.request(q));
  assert.equal(f.outcomes.find((o) => o.dnat === '10.244.2.13:8080')?.hop?.source, 'objects');
  assert.ok(
    f.notes.some((n) => n.startsWith('routes of node-a not read')),
    f.notes.join('; '),
  );
});

test('trace: bad queries answer 400 naming the field', async () => {
  const { c, app } = cluster();
  await c.start();
  const cases: [string, string, RegExp][] = [
    [
      'src=pod/default/client&dst=service/default/nope/3000',
      'dst',
      /Service default\/nope not found/,
    ],
    ['src=pod/default/ghost&dst=service/default/web/3000', 'src', /Pod default\/ghost not found/],
    ['src=pod/default/client&dst=service/default/web/9999', 'dst', /no TCP port 9999/],
    ['src=pod/default/client&dst=service/default/web/3000&proto=icmp', 'proto', /tcp, udp or sctp/],
    ['src=pod/default/client&dst=service/default/web/3000&node=x', 'node', /Node "x" not found/],
    ['src=pod/default/client&dst=nodeport/node-a/default/web/3000', 'dst', /has no NodePort/],
    ['src=ip/not-an-ip&dst=addr/10.96.0.20:3000', 'src', /./],
    ['dst=service/default/web/3000', 'src', /required/],
    ['src=bogus&dst=service/default/web/3000', 'src', /expected pod\/NAMESPACE\/NAME/],
  ];
  for (const [q, field, message] of cases) {
    const res = await app.request(`/api/trace?${q}`);
    assert.equal(res.status, 400, q);
    const body = await json<ApiError>(res);
    assert.equal(body.error.field, field, q);
    assert.match(body.error.message, message, q);
  }
});

test('a token locks the API: 401 without it, Bearer header or the cookie /?token= sets', async () => {
  const { c } = cluster();
  await c.start();
  const app = createUiApp({ cluster: c, rules: c, assetsDir: '/nonexistent', token: 's3cret' });
  assert.equal((await app.request('/api/snapshot')).status, 401);
  assert.equal(
    (await app.request('/api/snapshot', { headers: { authorization: 'Bearer wrong' } })).status,
    401,
  );
  assert.equal(
    (await app.request('/api/snapshot', { headers: { authorization: 'Bearer s3cret' } })).status,
    200,
  );
  const login = await app.request('/?token=s3cret');
  assert.equal(login.status, 302);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  assert.equal((await app.request('/api/snapshot', { headers: { cookie } })).status, 200);
});

test('the page route says how to build the page when dist/ui is missing', async () => {
  const { c, app } = cluster();
  await c.start();
  const res = await app.request('/');
  assert.equal(res.status, 503);
  assert.match(await res.text(), /npm run build:ui/);
});

test('SSE: a change to an EndpointSlice reaches the stream as one change event', async () => {
  const { c, app, informers } = cluster();
  await c.start();
  const controller = new AbortController();
  const res = await app.request('/api/events', { signal: controller.signal });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const until = async (re: RegExp): Promise<void> => {
    while (!re.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended: ${text}`);
      text += decoder.decode(value);
    }
  };
  await until(/event: hello/);
  informers.endpointSlices.upsert(slice('default/web', [endpoint(WEB[0] ?? '')]));
  await until(/event: change\ndata: .*EndpointSlice/);
  const snap = await json<ClusterSnapshot>(await app.request('/api/snapshot'));
  assert.equal(snap.services.find((s) => s.name === 'web')?.endpoints.length, 1);
  controller.abort();
  await reader.cancel();
  await c.stop();
});
