// Partial syncs of the IPVS proxier, against the Fakes (FakeIpvsKernel records every call):
// after a sequence of changes, partial syncs leave exactly what a full sync leaves, and a
// full sync finds nothing to change; a one-Service change issues only that Service's
// operations and reads back only connection counters it needs; the first sync, the one after
// a failure, changed options and the full-sync period give full syncs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { service } from '../../kube/testing.js';
import type { Service } from '../../kube/types.js';
import type { IpsetOperation } from '../../netfilter/ipset/render.js';
import type { IpvsOperation } from '../../netfilter/ipvs/model.js';
import { startSynced, svc } from '../testing.js';
import { addrAdd, dummy } from '../../util/ip-ops.js';
import type { FakeIpvsCall } from './kernel.js';
import { IPVS_DUMMY_DEVICE } from './names.js';
import { setupIpvs, slice2 } from './testing.js';

type Setup = ReturnType<typeof setupIpvs>;

/** ns/NAME with a NodePort, an externalIP and ClientIP affinity (every set kind in play). */
function richSvc(name: string, ip: string, ext: string, affinity = true): Service {
  return service(`ns/${name}`, {
    clusterIP: ip,
    type: 'NodePort',
    externalIPs: [ext],
    ...(affinity
      ? {
          sessionAffinity: 'ClientIP',
          sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
        }
      : {}),
    ports: [{ name: 'p', port: 80, protocol: 'TCP', nodePort: 30080 }],
  });
}

/** The fullSync flag of each family's report since `from`. */
function fullSyncs(s: Setup, from = 0): boolean[] {
  return s.reports.slice(from).flatMap((r) => r.map((x) => x.fullSync));
}

const OPTIONS = { nodePortIPs: ['192.0.2.10'] };

/** The same changes, synced one by one (partial syncs after the first). */
async function applyChanges(s: Setup): Promise<void> {
  const step = async (f: () => void): Promise<void> => {
    f();
    await s.f.clock.advance(1000);
  };
  await step(() => {
    s.f.services.upsert(svc('db', '10.96.0.20', 5432));
    s.f.slices.upsert(slice2('db', ['10.244.3.1']));
  });
  await step(() => {
    s.f.slices.upsert(slice2('web', ['10.244.1.5', '10.244.2.7']));
  });
  await step(() => {
    s.f.services.upsert(richSvc('rich', '10.96.0.30', '203.0.113.9', false));
  });
  await step(() => {
    s.f.slices.upsert(slice2('rich', ['10.244.4.1', '10.244.4.2']));
  });
  await step(() => {
    s.f.services.upsert(richSvc('rich', '10.96.0.30', '203.0.113.8'));
  });
  await step(() => {
    s.f.services.delete('ns/dns');
  });
  await step(() => {
    s.f.slices.upsert(slice2('web', ['10.244.1.5'], ['10.244.2.7']));
  });
}

async function startWith(s: Setup): Promise<void> {
  s.f.services.upsert(svc('web', '10.96.0.10', 80));
  s.f.services.upsert(svc('dns', '10.96.0.53', 53, 'UDP'));
  s.f.slices.upsert(slice2('web', ['10.244.1.5', '10.244.2.6']));
  await startSynced(s.f);
}

test('partial syncs after a sequence of changes leave exactly what a full sync leaves', async () => {
  const s = setupIpvs({ options: OPTIONS });
  await startWith(s);
  await applyChanges(s);
  assert.deepEqual(fullSyncs(s), [true, false, false, false, false, false, false, false]);
  const afterPartial = await s.kernelText();

  // A fresh proxier given the final objects at once: one full sync, the same kernel.
  const fresh = setupIpvs({ options: OPTIONS });
  for (const o of s.f.services.list()) fresh.f.services.upsert(o);
  for (const o of s.f.slices.list()) fresh.f.slices.upsert(o);
  await startSynced(fresh.f);
  assert.equal(await fresh.kernelText(), afterPartial);

  // A forced full sync reads everything back and finds no IPVS operation to do.
  s.kernel.calls.length = 0;
  s.proxier.forceFullSync('test');
  await s.f.clock.advance(1000);
  assert.deepEqual(fullSyncs(s).at(-1), true);
  const ipvsOps = s.kernel.calls.flatMap((c) => (c.call === 'applyIpvs' ? c.ops : []));
  assert.deepEqual(ipvsOps, []);
  // Its ipsets: listed, each created -exist, no entry added or deleted (never flushed).
  assert.equal(ofKind(s.kernel.calls, 'readIpsets').length, 1);
  assert.deepEqual([...new Set(ipsetLines(s.kernel.calls))], ['create']);
  assert.equal(await s.kernelText(), afterPartial);
});

