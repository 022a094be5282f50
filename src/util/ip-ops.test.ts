import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addrAdd,
  addrDel,
  addrReplace,
  bridge,
  dummy,
  linkDel,
  linkSet,
  linkUp,
  renderIpBatch,
  renderIpOp,
  routeAdd,
  routeDel,
  routeReplace,
  vethPair,
} from './ip-ops.js';

test('ops render to the ip -batch lines iproute2 documents, one per line', () => {
  assert.equal(
    renderIpBatch([
      vethPair({
        host: 'veth1a2b3c4d',
        peer: 'eth0',
        mtu: 1400,
        hostMac: '02:00:00:00:00:01',
        peerMac: '02:00:00:00:00:02',
        netns: '/run/netns/p',
      }),
      vethPair({ host: 'n0', peer: 'eth0', netns: 'node-0' }),
      bridge('br0', { mtu: 9000 }),
      dummy('d0'),
      linkSet('n0', { master: 'br0', up: true }),
      linkSet('v', { hairpin: true }),
      linkSet('n1', { isolated: true, hairpin: false }),
      linkSet('br0', { promisc: true }),
      linkSet('v', { master: null, up: false, mtu: 1500 }),
      linkUp('lo'),
      linkDel('v'),
      addrAdd('10.0.0.2/24', 'eth0', { noprefixroute: true, nodad: true }),
      addrReplace('10.0.0.1/32', 'v'),
      addrDel('10.9.0.1/24', 'br0'),
      routeAdd('10.0.0.1/32', { dev: 'eth0', scope: 'link', src: '10.0.0.2' }),
      routeAdd('default', { via: '10.0.0.1', dev: 'eth0', onlink: true }),
      routeReplace('::/0', { via: 'fd00::1', dev: 'eth0' }),
      routeDel('10.0.0.2/32'),
    ]),
    [
      'link add veth1a2b3c4d mtu 1400 address 02:00:00:00:00:01 type veth peer name eth0 mtu 1400 address 02:00:00:00:00:02 netns /run/netns/p',
      'link add n0 type veth peer name eth0 netns node-0',
      'link add br0 mtu 9000 type bridge',
      'link add d0 type dummy',
      'link set n0 master br0 up',
      'link set v type bridge_slave hairpin on',
      'link set n1 type bridge_slave hairpin off isolated on',
      'link set br0 promisc on',
      'link set v mtu 1500 nomaster down',
      'link set lo up',
      'link del v',
      'addr add 10.0.0.2/24 dev eth0 noprefixroute nodad',
      'addr replace 10.0.0.1/32 dev v',
      'addr del 10.9.0.1/24 dev br0',
      'route add 10.0.0.1/32 dev eth0 scope link src 10.0.0.2',
      'route add default via 10.0.0.1 dev eth0 onlink',
      'route replace ::/0 via fd00::1 dev eth0',
      'route del 10.0.0.2/32',
      '',
    ].join('\n'),
  );
  assert.equal(renderIpBatch([]), '');
});

test('a multipath route renders one nexthop per gateway', () => {
  assert.equal(
    renderIpOp(
      routeReplace('172.18.255.200/32', {
        nexthops: [
          { via: '172.18.0.3', dev: 'br0' },
          { via: '172.18.0.4', dev: 'br0' },
        ],
      }),
    ),
    'route replace 172.18.255.200/32 nexthop via 172.18.0.3 dev br0 nexthop via 172.18.0.4 dev br0',
  );
});
