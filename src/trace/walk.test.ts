import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from '../netfilter/iptables/parse.js';
import { parseIP, type ParsedIP } from '../util/ip.js';
import { defaultContext, parsePacketSpec, type Origin, type TraceContext } from './packet.js';
import { tracePacket, type TraceResult } from './walk.js';
import { formatTraceText, traceToJSON } from './format.js';
import { selectFamily } from './hooks.js';
import { fixturesDir } from '../../test/conformance/harness.js';

function ip(s: string): ParsedIP {
  const p = parseIP(s);
  if (!p) throw new Error(s);
  return p;
}

const NODE = [ip('192.168.0.2')];

function trace(
  rules: string,
  src: string,
  dst: string,
  origin: Origin,
  over: Partial<TraceContext> = {},
): TraceResult {
  return tracePacket(
    parseDocument(rules),
    parsePacketSpec({ src, dst }),
    defaultContext(origin, NODE, over),
  );
}

/** `verdict dnat masq p` per outcome, for compact assertions. */
function summary(r: TraceResult): string[] {
  return r.outcomes.map(
    (o) =>
      `${o.verdict}${o.dnat !== undefined ? ` ${o.dnat}` : ''}${o.masquerade ? ' masq' : ''}${o.delivery !== undefined ? ` ${o.delivery}` : ''} ${Number(o.probability.toFixed(4))}`,
  );
}

const SMALL = `
*raw
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A PREROUTING -s 198.51.100.0/24 -j DROP
COMMIT
*mangle
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -p udp -j MARK --set-xmark 0x10/0xff
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:SVC - [0:0]
:SEP1 - [0:0]
:SEP2 - [0:0]
:SEP3 - [0:0]
-A PREROUTING -j SVC
-A OUTPUT -j SVC
-A POSTROUTING -m mark --mark 0x10/0xff -j SNAT --to-source 192.168.0.2
-A SVC -d 10.96.0.0/12 -m set --match-set SOMETHING dst -j ACCEPT
-A SVC -p tcp -d 10.96.0.10 --dport 53 -m statistic --mode random --probability 0.3333333333 -j SEP1
-A SVC -p tcp -d 10.96.0.10 --dport 53 -m statistic --mode random --probability 0.5 -j SEP2
-A SVC -p tcp -d 10.96.0.10 --dport 53 -g SEP3
-A SVC -p udp -d 10.96.0.10 --dport 53 -j SEP1
-A SEP1 -s 10.244.0.5 -j RETURN
-A SEP1 -p tcp -j DNAT --to-destination 10.244.0.5:5353
-A SEP1 -p udp -j DNAT --to-destination 10.244.0.5:53
-A SEP2 -p tcp -j DNAT --to-destination 10.244.1.5:5353
-A SEP3 -j LOG --log-prefix "sep3 "
-A SEP3 -p tcp -j DNAT --to-destination 192.168.0.2:5353
COMMIT
*filter
:INPUT DROP [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -i lo -j ACCEPT
-A INPUT -p tcp --dport 5353 -j ACCEPT
-A FORWARD -d 10.244.1.5 -p tcp -j REJECT --reject-with tcp-reset
COMMIT
`;

test('random rules fork the walk: three endpoints give three outcomes at 1/3 each', () => {
  const r = trace(SMALL, '10.244.0.9', '10.96.0.10:53/tcp', 'pod');
  assert.deepEqual(summary(r), [
    'accept 10.244.0.5:5353 forward 0.3333',
    'reject 10.244.1.5:5353 0.3333',
    'accept 192.168.0.2:5353 local 0.3333',
  ]);
  const sum = r.outcomes.reduce((a, o) => a + o.probability, 0);
  assert.ok(Math.abs(sum - 1) < 1e-9);
  // The unsupported ipset rule is reported once and assumed not to match.
  assert.equal(r.unsupported.length, 1);
  assert.match(r.unsupported[0]?.reasons.join() ?? '', /-m set is not supported/);
  // goto SEP3: LOG does not stop the walk; the DNAT after it decides.
  const nat = r.outcomes[2]?.path.filter((s) => s.table === 'nat').map((s) => s.effect);
  assert.deepEqual(nat?.slice(-3), ['goto', 'log', 'dnat']);
});

