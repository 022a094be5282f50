import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { FakeSysctl } from '../os/sysctl.js';
import { MemoryTextFiles } from '../os/text-files.js';
import { addrAdd } from '../util/ip-ops.js';
import { MemoryIpamStore } from './ipam-store.js';
import { attachNames } from './plan-link.js';
import { runPlugin, type PluginDeps } from './plugin.js';
import type { CniResult } from './types.js';

const POD1 = '/run/netns/pod1';
const POD2 = '/run/netns/pod2';
const SUBNET_ENV =
  'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n';

function world(files = new MemoryTextFiles(), execer = new FakeExecer()) {
  const ip = new FakeIp();
  ip.addNetnsAt(POD1);
  ip.addNetnsAt(POD2);
  const store = new MemoryIpamStore();
  const deps: PluginDeps = {
    ip,
    sysctl: new FakeSysctl({ 'net.ipv4.ip_forward': '0' }),
    store,
    execer,
    files,
    findPlugin: (t) => Promise.resolve(`/opt/cni/bin/${t}`),
  };
  return { deps, ip, store, files, execer };
}

function env(command: string, id = 'c1', netns = POD1): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
  };
}

const bridgeConf = {
  cniVersion: '1.0.0',
  name: 'br',
  type: 'bridge',
  isDefaultGateway: true,
  mtu: 1400,
  promiscMode: true,
  ipam: { type: 'host-local', ranges: [[{ subnet: '10.22.0.0/24' }]], dataDir: '/ipam' },
};

/** kubenet's network: cbr0 holding the podCIDR's gateway, host-local over the podCIDR. */
const kubenetConf = {
  cniVersion: '1.0.0',
  name: 'kubenet',
  type: 'bridge',
  bridge: 'cbr0',
  mtu: 1460,
  isGateway: true,
  ipMasq: false,
  hairpinMode: true,
  ipam: {
    type: 'host-local',
    subnet: '10.244.2.0/24',
    routes: [{ dst: '0.0.0.0/0' }],
    dataDir: '/ipam',
  },
};

function parsed(stdout: string): CniResult {
  return JSON.parse(stdout) as CniResult;
}

test('type bridge: two containers on one bridge, MTU, promisc, default route; DEL twice frees', async () => {
  const w = world();
  const r1 = await runPlugin(env('ADD'), JSON.stringify(bridgeConf), w.deps);
  const r2 = await runPlugin(env('ADD', 'c2', POD2), JSON.stringify(bridgeConf), w.deps);
  assert.equal(r1.exitCode, 0, r1.stdout);
  assert.equal(r2.exitCode, 0, r2.stdout);
  const a = parsed(r1.stdout);
  const n1 = attachNames('br', 'c1', 'eth0');
  assert.deepEqual(
    a.interfaces?.map((i) => [i.name, i.mtu, i.sandbox]),
    [
      ['cni0', undefined, undefined],
      [n1.hostVeth, 1400, undefined],
      ['eth0', 1400, POD1],
    ],
  );
  assert.deepEqual(a.ips, [{ interface: 2, address: '10.22.0.2/24', gateway: '10.22.0.1' }]);
  assert.deepEqual(a.routes, [{ dst: '0.0.0.0/0', gw: '10.22.0.1' }]);
  assert.equal(parsed(r2.stdout).ips?.[0]?.address, '10.22.0.3/24');
  const host = await w.ip.links(undefined);
  const br = host.find((l) => l.name === 'cni0');
  assert.equal(br?.mtu, 1400, 'the bridge is created with the MTU');
  assert.deepEqual(
    br.addrs.map((x) => `${x.local}/${x.prefixlen}`),
    ['10.22.0.1/24'],
    'isDefaultGateway implies isGateway',
  );
  assert.ok(w.ip.promisc(undefined, 'cni0'));
  const ports = host.filter((l) => l.master === 'cni0').map((l) => l.name);
  assert.equal(ports.length, 2);
  assert.match(w.ip.dump(POD2), /route 0\.0\.0\.0\/0 via 10\.22\.0\.1 dev eth0/);

  const check = { ...bridgeConf, prevResult: a };
  assert.equal((await runPlugin(env('CHECK'), JSON.stringify(check), w.deps)).exitCode, 0);
  for (let i = 0; i < 2; i++)
    assert.deepEqual(await runPlugin(env('DEL'), JSON.stringify(bridgeConf), w.deps), {
      stdout: '',
      exitCode: 0,
    });
  assert.deepEqual(w.store.dump('/ipam', 'br'), ['10.22.0.3 c2 eth0']);
  assert.doesNotMatch(w.ip.dump(undefined), new RegExp(n1.hostVeth));
  // DEL of a container whose netns is gone is fine too.
  await w.ip.deleteNetns('pod2');
  assert.equal(
    (await runPlugin(env('DEL', 'c2', POD2), JSON.stringify(bridgeConf), w.deps)).exitCode,
    0,
  );
  assert.deepEqual(w.store.dump('/ipam', 'br'), []);
});

