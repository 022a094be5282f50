import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { FakeSysctl } from '../os/sysctl.js';
import { MemoryTextFiles } from '../os/text-files.js';
import { bridge, routeDel } from '../util/ip-ops.js';
import { MemoryIpamStore } from './ipam-store.js';
import { runPlugin, type PluginDeps } from './plugin.js';
import { attachNames } from './plan-link.js';
import { kindnetConfig } from './test-configs.js';
import type { CniResult } from './types.js';

const POD = '/run/netns/pod1';

function errOf(stdout: string): { code: number; msg: string } {
  return JSON.parse(stdout) as { code: number; msg: string };
}

function world(execer = new FakeExecer()): {
  deps: PluginDeps;
  ip: FakeIp;
  sysctl: FakeSysctl;
  store: MemoryIpamStore;
  execer: FakeExecer;
} {
  const ip = new FakeIp();
  ip.addNetnsAt(POD);
  const sysctl = new FakeSysctl({
    'net.ipv4.ip_forward': '0',
    'net.ipv6.conf.all.forwarding': '0',
  });
  const store = new MemoryIpamStore();
  return {
    deps: {
      ip,
      sysctl,
      store,
      execer,
      files: new MemoryTextFiles(),
      findPlugin: (t) => Promise.resolve(`/opt/cni/bin/${t}`),
    },
    ip,
    sysctl,
    store,
    execer,
  };
}

function env(command: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'c1',
    CNI_NETNS: POD,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...extra,
  };
}

const ptp = kindnetConfig('1.0.0', '/ipam');