test('RETURN from a user chain continues in the caller; mangle marks drive nat POSTROUTING', () => {
  // From the endpoint itself SEP1 returns, and the walk goes on with SEP2 and SEP3 whether or
  // not the first random rule was taken: four paths, two results at 1/2 each.
  const r = trace(SMALL, '10.244.0.5', '10.96.0.10:53/tcp', 'pod');
  assert.deepEqual(summary(r), [
    'reject 10.244.1.5:5353 0.1667',
    'accept 192.168.0.2:5353 local 0.1667',
    'reject 10.244.1.5:5353 0.3333',
    'accept 192.168.0.2:5353 local 0.3333',
  ]);
  assert.equal(r.outcomes[0]?.path.filter((s) => s.effect === 'return').length, 1);
  const udp = trace(SMALL, '10.244.0.9', '10.96.0.10:53/udp', 'pod');
  assert.deepEqual(summary(udp), ['accept 10.244.0.5:53 masq forward 1']);
  assert.equal(udp.outcomes[0]?.snat, '192.168.0.2');
});

test('raw runs before nat; chain policies decide when no rule does', () => {
  assert.deepEqual(summary(trace(SMALL, '198.51.100.7', '10.96.0.10:53/tcp', 'external')), [
    'drop 1',
  ]);
  const input = trace(SMALL, '203.0.113.9', '192.168.0.2:22/tcp', 'external');
  assert.deepEqual(summary(input), ['drop 1']);
  assert.equal(input.outcomes[0]?.verdictBy, 'policy');
});

test('from the node: OUTPUT then POSTROUTING, a node address loops back through INPUT', () => {
  const r = trace(SMALL, '192.168.0.2', '192.168.0.2:22/tcp', 'node');
  assert.deepEqual(summary(r), ['accept local 1']);
  const hooks = [...new Set(r.outcomes[0]?.path.map((s) => s.hook))];
  assert.deepEqual(hooks, ['OUTPUT', 'INPUT']);
});

test('an established connection skips nat (NAT is decided on the first packet)', () => {
  const r = trace(SMALL, '10.244.0.9', '10.96.0.10:53/tcp', 'pod', { ctState: 'ESTABLISHED' });
  assert.deepEqual(summary(r), ['accept forward 1']);
  assert.match(r.notes.join(), /nat tables are not consulted/);
});

function fixtureText(file: string): string | undefined {
  const path = join(fixturesDir(), 'kube-proxy', 'iptables', file);
  if (!existsSync(path)) return undefined;
  const fx = JSON.parse(readFileSync(path, 'utf8')) as { steps: { text?: string }[] };
  return fx.steps.find((s) => s.text !== undefined)?.text;
}