/** The calls of `calls` of one kind. */
function ofKind<K extends FakeIpvsCall['call']>(
  calls: readonly FakeIpvsCall[],
  kind: K,
): Extract<FakeIpvsCall, { call: K }>[] {
  return calls.filter((c): c is Extract<FakeIpvsCall, { call: K }> => c.call === kind);
}

function ipsetLines(calls: readonly FakeIpvsCall[]): string[] {
  return ofKind(calls, 'applyIpsets').flatMap((c) =>
    c.ops.map((o: IpsetOperation) =>
      o.verb === 'add' || o.verb === 'del' ? `${o.verb} ${o.name} ${o.entry.value}` : o.verb,
    ),
  );
}

function ipvsLines(calls: readonly FakeIpvsCall[]): string[] {
  return ofKind(calls, 'applyIpvs').flatMap((c) =>
    c.ops.map((o: IpvsOperation) => {
      switch (o.verb) {
        case 'addService':
        case 'editService':
          return `${o.verb} ${o.virtualServer.address}:${o.virtualServer.port}`;
        case 'deleteService':
          return `${o.verb} ${o.id.address}:${o.id.port}`;
        case 'clear':
          return o.verb;
        default:
          return `${o.verb} ${o.id.address}:${o.id.port} ${o.realServer.address}`;
      }
    }),
  );
}

test('a one-Service change issues only that Service’s operations', async () => {
  const s = setupIpvs({ fullSyncPeriodMs: 3_600_000 });
  for (let i = 0; i < 50; i++) {
    s.f.services.upsert(svc(`s${i}`, `10.96.1.${i}`, 80));
    s.f.slices.upsert(slice2(`s${i}`, [`10.244.${i}.1`, `10.244.${i}.2`]));
  }
  await startSynced(s.f);
  const historyBefore = s.ip.history.length;

  // One endpoint of s7 replaced.
  s.kernel.calls.length = 0;
  s.f.slices.upsert(slice2('s7', ['10.244.7.1', '10.244.7.3']));
  await s.f.clock.advance(1000);
  assert.deepEqual(fullSyncs(s).at(-1), false);
  assert.deepEqual(ipsetLines(s.kernel.calls), [
    'del KUBE-LOOP-BACK 10.244.7.2,tcp:8080,10.244.7.2',
    'add KUBE-LOOP-BACK 10.244.7.3,tcp:8080,10.244.7.3',
  ]);
  assert.deepEqual(ipvsLines(s.kernel.calls), [
    'addReal 10.96.1.7:80 10.244.7.3',
    'deleteReal 10.96.1.7:80 10.244.7.2',
  ]);
  // Only s7's counters are read (graceful termination); no table read back, no iptables.
  assert.deepEqual(
    ofKind(s.kernel.calls, 'readConnections').map((c) => c.ids.map((i) => i.address)),
    [['10.96.1.7']],
  );
  assert.equal(ofKind(s.kernel.calls, 'readIpvs').length, 0);
  assert.equal(ofKind(s.kernel.calls, 'applyIptables').length, 0);
  assert.equal(s.ip.history.length, historyBefore, 'kube-ipvs0 untouched');

  // A new Service: its VS, its set entries, its address; still no rules rewritten.
  s.kernel.calls.length = 0;
  s.f.services.upsert(svc('new', '10.96.2.1', 443));
  await s.f.clock.advance(1000);
  assert.deepEqual(ipsetLines(s.kernel.calls), [
    'add KUBE-CLUSTER-IP 10.96.2.1,tcp:443',
    'add KUBE-IPVS-IPS 10.96.2.1',
  ]);
  assert.deepEqual(ipvsLines(s.kernel.calls), ['addService 10.96.2.1:443']);
  assert.deepEqual(
    s.kernel.calls.map((c) => c.call),
    ['applyIpsets', 'applyIpvs'],
  );
  assert.deepEqual(s.ip.history.slice(historyBefore), [
    'host: addr add 10.96.2.1/32 dev kube-ipvs0',
  ]);

  // Nothing changed: a periodic sync touches nothing.
  s.kernel.calls.length = 0;
  await s.f.clock.advance(30_000);
  assert.deepEqual(s.kernel.calls, []);
});

