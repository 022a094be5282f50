import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { defaultContext, parsePacketSpec, type Origin } from '../packet.js';
import type { TraceResult } from '../result.js';
import { tracePacket } from '../walk.js';
import { looksLikeIpvsBundle, parseIpvsBundle } from './bundle.js';

function ip(s: string): ParsedIP {
  const p = parseIP(s);
  if (!p) throw new Error(s);
  return p;
}

const NODE = [ip('192.168.0.2')];

/** A kube-proxy IPVS-mode node: the three sections, as `svcnet render --mode ipvs` prints. */
function bundle(ipvsadm: string): string {
  return `${ipvsadm}
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.102.97.154,tcp:80
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add KUBE-LOOP-BACK 10.244.1.5,tcp:80,10.244.1.5
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODE-PORT - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x00004000/0x00004000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x00004000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
COMMIT
`;
}

const TWO_RS = `-A -t 10.102.97.154:80 -s rr
-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 1
-a -t 10.102.97.154:80 -r 192.168.76.142:80 -m -w 1
-A -t 192.168.0.2:30080 -s rr
-a -t 192.168.0.2:30080 -r 192.168.76.141:80 -m -w 1
-a -t 192.168.0.2:30080 -r 192.168.76.142:80 -m -w 1`;

function trace(text: string, src: string, dst: string, origin: Origin): TraceResult {
  const b = parseIpvsBundle(text);
  return tracePacket(b.iptables, parsePacketSpec({ src, dst }), defaultContext(origin, NODE), {
    ipvs: { ipsets: b.ipsets, ipvs: b.ipvs },
  });
}

function summary(r: TraceResult): string[] {
  return r.outcomes.map(
    (o) =>
      `${o.verdict}${o.dnat !== undefined ? ` ${o.dnat}` : ''}${o.masquerade ? ' masq' : ''}${o.delivery !== undefined ? ` ${o.delivery}` : ''} ${Number(o.probability.toFixed(4))}`,
  );
}

test('a ClusterIP virtual server with two real servers under rr: 50/50, no masquerade from a pod', () => {
  const r = trace(bundle(TWO_RS), '10.244.1.5', '10.102.97.154:80', 'pod');
  assert.deepEqual(summary(r), [
    'accept 192.168.76.141:80 forward 0.5',
    'accept 192.168.76.142:80 forward 0.5',
  ]);
  const ipvsStep = r.outcomes[0]?.path.find((p) => p.table === 'ipvs');
  assert.equal(ipvsStep?.hook, 'INPUT');
  assert.equal(ipvsStep.chain, 'TCP 10.102.97.154:80 rr');
  assert.equal(r.outcomes[0]?.endpoint, '192.168.76.141:80');
  assert.deepEqual(r.unsupported, []);
  // The ipset match is on the path: KUBE-CLUSTER-IP dst,dst accepts in nat.
  assert.ok(r.outcomes[0].path.some((p) => p.text?.includes('KUBE-CLUSTER-IP dst,dst -j ACCEPT')));
});

test('from outside the pod CIDR the KUBE-CLUSTER-IP rule marks for masquerade', () => {
  const r = trace(bundle(TWO_RS), '203.0.113.9', '10.102.97.154:80', 'external');
  assert.deepEqual(summary(r), [
    'accept 192.168.76.141:80 masq forward 0.5',
    'accept 192.168.76.142:80 masq forward 0.5',
  ]);
});

test('wrr weights 3:1 give 75/25; a weight 0 real server gets nothing (noted)', () => {
  const vs = `-A -t 10.102.97.154:80 -s wrr
-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 3
-a -t 10.102.97.154:80 -r 192.168.76.142:80 -m -w 1
-a -t 10.102.97.154:80 -r 192.168.76.143:80 -m -w 0`;
  const r = trace(bundle(vs), '10.244.1.5', '10.102.97.154:80', 'pod');
  assert.deepEqual(summary(r), [
    'accept 192.168.76.141:80 forward 0.75',
    'accept 192.168.76.142:80 forward 0.25',
  ]);
  assert.ok(r.notes.some((n) => n.includes('192.168.76.143:80') && n.includes('weight 0')));
});

