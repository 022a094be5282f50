import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from './exec.js';
import { FakeIp, IpError, parseIpAddrJson, parseIpRouteJson, RealIp } from './ip.js';
import { addrAdd, linkUp, neighReplace, routeAdd, vethPair, vxlan } from '../util/ip-ops.js';

test('RealIp: batches through nsenter for a netns path, names the failing line, tolerates missing links', async () => {
  const fake = new FakeExecer().expect(
    {
      cmd: 'nsenter',
      args: ['--net=/run/netns/p', 'ip', '-batch', '-'],
      check: (r) => {
        assert.equal(r.stdin, 'link set lo up\naddr add 10.0.0.2/24 dev eth0\n');
      },
    },
    {
      cmd: 'ip',
      args: ['-batch', '-'],
      result: { code: 1, stderr: 'Error: Nexthop has invalid gateway.\nCommand failed -:2\n' },
    },
    {
      cmd: 'ip',
      args: ['link', 'del', 'veth1'],
      result: { code: 1, stderr: 'Cannot find device "veth1"\n' },
    },
    {
      cmd: 'ip',
      args: ['link', 'add', 'br0', 'type', 'bridge'],
      result: { code: 2, stderr: 'RTNETLINK answers: File exists\n' },
    },
  );
  const ip = new RealIp(fake);
  await ip.batch('/run/netns/p', [linkUp('lo'), addrAdd('10.0.0.2/24', 'eth0')]);
  await assert.rejects(
    ip.batch(undefined, [linkUp('x'), routeAdd('default', { via: '1.2.3.4' })]),
    (e: unknown) => {
      assert.ok(e instanceof IpError);
      assert.equal(
        e.message,
        'ip in host namespace: "route add default via 1.2.3.4": Error: Nexthop has invalid gateway.',
      );
      return true;
    },
  );
  assert.equal(await ip.deleteLink(undefined, 'veth1'), false);
  await ip.ensureBridge(undefined, 'br0');
  fake.verify();
});

test('ip -j output parses into links and routes', () => {
  const links = parseIpAddrJson(
    '[{"ifindex":2,"ifname":"veth1","flags":["BROADCAST","UP"],"mtu":1500,"address":"ce:83:cc:ee:cf:8e","master":"cni0","linkinfo":{"info_kind":"veth"},"addr_info":[{"family":"inet","local":"10.1.0.1","prefixlen":32},{"family":"inet6","local":"fe80::1","prefixlen":64}]}]',
  );
  assert.deepEqual(links, [
    {
      name: 'veth1',
      ifindex: 2,
      mac: 'ce:83:cc:ee:cf:8e',
      mtu: 1500,
      up: true,
      kind: 'veth',
      master: 'cni0',
      addrs: [
        { family: 'IPv4', local: '10.1.0.1', prefixlen: 32 },
        { family: 'IPv6', local: 'fe80::1', prefixlen: 64 },
      ],
    },
  ]);
  const routes = parseIpRouteJson(
    '[{"dst":"default","gateway":"10.1.0.1","dev":"eth0","flags":[]},{"dst":"10.1.0.1","dev":"eth0","scope":"link"}]',
    'IPv4',
  );
  assert.deepEqual(routes, [
    { dst: '0.0.0.0/0', gateway: '10.1.0.1', dev: 'eth0', scope: 'global' },
    { dst: '10.1.0.1/32', gateway: undefined, dev: 'eth0', scope: 'link' },
  ]);
});

test('FakeIp models the kernel rules the plugin depends on', async () => {
  const ip = new FakeIp();
  ip.addNetnsAt('/p');
  await ip.batch(undefined, [vethPair({ host: 'v1', peer: 'eth0', netns: '/p' })]);
  await assert.rejects(
    ip.batch(undefined, [routeAdd('10.0.0.2/32', { dev: 'v1' })]),
    /Nexthop device is not up/,
  );
  await assert.rejects(
    ip.batch('/p', [linkUp('eth0'), routeAdd('default', { via: '10.0.0.1' })]),
    /Nexthop has invalid gateway/,
  );
  await ip.batch('/p', [addrAdd('10.0.0.2/24', 'eth0'), routeAdd('default', { via: '10.0.0.1' })]);
  assert.equal(
    ip.dump('/p'),
    'link eth0 veth up 10.0.0.2/24\nlink lo\nroute 0.0.0.0/0 via 10.0.0.1 dev eth0\nroute 10.0.0.0/24 dev eth0 scope link',
  );
  await assert.rejects(
    ip.batch(undefined, [vethPair({ host: 'v2', peer: 'eth0', netns: '/p' })]),
    /File exists/,
  );
  ip.removeNetns('/p');
  assert.equal(ip.dump(undefined), 'link lo', 'the peer vanished with the namespace');
  assert.equal(await ip.netnsExists('/p'), false);
  await assert.rejects(ip.links('/p'), /No such file/);
});