test('the first sync, after a failure, on changed options and every full-sync period: full', async () => {
  const s = setupIpvs({ fullSyncPeriodMs: 120_000 });
  await startWith(s);
  s.f.slices.upsert(slice2('web', ['10.244.1.5']));
  await s.f.clock.advance(1000);
  assert.deepEqual(fullSyncs(s), [true, false]);

  // A refused ipvsadm -R: the retry reads everything back.
  s.kernel.failNextIpvs = true;
  s.f.slices.upsert(slice2('web', ['10.244.1.6']));
  await s.f.clock.advance(1000);
  assert.deepEqual(s.reports.at(-1), [], 'the failed sync reports nothing');
  s.kernel.calls.length = 0;
  await s.f.clock.advance(30_000);
  assert.deepEqual(fullSyncs(s, 3), [true]);
  assert.equal(ofKind(s.kernel.calls, 'readIpvs').length, 1);
  assert.deepEqual(s.reals(), ['10.96.0.10:80 -> 10.244.1.6:8080 w1']);

  // Periodic syncs are partial until the full-sync period has passed.
  await s.f.clock.advance(30_000);
  await s.f.clock.advance(30_000);
  await s.f.clock.advance(30_000);
  await s.f.clock.advance(30_000);
  assert.deepEqual(fullSyncs(s, 4), [false, false, false, true]);
});

test('by default every syncPeriod (30 s here) is a full sync; changes in between are partial', async () => {
  const s = setupIpvs();
  await startWith(s);
  s.f.slices.upsert(slice2('web', ['10.244.1.5']));
  await s.f.clock.advance(1000);
  s.f.slices.upsert(slice2('web', ['10.244.1.6']));
  await s.f.clock.advance(1000);
  await s.f.clock.advance(30_000);
  assert.deepEqual(fullSyncs(s), [true, false, false, true]);
});

test('changed plan options make the sync full', async () => {
  let scheduler = 'rr';
  const s = setupIpvs({ options: () => ({ scheduler }) });
  await startWith(s);
  scheduler = 'wrr';
  s.f.slices.upsert(slice2('web', ['10.244.1.5']));
  await s.f.clock.advance(1000);
  assert.deepEqual(fullSyncs(s), [true, true]);
  assert.deepEqual(
    [...s.ipvs.state().values()].map((v) => v.virtualServer.scheduler),
    ['wrr', 'wrr'],
  );
});

test('addresses on kube-ipvs0 are not node addresses: a bound externalIP stays bound, syncs stay partial', async () => {
  // The host's address list includes what kube-ipvs0 holds (a previous run left them there).
  const s = setupIpvs({
    fullSyncPeriodMs: 3_600_000,
    options: { localAddresses: ['192.0.2.10', '10.96.0.30', '203.0.113.8'] },
  });
  await s.ip.batch(undefined, [
    dummy(IPVS_DUMMY_DEVICE),
    addrAdd('10.96.0.30/32', IPVS_DUMMY_DEVICE),
    addrAdd('203.0.113.8/32', IPVS_DUMMY_DEVICE),
  ]);
  s.f.services.upsert(richSvc('rich', '10.96.0.30', '203.0.113.8'));
  // An externalIP that is the node's own (eth0) is not bound.
  s.f.services.upsert(richSvc('own', '10.96.0.31', '192.0.2.10'));
  await startSynced(s.f);
  const bound = ['10.96.0.30', '10.96.0.31', '203.0.113.8'];
  assert.deepEqual(await s.dummyAddrs(), bound);
  s.f.slices.upsert(slice2('rich', ['10.244.4.1']));
  await s.f.clock.advance(1000);
  assert.deepEqual(await s.dummyAddrs(), bound);
  assert.deepEqual(fullSyncs(s), [true, false]);
});
