// The [Conformance] tests of Kubernetes' sig-network e2e suite in test/e2e/network/service.go
// that the other e2e files do not already cover, written from the behaviour each one checks
// and driven with the real kubectl: the `kubernetes` Service, listing and deleting a
// collection of Services, the Service status lifecycle, a functioning NodePort from a Pod,
// ClientIP affinity through a NodePort, multiport endpoints by named targetPort, and one port
// over TCP and UDP. conformance-endpoints.test.ts has the EndpointSlice, Endpoints and DNS
// ones; docs/conformance.md maps every upstream test. One lab; one namespace per scenario.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf, type ServiceSpecOptions } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject, Service } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { kubectlJson, kubectlOk, podsReadyOrShow, watchEvents } from './lib/kubectl.js';
import { missingToolsReason, skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason() || (missingToolsReason(['kubectl']) ?? false));

function service(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return serviceOf(`${namespace}/${name}`, { ports: null, ...(spec as ServiceSpecOptions) });
}

interface List<T> {
  items: T[];
}

/** `podName:port` for every address and port of a Service's EndpointSlices, sorted. */
async function slicePorts(lab: E2eLab, ns: string, svc: string): Promise<string[]> {
  const slices: EndpointSlice[] = await lab.client.list('EndpointSlice', {
    namespace: ns,
    labelSelector: `kubernetes.io/service-name=${svc}`,
  });
  return slices
    .flatMap((s) =>
      (s.endpoints ?? []).flatMap((e) =>
        (s.ports ?? []).map((p) => `${e.targetRef?.name ?? '?'}:${String(p.port ?? '')}`),
      ),
    )
    .sort();
}

