// Resolver and index behaviour beyond the fixtures: reverse-name helpers, incremental index
// updates (reverse maps follow slice changes, deletes), options the fixtures do not turn on
// (endpoint_pod_names, fallthrough), the external CNAME chase, and FQDN slices ignored.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../util/clock.js';
import { RecordIndex } from './record-index.js';
import {
  DEFAULT_RESOLVER_CONFIG,
  addressFromReverse,
  resolve,
  reverseName,
  type Resolution,
} from './resolve.js';
import { TYPE, formatRecord } from './wire.js';
import { endpoint, service, slice, type SliceOptions } from '../kube/testing.js';
import type { EndpointSlice } from '../kube/types.js';

function records(r: Resolution): string[] {
  if (r.kind !== 'answer') assert.fail(`expected an answer, got ${r.kind}`);
  return r.answer.map(formatRecord);
}

function rcode(r: Resolution): number {
  return r.kind === 'answer' ? r.rcode : -1;
}

/** The slice `prod/db-x` of headless Service prod/db, endpoint i backed by Pod db-pod-i. */
const dbSlice = (ips: string[], o: SliceOptions = {}): EndpointSlice =>
  slice(
    'prod/db',
    ips.map((ip, i) => endpoint(ip, { targetRef: { kind: 'Pod', name: `db-pod-${i}` } })),
    { name: 'db-x', ports: [{ name: 'pg', protocol: 'TCP', port: 5432 }], ...o },
  );
const headlessDb = service('prod/db', { clusterIP: 'None', ports: null });

test('reverse names round-trip for IPv4 and IPv6', () => {
  for (const ip of ['10.96.0.1', '2001:db8::1', 'fd00:77:30::2:9ba6']) {
    const name = reverseName(ip);
    assert.ok(name);
    assert.equal(addressFromReverse(name), ip);
  }
  assert.equal(addressFromReverse('1.2.3.in-addr.arpa.'), '');
  assert.equal(
    addressFromReverse('01.0.0.10.in-addr.arpa.'),
    '',
    'leading zeros are not an address',
  );
});

test('index updates are incremental: PTR and A follow slice changes and deletions', () => {
  const idx = new RecordIndex({ clock: new FakeClock(5000) });
  idx.upsertService(headlessDb);
  idx.upsertEndpointSlice(dbSlice(['10.0.0.1', '10.0.0.2']));
  const cfg = { ...DEFAULT_RESOLVER_CONFIG, zones: ['cluster.local.', 'in-addr.arpa.'] };
  assert.deepEqual(
    records(resolve(idx, cfg, { name: '1.0.0.10.in-addr.arpa.', type: TYPE.PTR }, true)),
    ['1.0.0.10.in-addr.arpa. 5 IN PTR 10-0-0-1.db.prod.svc.cluster.local.'],
  );
  idx.upsertEndpointSlice(dbSlice(['10.0.0.2', '10.0.0.3']));
  assert.equal(
    rcode(resolve(idx, cfg, { name: '1.0.0.10.in-addr.arpa.', type: TYPE.PTR }, true)),
    3,
  );
  assert.deepEqual(
    records(resolve(idx, cfg, { name: 'db.prod.svc.cluster.local.', type: TYPE.A }, true)).length,
    2,
  );
  idx.deleteEndpointSlice(dbSlice([]));
  assert.equal(
    rcode(resolve(idx, cfg, { name: 'db.prod.svc.cluster.local.', type: TYPE.A }, true)),
    3,
    'no ready endpoints: NXDOMAIN',
  );
  assert.equal(idx.stats().addresses, 0);
  assert.equal(idx.serial(false), 5, 'SOA serial is the time of the last change');
});

test('endpoint_pod_names names endpoints by their pod', () => {
  const idx = new RecordIndex();
  idx.upsertService(headlessDb);
  idx.upsertEndpointSlice(dbSlice(['10.0.0.1']));
  const cfg = { ...DEFAULT_RESOLVER_CONFIG, endpointPodNames: true };
  assert.deepEqual(
    records(resolve(idx, cfg, { name: 'db-pod-0.db.prod.svc.cluster.local.', type: TYPE.A }, true)),
    ['db-pod-0.db.prod.svc.cluster.local. 5 IN A 10.0.0.1'],
  );
  assert.equal(
    rcode(
      resolve(
        idx,
        DEFAULT_RESOLVER_CONFIG,
        { name: 'db-pod-0.db.prod.svc.cluster.local.', type: TYPE.A },
        true,
      ),
    ),
    3,
  );
});

test('fallthrough hands would-be NXDOMAINs in the reverse zones to the forwarder', () => {
  const idx = new RecordIndex();
  const cfg = {
    ...DEFAULT_RESOLVER_CONFIG,
    zones: ['cluster.local.', 'in-addr.arpa.'],
    fallthrough: ['in-addr.arpa.'],
  };
  assert.equal(
    resolve(idx, cfg, { name: '8.8.8.8.in-addr.arpa.', type: TYPE.PTR }, true).kind,
    'forward',
  );
  assert.equal(
    rcode(resolve(idx, cfg, { name: 'x.default.svc.cluster.local.', type: TYPE.A }, true)),
    3,
  );
  assert.equal(resolve(idx, cfg, { name: 'example.com.', type: TYPE.A }, true).kind, 'forward');
});

test('A on an ExternalName outside the zone asks the server to chase the target upstream', () => {
  const idx = new RecordIndex();
  idx.upsertService(
    service('prod/ext', { type: 'ExternalName', externalName: 'api.example.com', ports: null }),
  );
  const r = resolve(
    idx,
    DEFAULT_RESOLVER_CONFIG,
    { name: 'Ext.prod.svc.cluster.local.', type: TYPE.A },
    true,
  );
  if (r.kind !== 'chase') assert.fail(`expected a chase, got ${r.kind}`);
  assert.equal(r.target, 'api.example.com.');
  assert.deepEqual(r.prefix.map(formatRecord), [
    'Ext.prod.svc.cluster.local. 5 IN CNAME api.example.com.',
  ]);
  assert.equal(r.onFailure.rcode, 0, 'an unanswered chase is NODATA, as CoreDNS');
});

test('FQDN EndpointSlices and slices without a service label are ignored', () => {
  const idx = new RecordIndex();
  idx.upsertService(headlessDb);
  assert.equal(
    idx.upsertEndpointSlice(dbSlice(['db.example.com'], { addressType: 'FQDN' })),
    undefined,
  );
  idx.upsertEndpointSlice({
    ...dbSlice(['10.0.0.9']),
    metadata: { name: 'stray', namespace: 'prod' },
  });
  assert.equal(idx.stats().slices, 0);
  assert.match(
    idx.upsertService(service('prod/bad', { clusterIP: '300.1.1.1', ports: null })) ?? '',
    /not an IP/,
  );
});