test('type bridge: another address on the bridge fails naming forceAddress; forceAddress replaces it', async () => {
  const w = world();
  await w.ip.ensureBridge(undefined, 'cni0');
  await w.ip.batch(undefined, [addrAdd('10.9.9.1/24', 'cni0')]);
  const conf = { ...bridgeConf, isDefaultGateway: false, isGateway: true };
  const out = await runPlugin(env('ADD'), JSON.stringify(conf), w.deps);
  assert.equal(out.exitCode, 1);
  const err = JSON.parse(out.stdout) as { code: number; msg: string };
  assert.equal(err.code, 999);
  assert.match(err.msg, /bridge cni0 already has address 10\.9\.9\.1\/24.*"forceAddress": true/);
  assert.deepEqual(w.store.dump('/ipam', 'br'), [], 'the reservation is released');
  const forced = { ...conf, forceAddress: true };
  assert.equal((await runPlugin(env('ADD'), JSON.stringify(forced), w.deps)).exitCode, 0);
  const br = (await w.ip.links(undefined)).find((l) => l.name === 'cni0');
  assert.deepEqual(
    br?.addrs.map((x) => x.local),
    ['10.22.0.1'],
  );
});

test('type bridge: bad input gets code 7 naming the field', async () => {
  const w = world();
  for (const [conf, re] of [
    [{ ...bridgeConf, mode: 'ptp' }, /mode: type "bridge" is always bridge mode/],
    [{ ...bridgeConf, promiscMode: 'yes' }, /promiscMode: must be a boolean/],
    [{ ...bridgeConf, forceAddress: 1 }, /forceAddress: must be a boolean/],
    [{ ...bridgeConf, bridge: 'a-very-long-bridge-name' }, /bridge: not a valid interface name/],
    [
      { ...bridgeConf, type: 'svcnet-cni', promiscMode: true },
      /promiscMode: only valid with "mode": "bridge"/,
    ],
  ] as const) {
    const out = await runPlugin(env('ADD'), JSON.stringify(conf), w.deps);
    assert.equal(out.exitCode, 1);
    const err = JSON.parse(out.stdout) as { code: number; msg: string };
    assert.equal(err.code, 7, err.msg);
    assert.match(err.msg, re);
  }
});

