// networking.k8s.io/v1 ServiceCIDRs in the embedded API server: the default `kubernetes` one
// is created from the service ranges at start (and again after a delete), an existing one is
// left alone; writes are validated as kube-apiserver does (canonical CIDRs, one per family,
// spec.cidrs immutable but for single → dual stack); the resource is discovered, has an
// OpenAPI path and prints as NAME, CIDRS, AGE.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../util/clock.js';
import { startBootstrapLoop } from './bootstrap.js';
import { apiResourceList, openAPIV3Document } from './discovery.js';
import { SERVICECIDRS } from './resources.js';
import { ApiError } from './status.js';
import { toTable } from './table.js';
import { newTestApi } from './testing.js';

function create(cidrs: string[], name = 'extra') {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name },
    spec: { cidrs },
  };
}

describe('ServiceCIDRs', () => {
  it('the default ServiceCIDR kubernetes holds the service ranges and is Ready', () => {
    const { store } = newTestApi({ serviceCIDRs: ['10.96.0.0/16', 'fd00:10:96::/112'] });
    const sc = store.get(SERVICECIDRS, undefined, 'kubernetes');
    assert.deepEqual(sc.spec, { cidrs: ['10.96.0.0/16', 'fd00:10:96::/112'] });
    assert.equal(sc.metadata.namespace, undefined, 'cluster-scoped');
    const conds = (sc.status as { conditions: { type: string; status: string }[] }).conditions;
    assert.deepEqual(
      conds.map((c) => [c.type, c.status]),
      [['Ready', 'True']],
    );
  });

  it('a deleted default ServiceCIDR comes back; an existing one is left as it is', async () => {
    const { store, services } = newTestApi();
    const cfg = {
      advertiseAddress: '172.18.0.2',
      port: 6443,
      serviceIP: services.kubernetesServiceIP,
      serviceCIDRs: services.serviceCIDRs,
    };
    const clock = new FakeClock();
    const loop = startBootstrapLoop(store, cfg, { clock });
    store.delete(SERVICECIDRS, undefined, 'kubernetes');
    await clock.advance(5000);
    assert.deepEqual(store.get(SERVICECIDRS, undefined, 'kubernetes').spec, {
      cidrs: ['10.96.0.0/12'],
    });
    store.delete(SERVICECIDRS, undefined, 'kubernetes');
    store.create(SERVICECIDRS, undefined, create(['10.100.0.0/16'], 'kubernetes'));
    await clock.advance(5000);
    assert.deepEqual(store.get(SERVICECIDRS, undefined, 'kubernetes').spec, {
      cidrs: ['10.100.0.0/16'],
    });
    loop.stop();
  });

  it('writes are validated: canonical CIDRs, one per family, immutable but for adding a family', () => {
    const { store } = newTestApi();
    const invalid = (fn: () => unknown, field: RegExp) => {
      assert.throws(fn, (e: unknown) => {
        assert.ok(e instanceof ApiError);
        assert.equal(e.status, 422);
        assert.match(e.message, field);
        return true;
      });
    };
    invalid(
      () => store.create(SERVICECIDRS, undefined, create(['10.100.0.1/16'])),
      /spec\.cidrs\[0\]: Invalid value: "10\.100\.0\.1\/16": must be in canonical form/,
    );
    invalid(
      () => store.create(SERVICECIDRS, undefined, create(['10.100.0.0/16', '10.101.0.0/16'])),
      /spec\.cidrs.*no more than one IP for each IP family/,
    );
    invalid(() => store.create(SERVICECIDRS, undefined, create([])), /spec\.cidrs: Required/);
    const sc = store.create(SERVICECIDRS, undefined, create(['10.100.0.0/16']));
    invalid(
      () =>
        store.update(SERVICECIDRS, undefined, 'extra', {
          ...sc,
          spec: { cidrs: ['10.200.0.0/16'] },
        }),
      /spec\.cidrs: Invalid value.*field is immutable/,
    );
    const dual = store.update(SERVICECIDRS, undefined, 'extra', {
      ...sc,
      spec: { cidrs: ['10.100.0.0/16', 'fd00:100::/112'] },
    });
    assert.deepEqual(dual.spec, { cidrs: ['10.100.0.0/16', 'fd00:100::/112'] });
  });

  it('is discovered in networking.k8s.io/v1 with a status subresource and an OpenAPI path', () => {
    const list = apiResourceList('networking.k8s.io', 'v1') as {
      resources: { name: string; namespaced: boolean; kind: string }[];
    };
    assert.deepEqual(
      list.resources.map((r) => [r.name, r.namespaced, r.kind]),
      [
        ['servicecidrs', false, 'ServiceCIDR'],
        ['servicecidrs/status', false, 'ServiceCIDR'],
      ],
    );
    const doc = openAPIV3Document('networking.k8s.io', 'v1') as { paths: Record<string, unknown> };
    assert.ok(doc.paths['/apis/networking.k8s.io/v1/servicecidrs/{name}']);
  });

  it('prints as kubectl get servicecidrs does: NAME, CIDRS, AGE', () => {
    const { store, now } = newTestApi({ serviceCIDRs: ['10.96.0.0/16', 'fd00:10:96::/112'] });
    const t = toTable(
      SERVICECIDRS,
      [store.get(SERVICECIDRS, undefined, 'kubernetes')],
      now() + 90_000,
    );
    assert.deepEqual(
      t.columnDefinitions.map((c) => c.name),
      ['Name', 'CIDRs', 'Age'],
    );
    assert.deepEqual(t.rows[0]?.cells, ['kubernetes', '10.96.0.0/16,fd00:10:96::/112', '90s']);
  });
});
