import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from './exec.js';
import { FakeIp, IpError, parseIpAddrJson, parseIpRouteJson, RealIp } from './ip.js';

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
  await ip.batch('/run/netns/p', [
    ['link', 'set', 'lo', 'up'],
    ['addr', 'add', '10.0.0.2/24', 'dev', 'eth0'],
  ]);
  await assert.rejects(
    ip.batch(undefined, [
      ['link', 'set', 'x', 'up'],
      ['route', 'add', 'default', 'via', '1.2.3.4'],
    ]),
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
  ip.addNetns('/p');
  await ip.batch(undefined, [
    ['link', 'add', 'v1', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', '/p'],
  ]);
  await assert.rejects(
    ip.batch(undefined, [['route', 'add', '10.0.0.2/32', 'dev', 'v1']]),
    /Nexthop device is not up/,
  );
  await assert.rejects(
    ip.batch('/p', [
      ['link', 'set', 'eth0', 'up'],
      ['route', 'add', 'default', 'via', '10.0.0.1'],
    ]),
    /Nexthop has invalid gateway/,
  );
  await ip.batch('/p', [
    ['addr', 'add', '10.0.0.2/24', 'dev', 'eth0'],
    ['route', 'add', 'default', 'via', '10.0.0.1'],
  ]);
  assert.equal(
    ip.dump('/p'),
    'link eth0 veth up 10.0.0.2/24\nlink lo\nroute 0.0.0.0/0 via 10.0.0.1 dev eth0\nroute 10.0.0.0/24 dev eth0 scope link',
  );
  await assert.rejects(
    ip.batch(undefined, [
      ['link', 'add', 'v2', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', '/p'],
    ]),
    /File exists/,
  );
  ip.removeNetns('/p');
  assert.equal(ip.dump(undefined), 'link lo', 'the peer vanished with the namespace');
  assert.equal(await ip.netnsExists('/p'), false);
  await assert.rejects(ip.links('/p'), /No such file/);
});
