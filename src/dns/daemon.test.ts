// The daemon wired to FakeInformers: SERVFAIL and /ready 503 before the informers sync,
// answers after, live updates from watch events, invalid objects skipped and counted,
// /health, and CoreDNS-named metrics on /metrics; the lameduck shutdown (answers over UDP and
// TCP with /ready 503 until it ends, then closed sockets). Everything on loopback, port 0.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { request } from 'node:http';
import * as dnsPacket from 'dns-packet';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../kube/informer.js';
import type { EndpointSlice, KubeObject, Service } from '../kube/types.js';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
import { buildDnsConfig } from './config.js';
import { DnsDaemon } from './daemon.js';
import { q, tcp, udp } from './client.js';
import { db, dbSlice, web } from './testdata/cluster.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test('daemon: SERVFAIL until synced, then answers; follows events; /health /ready /metrics', async () => {
  const services = new FakeInformer<Service>([web]);
  const slices = new FakeInformer<EndpointSlice>([]);
  const namespaces = new FakeInformer<KubeObject>([{ metadata: { name: 'default' } }]);
  const config = buildDnsConfig(undefined, {
    listen: '127.0.0.1:0',
    healthListen: '127.0.0.1:0',
    readyListen: '127.0.0.1:0',
    metricsListen: '127.0.0.1:0',
  });
  const registry = new Registry();
  const daemon = new DnsDaemon({
    config,
    services,
    endpointSlices: slices,
    namespaces,
    upstreams: [],
    registry,
    log: pino({ level: 'silent' }),
    clock: new FakeClock(),
  });
  // Hold the informers back: start() of a FakeInformer syncs at once, so start the server
  // parts first by stubbing start until we say so.
  const release: (() => void)[] = [];
  for (const inf of [services, slices, namespaces] as FakeInformer<KubeObject>[]) {
    const real = inf.start.bind(inf);
    inf.start = () =>
      new Promise<void>((resolve) => {
        release.push(() => {
          void real().then(resolve);
        });
      });
  }
  const ports = await daemon.start();
  try {
    assert.ok(ports.health && ports.ready && ports.metrics);
    const early = await udp(ports.dns, q('missing.default.svc.cluster.local'));
    assert.ok(early);
    assert.equal((early[3] ?? 0) & 0xf, 2, 'SERVFAIL before sync');
    assert.equal((await get(ports.ready, '/ready')).status, 503);
    assert.equal((await get(ports.health, '/health')).body, 'OK');

    for (const r of release) r();
    await flushMicrotasks();
    assert.equal((await get(ports.ready, '/ready')).status, 200);

    const a = await udp(ports.dns, q('web.default.svc.cluster.local'));
    assert.ok(a);
    assert.deepEqual(
      dnsPacket.decode(a).answers?.map((x) => (x.type === 'OPT' ? '' : x.data)),
      ['10.96.0.10'],
    );
    const nx = await udp(ports.dns, q('missing.default.svc.cluster.local'));
    assert.ok(nx);
    assert.equal((nx[3] ?? 0) & 0xf, 3, 'NXDOMAIN after sync');
    const nsNodata = await udp(ports.dns, q('default.svc.cluster.local'));
    assert.ok(nsNodata);
    assert.equal((nsNodata[3] ?? 0) & 0xf, 0, 'existing namespace: NODATA');
    const nsMissing = await udp(ports.dns, q('other.svc.cluster.local'));
    assert.ok(nsMissing);
    assert.equal((nsMissing[3] ?? 0) & 0xf, 3, 'unknown namespace: NXDOMAIN');

    // A headless Service arrives with its endpoints through watch events.
    services.upsert(db);
    slices.upsert(dbSlice);
    const sts = await udp(ports.dns, q('db-0.db.default.svc.cluster.local'));
    assert.ok(sts);
    assert.deepEqual(
      dnsPacket.decode(sts).answers?.map((x) => (x.type === 'OPT' ? '' : x.data)),
      ['10.244.1.5'],
    );
    // A bad object is skipped and counted; serving goes on.
    services.upsert({
      metadata: { name: 'bad', namespace: 'default' },
      spec: { clusterIP: 'not-an-ip' },
    });
    const still = await udp(ports.dns, q('web.default.svc.cluster.local'));
    assert.ok(still);
    assert.equal(dnsPacket.decode(still).answers?.length, 1);

    const metrics = (await get(ports.metrics, '/metrics')).body;
    assert.match(
      metrics,
      /coredns_dns_requests_total\{[^}]*zone="cluster.local."[^}]*type="A"\} \d+/,
    );
    assert.match(
      metrics,
      /coredns_dns_responses_total\{[^}]*rcode="NXDOMAIN",plugin="kubernetes"\} 2/,
    );
    assert.match(metrics, /coredns_dns_request_duration_seconds_bucket\{[^}]*le="\+Inf"\} \d+/);
    assert.match(metrics, /coredns_dns_request_duration_seconds_count\{[^}]*type="A"\} \d+/);
    assert.match(metrics, /coredns_cache_entries\{[^}]*type="success"/);
    assert.match(metrics, /svcnet_dns_skipped_objects_total\{kind="Service"\} 1/);
  } finally {
    await daemon.stop();
  }
});

