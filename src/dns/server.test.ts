// Tests of the server on loopback (port 0): UDP and TCP answers, truncation then TCP retry,
// the encoded-answer cache following index changes, forwarding through FakeUpstream with the
// cache, a dead or silent upstream giving a prompt SERVFAIL, and a short fuzz run after
// which a valid query is still answered (the 100k-packet run is in test/integration), and
// TCP connection shedding at the cap.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection, type Socket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { DnsCache } from './cache.js';
import { FakeUpstream } from './fake-upstream.js';
import { Forwarder } from './forward.js';
import { RecordIndex } from './record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from './resolve.js';
import { DnsHandler, DnsServer } from './server.js';
import { q, tcp, udp } from './client.js';
import { service } from '../kube/testing.js';
import type { Service } from '../kube/types.js';
import { clusterFixture } from './testdata/cluster.js';

function rcode(m: Buffer): number {
  return (m[3] ?? 0) & 0xf;
}

/** A ClusterIP Service `default/name` with port http 80/TCP. */
const svc = (name: string, ip: string): Service =>
  service(name, { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip] });

const index = new RecordIndex();
const upstream = new FakeUpstream();
let server: DnsServer;
let forwarder: Forwarder;
let cache: DnsCache;

before(async () => {
  clusterFixture(index);
  await upstream.start();
  upstream.setStubs([
    {
      query: { name: 'www.example.com.', type: 'A' },
      response: {
        rcode: 'NOERROR',
        answer: [{ name: 'www.example.com.', type: 'A', ttl: 300, data: '192.0.2.7' }],
      },
    },
  ]);
  cache = new DnsCache();
  forwarder = new Forwarder({
    upstreams: [{ host: '127.0.0.1', port: upstream.port }],
    attemptTimeoutMs: 300,
    totalTimeoutMs: 600,
    cache,
  });
  const handler = new DnsHandler({
    index,
    config: DEFAULT_RESOLVER_CONFIG,
    isSynced: () => true,
    forwarder,
  });
  server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
  await server.listen();
});

after(async () => {
  forwarder.close();
  await server.close();
  await upstream.stop();
});

test('answers a Service A record over UDP and over TCP', async () => {
  for (const send of [udp, tcp]) {
    const out = await send(server.port, q('web.default.svc.cluster.local'));
    assert.ok(out);
    const m = dnsPacket.decode(out);
    assert.equal(m.id, 7);
    assert.deepEqual(
      (m.answers ?? []).map((a) => (a.type === 'OPT' ? '' : a.data)),
      ['10.96.0.10'],
    );
  }
});

