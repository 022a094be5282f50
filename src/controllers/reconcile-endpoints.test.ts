// Scenarios for the Endpoints and mirroring reconcilers: ready/not-ready split, terminating
// pods, publishNotReadyAddresses, repacking by port set, no-op passes, deletion with the
// Service, and mirroring of hand-written Endpoints into slices.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSlice, Endpoints } from '../kube/types.js';
import type { Operation } from './operations.js';
import { reconcileEndpoints } from './reconcile-endpoints.js';
import { reconcileMirroring } from './reconcile-mirroring.js';
import { pod, service } from '../kube/testing.js';
import { SVC_SPEC, applyToStore } from './test-builders.js';

/** Service web's spec: selects app=web. */
const WEB = { ...SVC_SPEC, selector: { app: 'web' } };

function objectOf(ops: Operation[]): Endpoints | undefined {
  const op = ops[0];
  return op !== undefined && (op.op === 'create' || op.op === 'update')
    ? (op.object as Endpoints)
    : undefined;
}

describe('reconcileEndpoints', () => {
  const pods = [
    pod('a', { ip: '10.244.0.10' }),
    pod('b', { ip: '10.244.0.9', ready: false }),
    pod('c', { ip: '10.244.0.8', terminating: true }),
    pod('d', { ip: '10.244.0.7', phase: 'Failed' }),
  ];

  /** reconcileEndpoints for Service default/web selecting `pods`, with no Endpoints yet. */
  const reconcileWeb = (over: Partial<Parameters<typeof reconcileEndpoints>[0]>) =>
    reconcileEndpoints({
      service: service('web', WEB),
      namespace: 'default',
      name: 'web',
      pods,
      existing: undefined,
      ...over,
    });

  test('ready pods in addresses, unready in notReadyAddresses, terminating left out', () => {
    const r = reconcileWeb({});
    assert.equal(r.operations[0]?.op, 'create');
    const ep = objectOf(r.operations)!;
    assert.equal(ep.metadata?.name, 'web');
    assert.equal(ep.metadata.labels?.['endpointslice.kubernetes.io/skip-mirror'], 'true');
    assert.deepEqual(ep.subsets, [
      {
        addresses: [
          {
            ip: '10.244.0.10',
            nodeName: 'node-a',
            targetRef: { kind: 'Pod', namespace: 'default', name: 'a', uid: 'pod-uid-a' },
          },
        ],
        notReadyAddresses: [
          {
            ip: '10.244.0.9',
            nodeName: 'node-a',
            targetRef: { kind: 'Pod', namespace: 'default', name: 'b', uid: 'pod-uid-b' },
          },
        ],
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      },
    ]);
  });

  test('publishNotReadyAddresses puts every pod, terminating ones too, in addresses', () => {
    const r = reconcileWeb({
      service: service('web', { ...WEB, publishNotReadyAddresses: true }),
    });
    const ep = objectOf(r.operations)!;
    assert.deepEqual(
      ep.subsets?.[0]?.addresses?.map((a) => a.ip),
      ['10.244.0.8', '10.244.0.9', '10.244.0.10'],
    );
    assert.equal(ep.subsets[0].notReadyAddresses, undefined);
  });

  test('subsets are repacked by port set (named targetPort differing per pod)', () => {
    const svc = service('web', { ...WEB, ports: [{ port: 80, targetPort: 'http' }] });
    /** A pod whose container port `http` is `containerPort`. */
    const httpPod = (name: string, ip: string, containerPort: number) =>
      pod(name, { ip, containers: [{ name: 'c', ports: [{ name: 'http', containerPort }] }] });
    const p = [
      httpPod('a', '10.0.0.1', 8080),
      httpPod('b', '10.0.0.2', 9090),
      httpPod('c', '10.0.0.3', 8080),
    ];
    const ep = objectOf(reconcileWeb({ service: svc, pods: p }).operations)!;
    assert.deepEqual(
      ep.subsets?.map((s) => [s.ports?.[0]?.port, s.addresses?.map((a) => a.ip)]),
      [
        [8080, ['10.0.0.1', '10.0.0.3']],
        [9090, ['10.0.0.2']],
      ],
    );
  });

  test('an unchanged Endpoints is not rewritten; a changed one is updated', () => {
    const first = objectOf(reconcileWeb({ triggerTime: 't1' }).operations)!;
    const again = reconcileWeb({ existing: first, triggerTime: 't2' });
    assert.deepEqual(again.operations, []);
    const fewer = reconcileWeb({ pods: pods.slice(1), existing: first, triggerTime: 't3' });
    assert.equal(fewer.operations[0]?.op, 'update');
    const upd = objectOf(fewer.operations)!;
    assert.equal(upd.subsets?.[0]?.addresses, undefined);
    assert.equal(
      upd.metadata?.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'],
      't3',
    );
  });

  test('no matching pods gives empty subsets', () => {
    const ep = objectOf(reconcileWeb({ pods: [] }).operations)!;
    assert.deepEqual(ep.subsets, []);
  });

  test('deleted Service deletes its Endpoints; selector-less Services are left alone', () => {
    const existing: Endpoints = { metadata: { name: 'web', namespace: 'default' }, subsets: [] };
    assert.deepEqual(reconcileWeb({ service: undefined, existing }).operations, [
      { op: 'delete', kind: 'Endpoints', namespace: 'default', name: 'web' },
    ]);
    assert.deepEqual(reconcileWeb({ service: service('web', SVC_SPEC), existing }).operations, []);
  });
});