test('kubenet: cbr0 holds the podCIDR gateway, host-local over the podCIDR, hairpin ports', async () => {
  const w = world();
  const out = await runPlugin(env('ADD'), JSON.stringify(kubenetConf), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  const r = parsed(out.stdout);
  assert.equal(r.interfaces?.[0]?.name, 'cbr0');
  assert.deepEqual(r.ips, [{ interface: 2, address: '10.244.2.2/24', gateway: '10.244.2.1' }]);
  assert.match(w.ip.dump(undefined), /link cbr0 bridge up 10\.244\.2\.1\/24/);
  assert.ok(w.ip.hairpin(undefined, attachNames('kubenet', 'c1', 'eth0').hostVeth));
  assert.match(w.ip.dump(POD1), /route 0\.0\.0\.0\/0 via 10\.244\.2\.1 dev eth0/);
});

const flannelConf = {
  cniVersion: '1.0.0',
  name: 'cbr0',
  type: 'flannel',
  subnetFile: '/run/flannel/subnet.env',
  dataDir: '/state',
  ipam: { dataDir: '/ipam' },
  delegate: { hairpinMode: true },
};

test('flannel: ADD in FLANNEL_SUBNET with FLANNEL_MTU; DEL uses the stored delegate after subnet.env changed', async () => {
  const w = world(new MemoryTextFiles({ '/run/flannel/subnet.env': SUBNET_ENV }));
  const out = await runPlugin(env('ADD'), JSON.stringify(flannelConf), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  const r = parsed(out.stdout);
  assert.deepEqual(
    r.interfaces?.map((i) => [i.name, i.mtu]),
    [
      ['cni0', undefined],
      [attachNames('cbr0', 'c1', 'eth0').hostVeth, 1450],
      ['eth0', 1450],
    ],
  );
  assert.deepEqual(r.ips, [{ interface: 2, address: '10.244.3.2/24', gateway: '10.244.3.1' }]);
  assert.deepEqual(r.routes, [{ dst: '10.244.0.0/16' }]);
  assert.match(w.ip.dump(POD1), /route 10\.244\.0\.0\/16 via 10\.244\.3\.1 dev eth0/);
  const stored = JSON.parse(w.files.files.get('/state/c1') ?? '{}') as Record<string, unknown>;
  assert.equal(stored.ipMasq, false, 'FLANNEL_IPMASQ=true: flanneld masquerades, not the bridge');
  assert.equal(
    (await runPlugin(env('CHECK'), JSON.stringify({ ...flannelConf, prevResult: r }), w.deps))
      .exitCode,
    0,
  );
  // The node got another subnet; the old container's DEL still releases its old address.
  await w.files.write('/run/flannel/subnet.env', SUBNET_ENV.replace('10.244.3.1', '10.244.9.1'));
  assert.equal((await runPlugin(env('DEL'), JSON.stringify(flannelConf), w.deps)).exitCode, 0);
  assert.deepEqual(w.store.dump('/ipam', 'cbr0'), []);
  assert.equal(w.files.files.has('/state/c1'), false);
  await w.ip.deleteNetns('pod1');
  await w.files.remove('/run/flannel/subnet.env');
  assert.equal((await runPlugin(env('DEL'), JSON.stringify(flannelConf), w.deps)).exitCode, 0);
});

test('flannel: GC releases what is not valid and forgets those stored delegate configs', async () => {
  const w = world(new MemoryTextFiles({ '/run/flannel/subnet.env': SUBNET_ENV }));
  for (const [id, ns] of [
    ['c1', POD1],
    ['c2', POD2],
  ] as const)
    assert.equal(
      (await runPlugin(env('ADD', id, ns), JSON.stringify(flannelConf), w.deps)).exitCode,
      0,
    );
  assert.deepEqual(await w.files.list('/state'), ['c1', 'c2']);
  const gc = {
    ...flannelConf,
    cniVersion: '1.1.0',
    'cni.dev/valid-attachments': [{ containerID: 'c2', ifname: 'eth0' }],
  };
  const out = await runPlugin(
    { CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' },
    JSON.stringify(gc),
    w.deps,
  );
  assert.equal(out.exitCode, 0, out.stdout);
  assert.deepEqual(w.store.dump('/ipam', 'cbr0'), ['10.244.3.3 c2 eth0']);
  assert.deepEqual(await w.files.list('/state'), ['c2']);
});

test('flannel: missing or bad subnet.env and bad config are named; STATUS says not available', async () => {
  const w = world();
  const add = await runPlugin(env('ADD'), JSON.stringify(flannelConf), w.deps);
  assert.equal(add.exitCode, 1);
  assert.match(add.stdout, /subnetFile: \/run\/flannel\/subnet.env does not exist/);
  const status = JSON.parse(
    (await runPlugin({ CNI_COMMAND: 'STATUS' }, JSON.stringify(flannelConf), w.deps)).stdout,
  ) as { code: number };
  assert.equal(status.code, 50);
  await w.files.write('/run/flannel/subnet.env', 'FLANNEL_NETWORK=10.244.0.0/16\n');
  assert.match(
    (await runPlugin(env('ADD'), JSON.stringify(flannelConf), w.deps)).stdout,
    /FLANNEL_SUBNET: missing/,
  );
  const bad = { ...flannelConf, subnetFile: 'relative', delegate: [] };
  const err = JSON.parse((await runPlugin(env('ADD'), JSON.stringify(bad), w.deps)).stdout) as {
    code: number;
    msg: string;
  };
  assert.equal(err.code, 7);
  assert.match(err.msg, /subnetFile: must be an absolute path.*delegate: must be an object/);
  assert.equal(w.files.files.size, 1, 'nothing stored for a failed ADD');
});

test('flannel: a delegate type that is not ours runs that binary from CNI_PATH', async () => {
  const execer = new FakeExecer().expect({
    cmd: '/opt/cni/bin/macvlan',
    check: (req) => {
      const conf = JSON.parse(String(req.stdin)) as { type: string; mtu: number };
      assert.equal(conf.type, 'macvlan');
      assert.equal(conf.mtu, 1450);
      assert.equal(req.env?.CNI_COMMAND, 'ADD');
    },
    result: { code: 0, stdout: '{"cniVersion":"1.0.0","ips":[{"address":"10.244.3.5/24"}]}' },
  });
  const w = world(new MemoryTextFiles({ '/run/flannel/subnet.env': SUBNET_ENV }), execer);
  const conf = { ...flannelConf, delegate: { type: 'macvlan' } };
  const out = await runPlugin(env('ADD'), JSON.stringify(conf), w.deps);
  assert.equal(out.exitCode, 0, out.stdout);
  assert.equal(parsed(out.stdout).ips?.[0]?.address, '10.244.3.5/24');
  execer.verify();
});