describe('sig-network conformance: Services', { skip }, () => {
  let lab: E2eLab;
  let nodeIPs: string[] = [];

  /** hostnames answering `n` GETs of url from a Pod; every GET must succeed. */
  const hostnames = async (from: string, url: string, n: number): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await lab.curl(from, url);
      assert.equal(r.code, 0, `GET ${url} from ${from}: curl exit ${String(r.code)}`);
      out.push(r.body);
    }
    return out;
  };
  /** netexec's UDP `hostname` through the client Pod's /dial; the answers. */
  const udpDial = async (from: string, host: string, port: number): Promise<string[]> =>
    lab.dial(
      { ip: await lab.podIP(...(from.split('/') as [string, string])), port: 8080 },
      'udp',
      host,
      port,
    );

  before(async () => {
    lab = await E2eLab.up('cs');
    const [cp, w1, w2] = lab.nodes.map((n) => n.name) as [string, string, string];
    nodeIPs = lab.nodes.map((n) => n.ip);
    for (const ns of ['c-np', 'c-aff', 'c-mp', 'c-proto']) await lab.createNamespace(ns);
    // The machine may be shared: one client Pod (in c-np) serves every scenario.
    await lab.apply([
      netexecPod('c-np', 'np-0', { labels: { app: 'np' }, node: w1 }),
      netexecPod('c-np', 'np-1', { labels: { app: 'np' }, node: w2 }),
      netexecPod('c-np', 'client', { node: cp }),
      service('c-np', 'nodeport-test', {
        type: 'NodePort',
        selector: { app: 'np' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      ...[w1, w2, cp].map((node, i) =>
        netexecPod('c-aff', `aff-${String(i)}`, { labels: { app: 'aff' }, node }),
      ),
      service('c-aff', 'affinity-nodeport', {
        type: 'NodePort',
        sessionAffinity: 'ClientIP',
        selector: { app: 'aff' },
        ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      service('c-mp', 'multi-endpoint-test', {
        selector: { app: 'mp' },
        ports: [
          { name: 'portname1', port: 80, targetPort: 'svc1', protocol: 'TCP' },
          { name: 'portname2', port: 81, targetPort: 'svc2', protocol: 'TCP' },
        ],
      }),
      netexecPod('c-proto', 'server', { labels: { app: 'proto' }, node: w1 }),
    ]);
    for (const [ns, pods] of [
      ['c-np', ['np-0', 'np-1', 'client']],
      ['c-aff', ['aff-0', 'aff-1', 'aff-2']],
      ['c-proto', ['server']],
    ] as const)
      await podsReadyOrShow(lab, ns, pods, 300_000);
  });
  after(async () => {
    await lab.down();
  });

  // service.go "should provide secure master service".
  test('the kubernetes Service exists in default: https on 443 at the range first address', async () => {
    const s = await kubectlJson<Service>(lab, ['get', 'service', 'kubernetes', '-n', 'default']);
    assert.equal(s.spec?.clusterIP, '10.96.0.1');
    assert.deepEqual(
      (s.spec.ports ?? []).map((p) => `${p.name ?? ''}/${String(p.port)}/${p.protocol ?? ''}`),
      ['https/443/TCP'],
    );
  });

  // service.go "should find a service from listing all namespaces".
  test('listing Services in all namespaces includes default/kubernetes', async () => {
    const all = await kubectlJson<List<Service>>(lab, ['get', 'services', '--all-namespaces']);
    const keys = all.items.map((s) => `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`);
    assert.ok(keys.includes('default/kubernetes'), keys.join(', '));
  });

  // service.go "should delete a collection of services".
  test('deletecollection by label removes the labelled Services and leaves the other', async () => {
    await lab.createNamespace('c-col');
    for (const [name, labels] of [
      ['col-1', { 'e2e-test-service': 'delete' }],
      ['col-2', { 'e2e-test-service': 'delete' }],
      ['col-3', {}],
    ] as const)
      await kubectlOk(lab, ['create', '-f', '-'], {
        ...service('c-col', name, { ports: [{ port: 80, targetPort: 80, protocol: 'TCP' }] }),
        metadata: { namespace: 'c-col', name, labels },
      });
    const names = async (): Promise<string[]> =>
      (await kubectlJson<List<Service>>(lab, ['get', 'services', '-n', 'c-col'])).items
        .map((s) => s.metadata?.name ?? '')
        .sort();
    assert.deepEqual(await names(), ['col-1', 'col-2', 'col-3']);
    await kubectlOk(lab, [
      'delete',
      '--raw',
      '/api/v1/namespaces/c-col/services?labelSelector=e2e-test-service%3Ddelete',
    ]);
    await eventually('only col-3 to be left', async () => (await names()).join() === 'col-3');
  });

  // service.go "should complete a service status lifecycle". Its Service has a class of its
  // own, as upstream's, so no load-balancer controller (the lab's included) writes the status.
  test('Service status: read, patch and update through /status; a patch of the Service; delete', async () => {
    await lab.createNamespace('c-status');
    const name = 'test-service-status';
    await kubectlOk(lab, ['create', '-f', '-'], {
      ...service('c-status', name, {
        type: 'LoadBalancer',
        loadBalancerClass: 'example.com/internal-vip',
        ports: [{ name: 'http', port: 80, targetPort: 80, protocol: 'TCP' }],
      }),
      metadata: { namespace: 'c-status', name, labels: { 'test-service-static': 'true' } },
    });
    const path = `/api/v1/namespaces/c-status/services/${name}`;
    const created = JSON.parse(await kubectlOk(lab, ['get', '--raw', `${path}/status`])) as Service;
    assert.equal(created.metadata?.name, name, 'GET /status returns the Service');
    const rv = created.metadata.resourceVersion ?? '0';

    await kubectlOk(lab, [
      'patch',
      'service',
      name,
      '-n',
      'c-status',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: '203.0.113.1' }] } } }),
    ]);
    const patched = await lab.mustService('c-status', name);
    assert.equal(patched.status?.loadBalancer?.ingress?.[0]?.ip, '203.0.113.1');

    const condition = {
      type: 'StatusUpdate',
      status: 'True',
      reason: 'E2E',
      message: 'Set from an e2e test',
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    await kubectlOk(lab, ['replace', '--subresource=status', '-f', '-'], {
      ...patched,
      status: { ...patched.status, conditions: [condition] },
    });
    const updated = await lab.mustService('c-status', name);
    const stored = updated.status?.conditions?.[0] as { reason?: string } | undefined;
    assert.equal(stored?.reason, 'E2E', 'the condition is stored');
    assert.equal(updated.status?.loadBalancer?.ingress?.[0]?.ip, '203.0.113.1', 'ingress kept');

    await kubectlOk(lab, ['label', 'service', name, '-n', 'c-status', 'test-service=patched']);
    assert.equal(
      (await lab.mustService('c-status', name)).metadata?.labels?.['test-service'],
      'patched',
    );

    await kubectlOk(lab, ['delete', 'service', name, '-n', 'c-status']);
    const events = await watchEvents(
      lab,
      '/api/v1/namespaces/c-status/services?labelSelector=test-service-static%3Dtrue',
      rv,
    );
    const types = events.map((e) => e.type);
    assert.ok(types.filter((t) => t === 'MODIFIED').length >= 3, types.join(', '));
    assert.equal(types.at(-1), 'DELETED', types.join(', '));
  });

  // service.go "should be able to create a functioning NodePort service".
  test('a NodePort Service answers a Pod by name and ClusterIP on its port and on every node IP at the node port', async () => {
    await lab.waitEndpoints('c-np', 'nodeport-test', 2);
    const s = await lab.mustService('c-np', 'nodeport-test');
    const np = s.spec?.ports?.[0]?.nodePort ?? 0;
    assert.ok(np >= 30000 && np <= 32767, `nodePort ${String(np)}`);
    const urls = [
      'http://nodeport-test:80/hostname',
      `http://${s.spec?.clusterIP ?? ''}:80/hostname`,
      ...nodeIPs.map((ip) => `http://${ip}:${String(np)}/hostname`),
    ];
    for (const url of urls)
      await eventually(`${url} from c-np/client`, async () =>
        /^np-\d$/.test((await lab.curl('c-np/client', url)).body),
      );
  });

  // service.go "should have session affinity work for NodePort service" and "should be able
  // to switch session affinity for NodePort service".
  test('ClientIP affinity through a node IP:nodePort sticks; None spreads; ClientIP sticks again', async () => {
    await lab.waitEndpoints('c-aff', 'affinity-nodeport', 3);
    const s = await lab.mustService('c-aff', 'affinity-nodeport');
    const np = String(s.spec?.ports?.[0]?.nodePort ?? 0);
    const from = 'c-np/client';
    const sticks = async (url: string): Promise<void> => {
      const got = await hostnames(from, url, 15);
      assert.equal(new Set(got).size, 1, `${url} answered from ${[...new Set(got)].join(', ')}`);
    };
    for (const ip of nodeIPs) await sticks(`http://${ip}:${np}/hostname`);
    await sticks(`http://${s.spec?.clusterIP ?? ''}/hostname`);

    await kubectlOk(lab, [
      'patch',
      'service',
      'affinity-nodeport',
      '-n',
      'c-aff',
      '-p',
      '{"spec":{"sessionAffinity":"None"}}',
    ]);
    const url = `http://${nodeIPs[0] ?? ''}:${np}/hostname`;
    await eventually(
      'None to spread requests over more than one backend',
      async () => new Set(await hostnames(from, url, 15)).size > 1,
      60_000,
    );

    await kubectlOk(lab, [
      'patch',
      'service',
      'affinity-nodeport',
      '-n',
      'c-aff',
      '-p',
      '{"spec":{"sessionAffinity":"ClientIP"}}',
    ]);
    await eventually(
      'ClientIP to stick again',
      async () => new Set(await hostnames(from, url, 15)).size === 1,
      60_000,
    );
  });

  // service.go "should serve multiport endpoints from pods".
  test('multiport by named targetPort: endpoints follow Pods 0 -> 1 -> 2 -> 1 -> 0, each on its own port', async () => {
    const [w1, w2] = [lab.nodes[1]?.name ?? '', lab.nodes[2]?.name ?? ''];
    const view = (): Promise<string[]> => slicePorts(lab, 'c-mp', 'multi-endpoint-test');
    const is = async (want: string[]): Promise<void> => {
      await eventually(`multi-endpoint-test endpoints ${want.join(', ') || 'none'}`, async () =>
        (await view()).join() === want.join() ? true : undefined,
      );
    };
    await is([]);
    const pod = (name: string, node: string, port: number, portName: string): KubeObject =>
      netexecPod('c-mp', name, {
        labels: { app: 'mp' },
        node,
        httpPort: port,
        ports: [{ name: portName, containerPort: port }],
      });
    await lab.apply([pod('pod1', w1, 100, 'svc1')]);
    await podsReadyOrShow(lab, 'c-mp', ['pod1'], 120_000);
    await is(['pod1:100']);
    await lab.apply([pod('pod2', w2, 101, 'svc2')]);
    await podsReadyOrShow(lab, 'c-mp', ['pod2'], 120_000);
    await is(['pod1:100', 'pod2:101']);
    const ip = (await lab.mustService('c-mp', 'multi-endpoint-test')).spec?.clusterIP ?? '';
    for (const [port, want] of [
      [80, 'pod1'],
      [81, 'pod2'],
    ] as const)
      await eventually(
        `${ip}:${String(port)} to reach ${want}`,
        async () =>
          (await lab.curl('c-np/client', `http://${ip}:${String(port)}/hostname`)).body === want,
      );
    await lab.deleteObject('Pod', 'c-mp', 'pod1', 0);
    await is(['pod2:101']);
    await lab.deleteObject('Pod', 'c-mp', 'pod2', 0);
    await is([]);
  });

  // service.go "should serve endpoints on same port and different protocols".
  test('port 80 over TCP and UDP; TCP only; UDP only', async () => {
    const ports = {
      tcp: { name: 'tcp-port', port: 80, targetPort: 8080, protocol: 'TCP' },
      udp: { name: 'udp-port', port: 80, targetPort: 8081, protocol: 'UDP' },
    };
    const apply = async (list: object[]): Promise<string> => {
      const at = Date.now();
      await lab.apply([
        service('c-proto', 'multiprotocol-test', { selector: { app: 'proto' }, ports: list }),
      ]);
      await lab.waitEndpoints('c-proto', 'multiprotocol-test', 1);
      await lab.proxiesSynced(at);
      return (await lab.mustService('c-proto', 'multiprotocol-test')).spec?.clusterIP ?? '';
    };
    const tcpOk = async (ip: string): Promise<boolean> =>
      (await lab.curl('c-np/client', `http://${ip}:80/hostname`, 2)).body === 'server';
    const udpOk = async (ip: string): Promise<boolean> =>
      (await udpDial('c-np/client', ip, 80)).includes('server');

    let ip = await apply([ports.tcp, ports.udp]);
    await eventually('TCP to answer', () => tcpOk(ip));
    await eventually('UDP to answer', () => udpOk(ip));

    ip = await apply([ports.tcp]);
    assert.ok(await tcpOk(ip), 'TCP stopped with only TCP');
    assert.ok(!(await udpOk(ip)), 'UDP still answered with only TCP');

    ip = await apply([ports.udp]);
    await eventually('UDP to answer with only UDP', () => udpOk(ip));
    assert.ok(!(await tcpOk(ip)), 'TCP still answered with only UDP');
  });
});
