// The hop a node's routing state gives an endpoint address: flannel's VXLAN (route onlink via
// flannel.1, neighbour, FDB, device), kindnet's and host-gw's gateway routes, the local
// bridge (cni0/cbr0), longest prefix and metric, the default route, IPv6, drops, and notes
// saying what the dumps lacked.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP } from '../../util/ip.js';
import { mergeRoutingStates, parseRoutingDump, type RoutingState } from './dump.js';
import { routeHop, type RouteHop } from './hop.js';

/** node-a of a flannel cluster: its own pods on cni0, node-b's and node-c's over flannel.1. */
const FLANNEL = parseRoutingDump(`# ip route
default via 172.18.0.1 dev eth0
10.244.0.0/24 via 10.244.0.0 dev flannel.1 onlink
10.244.1.0/24 dev cni0 proto kernel scope link src 10.244.1.1
10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink
172.18.0.0/16 dev eth0 proto kernel scope link src 172.18.0.2
# ip -6 route
fd00:10:244:2::/64 via fd00:10:244:2:: dev flannel-v6.1 onlink metric 1024 pref medium
fd00::/64 dev eth0 proto kernel metric 256 pref medium
# ip neigh
10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT
10.244.0.0 dev flannel.1 lladdr 6e:01:02:03:04:05 PERMANENT
fd00:10:244:2:: dev flannel-v6.1 lladdr 6e:11:22:33:44:55 PERMANENT
172.18.0.1 dev eth0 lladdr 02:42:3c:1a:22:b1 REACHABLE
# bridge fdb show
33:33:00:00:00:01 dev eth0 self permanent
aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
6e:01:02:03:04:05 dev flannel.1 dst 172.18.0.3 self permanent
6e:11:22:33:44:55 dev flannel-v6.1 dst fd00::4 self permanent
# ip -d link show
3: eth0@if9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP
    link/ether 02:42:ac:12:00:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0
    veth addrgenmode eui64
4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN
    link/ether 22:6a:ac:21:4f:9e brd ff:ff:ff:ff:ff:ff
    vxlan id 1 local 172.18.0.2 dev eth0 srcport 0 0 dstport 8472 nolearning ttl auto
5: cni0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP
    link/ether e6:89:b9:a3:1a:ec brd ff:ff:ff:ff:ff:ff
    bridge forward_delay 1500 hello_time 200
6: flannel-v6.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1430 qdisc noqueue state UNKNOWN
    link/ether 6e:aa:bb:cc:dd:01 brd ff:ff:ff:ff:ff:ff
    vxlan id 1 local fd00::2 dev eth0 srcport 0 0 dstport 8472 nolearning
`);

/** node-a of a kind cluster (kindnet): a route per other node's podCIDR via its node IP. */
const KINDNET = parseRoutingDump(`default via 172.18.0.1 dev eth0
10.244.1.0/24 via 172.18.0.3 dev eth0
10.244.2.0/24 via 172.18.0.4 dev eth0
10.244.0.2 dev veth8c1f0e2a scope host
172.18.0.0/16 dev eth0 proto kernel scope link src 172.18.0.2
`);

function hop(state: RoutingState, ip: string): RouteHop {
  const parsed = parseIP(ip);
  assert.ok(parsed);
  return routeHop(state, parsed);
}

test('flannel: via flannel.1, the FDB entry, VXLAN id 1 to the peer public IP on UDP 8472', () => {
  const h = hop(FLANNEL, '10.244.2.7');
  assert.equal(h.kind, 'vxlan');
  assert.equal(h.dev, 'flannel.1');
  assert.equal(h.via, '10.244.2.0');
  assert.equal(h.neighbourMAC, 'aa:bb:cc:dd:ee:ff');
  assert.deepEqual(h.remotes, ['172.18.0.4']);
  assert.equal(h.vni, 1);
  assert.equal(h.port, 8472);
  assert.equal(h.local, '172.18.0.2');
  assert.equal(h.route, '10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink');
  assert.equal(h.routeLine, 5);
  assert.equal(
    h.summary,
    'via flannel.1, next hop 10.244.2.0 (aa:bb:cc:dd:ee:ff): encapsulated in VXLAN id 1 to 172.18.0.4 UDP 8472',
  );
  assert.deepEqual(h.notes, []);
  // The other peer's podCIDR goes to the other peer.
  assert.deepEqual(hop(FLANNEL, '10.244.0.9').remotes, ['172.18.0.3']);
});

test('flannel: a Pod on this node is on the local bridge cni0', () => {
  const h = hop(FLANNEL, '10.244.1.5');
  assert.equal(h.kind, 'local-link');
  assert.equal(h.bridge, true);
  assert.equal(h.summary, 'dev cni0: the local bridge, the Pod is on this node');
});

test('flannel over IPv6: the IPv6 VXLAN device and its FDB entry', () => {
  const h = hop(FLANNEL, 'fd00:10:244:2::9');
  assert.equal(h.kind, 'vxlan');
  assert.equal(h.dev, 'flannel-v6.1');
  assert.deepEqual(h.remotes, ['fd00::4']);
  assert.equal(h.port, 8472);
});

