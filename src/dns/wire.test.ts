// Tests of the hand-written codec: strict query parsing (FORMERR/NOTIMP/drop), EDNS0,
// responses that dns-packet (an independent decoder) reads back, name compression that keeps
// case, and truncation with TC.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as dnsPacket from 'dns-packet';
import {
  RCODE,
  TYPE,
  encodeError,
  encodeResponse,
  parseQuery,
  scanQuery,
  udpLimit,
  type ParsedQuery,
  type ResourceRecord,
} from './wire.js';
import { q as buildQuery } from './client.js';

/** The queries of these tests: ID 4242, and the DO bit set whenever there is an OPT. */
function query(name: string, type: dnsPacket.RecordType = 'A', edns?: number): Buffer {
  return buildQuery(name, type, 4242, edns, true);
}

function parsed(buf: Buffer): ParsedQuery {
  const r = parseQuery(buf);
  assert.ok(r.ok, 'query should parse');
  return r.query;
}

test('parseQuery reads name (case kept), type, EDNS size and DO bit', () => {
  const q = parsed(query('SvC1.TestNS.svc.cluster.local', 'SRV', 4096));
  assert.equal(q.qname, 'SvC1.TestNS.svc.cluster.local.');
  assert.equal(q.qtype, TYPE.SRV);
  assert.deepEqual(q.edns, { udpSize: 4096, version: 0, dnssecOk: true });
  assert.equal(udpLimit(q.edns), 4096);
  assert.equal(udpLimit(undefined), 512);
  const fast = scanQuery(query('a.b', 'A'));
  assert.ok(fast.ok);
  assert.equal(fast.query.qname, '');
});

test('parseQuery escapes odd bytes as dig does', () => {
  // One label "a.b" (a dot inside a label) and one with a space.
  const raw = Buffer.concat([
    query('x').subarray(0, 12),
    Buffer.from([3, 0x61, 0x2e, 0x62, 3, 0x63, 0x20, 0x64, 0, 0, 1, 0, 1]),
  ]);
  const q = parsed(raw);
  assert.deepEqual(q.labels, ['a\\.b', 'c\\032d']);
  assert.equal(q.qname, 'a\\.b.c\\032d.');
});

test('malformed queries: FORMERR with the ID, drops for responses and runts', () => {
  assert.deepEqual(parseQuery(Buffer.alloc(5)), { ok: false, drop: true });
  const resp = query('x.y');
  resp[2] = (resp[2] ?? 0) | 0x80;
  assert.deepEqual(parseQuery(resp), { ok: false, drop: true });
  const two = query('x.y');
  two.writeUInt16BE(2, 4);
  const r2 = parseQuery(two);
  assert.ok(!r2.ok && !r2.drop && r2.rcode === RCODE.FORMERR && r2.id === 4242);
  const cut = query('abc.example').subarray(0, 17);
  const r3 = parseQuery(cut);
  assert.ok(!r3.ok && !r3.drop && r3.rcode === RCODE.FORMERR);
  const longLabel = query('x.y');
  longLabel[12] = 64;
  const r4 = parseQuery(longLabel);
  assert.ok(!r4.ok && !r4.drop && r4.rcode === RCODE.FORMERR);
  const notify = query('x.y');
  notify[2] = ((notify[2] ?? 0) & 0x87) | (4 << 3);
  const r5 = parseQuery(notify);
  assert.ok(!r5.ok && !r5.drop && r5.rcode === RCODE.NOTIMP);
  // The NOTIMP answer echoes the opcode (NOTIFY = 4, UPDATE = 5), as CoreDNS's do.
  for (const opcode of [4, 5]) {
    const msg = query('x.y');
    msg[2] = ((msg[2] ?? 0) & 0x87) | (opcode << 3);
    const r = parseQuery(msg);
    assert.ok(!r.ok && !r.drop);
    const out = encodeError(msg, r.questionEnd, r.rcode);
    assert.equal(((out[2] ?? 0) >> 3) & 0xf, opcode);
    assert.equal((out[3] ?? 0) & 0xf, RCODE.NOTIMP);
    assert.equal((out[2] ?? 0) & 0x80, 0x80, 'QR set');
  }
});

