// The routing-dump parsers on text as iproute2 6.1 prints it (trailing spaces included): each
// dump's fields, the section markers and unmarked detection, and bad lines failing with the
// line number and the word at fault.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { formatCIDR } from '../../util/ip.js';
import { numberLines } from './dump-line.js';
import { detectDumpKind, parseRoutingDump } from './dump.js';
import { parseFdb } from './parse-fdb.js';
import { parseLinks } from './parse-link.js';
import { parseNeighbours } from './parse-neigh.js';
import { parseRoutes } from './parse-route.js';

const ROUTES = `default via 172.18.0.1 dev eth0 
10.244.1.0/24 dev cni0 proto kernel scope link src 10.244.1.1 
10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink 
blackhole 10.244.9.0/24 
172.18.0.0/16 dev eth0 proto kernel scope link src 172.18.0.2 
10.244.0.0/16 proto static metric 10 
	nexthop via 172.18.0.3 dev eth0 weight 1 
	nexthop via 172.18.0.4 dev eth0 weight 1 
`;

const ROUTES6 = `fd00::/64 dev eth0 proto kernel metric 256 pref medium
fd00:10:244:2::/64 via fd00::4 dev eth0 metric 1024 pref medium
unreachable fd00:10:244:9::/64 dev lo metric 1024 pref medium
default via fe80::1 dev eth0 proto ra metric 1024 expires 1798sec mtu lock 1400 hoplimit 64 pref medium
unreachable default dev lo proto kernel metric 4294967295 error -101 pref medium
`;

test('ip route: types, prefixes, gateways, onlink, multipath', () => {
  const r = parseRoutes(numberLines(ROUTES));
  assert.equal(r.length, 6);
  assert.deepEqual(
    r.map((x) => [x.type, formatCIDR(x.dst), x.via ?? '-', x.dev ?? '-', x.onlink]),
    [
      ['unicast', '0.0.0.0/0', '172.18.0.1', 'eth0', false],
      ['unicast', '10.244.1.0/24', '-', 'cni0', false],
      ['unicast', '10.244.2.0/24', '10.244.2.0', 'flannel.1', true],
      ['blackhole', '10.244.9.0/24', '-', '-', false],
      ['unicast', '172.18.0.0/16', '-', 'eth0', false],
      ['unicast', '10.244.0.0/16', '-', '-', false],
    ],
  );
  assert.equal(r[1]?.src, '10.244.1.1');
  assert.equal(r[1].scope, 'link');
  assert.equal(r[2]?.line, 3);
  assert.equal(r[2].text, '10.244.2.0/24 via 10.244.2.0 dev flannel.1 onlink');
  assert.deepEqual(r[5]?.nexthops, [
    { via: '172.18.0.3', dev: 'eth0', onlink: false, weight: 1 },
    { via: '172.18.0.4', dev: 'eth0', onlink: false, weight: 1 },
  ]);
});

test('ip -6 route: metrics, locked mtu, `default` in the section family', () => {
  const r = parseRoutes(numberLines(ROUTES6), 'IPv6');
  assert.deepEqual(
    r.map((x) => [x.type, formatCIDR(x.dst), x.metric]),
    [
      ['unicast', 'fd00::/64', 256],
      ['unicast', 'fd00:10:244:2::/64', 1024],
      ['unreachable', 'fd00:10:244:9::/64', 1024],
      ['unicast', '::/0', 1024],
      ['unreachable', '::/0', 4294967295],
    ],
  );
  // Without the section's family a gateway-less `default` is IPv4; with an IPv6 gateway, IPv6.
  assert.equal(parseRoutes(numberLines('default dev eth0'))[0]?.dst.family, 'IPv4');
  assert.equal(parseRoutes(numberLines('default via fe80::1 dev eth0'))[0]?.dst.family, 'IPv6');
  // A host route.
  assert.equal(
    formatCIDR(parseRoutes(numberLines('10.244.1.5 dev veth1a2b scope host'))[0]!.dst),
    '10.244.1.5/32',
  );
});

