import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  clusterProblems,
  expectedEndpointRules,
  expectedNftEndpoints,
  programmedEndpointRules,
  programmedNftEndpoints,
  proxySettled,
  missingEndpoints,
  unprogrammedEndpoints,
  type ClusterView,
} from './wait.js';
import { endpoint, node, pod as podOf, service, slice as sliceFor } from '../kube/testing.js';
import type { DaemonSet, EndpointSlice, Pod, Service } from '../kube/types.js';
import { DEFAULT_OPTIONS } from '../proxy/iptables/options.js';
import { planFromObjects } from '../proxy/iptables/plan-objects.js';

/** A Pod `default/name` of app web on node n1. */
const pod = (name: string, ip: string, ready: boolean, terminating = false): Pod =>
  podOf(name, { ip, ready, node: 'n1', containers: [{ name: 'c' }], terminating });

const svc = service('web', { selector: { app: 'web' }, ports: [{ port: 80 }] });

/** The slice `default/web-x` of Service web, every endpoint ready. */
const slice = (ips: string[]): EndpointSlice =>
  sliceFor(
    'web',
    ips.map((ip) => endpoint(ip, { conditions: { ready: true } })),
    { name: 'web-x', ports: null },
  );

function view(v: Partial<ClusterView>): ClusterView {
  return {
    nodes: [node('n1')],
    pods: [],
    deployments: [],
    statefulSets: [],
    services: [],
    endpointSlices: [],
    ...v,
  };
}

test('ready when every node, Pod, workload and Service endpoint set is current', () => {
  assert.deepEqual(
    clusterProblems(
      view({
        pods: [pod('a', '10.244.1.2', true)],
        services: [svc],
        endpointSlices: [slice(['10.244.1.2'])],
      }),
      ['n1'],
    ),
    [],
  );
});

test('names what is missing: nodes, unready Pods, short workloads, stale endpoints', () => {
  const problems = clusterProblems(
    view({
      nodes: [node('n1', { ready: 'False' })],
      pods: [pod('a', '10.244.1.2', true), pod('b', '10.244.1.3', false)],
      deployments: [
        {
          kind: 'Deployment',
          metadata: { name: 'web', namespace: 'default' },
          spec: { replicas: 2, selector: {}, template: {} },
          status: { replicas: 2, readyReplicas: 1 },
        },
      ],
      services: [svc],
      endpointSlices: [slice([])],
    }),
    ['n1', 'n2'],
  );
  assert.deepEqual(problems, [
    'node n1 not Ready',
    'node n2 not Ready',
    'pod default/b not Ready',
    'deployment default/web has 1/2 ready',
    'service default/web endpoints not current',
  ]);
});

test('terminating Pods and ExternalName or selector-less Services are not waited for', () => {
  const gone = pod('old', '10.244.1.9', false, true);
  const ext = service('x', { type: 'ExternalName', externalName: 'a.b', ports: null });
  assert.deepEqual(clusterProblems(view({ pods: [gone], services: [ext] }), ['n1']), []);
});

test('a proxy is settled when its last sync is not older than the last queued change', () => {
  const m = (last: number, queued: number, pending = 0): string =>
    [
      '# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds x',
      `kubeproxy_sync_proxy_rules_last_timestamp_seconds ${String(last)}`,
      `kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds ${String(queued)}`,
      `kubeproxy_sync_proxy_rules_endpoint_changes_pending ${String(pending)}`,
      'kubeproxy_sync_proxy_rules_service_changes_pending 0',
    ].join('\n');
  assert.equal(proxySettled(m(100, 99)), true);
  assert.equal(proxySettled(m(100, 101)), false);
  assert.equal(proxySettled(m(100, 99, 2)), false);
  assert.equal(proxySettled(m(0, 0)), false, 'never synced');
  assert.equal(proxySettled(''), false);
});

// --- every endpoint programmed -------------------------------------------------------------

