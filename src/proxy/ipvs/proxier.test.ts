// Unit tests of the IPVS proxier against Fakes (FakeIpvs, FakeIpset, FakeIptables, FakeIp,
// the shared proxier Fakes): a ClusterIP Service gives one virtual server with its real
// servers, the ipsets and the kube-ipvs0 address; a terminating endpoint is kept at weight 0
// then deleted; a deleted Service's virtual server goes and its address is unbound; a
// missing ip_vs module refuses the start in one line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { startSynced, svc } from '../testing.js';
import { setupIpvs as setup, slice2 } from './testing.js';

test('a ClusterIP Service: one virtual server, two real servers, the ipsets and the kube-ipvs0 address', async () => {
  const s = setup();
  s.f.services.upsert(svc('web', '10.96.0.10', 80));
  s.f.slices.upsert(slice2('web', ['10.244.1.5', '10.244.2.6']));
  await startSynced(s.f);
  assert.deepEqual(s.reals(), [
    '10.96.0.10:80 -> 10.244.1.5:8080 w1',
    '10.96.0.10:80 -> 10.244.2.6:8080 w1',
  ]);
  const vss = [...s.ipvs.state().values()].map((v) => v.virtualServer);
  assert.deepEqual(
    vss.map((v) => `${v.protocol} ${v.scheduler}`),
    ['tcp rr'],
  );
  assert.deepEqual(s.ipset.entries('KUBE-CLUSTER-IP'), ['10.96.0.10,tcp:80']);
  assert.deepEqual(s.ipset.entries('KUBE-IPVS-IPS'), ['10.96.0.10']);
  assert.ok(s.ipset.has('KUBE-LOOP-BACK'));
  assert.deepEqual(await s.dummyAddrs(), ['10.96.0.10']);
  const save = await s.iptables.save('nat');
  assert.match(save, /-A KUBE-SERVICES .*--match-set KUBE-CLUSTER-IP dst,dst/);
});

test('a terminating endpoint is kept at weight 0 while it has connections, then deleted', async () => {
  const s = setup();
  s.kernel.conns = 1;
  s.f.services.upsert(svc('web', '10.96.0.10', 80));
  s.f.slices.upsert(slice2('web', ['10.244.1.5', '10.244.2.6']));
  await startSynced(s.f);
  s.f.slices.upsert(slice2('web', ['10.244.1.5'], ['10.244.2.6']));
  await s.f.clock.advance(1000);
  assert.deepEqual(s.reals(), [
    '10.96.0.10:80 -> 10.244.1.5:8080 w1',
    '10.96.0.10:80 -> 10.244.2.6:8080 w0',
  ]);
  await s.f.clock.advance(30_000);
  assert.equal(s.reals().length, 2, 'still draining');
  s.kernel.conns = 0;
  await s.f.clock.advance(30_000);
  assert.deepEqual(s.reals(), ['10.96.0.10:80 -> 10.244.1.5:8080 w1']);
});

test('a deleted Service: its virtual server is removed and its address unbound', async () => {
  const s = setup();
  s.f.services.upsert(svc('web', '10.96.0.10', 80));
  s.f.services.upsert(svc('db', '10.96.0.20', 5432));
  s.f.slices.upsert(slice2('web', ['10.244.1.5', '10.244.2.6']));
  await startSynced(s.f);
  assert.equal(s.ipvs.state().size, 2);
  s.f.services.delete('ns/web');
  await s.f.clock.advance(1000);
  assert.deepEqual(
    [...s.ipvs.state().values()].map((v) => v.virtualServer.address),
    ['10.96.0.20'],
  );
  assert.deepEqual(await s.dummyAddrs(), ['10.96.0.20']);
  assert.deepEqual(s.ipset.entries('KUBE-CLUSTER-IP'), ['10.96.0.20,tcp:5432']);
});

test('no ip_vs in the kernel: the start is refused in one line, before anything is programmed', async () => {
  const { requireIpvs } = await import('../dataplane.js');
  await assert.rejects(
    requireIpvs(() => Promise.resolve({ ok: false, reason: 'no /proc/net/ip_vs' })),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'UNSUPPORTED' &&
      e.message === 'ipvs mode needs the ip_vs kernel module: no /proc/net/ip_vs',
  );
  await requireIpvs(() => Promise.resolve({ ok: true }));
});
