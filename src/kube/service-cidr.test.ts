// ServiceCIDR validation as kube-apiserver judges it, the union kube-proxy reads, and how a
// 404 from a server without the resource is recognised.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from './manifest.js';
import { isResourceNotServed, serviceCIDRsOf, validateServiceCIDR } from './service-cidr.js';
import type { ServiceCIDR } from './types.js';

function sc(name: string, cidrs?: unknown): ServiceCIDR {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'ServiceCIDR',
    metadata: { name },
    ...(cidrs !== undefined ? { spec: { cidrs: cidrs as string[] } } : {}),
  };
}

test('validateServiceCIDR: one or two canonical CIDRs, at most one per family', () => {
  const cases: [string, unknown, string[]][] = [
    ['single', ['10.96.0.0/12'], []],
    ['dual', ['10.96.0.0/12', 'fd00:10:96::/112'], []],
    ['missing', undefined, ['spec.cidrs: required']],
    [
      'not canonical',
      ['10.96.0.1/12'],
      ['spec.cidrs[0]: must be in canonical form ("10.96.0.0/12")'],
    ],
    [
      'bad',
      ['nope'],
      ['spec.cidrs[0]: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'],
    ],
    [
      'same family',
      ['10.96.0.0/12', '10.100.0.0/16'],
      ['spec.cidrs: may specify no more than one IP for each IP family'],
    ],
    [
      'three',
      ['10.96.0.0/12', 'fd00::/64', '10.1.0.0/16'],
      [
        'spec.cidrs: may only hold up to 2 values',
        'spec.cidrs: may specify no more than one IP for each IP family',
      ],
    ],
  ];
  for (const [name, cidrs, want] of cases) {
    const got = validateServiceCIDR(sc('x', cidrs)).map((e) => `${e.field}: ${e.message}`);
    assert.deepEqual(got, want, name);
  }
});

test('serviceCIDRsOf: the union of every object spec.cidrs, sorted, without duplicates', () => {
  assert.deepEqual(
    serviceCIDRsOf([
      sc('kubernetes', ['10.96.0.0/12', 'fd00:10:96::/112']),
      sc('extra', ['10.200.0.0/16']),
      sc('again', ['10.96.0.0/12']),
      sc('empty'),
    ]),
    ['10.200.0.0/16', '10.96.0.0/12', 'fd00:10:96::/112'],
  );
  assert.deepEqual(serviceCIDRsOf([]), []);
});

test('isResourceNotServed: a 404 in the error or its causes, nothing else', () => {
  assert.equal(isResourceNotServed({ statusCode: 404 }), true);
  assert.equal(isResourceNotServed(new Error('wrapped', { cause: { code: 404 } })), true);
  assert.equal(isResourceNotServed({ statusCode: 403 }), false);
  assert.equal(isResourceNotServed(new Error('ECONNREFUSED')), false);
  assert.equal(isResourceNotServed(undefined), false);
});

test('manifests accept a ServiceCIDR (cluster-scoped) and reject a bad one naming the field', () => {
  const ok = parseManifests([
    {
      path: 'a.yaml',
      text: 'apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: kubernetes}\nspec: {cidrs: [172.30.0.0/16]}\n',
    },
  ]);
  assert.equal(ok.others.length, 1);
  assert.equal(ok.others[0]?.metadata?.namespace, undefined);
  assert.throws(
    () =>
      parseManifests([
        {
          path: 'b.yaml',
          text: 'apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: bad}\nspec: {cidrs: [172.30.0.1/16]}\n',
        },
      ]),
    /ServiceCIDR bad: spec\.cidrs\[0\]: must be in canonical form/,
  );
});
