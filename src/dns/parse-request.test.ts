// parseRequest, table-driven in the manner of CoreDNS's plugin/kubernetes/parse_test.go: each
// name in a zone, the options, and every part it must split into (or undefined for
// errInvalidRequest).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EMPTY_REQUEST,
  parseRequest,
  stripZone,
  type ParseRequestOptions,
  type Request,
} from './parse-request.js';

const PLAIN: ParseRequestOptions = { multicluster: false, zonal: false };
const ZONAL: ParseRequestOptions = { multicluster: false, zonal: true };
const MULTI: ParseRequestOptions = { multicluster: true, zonal: true };

const cases: {
  name: string;
  zone?: string;
  opts?: ParseRequestOptions;
  want: Partial<Request> | undefined;
}[] = [
  { name: 'cluster.local.', want: {} },
  { name: 'svc.cluster.local.', want: {} },
  { name: 'pod.cluster.local.', want: {} },
  { name: 'default.svc.cluster.local.', want: { namespace: 'default', podOrSvc: 'svc' } },
  {
    name: 'web.default.svc.cluster.local.',
    want: { service: 'web', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: '_http._tcp.web.default.svc.cluster.local.',
    want: { port: 'http', protocol: 'tcp', service: 'web', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: 'http.tcp.web.default.svc.cluster.local.',
    want: { port: 'http', protocol: 'tcp', service: 'web', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: 'db-0.db.default.svc.cluster.local.',
    want: { endpoint: 'db-0', service: 'db', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: '10-244-0-7.default.pod.cluster.local.',
    want: { service: '10-244-0-7', namespace: 'default', podOrSvc: 'pod' },
  },
  { name: 'web.default.nope.cluster.local.', want: undefined },
  { name: 'x.y.z.web.default.svc.cluster.local.', opts: ZONAL, want: undefined },
  {
    name: 'us-east-1a.pin._zone.db.default.svc.cluster.local.',
    opts: ZONAL,
    want: { topologyZone: 'us-east-1a', service: 'db', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: 'a.b.prefer._zone.db.default.svc.cluster.local.',
    opts: ZONAL,
    want: {
      topologyZone: 'a.b',
      zonePrefer: true,
      service: 'db',
      namespace: 'default',
      podOrSvc: 'svc',
    },
  },
  { name: 'z.pin._zone.db.default.svc.cluster.local.', want: undefined },
  { name: 'z.near._zone.db.default.svc.cluster.local.', opts: ZONAL, want: undefined },
  { name: 'z.pin._zone.p.default.pod.cluster.local.', opts: ZONAL, want: undefined },
  {
    name: 'ep.c1.web.default.svc.clusterset.local.',
    zone: 'clusterset.local.',
    opts: MULTI,
    want: {
      endpoint: 'ep',
      cluster: 'c1',
      service: 'web',
      namespace: 'default',
      podOrSvc: 'svc',
    },
  },
  {
    name: '_http._tcp.web.default.svc.clusterset.local.',
    zone: 'clusterset.local.',
    opts: MULTI,
    want: { port: 'http', protocol: 'tcp', service: 'web', namespace: 'default', podOrSvc: 'svc' },
  },
  {
    name: 'z.pin._zone.web.default.svc.clusterset.local.',
    zone: 'clusterset.local.',
    opts: MULTI,
    want: undefined,
  },
];

test('parseRequest splits each name into its parts, or rejects it', () => {
  // Every part of the empty request is empty, so each case below lists all it expects.
  for (const v of Object.values(EMPTY_REQUEST)) assert.ok(v === '' || v === false);
  for (const c of cases) {
    const got = parseRequest(c.name, c.zone ?? 'cluster.local.', c.opts ?? PLAIN);
    assert.deepEqual(
      got,
      c.want === undefined ? undefined : { ...EMPTY_REQUEST, ...c.want },
      c.name,
    );
  }
});

test('stripZone leaves the labels before the zone', () => {
  assert.equal(stripZone('web.default.svc.cluster.local.', 'cluster.local.'), 'web.default.svc');
  assert.equal(stripZone('cluster.local.', 'cluster.local.'), '');
});