describe('reconcileMirroring', () => {
  const manual: Endpoints = {
    metadata: { name: 'ext', namespace: 'default', uid: 'ep-uid', labels: { team: 'x' } },
    subsets: [
      {
        addresses: [{ ip: '192.0.2.10' }, { ip: '192.0.2.11' }, { ip: '2001:db8::1' }],
        notReadyAddresses: [{ ip: '192.0.2.12' }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    ],
  };

  test('a selector-less Service with hand-written Endpoints gets mirrored slices per family', () => {
    const r = reconcileMirroring({
      service: service('ext', SVC_SPEC),
      endpoints: manual,
      existing: [],
    });
    const slices = applyToStore<EndpointSlice>('EndpointSlice', [], r.operations);
    const v4 = slices.find((s) => s.addressType === 'IPv4')!;
    assert.deepEqual(
      v4.endpoints?.map((e) => [e.addresses[0], e.conditions?.ready]),
      [
        ['192.0.2.10', true],
        ['192.0.2.11', true],
        ['192.0.2.12', false],
      ],
    );
    assert.deepEqual(v4.ports, [{ name: 'http', protocol: 'TCP', port: 8080 }]);
    assert.deepEqual(v4.metadata?.labels, {
      team: 'x',
      'kubernetes.io/service-name': 'ext',
      'endpointslice.kubernetes.io/managed-by': 'endpointslicemirroring-controller.k8s.io',
    });
    assert.equal(v4.metadata.ownerReferences?.[0]?.kind, 'Endpoints');
    const v6 = slices.find((s) => s.addressType === 'IPv6')!;
    assert.deepEqual(
      v6.endpoints?.map((e) => e.addresses[0]),
      ['2001:db8::1'],
    );
    // Second pass: nothing to do.
    assert.deepEqual(
      reconcileMirroring({
        service: service('ext', SVC_SPEC),
        endpoints: manual,
        existing: slices,
      }).operations,
      [],
    );
    // Selector added: mirrored slices go away.
    const gone = reconcileMirroring({
      service: service('ext', { ...SVC_SPEC, selector: { app: 'ext' } }),
      endpoints: manual,
      existing: slices,
    });
    assert.deepEqual(applyToStore('EndpointSlice', slices, gone.operations), []);
  });

  test('Endpoints written by the Endpoints controller (skip-mirror) are not mirrored', () => {
    const skip = structuredClone(manual);
    skip.metadata!.labels = { 'endpointslice.kubernetes.io/skip-mirror': 'true' };
    assert.deepEqual(
      reconcileMirroring({ service: service('ext', SVC_SPEC), endpoints: skip, existing: [] })
        .operations,
      [],
    );
  });

  test('invalid addresses are skipped with a warning', () => {
    const bad = structuredClone(manual);
    bad.subsets![0]!.addresses!.push({ ip: 'not-an-ip' });
    const r = reconcileMirroring({
      service: service('ext', SVC_SPEC),
      endpoints: bad,
      existing: [],
    });
    assert.match(
      r.warnings[0] ?? '',
      /Endpoints default\/ext: subsets\[0\]: invalid IP "not-an-ip"/,
    );
    assert.equal(r.operations.length, 2);
  });
});