test('namespaces by name: RealIp runs ip netns add/del, FakeIp keeps them at /run/netns/NAME', async () => {
  const fake = new FakeExecer().expect(
    { cmd: 'ip', args: ['netns', 'add', 'hub'] },
    { cmd: 'ip', args: ['netns', 'del', 'hub'] },
    {
      cmd: 'ip',
      args: ['netns', 'del', 'hub'],
      result: {
        code: 1,
        stderr: 'Cannot remove namespace file "/run/netns/hub": No such file or directory\n',
      },
    },
  );
  const real = new RealIp(fake);
  await real.addNetns('hub');
  assert.equal(await real.deleteNetns('hub'), true);
  assert.equal(await real.deleteNetns('hub'), false);
  fake.verify();

  const ip = new FakeIp();
  await ip.addNetns('hub');
  await assert.rejects(ip.addNetns('hub'), /File exists/);
  await ip.addNetns('node-0');
  await ip.batch('/run/netns/hub', [vethPair({ host: 'n0', peer: 'eth0', netns: 'node-0' })]);
  assert.equal(ip.dump('/run/netns/node-0'), 'link eth0 veth\nlink lo');
  await assert.rejects(
    ip.batch('/run/netns/hub', [vethPair({ host: 'n1', peer: 'eth0', netns: 'node-9' })]),
    /Invalid "netns" value "node-9"/,
  );
  assert.equal(await ip.deleteNetns('node-0'), true);
  assert.equal(await ip.deleteNetns('node-0'), false);
  assert.equal(ip.dump('/run/netns/hub'), 'link lo', 'the hub end went with the namespace');
});

test('RealIp: neighbours and FDB entries read as JSON, FDB ops through one `bridge -batch -`', async () => {
  const fake = new FakeExecer().expect(
    {
      cmd: 'ip',
      args: ['-j', 'neigh', 'show', 'dev', 'flannel.1'],
      result: {
        stdout:
          '[{"dst":"10.244.3.0","lladdr":"0e:00:00:00:00:03","state":["PERMANENT"]},{"dst":"10.244.9.0","state":["FAILED"]}]',
      },
    },
    {
      cmd: 'nsenter',
      args: ['--net=/run/netns/n1', 'bridge', '-j', 'fdb', 'show', 'dev', 'flannel.1'],
      result: {
        stdout:
          '[{"mac":"0e:00:00:00:00:03","dst":"192.168.3.2","flags":["self"],"state":"permanent"},{"mac":"33:33:00:00:00:01","flags":["self"],"state":"permanent"}]',
      },
    },
    {
      cmd: 'bridge',
      args: ['-batch', '-'],
      check: (r) => {
        assert.equal(
          r.stdin,
          'fdb replace 0e:00:00:00:00:03 dev flannel.1 dst 192.168.3.2 self permanent\n' +
            'fdb del 0e:00:00:00:00:04 dev flannel.1 dst 192.168.4.2 self\n',
        );
      },
    },
  );
  const ip = new RealIp(fake);
  assert.deepEqual(await ip.neighbours(undefined, 'flannel.1'), [
    { dst: '10.244.3.0', lladdr: '0e:00:00:00:00:03', permanent: true },
    { dst: '10.244.9.0', lladdr: undefined, permanent: false },
  ]);
  assert.deepEqual(await ip.fdb('/run/netns/n1', 'flannel.1'), [
    { mac: '0e:00:00:00:00:03', dst: '192.168.3.2' },
  ]);
  await ip.fdbBatch(undefined, [
    { op: 'fdbReplace', mac: '0e:00:00:00:00:03', dev: 'flannel.1', dst: '192.168.3.2' },
    { op: 'fdbDel', mac: '0e:00:00:00:00:04', dev: 'flannel.1', dst: '192.168.4.2' },
  ]);
  fake.verify();
});

test('FakeIp: FDB entries only on a vxlan device, neighbours and FDB go with their link', async () => {
  const ip = new FakeIp();
  await ip.batch(undefined, [
    vxlan('vx0', { id: 7, dstport: 4789, learning: false }),
    neighReplace('10.1.0.0', '0e:00:00:00:00:01', 'vx0'),
  ]);
  await ip.fdbBatch(undefined, [
    { op: 'fdbReplace', mac: '0e:00:00:00:00:01', dev: 'vx0', dst: '192.0.2.1' },
  ]);
  assert.deepEqual((await ip.links(undefined)).find((l) => l.name === 'vx0')?.vxlan, {
    id: 7,
    port: 4789,
    local: undefined,
    learning: false,
  });
  await assert.rejects(
    ip.fdbBatch(undefined, [
      { op: 'fdbReplace', mac: '0e:00:00:00:00:01', dev: 'lo', dst: '1.1.1.1' },
    ]),
    IpError,
  );
  assert.equal(
    ip.dump(undefined),
    'link lo\nlink vx0 vxlan\nfdb 0e:00:00:00:00:01 dst 192.0.2.1 dev vx0\nneigh 10.1.0.0 lladdr 0e:00:00:00:00:01 dev vx0',
  );
  await ip.deleteLink(undefined, 'vx0');
  assert.equal(ip.dump(undefined), 'link lo');
});
