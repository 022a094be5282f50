// Robustness: 100,000 random and mutated packets (random bytes, bit-flipped valid queries,
// truncated ones, forged counts, compression loops) go to svcnet dns; 20,000 of them over its
// real UDP socket without waiting, the rest through the handler; then garbage and 5,000
// malformed framed messages over TCP. The
// server must not crash or stall: a valid query over UDP and over TCP is answered afterwards,
// and no query raised inside the handler. Loopback only.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { createConnection } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { q, tcp, udp } from '../../src/dns/client.js';
import { RecordIndex } from '../../src/dns/record-index.js';
import { DEFAULT_RESOLVER_CONFIG } from '../../src/dns/resolve.js';
import { DnsHandler, DnsServer } from '../../src/dns/server.js';
import { clusterFixture } from '../../src/dns/testdata/cluster.js';

let server: DnsServer;
let handler: DnsHandler;

before(async () => {
  const index = new RecordIndex();
  clusterFixture(index);
  handler = new DnsHandler({ index, config: DEFAULT_RESOLVER_CONFIG, isSynced: () => true });
  server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
  await server.listen();
});

after(async () => {
  await server.close();
});

function* packets(n: number): Generator<Buffer> {
  const seeds = [
    q('web.default.svc.cluster.local'),
    q('_pg._tcp.db.default.svc.cluster.local', 'SRV', 2, 1232),
    q('5.1.244.10.in-addr.arpa', 'PTR'),
    q('many.default.svc.cluster.local', 'A', 3, 4096),
    q('alias.default.svc.cluster.local', 'CNAME'),
  ];
  let seed = 0x5eed;
  const rand = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed >>> 8;
  };
  for (let i = 0; i < n; i++) {
    const kind = i % 5;
    const base = Buffer.from(seeds[rand() % seeds.length] ?? Buffer.alloc(0));
    if (kind === 0) {
      const p = Buffer.alloc(rand() % 600);
      for (let k = 0; k < p.length; k++) p[k] = rand() & 0xff;
      yield p;
    } else if (kind === 1) {
      for (let k = 0; k < 1 + (rand() % 6); k++) base[rand() % base.length] = rand() & 0xff;
      yield base;
    } else if (kind === 2) {
      yield base.subarray(0, rand() % base.length);
    } else if (kind === 3) {
      // Forged section counts.
      base.writeUInt16BE(rand() & 0xffff, 4 + 2 * (rand() % 4));
      yield base;
    } else {
      // A compression pointer loop in the question or the additional section.
      const p = Buffer.concat([base.subarray(0, 12), Buffer.from([0xc0, 12, 0, 1, 0, 1])]);
      p.writeUInt16BE(1, 4);
      yield rand() % 2 === 0 ? p : Buffer.concat([base, Buffer.from([0xc0, base.length])]);
    }
  }
}

test('100k malformed packets: no crash, no stall, valid queries still answered', async () => {
  const sock = createSocket('udp4');
  let i = 0;
  for (const p of packets(100_000)) {
    if (i % 5 === 0) {
      sock.send(p, server.port, '127.0.0.1');
      // Let the server drain its socket now and then.
      if (i % 2000 === 0) await new Promise((r) => setImmediate(r));
    } else {
      const res = handler.handle(p, i % 3 === 0 ? 'tcp' : 'udp');
      if (res instanceof Promise) await res;
    }
    i++;
  }
  sock.close();
  // Garbage over TCP: a short frame, a huge length prefix, random bytes.
  for (const junk of [
    Buffer.from([0, 3, 1, 2, 3]),
    Buffer.from([0xff, 0xff, 1, 2]),
    Buffer.from('GET / HTTP/1.1\r\n\r\n'),
  ]) {
    await new Promise<void>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: server.port }, () => {
        s.end(junk);
      });
      s.on('close', () => {
        resolve();
      });
      s.on('error', () => {
        resolve();
      });
      setTimeout(() => {
        s.destroy();
      }, 300);
    });
  }
  // Malformed messages framed over TCP: 5,000 of them pipelined, 250 per connection (the
  // server closes a connection on a frame shorter than a header; the rest is dropped then).
  const frames = [...packets(5000)];
  let framed = 0;
  for (let i = 0; i < frames.length; i += 250) {
    const batch = frames.slice(i, i + 250).map((p) => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(p.length);
      return Buffer.concat([len, p]);
    });
    framed += batch.length;
    await new Promise<void>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: server.port }, () => {
        s.end(Buffer.concat(batch));
      });
      s.on('data', () => undefined);
      s.on('close', () => {
        resolve();
      });
      s.on('error', () => {
        resolve();
      });
      setTimeout(() => {
        s.destroy();
      }, 2000);
    });
  }
  console.log(
    `figure: 100,000 malformed messages (20,000 over UDP) and ${framed} framed over TCP: ${handler.internalErrors} handler errors`,
  );
  assert.equal(handler.internalErrors, 0);
  // The flood may still fill the socket buffer (the kernel drops what does not fit), so ask
  // as a stub resolver would: a few tries, one second apart.
  let a: Buffer | undefined;
  for (let tries = 0; tries < 5 && !a; tries++)
    a = await udp(server.port, q('web.default.svc.cluster.local', 'A', 77), 1000);
  assert.ok(a, 'UDP still answered');
  assert.deepEqual(
    dnsPacket.decode(a).answers?.map((x) => (x.type === 'A' ? x.data : '')),
    ['10.96.0.10'],
  );
  const t = await tcp(server.port, q('web.default.svc.cluster.local', 'A', 78));
  const tm = dnsPacket.decode(t);
  assert.equal(tm.id, 78);
  assert.deepEqual(
    tm.answers?.map((x) => (x.type === 'A' ? x.data : '')),
    ['10.96.0.10'],
  );
});