test('a real kube-proxy dump (upstream TestOverallIPTablesRules output) traced as a node', (t) => {
  const rules = fixtureText('TestOverallIPTablesRules.json');
  if (rules === undefined) {
    t.skip('fixtures absent: ../shared/fixtures/kube-proxy/iptables');
    return;
  }
  const cases: [string, string, string, Origin, Partial<TraceContext>, string[]][] = [
    [
      'ClusterIP, 2 endpoints',
      '10.0.0.2',
      '172.30.0.44:80',
      'pod',
      {},
      ['accept 10.180.0.4:80 forward 0.5', 'accept 10.180.0.5:80 forward 0.5'],
    ],
    ['hairpin', '10.180.0.1', '172.30.0.41:80', 'pod', {}, ['accept 10.180.0.1:80 masq forward 1']],
    [
      'ClusterIP from outside the cluster',
      '203.0.113.2',
      '172.30.0.41:80',
      'external',
      {},
      ['accept 10.180.0.1:80 masq forward 1'],
    ],
    ['no endpoints', '10.0.0.2', '172.30.0.46:80', 'pod', {}, ['reject 1']],
    ['no endpoints, from the node', '192.168.0.2', '172.30.0.46:80', 'node', {}, ['reject 1']],
    [
      'NodePort, Cluster policy',
      '203.0.113.2',
      '192.168.0.2:3003',
      'external',
      {},
      ['accept 10.180.0.3:80 masq forward 1'],
    ],
    [
      'NodePort on localhost',
      '127.0.0.1',
      '127.0.0.1:3003',
      'node',
      {},
      ['accept 10.180.0.3:80 masq forward 1'],
    ],
    [
      'eTP=Local, no local endpoint, external',
      '203.0.113.2',
      '1.2.3.4:80',
      'external',
      {},
      ['drop 1'],
    ],
    [
      'eTP=Local NodePort, no local endpoint',
      '203.0.113.2',
      '192.168.0.2:3001',
      'external',
      {},
      ['drop 1'],
    ],
    [
      'eTP=Local, from a pod: short-circuit',
      '10.0.0.2',
      '1.2.3.4:80',
      'pod',
      {},
      ['accept 10.180.0.2:80 forward 1'],
    ],
    [
      'LB source range allowed',
      '203.0.113.2',
      '5.6.7.8:80',
      'external',
      {},
      ['accept 10.180.0.3:80 masq forward 1'],
    ],
    ['LB source range blocked', '203.0.113.130', '5.6.7.8:80', 'external', {}, ['drop 1']],
    [
      'health check node port',
      '203.0.113.2',
      '192.168.0.2:30000',
      'external',
      {},
      ['accept local 1'],
    ],
    ['no Service: untouched', '10.0.0.2', '10.0.0.3:80', 'pod', {}, ['accept forward 1']],
    [
      'external IP with eTP=Cluster',
      '203.0.113.2',
      '192.168.99.33:80',
      'external',
      {},
      ['accept 10.180.0.4:80 masq forward 0.5', 'accept 10.180.0.5:80 masq forward 0.5'],
    ],
    [
      'existing affinity',
      '10.0.0.2',
      '172.30.0.45:80',
      'pod',
      { recent: [{ name: 'KUBE-SEP-I77PXRDZVX7PMWMN', ageSeconds: 5 }] },
      ['accept 10.180.0.3:80 forward 1'],
    ],
    // route_localnet: NodePorts on 127.0.0.1 are DNATed even from outside (KUBE-FIREWALL
    // spares DNATed connections), other localhost ports are blocked.
    [
      'localhost NodePort from outside',
      '203.0.113.2',
      '127.0.0.1:3003',
      'external',
      {},
      ['accept 10.180.0.3:80 masq forward 1'],
    ],
    ['localnet from outside is blocked', '203.0.113.2', '127.0.0.1:22', 'external', {}, ['drop 1']],
  ];
  for (const [name, src, dst, origin, over, want] of cases) {
    const r = trace(rules, src, dst, origin, over);
    assert.deepEqual(summary(r), want, name);
    assert.deepEqual(r.unsupported, [], name);
  }
  // The path names the objects behind each step.
  const r = trace(rules, '10.0.0.2', '172.30.0.44:80', 'pod');
  assert.equal(r.outcomes[0]?.servicePort, 'ns4/svc4:p80');
  assert.equal(r.outcomes[0].endpoint, '10.180.0.4:80');
  const text = formatTraceText(r);
  assert.match(text, /2 possible outcomes/);
  assert.match(text, /\[1\] 50%\s+DNAT to 10\.180\.0\.4:80 — Service ns4\/svc4:p80/);
  assert.match(text, /chosen at random \(probability 0\.5\): jump to KUBE-SEP-UKSFD7AGPMPPLUHC/);
  const json = JSON.parse(JSON.stringify(traceToJSON(r))) as {
    outcomes: (
      { probability: number; dnat: string; path: { chain: string; rule: number }[] } | undefined
    )[];
  };
  assert.equal(json.outcomes[1]?.dnat, '10.180.0.5:80');
  assert.deepEqual(
    json.outcomes[1].path.filter((s) => s.chain.startsWith('KUBE-SVC')).map((s) => s.rule),
    [2, 3],
  );
});

test('a hand-written dump with counters and unquoted comments (upstream TestTracePacket)', (t) => {
  const rules = fixtureText('TestTracePacket.json');
  if (rules === undefined) {
    t.skip('fixtures absent: ../shared/fixtures/kube-proxy/iptables');
    return;
  }
  const r = trace(rules, '10.0.0.2', '172.30.0.41:80', 'pod');
  assert.deepEqual(summary(r), ['accept 10.180.0.1:80 forward 1']);
  // Its built-in chains already jump to kube-proxy's: nothing is assumed.
  assert.ok(!r.notes.some((n) => n.includes('assumed')));
});

test('a dual-stack file (an IPv4 and an IPv6 section) is traced with the section of the packet family', () => {
  const v4 = `*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d 10.96.0.30 -p tcp --dport 80 -j DNAT --to-destination 10.244.1.2:80\nCOMMIT\n`;
  const v6 = `*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d fd00:10:96::30 -p tcp --dport 80 -j DNAT --to-destination [fd00:10:244:1::2]:80\nCOMMIT\n`;
  const doc = parseDocument(`${v4}# IPv6\n${v6}`);
  const r4 = tracePacket(
    selectFamily(doc, 'IPv4'),
    parsePacketSpec({ src: '10.244.0.9', dst: '10.96.0.30:80' }),
    defaultContext('pod', NODE),
  );
  assert.deepEqual(summary(r4), ['accept 10.244.1.2:80 forward 1']);
  const r6 = tracePacket(
    selectFamily(doc, 'IPv6'),
    parsePacketSpec({ src: 'fd00:10:244::9', dst: '[fd00:10:96::30]:80' }),
    defaultContext('pod', NODE),
  );
  assert.deepEqual(summary(r6), ['accept [fd00:10:244:1::2]:80 forward 1']);
});
