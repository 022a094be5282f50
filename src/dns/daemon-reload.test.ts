// The daemon from a Corefile, reconfigured as `reload` does it: a new ttl answers the next
// query, what cannot change live is reported, not applied; `labels` hides Services outside
// the selector and `noendpoints` leaves EndpointSlices unwatched. Loopback, port 0.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as dnsPacket from 'dns-packet';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { FakeInformer } from '../kube/informer.js';
import type { EndpointSlice, Service } from '../kube/types.js';
import { FakeClock, flushMicrotasks } from '../util/clock.js';
import type { DnsConfig } from './config.js';
import { corefileToDnsConfig } from './corefile-config.js';
import { DnsDaemon } from './daemon.js';
import { q, udp } from './client.js';
import { db, dbSlice, web } from './testdata/cluster.js';

function fromCorefile(kubernetesBlock: string): DnsConfig {
  const text = `.:53 {\n  kubernetes cluster.local {\n${kubernetesBlock}\n  }\n  reload\n}\n`;
  const cfg = corefileToDnsConfig(text, 'Corefile').config;
  return { ...cfg, listen: { host: '127.0.0.1', port: 0 } };
}

async function answers(
  port: number,
  name: string,
): Promise<{ data: unknown; ttl?: number | undefined }[]> {
  const reply = await udp(port, q(name));
  assert.ok(reply, `an answer for ${name}`);
  return (dnsPacket.decode(reply).answers ?? []).map((a) =>
    a.type === 'OPT' ? { data: '' } : { data: a.data, ttl: a.ttl },
  );
}

function daemonWith(config: DnsConfig): {
  daemon: DnsDaemon;
  services: FakeInformer<Service>;
  slices: FakeInformer<EndpointSlice>;
} {
  const services = new FakeInformer<Service>([
    web,
    db,
    { ...web, metadata: { ...web.metadata, name: 'api', labels: { app: 'api' } } },
  ]);
  const slices = new FakeInformer<EndpointSlice>([dbSlice]);
  const daemon = new DnsDaemon({
    config,
    services,
    endpointSlices: slices,
    upstreams: [],
    registry: new Registry(),
    log: pino({ level: 'silent' }),
    clock: new FakeClock(),
  });
  return { daemon, services, slices };
}

test('reload: a new ttl answers the next query; a new port is reported, not applied', async () => {
  const { daemon } = daemonWith(fromCorefile('ttl 30'));
  const ports = await daemon.start();
  try {
    await flushMicrotasks();
    const name = 'web.default.svc.cluster.local';
    assert.deepEqual(await answers(ports.dns, name), [{ data: '10.96.0.10', ttl: 30 }]);
    const next = fromCorefile('ttl 5');
    assert.deepEqual(daemon.reconfigure(next, []), []);
    assert.deepEqual(await answers(ports.dns, name), [{ data: '10.96.0.10', ttl: 5 }]);
    const moved = { ...next, listen: { host: '127.0.0.1', port: 5353 }, lameduckMs: 1 };
    assert.deepEqual(daemon.reconfigure(moved, []), ['listen', 'lameduck']);
    assert.deepEqual(await answers(ports.dns, name), [{ data: '10.96.0.10', ttl: 5 }]);
  } finally {
    await daemon.stop();
  }
});

test('labels hides Services outside the selector; noendpoints leaves endpoints unwatched', async () => {
  const { daemon } = daemonWith(fromCorefile('labels app=api\nnoendpoints'));
  const ports = await daemon.start();
  try {
    await flushMicrotasks();
    assert.deepEqual(await answers(ports.dns, 'api.default.svc.cluster.local'), [
      { data: '10.96.0.10', ttl: 5 },
    ]);
    assert.deepEqual(await answers(ports.dns, 'web.default.svc.cluster.local'), []);
  } finally {
    await daemon.stop();
  }
  const plain = daemonWith(fromCorefile('noendpoints'));
  const p2 = await plain.daemon.start();
  try {
    await flushMicrotasks();
    assert.deepEqual(await answers(p2.dns, 'db-0.db.default.svc.cluster.local'), []);
  } finally {
    await plain.daemon.stop();
  }
});