test('kindnet: via the other node IP dev eth0; the local Pod by its host route', () => {
  const h = hop(KINDNET, '10.244.2.9');
  assert.equal(h.kind, 'gateway');
  assert.equal(h.summary, 'via 172.18.0.4 dev eth0');
  assert.equal(h.route, '10.244.2.0/24 via 172.18.0.4 dev eth0');
  const local = hop(KINDNET, '10.244.0.2');
  assert.equal(local.kind, 'local-link');
  assert.equal(local.summary, 'dev veth8c1f0e2a: directly attached, the Pod is on this node');
});

test('longest prefix wins, then the lowest metric; else the default route', () => {
  const s = parseRoutingDump(`default via 172.18.0.1 dev eth0
10.244.0.0/16 via 172.18.0.9 dev eth0
10.244.2.0/24 via 172.18.0.5 dev eth0 metric 200
10.244.2.0/24 via 172.18.0.4 dev eth0 metric 100
10.244.2.128/25 via 172.18.0.6 dev eth0
`);
  assert.equal(hop(s, '10.244.2.9').via, '172.18.0.4');
  assert.equal(hop(s, '10.244.2.200').via, '172.18.0.6');
  assert.equal(hop(s, '10.244.7.1').via, '172.18.0.9');
  const d = hop(s, '192.0.2.1');
  assert.equal(d.summary, 'via 172.18.0.1 dev eth0 (the default route)');
  assert.equal(d.route, 'default via 172.18.0.1 dev eth0');
});

test('kubenet: cbr0 is a bridge by name when no link dump says', () => {
  const s = parseRoutingDump('10.244.1.0/24 dev cbr0 proto kernel scope link src 10.244.1.1\n');
  const h = hop(s, '10.244.1.3');
  assert.equal(h.kind, 'local-link');
  assert.equal(h.bridge, true);
});

test('drops: blackhole, unreachable, no route at all', () => {
  const s = parseRoutingDump(`# ip route
blackhole 10.244.9.0/24 proto bird
10.244.2.0/24 via 172.18.0.4 dev eth0
# ip -6 route
unreachable fd00:10:244:9::/64 dev lo metric 1024 pref medium
`);
  const b = hop(s, '10.244.9.3');
  assert.equal(b.kind, 'dropped');
  assert.equal(
    b.summary,
    'dropped by the blackhole route 10.244.9.0/24 ("blackhole 10.244.9.0/24 proto bird"): silently discarded',
  );
  const u = hop(s, 'fd00:10:244:9::3');
  assert.equal(u.kind, 'dropped');
  assert.match(u.summary, /unreachable route fd00:10:244:9::\/64 .*ICMP host unreachable/);
  const n = hop(s, '10.99.0.1');
  assert.equal(n.kind, 'no-route');
  assert.equal(
    n.summary,
    'dropped: no route to 10.99.0.1 (the sender gets ICMP network unreachable)',
  );
  assert.equal(hop(s, '2001:db8::1').kind, 'no-route');
});

test('what the dumps lacked is said, not guessed', () => {
  // Routes only: flannel.1 is VXLAN by nothing we know; without an FDB it is a plain device.
  const routesOnly = parseRoutingDump('10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink\n');
  assert.equal(hop(routesOnly, '10.244.2.5').kind, 'gateway');
  // Routes and FDB (files given separately): VXLAN, but no MAC and no id/port.
  const withFdb = mergeRoutingStates([
    routesOnly,
    parseRoutingDump('aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent\n'),
  ]);
  const h = hop(withFdb, '10.244.2.5');
  assert.equal(h.kind, 'vxlan');
  assert.equal(h.vni, undefined);
  assert.equal(h.port, undefined);
  assert.match(h.summary, /to an unknown VTEP$/);
  assert.ok(h.notes.some((n) => n.startsWith('no `ip neigh` dump')));
  assert.ok(h.notes.some((n) => n.startsWith('no `ip -d link show` dump of flannel.1')));
  // A neighbour whose MAC has no FDB entry of its own is flooded to the all-zeros entries.
  const flood = mergeRoutingStates([
    routesOnly,
    parseRoutingDump(`# ip neigh
10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT
# bridge fdb show
00:00:00:00:00:00 dev flannel.1 dst 172.18.0.4 self permanent
00:00:00:00:00:00 dev flannel.1 dst 172.18.0.5 self permanent
`),
  ]);
  const f = hop(flood, '10.244.2.5');
  assert.deepEqual(f.remotes, ['172.18.0.4', '172.18.0.5']);
  assert.ok(f.notes.some((n) => n.includes('flooded to the all-zeros entries')));
});

test('multipath: the first next hop, the others named', () => {
  const s = parseRoutingDump(`10.244.0.0/16 proto static metric 10
	nexthop via 172.18.0.3 dev eth0 weight 1
	nexthop via 172.18.0.4 dev eth0 weight 1
`);
  const h = hop(s, '10.244.5.5');
  assert.equal(h.kind, 'gateway');
  assert.equal(h.via, '172.18.0.3');
  assert.match(
    h.notes[0] ?? '',
    /multipath route: .*172\.18\.0\.3 dev eth0, 172\.18\.0\.4 dev eth0/,
  );
});
