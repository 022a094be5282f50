import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Service, ServiceSpec } from '../kube/types.js';
import { cidrContains, parseCIDR, parseIP } from '../util/ip.js';
import { SERVICES } from './resources.js';
import { ApiError } from './status.js';
import { newTestApi } from './testing.js';

type Svc = Service & { spec: ServiceSpec };

function create(api: ReturnType<typeof newTestApi>, name: string, spec: object): Svc {
  return api.store.create(SERVICES, 'default', { metadata: { name }, spec }) as unknown as Svc;
}

function invalid(fn: () => unknown): {
  message: string;
  causes: { field: string; message: string; reason: string }[];
} {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError && e.status === 422)
      return { message: e.message, causes: [...(e.details?.causes ?? [])] };
    throw e;
  }
  assert.fail('expected 422');
}

describe('Service defaulting', () => {
  it('defaults type, protocol, targetPort, policies and family fields like kube-apiserver', () => {
    const api = newTestApi();
    const svc = create(api, 'web', { selector: { app: 'web' }, ports: [{ port: 80 }] });
    assert.equal(svc.spec.type, 'ClusterIP');
    assert.deepEqual(svc.spec.ports, [{ port: 80, protocol: 'TCP', targetPort: 80 }]);
    assert.equal(svc.spec.sessionAffinity, 'None');
    assert.equal(svc.spec.internalTrafficPolicy, 'Cluster');
    assert.equal(svc.spec.externalTrafficPolicy, undefined);
    assert.equal(svc.spec.ipFamilyPolicy, 'SingleStack');
    assert.deepEqual(svc.spec.ipFamilies, ['IPv4']);
    assert.deepEqual(svc.spec.clusterIPs, [svc.spec.clusterIP]);
    assert.deepEqual(svc.status, { loadBalancer: {} });
  });

  it('ClientIP affinity gets the 10800 s default timeout', () => {
    const svc = create(newTestApi(), 's', { sessionAffinity: 'ClientIP', ports: [{ port: 80 }] });
    assert.equal(svc.spec.sessionAffinityConfig?.clientIP?.timeoutSeconds, 10800);
  });

  it('headless selector-less services get RequireDualStack and clusterIPs [None]', () => {
    const svc = create(newTestApi(), 'h', { clusterIP: 'None' });
    assert.equal(svc.spec.clusterIP, 'None');
    assert.deepEqual(svc.spec.clusterIPs, ['None']);
    assert.equal(svc.spec.ipFamilyPolicy, 'RequireDualStack');
  });

  it('ExternalName gets no IP and no family fields', () => {
    const svc = create(newTestApi(), 'ext', { type: 'ExternalName', externalName: 'example.com' });
    assert.equal(svc.spec.clusterIP, undefined);
    assert.equal(svc.spec.ipFamilies, undefined);
    assert.equal(svc.spec.internalTrafficPolicy, undefined);
  });
});

describe('ClusterIP allocation', () => {
  it('gives kubernetes the first address and allocates dynamically above the static band', () => {
    const api = newTestApi();
    const k = api.store.get(SERVICES, 'default', 'kubernetes') as unknown as Svc;
    assert.equal(k.spec.clusterIP, '10.96.0.1');
    const range = parseCIDR('10.96.0.0/12');
    assert.ok(range);
    for (let i = 0; i < 50; i++) {
      const ip = create(api, `s${i}`, { ports: [{ port: 80 }] }).spec.clusterIP ?? '';
      const p = parseIP(ip);
      assert.ok(p && cidrContains(range, p), ip);
      // static band of a /12 is 256 addresses: 10.96.0.1 - 10.96.1.0
      assert.ok(p.value - range.base > 256n, `${ip} is in the static band`);
    }
    const dns = create(api, 'kube-dns', {
      clusterIP: '10.96.0.10',
      ports: [{ port: 53, protocol: 'UDP' }],
    });
    assert.equal(dns.spec.clusterIP, '10.96.0.10');
  });

  it('rejects an IP in use or out of range with the upstream messages', () => {
    const api = newTestApi();
    create(api, 'a', { clusterIP: '10.96.0.10', ports: [{ port: 80 }] });
    const used = invalid(() =>
      create(api, 'b', { clusterIP: '10.96.0.10', ports: [{ port: 80 }] }),
    );
    assert.equal(
      used.message,
      'Service "b" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.10": failed to allocate IP 10.96.0.10: provided IP is already allocated',
    );
    const out = invalid(() =>
      create(api, 'c', { clusterIP: '192.168.1.1', ports: [{ port: 80 }] }),
    );
    assert.match(
      out.causes[0]?.message ?? '',
      /is not in the valid range. The range of valid IPs is 10.96.0.0\/12/,
    );
  });

  it('releases the IP on delete and keeps it across an update that omits it', () => {
    const api = newTestApi();
    const a = create(api, 'a', { clusterIP: '10.96.0.20', ports: [{ port: 80 }] });
    const replaced = api.store.update(SERVICES, 'default', 'a', {
      metadata: { name: 'a' },
      spec: { ports: [{ port: 81 }] },
    }) as unknown as Svc;
    assert.equal(replaced.spec.clusterIP, '10.96.0.20');
    const changed = invalid(() =>
      api.store.update(SERVICES, 'default', 'a', {
        ...a,
        metadata: { name: 'a' },
        spec: { ...a.spec, clusterIP: '10.96.0.21', clusterIPs: ['10.96.0.21'] },
      }),
    );
    assert.equal(changed.causes[0]?.field, 'spec.clusterIPs[0]');
    api.store.delete(SERVICES, 'default', 'a');
    assert.equal(
      create(api, 'b', { clusterIP: '10.96.0.20', ports: [{ port: 80 }] }).spec.clusterIP,
      '10.96.0.20',
    );
  });

  it('allocates one IP per family on a dual-stack cluster', () => {
    const api = newTestApi({ serviceCIDRs: ['10.96.0.0/16', 'fd00:10:96::/112'] });
    const svc = create(api, 'ds', { ipFamilyPolicy: 'PreferDualStack', ports: [{ port: 80 }] });
    assert.deepEqual(svc.spec.ipFamilies, ['IPv4', 'IPv6']);
    assert.equal(svc.spec.clusterIPs?.length, 2);
    assert.match(svc.spec.clusterIPs[1] ?? '', /^fd00:10:96::/);
  });

  it('refuses RequireDualStack on a single-stack cluster', () => {
    const r = invalid(() =>
      create(newTestApi(), 'x', {
        ipFamilyPolicy: 'RequireDualStack',
        selector: { a: 'b' },
        ports: [{ port: 80 }],
      }),
    );
    assert.equal(r.causes[0]?.field, 'spec.ipFamilyPolicy');
  });
});

