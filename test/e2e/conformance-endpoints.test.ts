// The [Conformance] tests of Kubernetes' sig-network e2e suite in test/e2e/network
// endpointslice.go, endpointslicemirroring.go and dns.go, and service.go's Endpoint lifecycle,
// that the other e2e files do not already cover, written from the behaviour each one checks
// and driven with the real kubectl: the `kubernetes` Service's Endpoints and EndpointSlice,
// Endpoints and EndpointSlices made for selecting Services, the EndpointSlice API verbs,
// mirroring of a custom Endpoints, and the names a Pod gets from /etc/hosts and from partial
// DNS names. docs/conformance.md maps every upstream test. One lab; one namespace per scenario.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf, type ServiceSpecOptions } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { kubectl, kubectlJson, kubectlOk, podsReadyOrShow, watchEvents } from './lib/kubectl.js';
import { missingToolsReason, skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason() || (missingToolsReason(['kubectl']) ?? false));

function service(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return serviceOf(`${namespace}/${name}`, { ports: null, ...(spec as ServiceSpecOptions) });
}

function withSpec(obj: KubeObject, extra: Record<string, unknown>): KubeObject {
  const o = obj as KubeObject & { spec?: Record<string, unknown> };
  return { ...o, spec: { ...o.spec, ...extra } } as KubeObject;
}

interface List<T> {
  items: T[];
}
interface Endpoints {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  subsets?: { addresses?: { ip: string }[]; ports?: { name?: string; port: number }[] }[];
}