test('encodeResponse: dns-packet reads every record kind back; owner names point at the question', () => {
  const buf = query('Web.Default.svc.cluster.local', 'A', 1232);
  const q = parsed(buf);
  const records: ResourceRecord[] = [
    { name: q.qname, type: 'A', ttl: 5, address: '10.0.0.1' },
    { name: q.qname, type: 'AAAA', ttl: 5, address: 'fd00::1' },
    { name: q.qname, type: 'CNAME', ttl: 5, target: 'other.default.svc.cluster.local.' },
    {
      name: q.qname,
      type: 'SRV',
      ttl: 5,
      priority: 0,
      weight: 50,
      port: 80,
      target: 'web.default.svc.cluster.local.',
    },
    { name: q.qname, type: 'TXT', ttl: 28800, text: ['1.1.0'] },
    {
      name: '1.0.0.10.in-addr.arpa.',
      type: 'PTR',
      ttl: 5,
      target: 'web.default.svc.cluster.local.',
    },
  ];
  const soa: ResourceRecord = {
    name: 'cluster.local.',
    type: 'SOA',
    ttl: 5,
    mname: 'ns.dns.cluster.local.',
    rname: 'hostmaster.cluster.local.',
    serial: 7,
    refresh: 7200,
    retry: 1800,
    expire: 86400,
    minimum: 5,
  };
  const out = encodeResponse(
    buf,
    q,
    { rcode: 0, authoritative: true, answer: records, authority: [soa], additional: [] },
    1232,
  );
  const m = dnsPacket.decode(out);
  assert.equal(m.id, 4242);
  assert.equal(((m.flags ?? 0) & dnsPacket.AUTHORITATIVE_ANSWER) !== 0, true);
  assert.equal(((m.flags ?? 0) & dnsPacket.RECURSION_DESIRED) !== 0, true);
  assert.deepEqual(
    (m.answers ?? []).map(
      (a) =>
        `${a.name} ${a.type} ${JSON.stringify(a.type === 'TXT' ? [String(Array.isArray(a.data) ? a.data[0] : a.data)] : a.type === 'OPT' ? '' : a.data)}`,
    ),
    [
      'Web.Default.svc.cluster.local A "10.0.0.1"',
      'Web.Default.svc.cluster.local AAAA "fd00::1"',
      'Web.Default.svc.cluster.local CNAME "other.default.svc.cluster.local"',
      'Web.Default.svc.cluster.local SRV {"priority":0,"weight":50,"port":80,"target":"web.default.svc.cluster.local"}',
      'Web.Default.svc.cluster.local TXT ["1.1.0"]',
      '1.0.0.10.in-addr.arpa PTR "web.default.svc.cluster.local"',
    ],
  );
  const auth = m.authorities?.[0];
  assert.ok(auth?.type === 'SOA');
  assert.equal(auth.data.mname, 'ns.dns.cluster.local');
  assert.equal(auth.data.minimum, 5);
  const opt = m.additionals?.[0];
  assert.ok(opt?.type === 'OPT');
  assert.equal(opt.udpPayloadSize, 1232);
  // The owner of the first answer is a 2-byte pointer to the question at offset 12.
  assert.equal(out.readUInt16BE(q.questionEnd), 0xc00c);
});

test('compression is case-sensitive: a lower-case target is not folded into a mixed-case question', () => {
  const buf = query('SVC1.testns.svc.cluster.local', 'CNAME');
  const q = parsed(buf);
  const out = encodeResponse(
    buf,
    q,
    {
      rcode: 0,
      authoritative: true,
      answer: [{ name: q.qname, type: 'CNAME', ttl: 5, target: 'svc1.testns.svc.cluster.local.' }],
      authority: [],
      additional: [],
    },
    512,
  );
  const a = dnsPacket.decode(out).answers?.[0];
  assert.ok(a?.type === 'CNAME');
  assert.equal(a.data, 'svc1.testns.svc.cluster.local');
  assert.ok(out.length < 100, 'the shared testns.svc.cluster.local suffix is still compressed');
});

test('truncation: answers that do not fit set TC; dropped glue does not', () => {
  const buf = query('big.default.svc.cluster.local', 'A');
  const q = parsed(buf);
  const many: ResourceRecord[] = Array.from({ length: 60 }, (_, i) => ({
    name: q.qname,
    type: 'A' as const,
    ttl: 5,
    address: `10.0.${i >> 8}.${i & 255}`,
  }));
  const out = encodeResponse(
    buf,
    q,
    { rcode: 0, authoritative: true, answer: many, authority: [], additional: [] },
    512,
  );
  assert.ok(out.length <= 512);
  const m = dnsPacket.decode(out);
  assert.ok(((m.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0);
  assert.ok((m.answers ?? []).length > 20 && (m.answers ?? []).length < 60);
  const full = encodeResponse(
    buf,
    q,
    { rcode: 0, authoritative: true, answer: many, authority: [], additional: [] },
    65535,
  );
  assert.equal(dnsPacket.decode(full).answers?.length, 60);
  const glue = encodeResponse(
    buf,
    q,
    { rcode: 0, authoritative: true, answer: many.slice(0, 2), authority: [], additional: many },
    512,
  );
  assert.equal(((dnsPacket.decode(glue).flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0, false);
});