test('a large headless answer is truncated with TC over plain UDP and complete over TCP', async () => {
  const small = await udp(server.port, q('many.default.svc.cluster.local'));
  assert.ok(small && small.length <= 512);
  assert.ok((dnsPacket.decode(small).flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE);
  const edns = await udp(server.port, q('many.default.svc.cluster.local', 'A', 8, 4096));
  assert.ok(edns);
  assert.equal(dnsPacket.decode(edns).answers?.length, 100);
  const full = await tcp(server.port, q('many.default.svc.cluster.local'));
  assert.equal(dnsPacket.decode(full).answers?.length, 100);
});

test('answers follow index changes (the encoded-answer cache is per generation)', async () => {
  const name = 'moving.default.svc.cluster.local';
  const before1 = await udp(server.port, q(name));
  assert.ok(before1);
  assert.equal(rcode(before1), 3);
  index.upsertService(svc('moving', '10.96.0.30'));
  const a1 = await udp(server.port, q(name));
  assert.ok(a1);
  assert.deepEqual(
    dnsPacket.decode(a1).answers?.map((a) => (a.type === 'OPT' ? '' : a.data)),
    ['10.96.0.30'],
  );
  index.upsertService(svc('moving', '10.96.0.31'));
  const a2 = await udp(server.port, q(name, 'A', 99));
  assert.ok(a2);
  const m2 = dnsPacket.decode(a2);
  assert.equal(m2.id, 99);
  assert.deepEqual(
    m2.answers?.map((a) => (a.type === 'OPT' ? '' : a.data)),
    ['10.96.0.31'],
  );
  index.deleteService(svc('moving', '10.96.0.31'));
  const gone = await udp(server.port, q(name));
  assert.ok(gone);
  assert.equal(rcode(gone), 3);
});

test('non-cluster names are forwarded and then served from the cache', async () => {
  const before1 = upstream.received.length;
  const a = await udp(server.port, q('www.example.com', 'A', 11));
  assert.ok(a);
  const m = dnsPacket.decode(a);
  assert.equal(m.id, 11);
  assert.deepEqual(
    m.answers?.map((x) => (x.type === 'OPT' ? [] : [x.data, x.ttl])),
    [['192.0.2.7', 30]],
    'TTL capped at 30 s (cache 30)',
  );
  const b = await udp(server.port, q('WWW.example.com', 'A', 12));
  assert.ok(b);
  const mb = dnsPacket.decode(b);
  assert.equal(mb.id, 12);
  assert.equal(
    mb.questions?.[0]?.name,
    'WWW.example.com',
    'the client spelling of the question is echoed',
  );
  assert.equal(upstream.received.length, before1 + 1, 'second query answered from the cache');
  assert.equal(cache.stats.success.hits, 1);
  const nx = await udp(server.port, q('nothing.example.org'));
  assert.ok(nx);
  assert.equal(rcode(nx), 3);
});

test('a silent upstream gives SERVFAIL within the forward deadline, not a hang', async () => {
  upstream.silent = true;
  try {
    const t0 = Date.now();
    const out = await udp(server.port, q('slow.example.net'), 3000);
    assert.ok(out, 'an answer came back');
    assert.equal(rcode(out), 2);
    assert.ok(Date.now() - t0 < 1500);
  } finally {
    upstream.silent = false;
  }
});

test('an unreachable upstream gives SERVFAIL at once', async () => {
  const dead = new Forwarder({
    upstreams: [{ host: '127.0.0.1', port: 9 }],
    attemptTimeoutMs: 5000,
    totalTimeoutMs: 5000,
  });
  const h = new DnsHandler({
    index,
    config: DEFAULT_RESOLVER_CONFIG,
    isSynced: () => true,
    forwarder: dead,
  });
  const s = new DnsServer(h, { host: '127.0.0.1', port: 0 });
  await s.listen();
  try {
    const t0 = Date.now();
    const out = await udp(s.port, q('x.example.net'), 6000);
    assert.ok(out);
    assert.equal(rcode(out), 2);
    assert.ok(Date.now() - t0 < 1000, `took ${Date.now() - t0} ms`);
  } finally {
    dead.close();
    await s.close();
  }
});

test('EDNS version 1 gets BADVERS; a header-only packet gets FORMERR', async () => {
  const v1 = q('web.default.svc.cluster.local', 'A', 5, 1232);
  // OPT TTL: extended rcode (1 byte), version (1 byte): set version 1.
  v1[v1.length - 5] = 1;
  const out = await udp(server.port, v1);
  assert.ok(out);
  const m = dnsPacket.decode(out);
  const opt = m.additionals?.find((a) => a.type === 'OPT');
  assert.ok(opt?.type === 'OPT');
  assert.equal((opt.extendedRcode << 4) | rcode(out), 16);
  const header = Buffer.from([0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
  const fe = await udp(server.port, header);
  assert.ok(fe);
  assert.equal(rcode(fe), 1);
  assert.equal(fe.readUInt16BE(0), 9);
});

test('fuzz: random and mutated packets never crash or stall the server', async () => {
  const seedPackets = [
    q('web.default.svc.cluster.local'),
    q('_http._tcp.web.default.svc.cluster.local', 'SRV', 3, 1232),
    q('1.0.96.10.in-addr.arpa', 'PTR'),
  ];
  let seed = 12345;
  const rand = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  const handler = new DnsHandler({ index, config: DEFAULT_RESOLVER_CONFIG, isSynced: () => true });
  for (let i = 0; i < 3000; i++) {
    let pkt: Buffer;
    if (i % 2 === 0) {
      pkt = Buffer.alloc(rand() % 80);
      for (let k = 0; k < pkt.length; k++) pkt[k] = rand() & 0xff;
    } else {
      pkt = Buffer.from(seedPackets[i % seedPackets.length] ?? Buffer.alloc(0));
      for (let k = 0; k < 1 + (rand() % 4); k++) pkt[rand() % pkt.length] = rand() & 0xff;
      if (rand() % 4 === 0) pkt = pkt.subarray(0, rand() % pkt.length);
    }
    const res = handler.handle(pkt, 'udp');
    if (res instanceof Promise) await res;
    // Also through the real socket for a share of them.
    if (i % 10 === 0) await udp(server.port, pkt, 50);
  }
  assert.equal(handler.internalErrors, 0);
  const out = await udp(server.port, q('web.default.svc.cluster.local'));
  assert.ok(out);
  assert.deepEqual(
    dnsPacket.decode(out).answers?.map((a) => (a.type === 'OPT' ? '' : a.data)),
    ['10.96.0.10'],
  );
});

test('a new TCP connection at the cap sheds the one longest without a complete message', async () => {
  const handler = new DnsHandler({ index, config: DEFAULT_RESOLVER_CONFIG, isSynced: () => true });
  const small = new DnsServer(handler, { host: '127.0.0.1', port: 0, maxTcpConnections: 3 });
  await small.listen();
  const open = () =>
    new Promise<Socket>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: small.port }, () => {
        resolve(s);
      });
    });
  const closed = (s: Socket) =>
    new Promise<void>((resolve) => {
      if (s.destroyed) resolve();
      else
        s.once('close', () => {
          resolve();
        });
    });
  try {
    // A dripper (half a message), then a client that asked and stays, then an idle one.
    const dripper = await open();
    dripper.write(Buffer.from([0, 40, 1]));
    const asker = await open();
    const frame = q('web.default.svc.cluster.local');
    const len = Buffer.alloc(2);
    len.writeUInt16BE(frame.length);
    const answered = new Promise<void>((resolve) =>
      asker.once('data', () => {
        resolve();
      }),
    );
    asker.write(Buffer.concat([len, frame]));
    await answered;
    const idle = await open();
    // At the cap: a fourth client is answered, and the dripper is the one closed.
    const out = await tcp(small.port, q('web.default.svc.cluster.local', 'A', 9));
    assert.equal(dnsPacket.decode(out).id, 9);
    await closed(dripper);
    assert.equal(small.tcpShed >= 1, true);
    assert.equal(asker.destroyed, false);
    asker.destroy();
    idle.destroy();
  } finally {
    await small.close();
  }
});
