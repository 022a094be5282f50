// The chain graph over kube-proxy-shaped dumps: a Service with 3 endpoints gives KUBE-SERVICES
// → KUBE-SVC → 3 KUBE-SEP edges with shares of 1/3 each (from probabilities 1/3, 1/2, rest),
// chains carry the Service and endpoints their comments name, a search scopes the graph, the
// cap counts what it leaves out, and nft's numgen vmap (or inline dnat map) gives each
// endpoint chain (or address) 1/N.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildChainGraph } from './chain-graph.js';
import { buildRulesView } from './rules-view.js';

const EPS = ['10.244.1.11', '10.244.1.12', '10.244.2.13'];
const SVC = 'default/web:http';

const IPTABLES = [
  '*nat',
  ':PREROUTING ACCEPT [0:0]',
  ':KUBE-SERVICES - [0:0]',
  ':KUBE-MARK-MASQ - [0:0]',
  ':KUBE-SVC-WEB - [0:0]',
  ':KUBE-SVC-DNS - [0:0]',
  ...EPS.map((_, i) => `:KUBE-SEP-${String(i)} - [0:0]`),
  '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "${SVC} cluster IP" -m tcp --dport 3000 -j KUBE-SVC-WEB`,
  '-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -m udp --dport 53 -j KUBE-SVC-DNS',
  '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
  `-A KUBE-SVC-WEB ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment "${SVC} cluster IP" -m tcp --dport 3000 -j KUBE-MARK-MASQ`,
  `-A KUBE-SVC-WEB -m comment --comment "${SVC} -> ${EPS[0] ?? ''}:8080" -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-0`,
  `-A KUBE-SVC-WEB -m comment --comment "${SVC} -> ${EPS[1] ?? ''}:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-1`,
  `-A KUBE-SVC-WEB -m comment --comment "${SVC} -> ${EPS[2] ?? ''}:8080" -j KUBE-SEP-2`,
  '-A KUBE-SVC-DNS -m comment --comment "kube-system/kube-dns:dns -> 10.244.0.2:53" -j KUBE-SEP-DNS',
  ...EPS.flatMap((ip, i) => [
    `-A KUBE-SEP-${String(i)} -s ${ip}/32 -m comment --comment "${SVC}" -j KUBE-MARK-MASQ`,
    `-A KUBE-SEP-${String(i)} -p tcp -m comment --comment "${SVC}" -m tcp -j DNAT --to-destination ${ip}:8080`,
  ]),
  'COMMIT',
  '',
].join('\n');

const nat = () => {
  const t = buildRulesView('node-a', 'file', 'test', IPTABLES).tables.find((x) => x.name === 'nat');
  assert.ok(t);
  return t;
};

test('a Service with 3 endpoints: KUBE-SVC → 3 KUBE-SEP edges of 1/3 each', () => {
  const g = buildChainGraph(nat(), 'default/web');
  const branch = g.edges.filter((e) => e.from === 'KUBE-SVC-WEB' && e.to.startsWith('KUBE-SEP-'));
  assert.deepEqual(
    branch.map((e) => e.to),
    ['KUBE-SEP-0', 'KUBE-SEP-1', 'KUBE-SEP-2'],
  );
  for (const e of branch) assert.ok(Math.abs((e.share ?? 0) - 1 / 3) < 1e-6, `${e.id} ${e.share}`);
  assert.deepEqual(
    branch.map((e) => e.probability),
    [0.33333333349, 0.5, undefined],
  );
  assert.deepEqual(
    branch.map((e) => e.endpoint),
    EPS.map((ip) => `${ip}:8080`),
  );
  // The masquerade jump before the branch is not part of it.
  const masq = g.edges.find((e) => e.from === 'KUBE-SVC-WEB' && e.to === 'KUBE-MARK-MASQ');
  assert.equal(masq?.share, undefined);
  assert.ok(g.edges.some((e) => e.from === 'KUBE-SERVICES' && e.to === 'KUBE-SVC-WEB'));
});

