// Unit tests of ipvs mode's cleanup (FakeExecer for ipvsadm and ipset, FakeIp for
// kube-ipvs0): only the virtual servers bound on kube-ipvs0 go, then the dummy and the KUBE-*
// sets; without ip_vs, ipvsadm is never run; cleanupLeftovers runs it for the other modes only.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { FakeExecer } from '../../os/exec.js';
import { FakeIp } from '../../os/ip.js';
import { addrAdd, dummy } from '../../util/ip-ops.js';
import { cleanupLeftovers, formatCleanup } from '../cleanup.js';
import type { CleanupSeams } from '../cleanup.js';
import { RealIpvsCleaner } from './kernel-cleanup.js';
import type { IpvsCleaner } from './kernel-cleanup.js';

const SAVE = [
  '-A -t 10.96.0.10:80 -s rr',
  '-a -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1',
  '-A -t 192.0.2.99:80 -s rr',
  '',
].join('\n');

async function ipWithDummy(): Promise<FakeIp> {
  const ip = new FakeIp();
  await ip.batch(undefined, [dummy('kube-ipvs0'), addrAdd('10.96.0.10/32', 'kube-ipvs0')]);
  return ip;
}

test('removes the virtual servers on kube-ipvs0, the dummy and the KUBE-* sets', async () => {
  const ip = await ipWithDummy();
  const ex = new FakeExecer().expect(
    { cmd: 'ipvsadm', args: ['-S', '-n'], result: { stdout: SAVE } },
    {
      cmd: 'ipvsadm',
      args: ['-R'],
      check: (req) => {
        assert.equal(req.stdin, '-D -t 10.96.0.10:80\n');
      },
    },
    { cmd: 'ipset', args: ['list', '-n'], result: { stdout: 'KUBE-CLUSTER-IP\nother\n' } },
    {
      cmd: 'ipset',
      args: ['restore'],
      check: (req) => {
        assert.equal(req.stdin, 'destroy KUBE-CLUSTER-IP\n');
      },
    },
  );
  const r = await new RealIpvsCleaner(ex, ip, () => Promise.resolve({ ok: true })).removeIpvs();
  ex.verify();
  assert.deepEqual(r, { virtualServers: 1, ipsets: 1, device: true });
  assert.equal(
    (await ip.links(undefined)).find((l) => l.name === 'kube-ipvs0'),
    undefined,
  );
});

test('without ip_vs, ipvsadm is not run; the dummy and the sets still go', async () => {
  const ip = await ipWithDummy();
  const ex = new FakeExecer().expect({
    cmd: 'ipset',
    args: ['list', '-n'],
    result: { stdout: '' },
  });
  const r = await new RealIpvsCleaner(ex, ip, () =>
    Promise.resolve({ ok: false, reason: 'none' }),
  ).removeIpvs();
  ex.verify();
  assert.deepEqual(r, { virtualServers: 0, ipsets: 0, device: true });
});

test('cleanupLeftovers: ipvs state goes in the other modes and under --cleanup, never in ipvs mode', async () => {
  let calls = 0;
  const cleaner: IpvsCleaner = {
    removeIpvs: () => {
      calls++;
      return Promise.resolve({ virtualServers: 2, ipsets: 3, device: true });
    },
  };
  const seams: CleanupSeams = {
    iptables: () => Promise.resolve([]),
    nftables: () => Promise.resolve([]),
    ipvs: () => Promise.resolve(cleaner),
  };
  const log = pino({ level: 'silent' });
  assert.deepEqual(await cleanupLeftovers('ipvs', seams, log), []);
  assert.equal(calls, 0);
  const out = await cleanupLeftovers('all', seams, log);
  assert.equal(calls, 1);
  assert.equal(
    formatCleanup(out),
    'ipvs: removed 2 virtual servers, 3 ipsets, the kube-ipvs0 device',
  );
  await cleanupLeftovers('nftables', seams, log);
  assert.equal(calls, 2);
});
