// Scenarios for the EndpointSlice reconciler: slice contents, splitting at 100 (never above
// the API server's 1000 endpoints; no slice over 100 ports), per-pod named ports, conditions
// for terminating and not-ready pods, publishNotReadyAddresses, placeholder, hints, and that
// a second pass over its own result writes nothing.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { node, pod, service, type ServiceSpecOptions } from '../kube/testing.js';
import type { EndpointSlice, Pod, Service } from '../kube/types.js';
import type { Operation } from './operations.js';
import { reconcileEndpointSlices } from './reconcile-endpointslice.js';
import { SVC_SPEC, applyToStore, nodeMap } from './test-builders.js';

/** Service web, owner of the slices: selects app=web unless `spec` says otherwise. */
function web(spec: ServiceSpecOptions = {}, labels?: Record<string, string>): Service {
  return service(
    'web',
    { ...SVC_SPEC, selector: { app: 'web' }, ...spec },
    { metadata: { uid: 'svc-uid-web', ...(labels !== undefined ? { labels } : {}) } },
  );
}

const nodes = nodeMap(
  node('node-a', { zone: 'zone-a' }),
  node('node-b', { zone: 'zone-b' }),
  node('node-c'),
);

function run(
  service = web(),
  pods: Pod[] = [],
  existing: EndpointSlice[] = [],
  extra: { max?: number; nodes?: typeof nodes } = {},
): { ops: Operation[]; warnings: string[]; slices: EndpointSlice[] } {
  const r = reconcileEndpointSlices({
    service,
    pods,
    nodes: extra.nodes ?? nodes,
    existing,
    triggerTime: '2026-01-01T00:00:05Z',
    ...(extra.max !== undefined ? { maxEndpointsPerSlice: extra.max } : {}),
  });
  return {
    ops: r.operations,
    warnings: r.warnings,
    slices: applyToStore('EndpointSlice', existing, r.operations),
  };
}

function manyPods(n: number, prefix = 'p'): Pod[] {
  return Array.from({ length: n }, (_, i) =>
    pod(`${prefix}-${String(i).padStart(3, '0')}`, {
      ip: `10.244.${Math.floor(i / 250)}.${(i % 250) + 2}`,
    }),
  );
}

const webPods = [
  pod('web-1', { ip: '10.244.0.2', node: 'node-a' }),
  pod('web-2', { ip: '10.244.1.2', node: 'node-b' }),
  pod('web-3', { ip: '10.244.2.2', node: 'node-c' }),
];

