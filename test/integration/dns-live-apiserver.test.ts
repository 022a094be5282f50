// Live: `svcnet apiserver` (in-process, plain HTTP on loopback) and the DNS daemon with the
// real informers. Objects created through the API show up in DNS answers (an
// existing namespace is NODATA, a new Service resolves, its EndpointSlice's hostnames too,
// and a deleted Service goes back to NXDOMAIN). Loopback only; no root needed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { q, udp } from '../../src/dns/client.js';
import { buildDnsConfig } from '../../src/dns/config.js';
import { DnsDaemon } from '../../src/dns/daemon.js';
import {
  createInformer,
  ENDPOINT_SLICES,
  loadKubeConfig,
  NAMESPACES,
  SERVICES,
} from '../../src/kube/client.js';
import { endpoint, service, slice } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject, Service } from '../../src/kube/types.js';
import { apiRequest } from './lib/api-request.js';

let api: RunningApiServer;
let daemon: DnsDaemon;
let dnsPort = 0;
let dir: string;

function call(method: string, path: string, body?: unknown): Promise<number> {
  return apiRequest(api, method, path, body);
}

async function answer(
  name: string,
  type: dnsPacket.RecordType = 'A',
): Promise<{ rcode: number; data: string[] }> {
  const out = await udp(dnsPort, q(name, type));
  assert.ok(out, `no answer for ${name}`);
  const m = dnsPacket.decode(out);
  return {
    rcode: (m.flags ?? 0) & 0xf,
    data: (m.answers ?? []).map((a) => (a.type === 'A' || a.type === 'AAAA' ? a.data : a.type)),
  };
}

async function eventually<T>(
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  api = await startApiServer({ listen: '127.0.0.1:0', insecureHttp: true });
  dir = mkdtempSync(join(tmpdir(), `svcnet-t${process.pid}-dnslive-`));
  const kcPath = join(dir, 'kubeconfig');
  writeFileSync(kcPath, api.kubeconfig());
  const kc = loadKubeConfig(kcPath);
  const config = buildDnsConfig(undefined, {
    listen: '127.0.0.1:0',
    healthListen: 'off',
    readyListen: 'off',
    metricsListen: 'off',
  });
  daemon = new DnsDaemon({
    config,
    services: createInformer<Service>(kc, SERVICES),
    endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES),
    namespaces: createInformer<KubeObject>(kc, NAMESPACES),
    upstreams: [],
    registry: new Registry(),
    log: pino({ level: 'silent' }),
  });
  dnsPort = (await daemon.start()).dns;
  await eventually(
    () => Promise.resolve(daemon.isSynced()),
    (v) => v,
    'informers synced',
  );
});

after(async () => {
  await daemon.stop();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the kubernetes Service of the API server resolves', async () => {
  const r = await eventually(
    () => answer('kubernetes.default.svc.cluster.local'),
    (v) => v.rcode === 0 && v.data.length === 1,
    'kubernetes Service',
  );
  assert.match(r.data[0] ?? '', /^10\.96\.0\.1$/);
});

test('Services and EndpointSlices created through the API appear in DNS; deletion removes them', async () => {
  assert.equal((await answer('default.svc.cluster.local')).rcode, 0, 'existing namespace: NODATA');
  assert.equal((await answer('nope.svc.cluster.local')).rcode, 3, 'missing namespace: NXDOMAIN');
  assert.equal(
    await call(
      'POST',
      '/api/v1/namespaces/default/services',
      service('pets', { clusterIP: 'None', ports: [{ name: 'web', port: 80, protocol: 'TCP' }] }),
    ),
    201,
  );
  assert.equal(
    await call(
      'POST',
      '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
      slice(
        'pets',
        [
          endpoint('10.244.0.10', { hostname: 'pet-0', conditions: { ready: true } }),
          endpoint('10.244.0.11', { hostname: 'pet-1', conditions: { ready: true } }),
        ],
        { ports: [{ name: 'web', port: 80, protocol: 'TCP' }] },
      ),
    ),
    201,
  );
  const all = await eventually(
    () => answer('pets.default.svc.cluster.local'),
    (v) => v.data.length === 2,
    'headless A',
  );
  assert.deepEqual([...all.data].sort(), ['10.244.0.10', '10.244.0.11']);
  assert.deepEqual((await answer('pet-1.pets.default.svc.cluster.local')).data, ['10.244.0.11']);
  assert.equal(await call('DELETE', '/api/v1/namespaces/default/services/pets'), 200);
  await eventually(
    () => answer('pets.default.svc.cluster.local'),
    (v) => v.rcode === 3,
    'NXDOMAIN after delete',
  );
});
