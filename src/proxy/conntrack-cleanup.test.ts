// Tests of the stale-UDP conntrack decision, applied to a FakeConntrack flow table so the
// assertions are about which client flows survive.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planConntrackCleanup } from './conntrack-cleanup.js';
import type { ConntrackServicePort } from './conntrack-cleanup.js';
import { FakeConntrack } from '../os/conntrack.js';
import type { FakeFlow } from '../os/conntrack.js';

const dns = (
  endpoints: { ip: string; port: number }[],
  protocol: 'UDP' | 'TCP' = 'UDP',
): ConntrackServicePort => ({
  name: 'kube-system/dns:dns',
  family: 'IPv4',
  protocol,
  serviceIPs: ['10.96.0.10', '192.0.2.10'],
  port: 53,
  nodePort: 30053,
  endpoints,
});
const view = (...ports: ConntrackServicePort[]) =>
  new Map(ports.map((p) => [`${p.name}/${p.protocol}`, p]));
const flow = (
  origDst: string,
  origDstPort: number,
  replySrc: string,
  replySrcPort = 5353,
): FakeFlow => ({
  family: 'IPv4',
  protocol: 'UDP',
  origSrc: '10.244.0.9',
  origSrcPort: 40000,
  origDst,
  origDstPort,
  replySrc,
  replySrcPort,
});

async function survivors(
  filters: ReturnType<typeof planConntrackCleanup>,
  flows: FakeFlow[],
): Promise<string[]> {
  const ct = new FakeConntrack(flows);
  for (const f of filters) await ct.deleteEntries(f);
  return ct.flows.map((f) => `${f.origDst}:${f.origDstPort}->${f.replySrc}`);
}

test('a removed endpoint loses its flows via every service IP and the NodePort; others stay', async () => {
  const a = { ip: '10.244.1.5', port: 5353 };
  const b = { ip: '10.244.2.6', port: 5353 };
  const filters = planConntrackCleanup(view(dns([a, b])), view(dns([b])));
  const left = await survivors(filters, [
    flow('10.96.0.10', 53, a.ip),
    flow('192.0.2.10', 53, a.ip),
    flow('172.18.0.2', 30053, a.ip),
    flow('10.96.0.10', 53, b.ip),
    flow('10.96.0.99', 53, a.ip),
  ]);
  assert.deepEqual(left, ['10.96.0.10:53->10.244.2.6', '10.96.0.99:53->10.244.1.5']);
});

test('a deleted service drops the flows of all its endpoints', async () => {
  const a = { ip: '10.244.1.5', port: 5353 };
  const filters = planConntrackCleanup(view(dns([a])), view());
  assert.deepEqual(await survivors(filters, [flow('10.96.0.10', 53, a.ip)]), []);
});

test('a service port that gains its first endpoints drops black-holed flows to it', async () => {
  const a = { ip: '10.244.1.5', port: 5353 };
  const filters = planConntrackCleanup(view(dns([])), view(dns([a])));
  const left = await survivors(filters, [
    flow('10.96.0.10', 53, '10.96.0.10', 53),
    flow('172.18.0.2', 30053, '172.18.0.2', 30053),
    flow('10.96.0.11', 53, '10.96.0.11', 53),
  ]);
  assert.deepEqual(left, ['10.96.0.11:53->10.96.0.11']);
  assert.equal(planConntrackCleanup(view(), view(dns([a]))).length, 3, 'a new service counts too');
});

test('unchanged endpoints, growth of a non-empty set, and TCP ports need no deletions', () => {
  const a = { ip: '10.244.1.5', port: 5353 };
  const b = { ip: '10.244.2.6', port: 5353 };
  assert.deepEqual(planConntrackCleanup(view(dns([a])), view(dns([a]))), []);
  assert.deepEqual(planConntrackCleanup(view(dns([a])), view(dns([a, b]))), []);
  assert.deepEqual(planConntrackCleanup(view(dns([a, b], 'TCP')), view(dns([], 'TCP'))), []);
});