test('the search scopes the graph; chains carry their Services and endpoints', () => {
  const g = buildChainGraph(nat(), 'default/web');
  const chains = g.nodes.map((n) => n.chain);
  assert.ok(!chains.includes('KUBE-SVC-DNS'), chains.join(' '));
  assert.ok(!chains.includes('PREROUTING'), chains.join(' '));
  const svc = g.nodes.find((n) => n.chain === 'KUBE-SVC-WEB');
  const sep = g.nodes.find((n) => n.chain === 'KUBE-SEP-1');
  assert.ok(svc && sep);
  assert.deepEqual(svc.services, [SVC]);
  assert.equal(svc.endpoints.length, 3);
  assert.deepEqual(sep.services, [SVC]);
  // Its endpoint from the KUBE-SVC rule that jumps to it.
  assert.deepEqual(sep.endpoints, [`${EPS[1] ?? ''}:8080`]);
  // A chain name is a search too.
  const dns = buildChainGraph(nat(), 'kube-svc-dns');
  assert.deepEqual(
    dns.edges.map((e) => `${e.from}>${e.to}`),
    ['KUBE-SERVICES>KUBE-SVC-DNS'],
  );
});

test('without a search every jump is an edge, up to the cap', () => {
  const all = buildChainGraph(nat(), '');
  assert.ok(all.edges.some((e) => e.from === 'PREROUTING'));
  assert.equal(all.omitted, 0);
  const capped = buildChainGraph(nat(), '', 3);
  assert.equal(capped.edges.length, 3);
  assert.equal(capped.omitted, all.edges.length - 3);
});

test('nft: a numgen vmap gives each endpoint chain 1/N', () => {
  const eps = EPS.map((_, i) => `endpoint-${String(i)}-default/web/tcp/http`);
  const nft = [
    'table ip kube-proxy {',
    '\tchain service-WEB-default/web/tcp/http {',
    `\t\tip daddr 10.96.0.20 tcp dport 3000 ip saddr != 10.244.0.0/16 jump mark-for-masquerade`,
    `\t\tnumgen random mod 3 vmap { ${eps.map((e, i) => `${String(i)} : goto ${e}`).join(', ')} }`,
    '\t}',
    '\tchain mark-for-masquerade {',
    '\t\tmeta mark set meta mark or 0x4000',
    '\t}',
    ...eps.flatMap((e, i) => [
      `\tchain ${e} {`,
      `\t\tip saddr ${EPS[i] ?? ''} jump mark-for-masquerade`,
      `\t\tmeta l4proto tcp dnat to ${EPS[i] ?? ''}:8080`,
      '\t}',
    ]),
    '}',
    '',
  ].join('\n');
  const t = buildRulesView('node-a', 'file', 'test', nft).tables[0];
  assert.ok(t);
  const g = buildChainGraph(t, 'default/web');
  const branch = g.edges.filter((e) => e.to.startsWith('endpoint-'));
  assert.deepEqual(
    branch.map((e) => e.to),
    eps,
  );
  for (const e of branch) {
    assert.equal(e.kind, 'goto');
    assert.ok(Math.abs((e.share ?? 0) - 1 / 3) < 1e-9);
  }
});

test('nft: an inline numgen dnat map gives each address a DNAT node of 1/N', () => {
  const nft = [
    'table ip kube-proxy {',
    '\tchain service-WEB-default/web/tcp/http {',
    `\t\tmeta l4proto tcp dnat ip to numgen random mod 3 map { ${EPS.map((ip, i) => `${String(i)} : ${ip} . 8080`).join(', ')} }`,
    '\t}',
    '}',
    '',
  ].join('\n');
  const t = buildRulesView('node-a', 'file', 'test', nft).tables[0];
  assert.ok(t);
  const g = buildChainGraph(t, 'default/web');
  assert.deepEqual(
    g.edges.map((e) => [e.to, e.kind, Math.round((e.share ?? 0) * 1000)]),
    EPS.map((ip) => [`DNAT ${ip}:8080`, 'dnat', 333]),
  );
  assert.deepEqual(
    g.nodes.filter((n) => n.kind === 'dnat').map((n) => n.endpoints),
    EPS.map((ip) => [`${ip}:8080`]),
  );
});