describe('reconcileEndpointSlices', () => {
  test('three ready pods give one slice with metadata the API expects', () => {
    const { ops, slices } = run(web({}, { tier: 'front' }), webPods);
    assert.deepEqual(
      ops.map((o) => o.op),
      ['create'],
    );
    const s = slices[0]!;
    assert.equal(s.metadata?.generateName, 'web-');
    assert.equal(s.addressType, 'IPv4');
    assert.deepEqual(s.metadata.labels, {
      tier: 'front',
      'kubernetes.io/service-name': 'web',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
    });
    assert.deepEqual(s.metadata.ownerReferences, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        name: 'web',
        uid: 'svc-uid-web',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(
      s.metadata.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'],
      '2026-01-01T00:00:05Z',
    );
    assert.deepEqual(s.ports, [{ name: 'http', protocol: 'TCP', port: 80 }]);
    assert.deepEqual(
      s.endpoints?.map((e) => [e.addresses[0], e.nodeName, e.zone, e.targetRef?.name]),
      [
        ['10.244.0.2', 'node-a', 'zone-a', 'web-1'],
        ['10.244.1.2', 'node-b', 'zone-b', 'web-2'],
        ['10.244.2.2', 'node-c', undefined, 'web-3'],
      ],
    );
    assert.deepEqual(s.endpoints[0]?.conditions, {
      ready: true,
      serving: true,
      terminating: false,
    });
  });

  test('a second pass over its own output writes nothing', () => {
    const first = run(web(), webPods);
    const second = run(web(), webPods, first.slices);
    assert.deepEqual(second.ops, []);
  });

  test('250 endpoints are split into slices of at most 100', () => {
    const { slices } = run(web(), manyPods(250));
    assert.deepEqual(
      slices.map((s) => s.endpoints?.length),
      [100, 100, 50],
    );
    const ips = new Set(slices.flatMap((s) => s.endpoints!.map((e) => e.addresses[0])));
    assert.equal(ips.size, 250);
  });

  test('the per-slice limit is configurable', () => {
    const { slices } = run(web(), manyPods(5), [], { max: 2 });
    assert.deepEqual(
      slices.map((s) => s.endpoints?.length),
      [2, 2, 1],
    );
  });

  test('a per-slice limit above the API server limit of 1000 is held at 1000', () => {
    const { slices } = run(web(), manyPods(2100), [], { max: 5000 });
    assert.deepEqual(
      slices.map((s) => s.endpoints?.length),
      [1000, 1000, 100],
    );
  });

  test('a Service with more than 100 ports gets no slice write (the API server would refuse it), and a warning', () => {
    const ports = Array.from({ length: 101 }, (_, i) => ({
      name: `p${String(i)}`,
      port: 1000 + i,
      protocol: 'TCP' as const,
    }));
    const r = run(web({ ports }), webPods);
    assert.deepEqual(r.ops, []);
    assert.match(r.warnings.join('\n'), /101 ports, but an EndpointSlice holds at most 100/);
    const hundred = run(web({ ports: ports.slice(0, 100) }), webPods);
    assert.equal(hundred.slices[0]?.ports?.length, 100);
  });

  test('growing from 100 to 120 leaves the full slice alone and creates one for 20', () => {
    const first = run(web(), manyPods(100));
    const second = run(web(), manyPods(120), first.slices);
    assert.deepEqual(
      second.ops.map((o) => o.op),
      ['create'],
    );
    assert.deepEqual(
      second.slices.map((s) => s.endpoints?.length),
      [100, 20],
    );
  });

  test('removing pods updates slices in place and deletes emptied ones', () => {
    const first = run(web(), manyPods(150));
    // Keep only the first 40: the second slice (50) empties, the first shrinks.
    const second = run(web(), manyPods(40), first.slices);
    assert.deepEqual(second.ops.map((o) => o.op).sort(), ['delete', 'update']);
    assert.deepEqual(
      second.slices.map((s) => s.endpoints?.length),
      [40],
    );
  });

  test('a named targetPort is resolved per pod; pods with different numbers get separate slices', () => {
    const service = web({ ports: [{ name: 'http', port: 3000, targetPort: 'web' }] });
    const pods = [
      pod('a', {
        ip: '10.244.0.2',
        containers: [{ name: 'c', ports: [{ name: 'web', containerPort: 8080 }] }],
      }),
      pod('b', {
        ip: '10.244.0.3',
        containers: [{ name: 'c', ports: [{ name: 'web', containerPort: 9090 }] }],
      }),
      pod('c', {
        ip: '10.244.0.4',
        containers: [{ name: 'c', ports: [{ name: 'web', containerPort: 8080 }] }],
      }),
      // Same name but UDP: does not resolve for a TCP service port.
      pod('d', {
        ip: '10.244.0.5',
        containers: [{ name: 'c', ports: [{ name: 'web', containerPort: 7070, protocol: 'UDP' }] }],
      }),
    ];
    const { slices } = run(service, pods);
    const byPort = new Map(
      slices.map((s) => [
        JSON.stringify(s.ports?.map((p) => p.port)),
        s.endpoints?.map((e) => e.targetRef?.name),
      ]),
    );
    assert.deepEqual(byPort.get('[8080]'), ['a', 'c']);
    assert.deepEqual(byPort.get('[9090]'), ['b']);
    assert.deepEqual(byPort.get('[]'), ['d']);
  });

  test('conditions: terminating, not ready, and publishNotReadyAddresses', () => {
    const pods = [
      pod('ready', { ip: '10.244.0.2' }),
      pod('notready', { ip: '10.244.0.3', ready: false }),
      pod('term-serving', { ip: '10.244.0.4', terminating: true }),
      pod('term-gone', { ip: '10.244.0.5', terminating: true, ready: false }),
      pod('done', { ip: '10.244.0.6', phase: 'Succeeded' }),
      pod('noip', { ip: null }),
    ];
    const cond = (publish: boolean): Record<string, unknown> => {
      const { slices } = run(web({ publishNotReadyAddresses: publish }), pods);
      return Object.fromEntries(
        slices.flatMap((s) =>
          s.endpoints!.map((e): [string, unknown] => [e.targetRef?.name ?? '', e.conditions]),
        ),
      );
    };
    assert.deepEqual(cond(false), {
      ready: { ready: true, serving: true, terminating: false },
      notready: { ready: false, serving: false, terminating: false },
      'term-serving': { ready: false, serving: true, terminating: true },
      'term-gone': { ready: false, serving: false, terminating: true },
    });
    assert.deepEqual(cond(true), {
      ready: { ready: true, serving: true, terminating: false },
      notready: { ready: true, serving: false, terminating: false },
      'term-serving': { ready: true, serving: true, terminating: true },
      'term-gone': { ready: true, serving: false, terminating: true },
    });
  });

  test('pods on an unknown node are skipped with a warning unless publishNotReadyAddresses', () => {
    const pods = [pod('lost', { node: 'node-x' }), pod('ok', { ip: '10.244.0.9' })];
    const r = run(web(), pods);
    assert.deepEqual(
      r.slices[0]?.endpoints?.map((e) => e.targetRef?.name),
      ['ok'],
    );
    assert.match(r.warnings[0] ?? '', /Pod default\/lost: node "node-x" not found/);
    const p = run(web({ publishNotReadyAddresses: true }), pods);
    assert.equal(p.slices[0]?.endpoints?.length, 2);
  });

  test('pods not matching the selector or in another namespace are ignored', () => {
    const other = pod('other', { labels: { app: 'db' } });
    const elsewhere = pod('elsewhere');
    elsewhere.metadata!.namespace = 'kube-system';
    const { slices } = run(web(), [other, elsewhere, pod('mine')]);
    assert.deepEqual(
      slices[0]?.endpoints?.map((e) => e.targetRef?.name),
      ['mine'],
    );
  });

  test('hostname is set only when the pod subdomain is the service name', () => {
    const pods = [
      pod('db-0', { ip: '10.244.0.2', hostname: 'db-0', subdomain: 'web' }),
      pod('db-1', { ip: '10.244.0.3', hostname: 'db-1', subdomain: 'other' }),
    ];
    const { slices } = run(web({ clusterIP: 'None' }), pods);
    assert.deepEqual(
      slices[0]?.endpoints?.map((e) => e.hostname),
      ['db-0', undefined],
    );
    assert.equal(slices[0].metadata?.labels?.['service.kubernetes.io/headless'], '');
  });

  test('a service without endpoints keeps exactly one placeholder slice', () => {
    const first = run(web(), []);
    assert.equal(first.slices.length, 1);
    assert.deepEqual(first.slices[0]?.endpoints, []);
    assert.deepEqual(first.slices[0].ports, []);
    assert.deepEqual(run(web(), [], first.slices).ops, []);
    // Pods arrive: the placeholder is replaced.
    const withPods = run(web(), webPods, first.slices);
    assert.equal(withPods.slices.length, 1);
    assert.equal(withPods.slices[0]?.endpoints?.length, 3);
    // And go away: back to one placeholder.
    const none = run(web(), [], withPods.slices);
    assert.equal(none.slices.length, 1);
    assert.deepEqual(none.slices[0]?.endpoints, []);
  });

  test('trafficDistribution PreferClose adds zone hints only when every endpoint has a zone', () => {
    const zoned = [
      pod('a', { ip: '10.244.0.2', node: 'node-a' }),
      pod('b', { ip: '10.244.1.2', node: 'node-b' }),
    ];
    const service = web({ trafficDistribution: 'PreferClose' });
    const { slices } = run(service, zoned);
    assert.deepEqual(
      slices[0]?.endpoints?.map((e) => e.hints),
      [{ forZones: [{ name: 'zone-a' }] }, { forZones: [{ name: 'zone-b' }] }],
    );
    const mixed = run(service, [...zoned, pod('c', { ip: '10.244.2.2', node: 'node-c' })]);
    assert.ok(mixed.slices[0]?.endpoints?.every((e) => e.hints === undefined));
    const none = run(web(), zoned);
    assert.ok(none.slices[0]?.endpoints?.every((e) => e.hints === undefined));
    const sameNode = run(web({ trafficDistribution: 'PreferSameNode' }), zoned);
    assert.deepEqual(sameNode.slices[0]?.endpoints?.[0]?.hints, {
      forZones: [{ name: 'zone-a' }],
      forNodes: [{ name: 'node-a' }],
    });
  });

  test('dual-stack services get one slice per family from podIPs', () => {
    const service = web({ ipFamilies: ['IPv4', 'IPv6'] });
    const pods = [pod('a', { ip: ['10.244.0.2', 'fd00::2'] }), pod('b', { ip: ['10.244.0.3'] })];
    const { slices } = run(service, pods);
    const by = Object.fromEntries(
      slices.map((s) => [s.addressType, s.endpoints?.map((e) => e.addresses[0])]),
    );
    assert.deepEqual(by, { IPv4: ['10.244.0.2', '10.244.0.3'], IPv6: ['fd00::2'] });
  });

  test('selector-less and ExternalName services lose our slices but keep others', () => {
    const first = run(web(), webPods);
    const foreign: EndpointSlice = {
      metadata: {
        name: 'web-manual',
        namespace: 'default',
        labels: { 'kubernetes.io/service-name': 'web' },
      },
      addressType: 'IPv4',
      endpoints: [],
    };
    const selectorless = service('web', SVC_SPEC, { metadata: { uid: 'svc-uid-web' } });
    for (const svc of [selectorless, web({ type: 'ExternalName' })]) {
      const r = run(svc, webPods, [...first.slices, foreign]);
      assert.deepEqual(
        r.slices.map((s) => s.metadata?.name),
        ['web-manual'],
      );
    }
  });

  test('a pod update changes only the slice that holds it', () => {
    const first = run(web(), manyPods(150));
    const pods = manyPods(150);
    pods[120] = pod('p-120', { ip: '10.244.0.122', ready: false });
    const second = run(web(), pods, first.slices);
    assert.equal(second.ops.length, 1);
    const op = second.ops[0]!;
    assert.ok(op.op === 'update');
    assert.equal(op.object.metadata?.name, first.slices[1]?.metadata?.name);
  });

  test('label drift on an existing slice is repaired', () => {
    const first = run(web(), webPods);
    const tampered = structuredClone(first.slices);
    tampered[0]!.metadata!.labels = {
      'kubernetes.io/service-name': 'web',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      extra: 'x',
    };
    const r = run(web(), webPods, tampered);
    assert.deepEqual(
      r.ops.map((o) => o.op),
      ['update'],
    );
    assert.equal(r.slices[0]?.metadata?.labels?.extra, undefined);
  });
});