describe('NodePort allocation', () => {
  it('allocates node ports in range, above the static band, for NodePort and LoadBalancer', () => {
    const api = newTestApi();
    const np = create(api, 'np', {
      type: 'NodePort',
      ports: [{ port: 80 }, { port: 443, name: 'https' }].map((p, i) => ({
        ...p,
        name: p.name ?? `p${i}`,
      })),
    });
    for (const p of np.spec.ports ?? []) {
      assert.ok((p.nodePort ?? 0) >= 30086 && (p.nodePort ?? 0) <= 32767, String(p.nodePort));
    }
    assert.equal(np.spec.externalTrafficPolicy, 'Cluster');
    const lb = create(api, 'lb', {
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      ports: [{ port: 80 }],
    });
    assert.ok((lb.spec.healthCheckNodePort ?? 0) >= 30000);
    assert.equal(lb.spec.allocateLoadBalancerNodePorts, true);
    assert.notEqual(lb.spec.healthCheckNodePort, lb.spec.ports?.[0]?.nodePort);
  });

  it('reports a node port collision and an out-of-range port', () => {
    const api = newTestApi();
    create(api, 'a', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] });
    const dup = invalid(() =>
      create(api, 'b', { type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] }),
    );
    assert.equal(
      dup.message,
      'Service "b" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated',
    );
    const range = invalid(() =>
      create(api, 'c', { type: 'NodePort', ports: [{ port: 80, nodePort: 8080 }] }),
    );
    assert.equal(
      range.causes[0]?.message,
      'Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767',
    );
    // nothing leaked from the failed creates
    create(api, 'd', { type: 'NodePort', ports: [{ port: 80, nodePort: 30081 }] });
  });

  it('keeps node ports across an update and frees them when the type becomes ClusterIP', () => {
    const api = newTestApi();
    create(api, 'a', { type: 'NodePort', ports: [{ port: 80, nodePort: 30500 }] });
    const same = api.store.update(SERVICES, 'default', 'a', {
      metadata: { name: 'a' },
      spec: { type: 'NodePort', ports: [{ port: 80 }] },
    }) as unknown as Svc;
    assert.equal(same.spec.ports?.[0]?.nodePort, 30500);
    api.store.update(SERVICES, 'default', 'a', {
      ...same,
      spec: { ...same.spec, type: 'ClusterIP', externalTrafficPolicy: undefined },
    });
    assert.equal(
      create(api, 'b', { type: 'NodePort', ports: [{ port: 80, nodePort: 30500 }] }).spec.ports?.[0]
        ?.nodePort,
      30500,
    );
  });

  it('forbids nodePort on ClusterIP services', () => {
    const r = invalid(() => create(newTestApi(), 'x', { ports: [{ port: 80, nodePort: 30001 }] }));
    assert.equal(r.causes[0]?.field, 'spec.ports[0].nodePort');
    assert.equal(r.causes[0].reason, 'FieldValueForbidden');
  });
});
