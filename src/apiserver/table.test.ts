import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEPLOYMENTS, ENDPOINTS, ENDPOINTSLICES, PODS, SERVICES } from './resources.js';
import type { StoredObject } from './object.js';
import { humanDuration, toTable } from './table.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const meta = (name: string) => ({
  name,
  namespace: 'default',
  creationTimestamp: '2026-01-01T00:00:00Z',
});

describe('table', () => {
  it('formats ages like kubectl', () => {
    const cases: [number, string][] = [
      [5, '5s'],
      [119, '119s'],
      [125, '2m5s'],
      [600, '10m'],
      [3 * 3600 + 120, '3h2m'],
      [9 * 3600, '9h'],
      [3 * 86400 + 3600, '3d1h'],
      [30 * 86400, '30d'],
      [3 * 365 * 86400 + 86400, '3y1d'],
    ];
    for (const [secs, want] of cases) assert.equal(humanDuration(secs * 1000), want, String(secs));
  });

  it('prints services with kube-apiserver columns (Selector at priority 1)', () => {
    const svc = {
      metadata: meta('web'),
      spec: {
        type: 'NodePort',
        clusterIP: '10.96.5.5',
        selector: { app: 'web' },
        ports: [
          { port: 80, nodePort: 30080, protocol: 'TCP' },
          { port: 53, protocol: 'UDP' },
        ],
      },
    } as unknown as StoredObject;
    const lb = {
      metadata: meta('lb'),
      spec: { type: 'LoadBalancer', clusterIP: '10.96.0.9', ports: [] },
    } as unknown as StoredObject;
    const t = toTable(SERVICES, [svc, lb], T0 + 62_000);
    assert.deepEqual(
      t.columnDefinitions.map((c) => `${c.name}:${c.priority}`),
      ['Name:0', 'Type:0', 'Cluster-IP:0', 'External-IP:0', 'Port(s):0', 'Age:0', 'Selector:1'],
    );
    assert.deepEqual(t.rows[0]?.cells, [
      'web',
      'NodePort',
      '10.96.5.5',
      '<none>',
      '80:30080/TCP,53/UDP',
      '62s',
      'app=web',
    ]);
    assert.deepEqual(t.rows[1]?.cells.slice(3, 5), ['<pending>', '<none>']);
    assert.deepEqual(t.rows[0].object, {
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: meta('web'),
    });
  });

  it('prints pods, endpoints, slices and deployments', () => {
    const pod = {
      metadata: { ...meta('p'), deletionTimestamp: '2026-01-01T00:01:00Z' },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }, { name: 'd' }] },
      status: {
        phase: 'Running',
        podIP: '10.244.1.5',
        containerStatuses: [{ ready: true, restartCount: 2 }],
      },
    } as unknown as StoredObject;
    assert.deepEqual(toTable(PODS, [pod], T0).rows[0]?.cells, [
      'p',
      '1/2',
      'Terminating',
      '2',
      '0s',
      '10.244.1.5',
      'n1',
      '<none>',
      '<none>',
    ]);
    const ep = {
      metadata: meta('e'),
      subsets: [
        {
          addresses: ['1', '2', '3', '4'].map((i) => ({ ip: `10.0.0.${i}` })),
          ports: [{ port: 80 }],
        },
      ],
    } as unknown as StoredObject;
    assert.equal(
      toTable(ENDPOINTS, [ep], T0).rows[0]?.cells[1],
      '10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more...',
    );
    const es = {
      metadata: meta('e-abc'),
      addressType: 'IPv4',
      ports: [{ port: 8080 }],
      endpoints: [{ addresses: ['10.0.0.1'] }],
    } as unknown as StoredObject;
    assert.deepEqual(toTable(ENDPOINTSLICES, [es], T0).rows[0]?.cells, [
      'e-abc',
      'IPv4',
      '8080',
      '10.0.0.1',
      '0s',
    ]);
    const d = {
      metadata: meta('d'),
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'd' } },
        template: { spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
      status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 },
    } as unknown as StoredObject;
    assert.deepEqual(toTable(DEPLOYMENTS, [d], T0).rows[0]?.cells, [
      'd',
      '2/3',
      3,
      2,
      '0s',
      'web',
      'nginx',
      'app=d',
    ]);
  });
});