test('ptp ADD: result JSON, kernel state on both sides, forwarding; CHECK; DEL twice', async () => {
  const w = world();
  const out = await runPlugin(env('ADD'), JSON.stringify(ptp), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  const names = attachNames('kindnet', 'c1', 'eth0');
  const result = JSON.parse(out.stdout) as CniResult;
  assert.deepEqual(result, {
    cniVersion: '1.0.0',
    interfaces: [
      { name: names.hostVeth, mac: names.hostMac },
      { name: 'eth0', mac: names.podMac, sandbox: POD },
    ],
    ips: [{ interface: 1, address: '10.244.1.2/24', gateway: '10.244.1.1' }],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: {},
  });
  assert.equal(
    w.ip.dump(undefined),
    [
      'link lo',
      `link ${names.hostVeth} veth up 10.244.1.1/32`,
      `route 10.244.1.2/32 dev ${names.hostVeth} scope link`,
    ].join('\n'),
  );
  assert.equal(
    w.ip.dump(POD),
    [
      'link eth0 veth up 10.244.1.2/24',
      'link lo up',
      'route 0.0.0.0/0 via 10.244.1.1 dev eth0',
      'route 10.244.1.0/24 via 10.244.1.1 dev eth0',
      'route 10.244.1.1/32 dev eth0 scope link',
    ].join('\n'),
  );
  assert.equal(w.sysctl.values.get('net.ipv4.ip_forward'), '1');
  assert.deepEqual(w.store.dump('/ipam', 'kindnet'), ['10.244.1.2 c1 eth0']);

  const withPrev = JSON.stringify({ ...ptp, prevResult: result });
  assert.deepEqual(await runPlugin(env('CHECK'), withPrev, w.deps), { stdout: '', exitCode: 0 });
  await w.ip.batch(undefined, [routeDel('10.244.1.2/32', { dev: names.hostVeth })]);
  const bad = await runPlugin(env('CHECK'), withPrev, w.deps);
  assert.equal(bad.exitCode, 1);
  assert.deepEqual(JSON.parse(bad.stdout), {
    cniVersion: '1.0.0',
    code: 999,
    msg: `CHECK failed: route 10.244.1.2/32 dev ${names.hostVeth} is missing in the host namespace`,
  });

  const second = await runPlugin(env('ADD'), JSON.stringify(ptp), w.deps);
  assert.match(errOf(second.stdout).msg, /duplicate allocation/);
  assert.deepEqual(
    w.store.dump('/ipam', 'kindnet'),
    ['10.244.1.2 c1 eth0'],
    'a refused second ADD keeps the first reservation',
  );

  assert.deepEqual(await runPlugin(env('DEL'), withPrev, w.deps), { stdout: '', exitCode: 0 });
  assert.equal(w.ip.dump(undefined), 'link lo');
  assert.equal(w.ip.dump(POD), 'link lo up');
  assert.deepEqual(w.store.dump('/ipam', 'kindnet'), []);
  assert.deepEqual(await runPlugin(env('DEL'), withPrev, w.deps), { stdout: '', exitCode: 0 });
  assert.deepEqual(await runPlugin(env('DEL', { CNI_NETNS: '' }), JSON.stringify(ptp), w.deps), {
    stdout: '',
    exitCode: 0,
  });
  assert.deepEqual(
    await runPlugin(env('DEL', { CNI_NETNS: '/run/netns/gone' }), JSON.stringify(ptp), w.deps),
    { stdout: '', exitCode: 0 },
  );
});

test('bridge ADD: gateway on the bridge, port with hairpin, masquerade through nft; 0.3.1 results carry ip versions', async () => {
  const execer = new FakeExecer().expect(
    {
      cmd: 'nft',
      args: ['-f', '-'],
      check: (req) => {
        assert.match(
          String(req.stdin),
          /add element ip svcnet_cni pod_masq \{ 10\.244\.2\.2 : jump masq_[0-9a-f]{12} \}/,
        );
        assert.match(String(req.stdin), /ip daddr 10\.244\.2\.0\/24 return/);
      },
    },
    {
      cmd: 'nft',
      args: ['-f', '-'],
      check: (req) => {
        assert.equal(req.stdin, 'delete element ip svcnet_cni pod_masq { 10.244.2.2 }\n');
      },
    },
  );
  const w = world(execer);
  const cfg = {
    ...ptp,
    cniVersion: '0.3.1',
    name: 'br',
    mode: 'bridge',
    bridge: 'cni0',
    isGateway: true,
    ipMasq: true,
    hairpinMode: true,
    ipam: { ...ptp.ipam, ranges: [[{ subnet: '10.244.2.0/24' }]] },
  };
  const out = await runPlugin(env('ADD'), JSON.stringify(cfg), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  const r = JSON.parse(out.stdout) as CniResult;
  const names = attachNames('br', 'c1', 'eth0');
  assert.deepEqual(
    r.interfaces?.map((i) => i.name),
    ['cni0', names.hostVeth, 'eth0'],
  );
  assert.match(r.interfaces[0]?.mac ?? '', /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
  assert.deepEqual(r.ips, [
    { version: '4', interface: 2, address: '10.244.2.2/24', gateway: '10.244.2.1' },
  ]);
  assert.match(
    w.ip.dump(undefined),
    new RegExp(
      `link cni0 bridge up 10\\.244\\.2\\.1/24\\nlink lo\\nlink ${names.hostVeth} veth up master cni0`,
    ),
  );
  assert.ok(w.ip.hairpin(undefined, names.hostVeth));
  assert.match(w.ip.dump(POD), /route 0\.0\.0\.0\/0 via 10\.244\.2\.1 dev eth0/);
  assert.match(w.ip.dump(POD), /route 10\.244\.2\.0\/24 dev eth0 scope link/);
  assert.equal((await runPlugin(env('DEL'), JSON.stringify(cfg), w.deps)).exitCode, 0);
  assert.match(
    w.ip.dump(undefined),
    /link cni0 bridge up/,
    'the bridge stays, as with the reference plugin',
  );
  execer.verify();
});

test('a failing step after IPAM undoes the veth and the reservation', async () => {
  const w = world();
  await w.ip.batch(POD, [bridge('eth0')]);
  const out = await runPlugin(env('ADD'), JSON.stringify(ptp), w.deps);
  assert.equal(out.exitCode, 1);
  assert.match(errOf(out.stdout).msg, /container interface eth0 already exists/);
  assert.deepEqual(w.store.dump('/ipam', 'kindnet'), []);
  assert.equal(w.ip.dump(undefined), 'link lo');
});

test('VERSION, STATUS, GC and delegated IPAM', async () => {
  const w = world(
    new FakeExecer().expect({
      cmd: '/opt/cni/bin/static',
      args: [],
      check: (req) => {
        assert.equal(req.env?.CNI_COMMAND, 'ADD');
      },
      result: {
        stdout: JSON.stringify({
          cniVersion: '1.0.0',
          ips: [{ address: '192.168.5.7/24', gateway: '192.168.5.1' }],
        }),
      },
    }),
  );
  const v = await runPlugin({ CNI_COMMAND: 'VERSION' }, '', w.deps);
  assert.deepEqual(JSON.parse(v.stdout), {
    cniVersion: '1.1.0',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
  const tiny = {
    ...ptp,
    cniVersion: '1.1.0',
    ipam: { ...ptp.ipam, ranges: [[{ subnet: '10.9.0.0/30' }]] },
  };
  assert.equal(
    (await runPlugin({ CNI_COMMAND: 'STATUS' }, JSON.stringify(tiny), w.deps)).exitCode,
    0,
  );
  assert.equal((await runPlugin(env('ADD'), JSON.stringify(tiny), w.deps)).exitCode, 0);
  const st = await runPlugin({ CNI_COMMAND: 'STATUS' }, JSON.stringify(tiny), w.deps);
  assert.equal(errOf(st.stdout).code, 50);
  const gc = await runPlugin(
    { CNI_COMMAND: 'GC' },
    JSON.stringify({ ...tiny, 'cni.dev/valid-attachments': [] }),
    w.deps,
  );
  assert.equal(gc.exitCode, 0);
  assert.deepEqual(
    w.store.dump('/ipam', 'kindnet'),
    [],
    'GC released the attachment not in the list',
  );

  const delegated = await runPlugin(
    env('ADD', { CNI_CONTAINERID: 'c2', CNI_IFNAME: 'net1' }),
    JSON.stringify({ ...ptp, name: 'd', ipam: { type: 'static' } }),
    w.deps,
  );
  assert.equal(delegated.exitCode, 0, delegated.stdout);
  assert.equal((JSON.parse(delegated.stdout) as CniResult).ips?.[0]?.address, '192.168.5.7/24');
  w.execer.verify();
});

test('dual-stack ptp ADD: one address per range set, IPv6 without DAD, forwarding for both families', async () => {
  const w = world();
  const cfg = {
    ...ptp,
    ipam: {
      ...ptp.ipam,
      ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00:10:244:1::/64' }]],
      routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
    },
  };
  const out = await runPlugin(env('ADD'), JSON.stringify(cfg), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  const r = JSON.parse(out.stdout) as CniResult;
  assert.deepEqual(
    r.ips?.map((i) => `${i.address} gw ${i.gateway ?? ''}`),
    ['10.244.1.2/24 gw 10.244.1.1', 'fd00:10:244:1::2/64 gw fd00:10:244:1::1'],
  );
  assert.ok(
    w.ip.history.includes(
      '/run/netns/pod1: addr add fd00:10:244:1::2/64 dev eth0 noprefixroute nodad',
    ),
  );
  assert.match(w.ip.dump(POD), /route ::\/0 via fd00:10:244:1::1 dev eth0/);
  assert.match(w.ip.dump(undefined), /route fd00:10:244:1::2\/128 dev veth[0-9a-f]{8} scope link/);
  assert.equal(w.sysctl.values.get('net.ipv6.conf.all.forwarding'), '1');
});

test('error results carry a cniVersion the runtime can read, for codes 4 and 6 too', async () => {
  const w = world();
  const cases: [string, string, number, string][] = [
    ['bad JSON', '{"cniVersion": "1.0.0",', 6, '1.1.0'],
    ['not JSON at all', 'hello', 6, '1.1.0'],
    ['an unsupported version', JSON.stringify({ ...ptp, cniVersion: '9.9.9' }), 1, '1.1.0'],
    ['no CNI_CONTAINERID', JSON.stringify({ ...ptp, cniVersion: '0.4.0' }), 4, '0.4.0'],
    ['no CNI_CONTAINERID, bad JSON', '{', 4, '1.1.0'],
  ];
  for (const [what, stdin, code, version] of cases) {
    const e = env('ADD', what.startsWith('no CNI_CONTAINERID') ? { CNI_CONTAINERID: '' } : {});
    const out = await runPlugin(e, stdin, w.deps);
    assert.equal(out.exitCode, 1, what);
    const err = JSON.parse(out.stdout) as { cniVersion?: string; code: number };
    assert.equal(err.code, code, what);
    assert.equal(err.cniVersion, version, what);
  }
});

test('CHECK fails when prevResult is an error result', async () => {
  const w = world();
  const prevResult = { cniVersion: '1.0.0', code: 7, msg: 'no IP addresses available' };
  const out = await runPlugin(env('CHECK'), JSON.stringify({ ...ptp, prevResult }), w.deps);
  assert.equal(out.exitCode, 1);
  const err = errOf(out.stdout);
  assert.equal(err.code, 7);
  assert.match(err.msg, /prevResult is an error result \(code 7: no IP addresses available\)/);
});