test('ip neigh, bridge fdb show, ip -d link show', () => {
  const n = parseNeighbours(
    numberLines(`10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT 
172.18.0.1 dev eth0 lladdr 02:42:AC:12:00:01 REACHABLE
172.18.0.9 dev eth0 FAILED
fe80::1 dev eth0 lladdr 02:42:ac:12:00:01 router STALE`),
  );
  assert.deepEqual(n[0], {
    line: 1,
    ip: '10.244.2.0',
    dev: 'flannel.1',
    lladdr: 'aa:bb:cc:dd:ee:ff',
    states: ['PERMANENT'],
  });
  assert.equal(n[1]?.lladdr, '02:42:ac:12:00:01');
  assert.equal(n[2]?.lladdr, undefined);
  assert.deepEqual(n[3]?.states, ['STALE']);

  const f = parseFdb(
    numberLines(`33:33:00:00:00:01 dev eth0 self permanent
aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
00:00:00:00:00:00 dev vxlan0 dst 10.0.0.2 port 4789 vni 100 via eth0 self permanent
5e:9f:41:09:43:14 dev veth1 vlan 1 master cni0 permanent`),
  );
  assert.deepEqual(f[1], {
    line: 2,
    mac: 'aa:bb:cc:dd:ee:ff',
    dev: 'flannel.1',
    dst: '172.18.0.4',
    flags: ['self', 'permanent'],
  });
  assert.equal(f[2]?.port, 4789);
  assert.equal(f[2].vni, 100);
  assert.equal(f[3]?.master, 'cni0');

  const l = parseLinks(
    numberLines(`2: cni0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000
    link/ether e6:89:b9:a3:1a:ec brd ff:ff:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 68 maxmtu 65535 
    bridge forward_delay 1500 hello_time 200 max_age 2000 ageing_time 30000 stp_state 0 
4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000
    link/ether 22:6a:ac:21:4f:9e brd ff:ff:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 68 maxmtu 65535 
    vxlan id 1 local 172.18.0.2 dev eth0 srcport 0 0 dstport 8472 nolearning ttl auto ageing 300 udpcsum noudp6zerocsumtx 
3: eth0@if7: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000
    link/ether 4a:ef:29:f5:5c:82 brd ff:ff:ff:ff:ff:ff link-netnsid 0 promiscuity 0 
    veth addrgenmode eui64 numtxqueues 2 numrxqueues 2 gso_max_size 65536 
5: veth1@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue master cni0 state UP mode DEFAULT group default 
    link/ether 5e:9f:41:09:43:14 brd ff:ff:ff:ff:ff:ff link-netnsid 1
    veth 
    bridge_slave state forwarding priority 32 cost 2 `),
  );
  assert.deepEqual(
    l.map((x) => [x.index, x.name, x.kind, x.mtu, x.master ?? '-']),
    [
      [2, 'cni0', 'bridge', 1500, '-'],
      [4, 'flannel.1', 'vxlan', 1450, '-'],
      [3, 'eth0', 'veth', 1500, '-'],
      [5, 'veth1', 'veth', 1500, 'cni0'],
    ],
  );
  assert.deepEqual(l[1]?.vxlan, {
    id: 1,
    local: '172.18.0.2',
    dev: 'eth0',
    dstport: 8472,
    learning: false,
  });
  assert.equal(l[1].mac, '22:6a:ac:21:4f:9e');
});

test('markers split one file; unmarked dumps are told by their first line', () => {
  const s = parseRoutingDump(`# routes of node-a, taken 2026-11-27
# ip route
${ROUTES}
$ ip -6 route
${ROUTES6}
# ip neigh
10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT
# bridge fdb show
aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent
# ip -d link show
4: flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN
    vxlan id 1 local 172.18.0.2 dev eth0 dstport 8472 nolearning
`);
  assert.equal(s.routes.length, 11);
  // `unreachable default dev lo` of the -6 section is IPv6 by its marker.
  assert.equal(s.routes.at(-1)?.dst.family, 'IPv6');
  assert.equal(s.routes.at(-1)?.line, 17);
  assert.equal(s.neighbours.length, 1);
  assert.equal(s.fdb[0]?.line, 22);
  assert.equal(s.links[0]?.vxlan?.id, 1);
  assert.deepEqual([...s.given].sort(), ['fdb', 'link', 'neigh', 'route']);

  const kind = (t: string): string => detectDumpKind(numberLines(t));
  assert.equal(kind(ROUTES), 'route');
  assert.equal(kind('\n10.244.2.0 dev flannel.1 lladdr aa:bb:cc:dd:ee:ff PERMANENT'), 'neigh');
  assert.equal(kind('172.18.0.9 dev eth0 FAILED'), 'neigh');
  assert.equal(kind('aa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.4 self permanent'), 'fdb');
  assert.equal(kind('1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536'), 'link');
  assert.deepEqual(
    [...parseRoutingDump('33:33:00:00:00:01 dev eth0 self permanent').given],
    ['fdb'],
  );
});

test('bad input names the line and the word', () => {
  const cases: [string, RegExp][] = [
    [
      '# ip route\n10.244.2.0/24 via 10.244.2.0 dev flannel.1\n10.244.3.0/33 dev eth0',
      /^line 3: ip route: not a destination .*"10\.244\.3\.0\/33"/,
    ],
    [
      '# ip route\n10.244.2.0/24 via 10.244.2 dev eth0',
      /^line 2: ip route: via: not an IP address: "10\.244\.2"/,
    ],
    ['# ip route\n10.244.2.0/24 dev', /^line 2: ip route: "dev" needs a value/],
    [
      '# ip route\n10.244.2.0/24 dev eth0 frobnicate',
      /^line 2: ip route: unknown word "frobnicate"/,
    ],
    [
      '# ip route\n\tnexthop via 172.18.0.3 dev eth0',
      /^line 2: ip route: a nexthop line with no route above it/,
    ],
    [
      '# ip neigh\n10.244.2.0 dev flannel.1 lladdr zz:bb:cc:dd:ee:ff PERMANENT',
      /^line 2: ip neigh: lladdr: not a MAC/,
    ],
    [
      '# bridge fdb show\naa:bb:cc:dd:ee:ff dev flannel.1 dst 172.18.0.400 self',
      /^line 2: bridge fdb: dst: not an IP address/,
    ],
    [
      '# bridge fdb show\nnot-a-mac dev eth0',
      /^line 2: bridge fdb: not a MAC address: "not-a-mac"/,
    ],
    [
      '# ip -d link show\nflannel.1: <UP> mtu 1450',
      /^line 2: ip link: expected a "N: NAME: <FLAGS> …" line/,
    ],
    [
      '# ip -d link show\n4: flannel.1: <UP> mtu 1450\n    vxlan id 99999999 dstport 8472',
      /^line 3: ip -d link: id: a VNI is 0-16777215/,
    ],
    ['# ip addr\n1: lo: <LOOPBACK>', /^line 1: unknown dump "ip addr"/],
    ['10.244.2.0/24 dev eth0\n# ip neigh\n', /^line 1: text before the first marker line/],
  ];
  for (const [text, re] of cases)
    assert.throws(
      () => parseRoutingDump(text),
      (e: unknown) => e instanceof SvcnetError && e.code === 'INVALID_INPUT' && re.test(e.message),
      text,
    );
});