test('rr ignores weights except 0; persistence is said', () => {
  const vs = `-A -t 10.102.97.154:80 -s rr -p 10800
-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 3
-a -t 10.102.97.154:80 -r 192.168.76.142:80 -m -w 1`;
  const r = trace(bundle(vs), '10.244.1.5', '10.102.97.154:80', 'pod');
  assert.deepEqual(
    r.outcomes.map((o) => o.probability),
    [0.5, 0.5],
  );
  assert.match(
    r.outcomes[0]?.path.find((p) => p.table === 'ipvs')?.detail ?? '',
    /persistent 10800s \(ClientIP affinity\)/,
  );
});

test('a virtual server without real servers: ICMP port unreachable (reject)', () => {
  const r = trace(bundle('-A -t 10.102.97.154:80 -s rr'), '10.244.1.5', '10.102.97.154:80', 'pod');
  assert.deepEqual(summary(r), ['reject 1']);
  assert.match(r.outcomes[0]?.path.at(-1)?.detail ?? '', /ICMP port unreachable/);
});

test('NodePort through KUBE-NODE-PORT-TCP: marked, DNATed and masqueraded', () => {
  const r = trace(bundle(TWO_RS), '203.0.113.9', '192.168.0.2:30080', 'external');
  assert.deepEqual(summary(r), [
    'accept 192.168.76.141:80 masq forward 0.5',
    'accept 192.168.76.142:80 masq forward 0.5',
  ]);
  const path = r.outcomes[0]?.path ?? [];
  assert.ok(path.some((p) => p.chain === 'KUBE-NODE-PORT' && p.effect === 'jump'));
  assert.ok(path.some((p) => p.chain === 'KUBE-MARK-MASQ' && p.effect === 'mark'));
  assert.ok(path.some((p) => p.chain === 'KUBE-POSTROUTING' && p.effect === 'masquerade'));
});

test('from the node itself IPVS takes the packet in OUTPUT', () => {
  const r = trace(bundle(TWO_RS), '192.168.0.2', '10.102.97.154:80', 'node');
  assert.equal(r.outcomes.length, 2);
  assert.equal(r.outcomes[0]?.path.find((p) => p.table === 'ipvs')?.hook, 'OUTPUT');
  assert.equal(r.outcomes[0].dnat, '192.168.76.141:80');
});

test('a destination with no virtual server is not touched by IPVS', () => {
  const r = trace(bundle(TWO_RS), '10.244.1.5', '192.168.0.2:22', 'pod');
  assert.deepEqual(summary(r), ['accept local 1']);
});

test('a negated set match (`-m set ! --match-set`) matches exactly the packets outside the set', () => {
  const text = bundle(TWO_RS).replace(
    '-A KUBE-SERVICES -m addrtype',
    '-A KUBE-SERVICES -m set ! --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ\n-A KUBE-SERVICES -m addrtype',
  );
  const marked = (dst: string): boolean[] =>
    trace(text, '10.244.1.5', dst, 'pod').outcomes.map((o) =>
      o.path.some((p) => p.chain === 'KUBE-MARK-MASQ' && p.effect === 'mark'),
    );
  assert.deepEqual(marked('10.102.97.154:80'), [false, false]);
  assert.deepEqual(marked('192.168.0.2:22'), [true]);
});

test('bundle detection and errors naming the line of the whole file', () => {
  assert.equal(looksLikeIpvsBundle(bundle(TWO_RS)), true);
  assert.equal(looksLikeIpvsBundle('*nat\n-A KUBE-SERVICES -j ACCEPT\nCOMMIT\n'), false);
  assert.throws(() => parseIpvsBundle('-A -t 10.0.0.1:80 -s rr\nadd NOPE 1.2.3.4\n'), /line 2:/);
  assert.throws(
    () => parseIpvsBundle('-a -t 10.0.0.1:80 -r 10.0.0.2:80 -m -w 1\n'),
    /line 1: .*before its -A line/,
  );
});
