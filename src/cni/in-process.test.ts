import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { FakeSysctl } from '../os/sysctl.js';
import { MemoryTextFiles } from '../os/text-files.js';
import { inProcessSvcnetCni, realPluginDeps } from './in-process.js';
import { MemoryIpamStore } from './ipam-store.js';
import { MemoryResultCache } from './runtime/cache.js';
import { parseConflist } from './runtime/parse-conflist.js';
import { CniRuntime } from './runtime/runtime.js';
import { RealIp } from '../os/ip.js';

const POD = '/run/netns/pod1';

test('the lab path: CniRuntime runs svcnet-cni in-process (no exec) and gets the ADD result the binary prints', async () => {
  const ip = new FakeIp();
  ip.addNetnsAt(POD);
  const store = new MemoryIpamStore();
  const execer = new FakeExecer(); // expects nothing: any exec fails the test
  const plugin = inProcessSvcnetCni({
    ip,
    sysctl: new FakeSysctl({ 'net.ipv4.ip_forward': '0' }),
    files: new MemoryTextFiles(),
    store,
    execer,
    findPlugin: (t) => Promise.reject(new Error(`no binary lookup expected, got ${t}`)),
  });
  const rt = new CniRuntime({
    execer,
    cniPath: ['/opt/cni/bin'],
    cache: new MemoryResultCache(),
    findPlugin: (t) => Promise.reject(new Error(`no binary lookup expected, got ${t}`)),
    inProcess: new Map([['svcnet-cni', plugin]]),
  });
  const ipam = {
    type: 'host-local',
    dataDir: '/var/lib/cni/networks',
    ranges: [[{ subnet: '10.244.1.0/24' }]],
    routes: [{ dst: '0.0.0.0/0' }],
  };
  const conflist = parseConflist(
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'kindnet',
      plugins: [{ type: 'svcnet-cni', mode: 'ptp', mtu: 1500, ipam }],
    }),
  );
  const att = { containerId: 'c1', netns: POD, ifName: 'eth0', conflist };
  const result = await rt.add(att);
  assert.equal(result.cniVersion, '1.0.0');
  assert.deepEqual(
    result.ips?.map((i) => i.address),
    ['10.244.1.2/24'],
  );
  assert.equal(result.interfaces?.find((i) => i.sandbox === POD)?.name, 'eth0');
  assert.deepEqual(store.dump('/var/lib/cni/networks', 'kindnet'), ['10.244.1.2 c1 eth0']);
  assert.ok((await ip.links(POD)).some((l) => l.name === 'eth0'));
  await rt.del(att);
  assert.deepEqual(store.dump('/var/lib/cni/networks', 'kindnet'), []);
  assert.ok(!(await ip.links(POD)).some((l) => l.name === 'eth0'));
  execer.verify();
});

test('realPluginDeps: the real edges over the given Execer', () => {
  const deps = realPluginDeps(new FakeExecer());
  assert.ok(deps.ip instanceof RealIp);
});
