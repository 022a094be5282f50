// The encoded-response cache through the handler: a hit is byte-for-byte what the resolver
// gives with the cache off (ID, RD, the client's 0x20 spelling, OPT and DO), the index's
// generation invalidates it, TTLs stay the index's, and truncated and EDNS-sized answers are
// never served to a query of the other kind.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as dnsPacket from 'dns-packet';
import { q } from './client.js';
import { RecordIndex } from './record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from './resolve.js';
import { questionKey } from './response-cache.js';
import { DnsHandler } from './server.js';
import { clusterFixture, web } from './testdata/cluster.js';
import { FakeClock } from '../util/clock.js';

function setup(): { index: RecordIndex; cached: DnsHandler; plain: DnsHandler; clock: FakeClock } {
  const clock = new FakeClock();
  const index = new RecordIndex({ clock });
  clusterFixture(index);
  const opts = { index, config: DEFAULT_RESOLVER_CONFIG, isSynced: () => true };
  return {
    index,
    clock,
    cached: new DnsHandler(opts),
    plain: new DnsHandler({ ...opts, responseCacheSize: 0 }),
  };
}

function ask(h: DnsHandler, msg: Buffer, proto: 'udp' | 'tcp' = 'udp'): Buffer {
  const out = h.handle(msg, proto);
  assert.ok(Buffer.isBuffer(out), 'a synchronous single answer');
  return out;
}

/** The same answer from the caching handler and the one without a cache. */
function same(h: { cached: DnsHandler; plain: DnsHandler }, msg: Buffer, proto?: 'udp' | 'tcp') {
  const got = ask(h.cached, msg, proto);
  assert.deepEqual(got, ask(h.plain, msg, proto));
  return got;
}

test('the key lowercases the name only, not the type or class', () => {
  const a = q('WeB.default.svc.cluster.local', 'A');
  const b = q('web.default.svc.cluster.local', 'A');
  assert.equal(questionKey(a, a.length), questionKey(b, b.length));
  // Type 65 (HTTPS) is octet 0x41 'A'; it must not become type 97.
  const https = Buffer.from(b);
  https.writeUInt16BE(65, b.length - 4);
  const t97 = Buffer.from(b);
  t97.writeUInt16BE(97, b.length - 4);
  assert.notEqual(questionKey(https, https.length), questionKey(t97, t97.length));
});

test('a hit keeps the query ID, RD and the 0x20 spelling of each query', () => {
  const h = setup();
  same(h, q('web.default.svc.cluster.local', 'A', 1));
  for (const [i, name] of [
    'WEB.default.svc.cluster.local',
    'wEb.DeFaUlT.sVc.ClUsTeR.lOcAl',
  ].entries()) {
    const msg = q(name, 'A', 100 + i);
    const before = h.cached.responseCacheStats().hits;
    const got = same(h, msg);
    assert.equal(h.cached.responseCacheStats().hits, before + 1, `${name}: served from the cache`);
    const d = dnsPacket.decode(got);
    assert.equal(d.id, 100 + i);
    assert.equal(d.questions?.[0]?.name, name);
  }
  const noRd = q('web.default.svc.cluster.local', 'A', 9);
  noRd[2] = 0;
  assert.equal(dnsPacket.decode(same(h, noRd)).flag_rd, false);
});

test('SRV answers (targets in the zone) serve every spelling exactly', () => {
  const h = setup();
  for (const name of [
    '_postgres._tcp.db.default.svc.cluster.local',
    '_POSTGRES._tcp.DB.default.svc.Cluster.Local',
  ])
    for (let i = 0; i < 2; i++) same(h, q(name, 'SRV', 3 + i));
  assert.ok(h.cached.responseCacheStats().hits >= 2);
});

test('the index generation invalidates the cache', () => {
  const h = setup();
  const msg = q('web.default.svc.cluster.local', 'A');
  same(h, msg);
  same(h, msg);
  const ip = '10.96.0.99';
  h.index.upsertService({ ...web, spec: { ...web.spec, clusterIP: ip, clusterIPs: [ip] } });
  const got = same(h, msg);
  const a = dnsPacket.decode(got).answers?.[0];
  assert.equal(a?.type === 'A' ? a.data : undefined, ip);
});

test('TTLs of hits are the index TTLs as time passes', async () => {
  const h = setup();
  const msg = q('web.default.svc.cluster.local', 'A');
  same(h, msg);
  await h.clock.advance(60_000);
  const got = same(h, msg);
  const a = dnsPacket.decode(got).answers?.[0];
  assert.equal(a?.type === 'A' ? a.ttl : undefined, DEFAULT_RESOLVER_CONFIG.ttl);
});

test('NXDOMAIN is cached and served with the same SOA', () => {
  const h = setup();
  const msg = q('nope.default.svc.cluster.local', 'A');
  same(h, msg);
  const got = same(h, q('NOPE.default.svc.cluster.local', 'A'));
  assert.equal((got[3] ?? 0) & 0xf, 3);
});

test('EDNS and plain queries, truncated and full answers, are not mixed up', () => {
  const h = setup();
  const name = 'many.default.svc.cluster.local';
  // EDNS first: the full answer (larger than 512) is cached; a plain query is still truncated.
  const big = same(h, q(name, 'A', 1, 4096));
  assert.ok(big.length > 512);
  const small = same(h, q(name, 'A', 2));
  assert.ok(dnsPacket.decode(small).flag_tc, 'plain UDP query: TC');
  assert.ok(small.length <= 512);
  // DO echoed, OPT appended to a hit.
  const doBit = same(h, q(name, 'A', 3, 4096, true));
  const opt = dnsPacket.decode(doBit).additionals?.find((r) => r.type === 'OPT');
  assert.ok(opt?.flag_do);
  // A 1232-octet client gets what fits in 1232; over TCP the full answer.
  same(h, q(name, 'A', 4, 1232));
  same(h, q(name, 'A', 5), 'tcp');
  // Plain first, on a fresh cache: TC is not cached, so EDNS gets the full answer.
  const g = setup();
  assert.ok(dnsPacket.decode(same(g, q(name, 'A', 6))).flag_tc);
  assert.ok(!dnsPacket.decode(same(g, q(name, 'A', 7, 4096))).flag_tc);
});