test('buildDnsConfig collects every field error', () => {
  assert.throws(
    () =>
      buildDnsConfig(
        'ttl: 99999\npods: sometimes\nbogus: 1\nupstreams: ["nope:x"]\n',
        {},
        'dns.yaml',
      ),
    (e: Error) =>
      /dns\.yaml: ttl: must be an integer 0-3600/.test(e.message) &&
      /dns\.yaml: pods: must be disabled, insecure or verified/.test(e.message) &&
      /dns\.yaml: bogus: unknown field/.test(e.message) &&
      /dns\.yaml: upstreams\[0\]/.test(e.message),
  );
  const c = buildDnsConfig('ttl: 30\nfallthrough: false\n', {
    zone: 'corp.example',
    upstream: ['[fd00::53]:5353'],
  });
  assert.deepEqual(c.resolver.zones, ['corp.example.', 'in-addr.arpa.', 'ip6.arpa.']);
  assert.equal(c.resolver.ttl, 30);
  assert.equal(c.resolver.fallthrough, undefined);
  assert.deepEqual(c.upstreams, [{ host: 'fd00::53', port: 5353 }]);
});

/** True when 127.0.0.1:port can be bound for UDP, i.e. the daemon's socket is gone. */
function udpPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => {
      resolve(false);
    });
    s.bind(port, '127.0.0.1', () => {
      s.close(() => {
        resolve(true);
      });
    });
  });
}

test('daemon shutdown: lameduck keeps answering UDP and TCP with /ready 503, then closes', async () => {
  const clock = new FakeClock();
  const config = buildDnsConfig(undefined, {
    listen: '127.0.0.1:0',
    healthListen: '127.0.0.1:0',
    readyListen: '127.0.0.1:0',
    metricsListen: 'off',
  });
  assert.equal(config.lameduckMs, 5000, "kubeadm's lameduck 5s by default");
  interface Entry {
    msg: string;
    lameduck?: string;
  }
  const entries: Entry[] = [];
  const log = pino(
    { level: 'info' },
    { write: (line: string) => entries.push(JSON.parse(line) as Entry) },
  );
  const daemon = new DnsDaemon({
    config,
    services: new FakeInformer<Service>([web]),
    endpointSlices: new FakeInformer<EndpointSlice>([]),
    upstreams: [],
    registry: new Registry(),
    log,
    clock,
  });
  const ports = await daemon.start();
  assert.ok(ports.ready && ports.health);
  await flushMicrotasks();
  assert.equal((await get(ports.ready, '/ready')).status, 200);
  const answers = async (what: string): Promise<void> => {
    const u = await udp(ports.dns, q('web.default.svc.cluster.local'));
    assert.ok(u, `${what}: UDP answered`);
    assert.equal(dnsPacket.decode(u).answers?.length, 1, `${what}: UDP answer`);
    const t = await tcp(ports.dns, q('web.default.svc.cluster.local'));
    assert.equal(dnsPacket.decode(t).answers?.length, 1, `${what}: TCP answer`);
  };

  let closed = false;
  const done = daemon.shutdown('SIGTERM').then(() => (closed = true));
  assert.deepEqual(
    await get(ports.ready, '/ready'),
    { status: 503, body: 'Shutting down' },
    'not ready from the first signal',
  );
  assert.deepEqual(await get(ports.health, '/health'), { status: 200, body: 'OK' });
  assert.ok(
    entries.some((e) => e.msg === 'Going into lameduck mode' && e.lameduck === '5s'),
    'logs the lameduck with its duration',
  );
  await answers('at the start of lameduck');
  await clock.advance(4999);
  await answers('1 ms before the end of lameduck');
  assert.equal(closed, false);
  assert.equal(await udpPortFree(ports.dns), false, 'the DNS socket is still bound');

  await clock.advance(1);
  await done;
  assert.equal(await udpPortFree(ports.dns), true, 'the DNS socket is closed');
  await assert.rejects(tcp(ports.dns, q('web.default.svc.cluster.local')), /ECONNREFUSED/);
  await assert.rejects(get(ports.ready, '/ready'), /ECONNREFUSED/);
  assert.deepEqual(entries.map((e) => e.msg).slice(-3), [
    'Going into lameduck mode',
    'Shutting down',
    'DNS server stopped',
  ]);
});

test('daemon shutdown: --lameduck 0 closes at once', async () => {
  const config = buildDnsConfig(undefined, {
    listen: '127.0.0.1:0',
    healthListen: 'off',
    readyListen: 'off',
    metricsListen: 'off',
    lameduck: '0',
  });
  const daemon = new DnsDaemon({
    config,
    services: new FakeInformer<Service>([]),
    endpointSlices: new FakeInformer<EndpointSlice>([]),
    upstreams: [],
    registry: new Registry(),
    log: pino({ level: 'silent' }),
    clock: new FakeClock(),
  });
  const ports = await daemon.start();
  await daemon.shutdown('SIGINT');
  assert.equal(await udpPortFree(ports.dns), true);
});

test('buildDnsConfig: lameduck from the file, the flag winning, and bad values named', () => {
  assert.equal(buildDnsConfig('lameduck: 10s\n', {}).lameduckMs, 10_000);
  assert.equal(buildDnsConfig('lameduck: 10s\n', { lameduck: '250ms' }).lameduckMs, 250);
  assert.equal(buildDnsConfig(undefined, { lameduck: '0' }).lameduckMs, 0);
  for (const bad of ['5', '-1s', 'soon', '2h'])
    assert.throws(
      () => buildDnsConfig(undefined, { lameduck: bad }, 'dns.yaml'),
      new RegExp(`dns\\.yaml: lameduck: must be a duration .*got "${bad}"`),
    );
  assert.throws(() => buildDnsConfig('lameduck: 5\n', {}), /lameduck: must be a duration/);
});