describe('sig-network conformance: Endpoints, EndpointSlices, DNS', { skip }, () => {
  let lab: E2eLab;

  before(async () => {
    lab = await E2eLab.up('ce');
    const [, w1, w2] = lab.nodes.map((n) => n.name) as [string, string, string];
    for (const ns of ['c-eps', 'c-dns']) await lab.createNamespace(ns);
    // DNS partial names are asked from the querier Pod itself.
    await lab.apply([
      netexecPod('c-eps', 'pod1', { labels: { label1: 'a', 'label-both': 'x' }, node: w1 }),
      netexecPod('c-eps', 'pod2', { labels: { 'label-both': 'x' }, node: w2 }),
      // dns.go: a Pod with hostname and subdomain (its /etc/hosts), the headless Service of
      // that subdomain, and a normal Service over the same Pod.
      withSpec(netexecPod('c-dns', 'querier', { labels: { dns: 'q' }, node: w2 }), {
        hostname: 'dns-querier-1',
        subdomain: 'dns-test-service',
      }),
      service('c-dns', 'dns-test-service', {
        clusterIP: 'None',
        selector: { dns: 'q' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      service('c-dns', 'test-service-2', {
        selector: { dns: 'q' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
    ]);
    for (const [ns, pods] of [
      ['c-eps', ['pod1', 'pod2']],
      ['c-dns', ['querier']],
    ] as const)
      await podsReadyOrShow(lab, ns, pods, 300_000);
  });
  after(async () => {
    await lab.down();
  });

  // endpointslice.go "should have Endpoints and EndpointSlices pointing to API Server".
  test('the kubernetes Service has an Endpoints and an EndpointSlice naming the API server', async () => {
    const ep = await kubectlJson<Endpoints>(lab, [
      'get',
      'endpoints',
      'kubernetes',
      '-n',
      'default',
    ]);
    const epAddrs = (ep.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
    const epPorts = (ep.subsets ?? []).flatMap((s) => (s.ports ?? []).map((p) => p.port));
    assert.equal(epAddrs.length, 1, JSON.stringify(ep));
    const slices = await kubectlJson<List<EndpointSlice>>(lab, [
      'get',
      'endpointslices',
      '-n',
      'default',
      '-l',
      'kubernetes.io/service-name=kubernetes',
    ]);
    assert.equal(slices.items.length, 1, 'one EndpointSlice for kubernetes');
    const slice = slices.items[0];
    assert.deepEqual(
      (slice?.endpoints ?? []).flatMap((e) => e.addresses),
      epAddrs,
      'the slice lists the Endpoints addresses',
    );
    assert.deepEqual(
      (slice?.ports ?? []).map((p) => p.port),
      epPorts,
    );
    // That address answers: it is the API server.
    const url = `https://${String(epAddrs[0])}:${String(epPorts[0])}/version`;
    const r = await lab.exec(lab.nodes[1]?.name ?? '', ['curl', '-sk', '-m', '3', url]);
    assert.equal(r.code, 0, `${url} did not answer from a node: ${r.stderr}`);
  });

  // service.go "should test the lifecycle of an Endpoint": an Endpoints made by hand, with no
  // Service, is the user's (the controller leaves it alone, as kube-controller-manager does).
  test('Endpoints: create, list by label, relabel, patch the address, deletecollection, watched', async () => {
    await lab.createNamespace('c-ep');
    const name = 'testservice';
    await kubectlOk(lab, ['create', '-f', '-'], {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: 'c-ep', labels: { 'test-endpoint-static': 'true' } },
      subsets: [{ addresses: [{ ip: '10.0.0.24' }], ports: [{ name: 'http', port: 80 }] }],
    });
    const listed = await kubectlJson<List<Endpoints>>(lab, [
      'get',
      'endpoints',
      '--all-namespaces',
      '-l',
      'test-endpoint-static=true',
    ]);
    assert.deepEqual(
      listed.items.map((e) => `${e.metadata.namespace ?? ''}/${e.metadata.name}`),
      [`c-ep/${name}`],
    );
    const rv = (
      await kubectlJson<{ metadata: { resourceVersion: string } }>(lab, [
        'get',
        'endpoints',
        name,
        '-n',
        'c-ep',
      ])
    ).metadata.resourceVersion;
    await kubectlOk(lab, ['label', 'endpoints', name, '-n', 'c-ep', 'test-service=updated']);
    await kubectlOk(lab, [
      'patch',
      'endpoints',
      name,
      '-n',
      'c-ep',
      '--type=merge',
      '-p',
      JSON.stringify({
        metadata: { labels: { 'test-service': 'patched' } },
        subsets: [{ addresses: [{ ip: '10.0.0.25' }], ports: [{ name: 'http-test', port: 8080 }] }],
      }),
    ]);
    const got = await kubectlJson<Endpoints>(lab, ['get', 'endpoints', name, '-n', 'c-ep']);
    assert.equal(got.metadata.labels?.['test-service'], 'patched');
    assert.equal(got.subsets?.[0]?.addresses?.[0]?.ip, '10.0.0.25');
    const gotPorts = (got.subsets ?? []).flatMap((x) => (x.ports ?? []).map((p) => p.port));
    assert.deepEqual(gotPorts, [8080], JSON.stringify(got));
    await kubectlOk(lab, [
      'delete',
      '--raw',
      '/api/v1/namespaces/c-ep/endpoints?labelSelector=test-endpoint-static%3Dtrue',
    ]);
    const events = await watchEvents(
      lab,
      '/api/v1/namespaces/c-ep/endpoints?labelSelector=test-endpoint-static%3Dtrue',
      rv,
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['MODIFIED', 'MODIFIED', 'DELETED'],
    );
    const left = await kubectl(lab, ['get', 'endpoints', name, '-n', 'c-ep']);
    assert.notEqual(left.code, 0, 'the Endpoints is gone');
  });

  // endpointslice.go "should create and delete Endpoints and EndpointSlices for a Service
  // with a selector specified".
  test('a Service with a selector gets an Endpoints and an EndpointSlice; both go with it', async () => {
    await lab.apply([
      service('c-eps', 'example-empty-selector', {
        selector: { 'does-not-match-anything': 'endpoints-and-endpoint-slices' },
        ports: [{ name: 'example', port: 80, targetPort: 80, protocol: 'TCP' }],
      }),
    ]);
    const epGet = (): Promise<number> =>
      kubectl(lab, ['get', 'endpoints', 'example-empty-selector', '-n', 'c-eps']).then(
        (r) => r.code,
      );
    const sliceCount = async (): Promise<number> =>
      (
        await lab.client.list('EndpointSlice', {
          namespace: 'c-eps',
          labelSelector: 'kubernetes.io/service-name=example-empty-selector',
        })
      ).length;
    await eventually('its Endpoints', async () => (await epGet()) === 0);
    await eventually('its EndpointSlice', async () => (await sliceCount()) === 1);
    await kubectlOk(lab, ['delete', 'service', 'example-empty-selector', '-n', 'c-eps']);
    await eventually('its Endpoints to go', async () => (await epGet()) !== 0);
    await eventually('its EndpointSlice to go', async () => (await sliceCount()) === 0);
  });

  // endpointslice.go "should create Endpoints and EndpointSlices for Pods matching a Service".
  test('Endpoints and EndpointSlices list exactly the Pods each Service selects', async () => {
    const ip1 = await lab.podIP('c-eps', 'pod1');
    const ip2 = await lab.podIP('c-eps', 'pod2');
    const ports = [{ name: 'example', port: 80, targetPort: 8080, protocol: 'TCP' }];
    await lab.apply([
      service('c-eps', 'example-int-port', { selector: { label1: 'a' }, ports }),
      service('c-eps', 'example-named-port', { selector: { 'label-both': 'x' }, ports }),
    ]);
    for (const [name, want] of [
      ['example-int-port', [ip1]],
      ['example-named-port', [ip1, ip2].sort()],
    ] as const) {
      await eventually(`${name} Endpoints to list ${want.join(', ')}`, async () => {
        const r = await kubectl(lab, ['get', 'endpoints', name, '-n', 'c-eps', '-o', 'json']);
        if (r.code !== 0) return false;
        const ep = JSON.parse(r.stdout) as Endpoints;
        const addrs = (ep.subsets ?? []).flatMap((s) => (s.addresses ?? []).map((a) => a.ip));
        const port = ep.subsets?.[0]?.ports?.[0];
        return (
          addrs.sort().join() === want.join() && port?.port === 8080 && port.name === 'example'
        );
      });
      await eventually(`${name} EndpointSlices to list ${want.join(', ')}`, async () => {
        const slices: EndpointSlice[] = await lab.client.list('EndpointSlice', {
          namespace: 'c-eps',
          labelSelector: `kubernetes.io/service-name=${name}`,
        });
        const addrs = slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
        const ok = slices.every(
          (s) =>
            s.addressType === 'IPv4' &&
            s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] ===
              'endpointslice-controller.k8s.io' &&
            s.ports?.[0]?.port === 8080 &&
            s.ports[0].name === 'example',
        );
        return ok && addrs.sort().join() === want.join();
      });
    }
  });

  // endpointslice.go "should support creating EndpointSlice API operations".
  test('EndpointSlice API: discovery, create, get, list, watch, patch, update, delete, deletecollection', async () => {
    const groups = await kubectlOk(lab, ['get', '--raw', '/apis/discovery.k8s.io/v1']);
    assert.ok(
      (JSON.parse(groups) as { resources: { name: string }[] }).resources.some(
        (r) => r.name === 'endpointslices',
      ),
      'endpointslices in /apis/discovery.k8s.io/v1',
    );
    const ns = 'c-eps';
    const label = 'special-label=api-ops';
    const slice = (name: string): object => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name, namespace: ns, labels: { 'special-label': 'api-ops' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['1.2.3.4', '5.6.7.8'] }],
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    });
    for (const n of ['e2e-example-ing1', 'e2e-example-ing2', 'e2e-example-ing3'])
      await kubectlOk(lab, ['create', '-f', '-'], slice(n));
    const one = await kubectlJson<EndpointSlice>(lab, [
      'get',
      'endpointslice',
      'e2e-example-ing1',
      '-n',
      ns,
    ]);
    const rv = one.metadata?.resourceVersion ?? '0';
    const inNs = await kubectlJson<List<EndpointSlice>>(lab, [
      'get',
      'endpointslices',
      '-n',
      ns,
      '-l',
      label,
    ]);
    assert.equal(inNs.items.length, 3);
    const all = await kubectlJson<List<EndpointSlice>>(lab, [
      'get',
      'endpointslices',
      '-A',
      '-l',
      label,
    ]);
    assert.equal(all.items.length, 3);

    await kubectlOk(lab, [
      'annotate',
      'endpointslice',
      'e2e-example-ing1',
      '-n',
      ns,
      'patched=true',
    ]);
    const annotated = await kubectlJson<EndpointSlice>(lab, [
      'get',
      'endpointslice',
      'e2e-example-ing1',
      '-n',
      ns,
    ]);
    assert.equal(annotated.metadata?.annotations?.['patched'], 'true');
    await kubectlOk(lab, ['replace', '-f', '-'], {
      ...annotated,
      metadata: {
        ...annotated.metadata,
        annotations: { ...annotated.metadata.annotations, updated: 'true' },
      },
    });
    const updated = await kubectlJson<EndpointSlice>(lab, [
      'get',
      'endpointslice',
      'e2e-example-ing1',
      '-n',
      ns,
    ]);
    assert.equal(updated.metadata?.annotations?.['updated'], 'true');

    await kubectlOk(lab, ['delete', 'endpointslice', 'e2e-example-ing1', '-n', ns]);
    assert.notEqual(
      (await kubectl(lab, ['get', 'endpointslice', 'e2e-example-ing1', '-n', ns])).code,
      0,
    );
    await kubectlOk(lab, [
      'delete',
      '--raw',
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=special-label%3Dapi-ops`,
    ]);
    const left = await kubectlJson<List<EndpointSlice>>(lab, [
      'get',
      'endpointslices',
      '-n',
      ns,
      '-l',
      label,
    ]);
    assert.equal(left.items.length, 0);
    const events = await watchEvents(
      lab,
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=special-label%3Dapi-ops`,
      rv,
    );
    const seen = events.map((e) => `${e.type} ${e.name}`);
    for (const want of [
      'ADDED e2e-example-ing2',
      'MODIFIED e2e-example-ing1',
      'DELETED e2e-example-ing1',
      'DELETED e2e-example-ing3',
    ])
      assert.ok(seen.includes(want), `watch lacks ${want}: ${seen.join(', ')}`);
  });

  // endpointslicemirroring.go "should mirror a custom Endpoints resource through create update
  // and delete".
  test('a selectorless Service: its custom Endpoints is mirrored to an EndpointSlice through create, update and delete', async () => {
    const name = 'example-custom-endpoints';
    await lab.apply([
      service('c-eps', name, { ports: [{ name: 'example', port: 80, protocol: 'TCP' }] }),
    ]);
    const endpoints = (ip: string, port: number): object => ({
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: 'c-eps' },
      subsets: [{ addresses: [{ ip }], ports: [{ name: 'example', port }] }],
    });
    const mirrored = async (): Promise<string> => {
      const slices: EndpointSlice[] = await lab.client.list('EndpointSlice', {
        namespace: 'c-eps',
        labelSelector: `kubernetes.io/service-name=${name}`,
      });
      return slices
        .map(
          (s) =>
            `${s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] ?? '?'} ${(s.endpoints ?? []).flatMap((e) => e.addresses).join('|')}:${String(s.ports?.[0]?.port ?? '')}`,
        )
        .join();
    };
    const by = 'endpointslicemirroring-controller.k8s.io';
    await kubectlOk(lab, ['create', '-f', '-'], endpoints('10.1.2.3', 8080));
    await eventually(
      'the mirrored slice',
      async () => (await mirrored()) === `${by} 10.1.2.3:8080`,
    );
    await kubectlOk(lab, ['replace', '-f', '-'], endpoints('10.2.3.4', 8081));
    await eventually(
      'the slice to follow the update',
      async () => (await mirrored()) === `${by} 10.2.3.4:8081`,
    );
    await kubectlOk(lab, ['delete', 'endpoints', name, '-n', 'c-eps']);
    await eventually('the slice to go', async () => (await mirrored()) === '');
  });

  // dns.go "should provide /etc/hosts entries for the cluster".
  test("a Pod's /etc/hosts names it by hostname and by hostname.subdomain.<ns>.svc.cluster.local", async () => {
    const ip = await lab.podIP('c-dns', 'querier');
    for (const name of [
      'dns-querier-1',
      'dns-querier-1.dns-test-service.c-dns.svc.cluster.local',
    ]) {
      const r = await lab.exec('c-dns/querier', ['getent', 'hosts', name]);
      assert.equal(
        r.stdout.trim().split(/\s+/)[0],
        ip,
        `getent hosts ${name}: ${r.stdout}${r.stderr}`,
      );
    }
    const hosts = await lab.exec('c-dns/querier', ['cat', '/etc/hosts']);
    assert.match(hosts.stdout, new RegExp(`^${ip.replaceAll('.', '\\.')}\\s.*dns-querier-1`, 'm'));
  });

  // dns.go "should provide DNS for pods for Subdomain" and "should resolve DNS of partial
  // qualified names for services".
  test('the subdomain and hostname.subdomain resolve to the Pod; partial names give A and SRV for normal and headless Services', async () => {
    const ip = await lab.podIP('c-dns', 'querier');
    await lab.waitEndpoints('c-dns', 'dns-test-service', 1);
    const clusterIP = (await lab.mustService('c-dns', 'test-service-2')).spec?.clusterIP ?? '';
    const from = 'c-dns/querier';
    const dig = async (args: string[], want: string[], search = true): Promise<void> => {
      await eventually(
        `dig ${args.join(' ')} to give ${want.join(', ')}`,
        async () => {
          const got = await lab.dig(from, args, search);
          return got.sort().join() === want.sort().join();
        },
        20_000,
      );
    };
    for (const name of ['dns-test-service', 'dns-querier-1.dns-test-service'])
      await dig([`${name}.c-dns.svc.cluster.local`], [ip], false);
    // SRV: a headless Service's records name each endpoint at its own (target) port; a
    // ClusterIP Service's name the Service at its port.
    for (const [svcName, addr, srvPort] of [
      ['dns-test-service', ip, 8080],
      ['test-service-2', clusterIP, 80],
    ] as const)
      for (const partial of [svcName, `${svcName}.c-dns`, `${svcName}.c-dns.svc`]) {
        await dig([partial], [addr]);
        const srv = await lab.dig(from, [`_http._tcp.${partial}`, 'SRV'], true);
        assert.equal(srv.length, 1, `SRV _http._tcp.${partial}: ${srv.join(' | ')}`);
        assert.match(
          srv[0] ?? '',
          new RegExp(`^\\d+ \\d+ ${String(srvPort)} \\S+\\.$`),
          `SRV _http._tcp.${partial}`,
        );
      }
  });
});
