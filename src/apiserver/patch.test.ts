import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, patchTypeOf } from './patch.js';
import { ApiError } from './status.js';

describe('patch', () => {
  it('maps content types to patch types', () => {
    assert.equal(patchTypeOf('application/strategic-merge-patch+json'), 'strategic');
    assert.equal(patchTypeOf('application/merge-patch+json; charset=utf-8'), 'merge');
    assert.equal(patchTypeOf('application/json-patch+json'), 'json');
    assert.equal(patchTypeOf('application/apply-patch+yaml'), 'apply');
    assert.equal(patchTypeOf('application/json'), undefined);
  });

  it('JSON merge patch replaces lists and deletes nulls', () => {
    assert.deepEqual(
      applyMergePatch({ a: 1, b: { c: 2, d: 3 }, l: [1, 2] }, { b: { c: null, e: 4 }, l: [3] }),
      { a: 1, b: { d: 3, e: 4 }, l: [3] },
    );
  });

  it('JSON patch supports add, remove, replace, test and the append index', () => {
    const doc = { metadata: { labels: { a: '1' } }, spec: { ports: [{ port: 80 }] } };
    const out = applyJsonPatch(doc, [
      { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
      { op: 'remove', path: '/metadata/labels/a' },
      { op: 'add', path: '/spec/ports/-', value: { port: 443 } },
      { op: 'replace', path: '/spec/ports/0/port', value: 8080 },
      { op: 'test', path: '/spec/ports/1/port', value: 443 },
    ]);
    assert.deepEqual(out, {
      metadata: { labels: { 'b/c': '2' } },
      spec: { ports: [{ port: 8080 }, { port: 443 }] },
    });
    assert.throws(() => applyJsonPatch(doc, [{ op: 'test', path: '/spec', value: 1 }]), ApiError);
  });

  it('strategic merge patch merges containers by name and honours $setElementOrder (kubectl apply)', () => {
    const live = {
      spec: {
        replicas: 1,
        template: {
          spec: {
            containers: [
              { name: 'web', image: 'nginx:1.24', ports: [{ containerPort: 80 }] },
              { name: 'side', image: 'busybox' },
            ],
          },
        },
      },
    };
    const patch = {
      spec: {
        replicas: 3,
        template: {
          spec: {
            '$setElementOrder/containers': [{ name: 'side' }, { name: 'web' }],
            containers: [{ image: 'nginx:1.25', name: 'web' }],
          },
        },
      },
    };
    const out = applyStrategicMergePatch('Deployment', live, patch) as typeof live;
    assert.equal(out.spec.replicas, 3);
    assert.deepEqual(
      out.spec.template.spec.containers.map((c) => [c.name, c.image]),
      [
        ['side', 'busybox'],
        ['web', 'nginx:1.25'],
      ],
    );
    assert.deepEqual(out.spec.template.spec.containers[1]?.ports, [{ containerPort: 80 }]);
  });

  it('strategic merge patch: service ports by port, $patch delete, finalizers as a set, atomic lists', () => {
    const svc = {
      metadata: { finalizers: ['a'] },
      spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 443 }], externalIPs: ['1.1.1.1'] },
    };
    const out = applyStrategicMergePatch('Service', svc, {
      metadata: { finalizers: ['b'] },
      spec: {
        ports: [
          { port: 80, name: 'http' },
          { port: 443, $patch: 'delete' },
        ],
        externalIPs: ['2.2.2.2'],
      },
    });
    assert.deepEqual(out, {
      metadata: { finalizers: ['a', 'b'] },
      spec: { ports: [{ port: 80, targetPort: 8080, name: 'http' }], externalIPs: ['2.2.2.2'] },
    });
    const slice = applyStrategicMergePatch(
      'EndpointSlice',
      { endpoints: [{ addresses: ['10.0.0.1'] }] },
      { endpoints: [{ addresses: ['10.0.0.2'] }] },
    );
    assert.deepEqual(slice, { endpoints: [{ addresses: ['10.0.0.2'] }] });
  });

  it('strategic merge patch: $retainKeys and $deleteFromPrimitiveList', () => {
    const out = applyStrategicMergePatch(
      'Deployment',
      {
        spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
        metadata: { finalizers: ['x', 'y'] },
      },
      {
        spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } },
        metadata: { '$deleteFromPrimitiveList/finalizers': ['x'] },
      },
    );
    assert.deepEqual(out, {
      spec: { strategy: { type: 'Recreate' } },
      metadata: { finalizers: ['y'] },
    });
  });
});