const webPorts = [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' as const }];
const twoPortSvc = service('web', {
  clusterIP: '10.96.0.20',
  selector: { app: 'web' },
  ports: webPorts,
});

const localSvc = service('local', {
  clusterIP: '10.96.0.21',
  internalTrafficPolicy: 'Local',
  selector: { app: 'web' },
  ports: webPorts,
});

/** The slice `default/<service>-abc` (port http 8080), every endpoint ready on its node. */
const sliceOf = (name: string, eps: [string, string][]): EndpointSlice =>
  sliceFor(
    name,
    eps.map(([ip, nodeName]) => endpoint(ip, { nodeName, conditions: { ready: true } })),
    { name: `${name}-abc` },
  );

const EPS: [string, string][] = [
  ['10.244.0.5', 'n0'],
  ['10.244.1.7', 'n1'],
  ['10.244.2.3', 'n2'],
];

/** The nat table the proxy of `nodeName` writes for these objects: its own planner's output. */
function natRulesFor(services: Service[], slices: EndpointSlice[], nodeName: string): string {
  const options = { ...DEFAULT_OPTIONS, nodeName, nodeIP: '172.18.0.3' };
  return planFromObjects(services, slices, options, 'IPv4').plan.text;
}

test("a proxy's full rules for the API's objects leave nothing unprogrammed", () => {
  const services = [twoPortSvc, localSvc];
  const slices = [sliceOf('web', EPS), sliceOf('local', EPS)];
  const want = expectedEndpointRules(services, slices, undefined, 'n1');
  // web: all three endpoints; local (internalTrafficPolicy Local): only n1's own.
  assert.deepEqual([...want.values()].sort(), [
    'default/local:http -> 10.244.1.7:8080',
    'default/web:http -> 10.244.0.5:8080',
    'default/web:http -> 10.244.1.7:8080',
    'default/web:http -> 10.244.2.3:8080',
  ]);
  assert.deepEqual(unprogrammedEndpoints(want, natRulesFor(services, slices, 'n1')), []);
});

test('a proxy that has seen only some endpoints is not done, however settled its metrics', () => {
  // The proxy's informer delivered the EndpointSlice while it listed one endpoint: it synced
  // that, has nothing pending, and its metrics say settled. The API server lists three.
  const behind = natRulesFor([twoPortSvc], [sliceOf('web', EPS.slice(0, 1))], 'n1');
  const want = expectedEndpointRules([twoPortSvc], [sliceOf('web', EPS)], undefined, 'n1');
  assert.deepEqual(unprogrammedEndpoints(want, behind), [
    'default/web:http -> 10.244.1.7:8080',
    'default/web:http -> 10.244.2.3:8080',
  ]);
  assert.deepEqual(unprogrammedEndpoints(want, ''), [...want.values()]);
});

test('not-ready endpoints are not required; a headless Service needs no rules', () => {
  const slice = sliceOf('web', EPS);
  const notReady: EndpointSlice = {
    ...slice,
    endpoints: (slice.endpoints ?? []).map((e, i) =>
      i === 2 ? { ...e, conditions: { ready: false } } : e,
    ),
  };
  assert.equal(expectedEndpointRules([twoPortSvc], [notReady], undefined, 'n1').size, 2);
  const headless: Service = { ...twoPortSvc, spec: { ...twoPortSvc.spec, clusterIP: 'None' } };
  assert.equal(expectedEndpointRules([headless], [slice], undefined, 'n1').size, 0);
});

test('programmedEndpointRules reads DNAT targets of endpoint chains from iptables-save', () => {
  const dump = [
    '*nat',
    ':KUBE-SEP-AAAA - [0:0]',
    '-A KUBE-SEP-AAAA -s 10.244.0.5/32 -m comment --comment default/web:http -j KUBE-MARK-MASQ',
    '-A KUBE-SEP-AAAA -p tcp -m comment --comment default/web:http -m tcp -j DNAT --to-destination 10.244.0.5:8080',
    '-A KUBE-SVC-BBBB -m comment --comment "default/web:http -> 10.244.0.5:8080" -j KUBE-SEP-AAAA',
    'COMMIT',
  ].join('\n');
  assert.deepEqual([...programmedEndpointRules(dump)], ['KUBE-SEP-AAAA 10.244.0.5:8080']);
});

test('an object the proxy would skip is skipped, not an error that keeps lab up waiting', () => {
  const broken = {
    metadata: { name: 'broken', namespace: 'default' },
    spec: { clusterIP: '10.96.0.30', ports: [null] },
  } as unknown as Service;
  const want = expectedEndpointRules([broken, twoPortSvc], [sliceOf('web', EPS)], undefined, 'n1');
  assert.equal(want.size, 3);
});

// --- nftables mode --------------------------------------------------------------------------

/** `nft list table ip kube-proxy` as nft 1.0.6 prints it (numgen map, direct and affinity DNAT). */
const NFT_LIST = [
  'table ip kube-proxy {',
  '\tcomment "rules for kube-proxy"',
  '\tchain services {',
  '\t\tip daddr . meta l4proto . th dport vmap @service-ips',
  '\t}',
  '',
  '\tchain service-ABCD2345-default/web/tcp/http {',
  '\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.0.5 . 8080, 1 : 10.244.1.7 . 8080 }',
  '\t}',
  '',
  '\tchain local-QWER2345-default/local/tcp/http {',
  '\t\tmeta l4proto tcp dnat to 10.244.1.7:8080',
  '\t}',
  '',
  '\tchain endpoint-ZXCV2345-default/web/tcp/http__10.244.2.3/8080 {',
  '\t\tupdate @affinity-ZXCV2345-default/web/tcp/http__10.244.2.3/8080 { ip saddr }',
  '\t\tmeta l4proto tcp dnat to 10.244.2.3:8080',
  '\t}',
  '}',
].join('\n');

test('programmedNftEndpoints reads the DNATs of service, local and endpoint chains', () => {
  assert.deepEqual([...programmedNftEndpoints(NFT_LIST)].sort(), [
    'default/local/tcp/http 10.244.1.7:8080',
    'default/web/tcp/http 10.244.0.5:8080',
    'default/web/tcp/http 10.244.1.7:8080',
    'default/web/tcp/http 10.244.2.3:8080',
  ]);
});

test('nftables mode: every endpoint in the table is done; a missing one is named', () => {
  const services = [twoPortSvc, localSvc];
  const slices = [sliceOf('web', EPS), sliceOf('local', EPS)];
  const want = expectedNftEndpoints(services, slices, undefined, 'n1');
  assert.deepEqual([...want.keys()].sort(), [
    'default/local/tcp/http 10.244.1.7:8080',
    'default/web/tcp/http 10.244.0.5:8080',
    'default/web/tcp/http 10.244.1.7:8080',
    'default/web/tcp/http 10.244.2.3:8080',
  ]);
  const missing = (text: string) => missingEndpoints(want, programmedNftEndpoints(text));
  assert.deepEqual(missing(NFT_LIST), []);
  const behind = NFT_LIST.replace(', 1 : 10.244.1.7 . 8080', '');
  assert.deepEqual(missing(behind), ['default/web:http -> 10.244.1.7:8080']);
  assert.deepEqual(missing(''), [...want.values()]);
});

test('a DaemonSet is waited for until its status, for this generation, has a Ready Pod per node', () => {
  const ds = (status?: DaemonSet['status'], generation = 1): DaemonSet => ({
    kind: 'DaemonSet',
    metadata: { name: 'kube-proxy', namespace: 'kube-system', generation },
    ...(status === undefined ? {} : { status }),
  });
  const full = { desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3 };
  const problems = (d: DaemonSet): string[] => clusterProblems(view({ daemonSets: [d] }), ['n1']);
  assert.deepEqual(problems(ds({ ...full, observedGeneration: 1 })), []);
  assert.deepEqual(problems(ds()), ['daemonset kube-system/kube-proxy has 0/0 ready']);
  assert.deepEqual(problems(ds({ ...full, numberReady: 2, observedGeneration: 1 })), [
    'daemonset kube-system/kube-proxy has 2/3 ready',
  ]);
  // A status from before the last spec change does not count.
  assert.equal(problems(ds({ ...full, observedGeneration: 1 }, 2)).length, 1);
});
