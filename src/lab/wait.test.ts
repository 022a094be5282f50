import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterProblems, proxySettled, type ClusterView } from './wait.js';
import type { EndpointSlice, Node, Pod, Service } from '../kube/types.js';

const node = (name: string, ready: string): Node => ({
  metadata: { name },
  status: { conditions: [{ type: 'Ready', status: ready }] },
});

const pod = (
  name: string,
  ip: string,
  ready: boolean,
  extra: Partial<Pod['metadata']> = {},
): Pod => ({
  metadata: { name, namespace: 'default', labels: { app: 'web' }, ...extra },
  spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
  status: {
    phase: 'Running',
    podIP: ip,
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
  },
});

const svc: Service = {
  metadata: { name: 'web', namespace: 'default' },
  spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
};

const slice = (ips: string[]): EndpointSlice => ({
  metadata: {
    name: 'web-x',
    namespace: 'default',
    labels: { 'kubernetes.io/service-name': 'web' },
  },
  addressType: 'IPv4',
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
});

function view(v: Partial<ClusterView>): ClusterView {
  return {
    nodes: [node('n1', 'True')],
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
      nodes: [node('n1', 'False')],
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
  const gone = pod('old', '10.244.1.9', false, { deletionTimestamp: '2026-01-01T00:00:00Z' });
  const ext: Service = {
    metadata: { name: 'x', namespace: 'default' },
    spec: { type: 'ExternalName', externalName: 'a.b' },
  };
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
