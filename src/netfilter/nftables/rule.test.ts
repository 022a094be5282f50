import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Statement } from './model.js';
import {
  canonicalStatements,
  parseRuleBody,
  parseStatements,
  renderRule,
  renderStatements,
} from './rule.js';
import { fixtureTexts, nftFixtureDir } from './testing.js';

/** Every distinct `add rule` line of the kube-proxy nftables fixtures. */
function ruleLines(): string[] {
  const lines = new Set<string>();
  for (const { text } of fixtureTexts())
    for (const l of text.split('\n')) if (l.startsWith('add rule ')) lines.add(l);
  return [...lines];
}

test('every fixture rule body parses and renders back to the same text', (t) => {
  if (!existsSync(nftFixtureDir)) {
    t.skip(`fixtures not found at ${nftFixtureDir}`);
    return;
  }
  const lines = ruleLines();
  assert.ok(lines.length >= 40, `only ${String(lines.length)} rule lines found`);
  for (const line of lines) {
    const body = line.split(' ').slice(5).join(' ');
    const parsed = parseRuleBody(body);
    const unknown = parsed.statements.filter((s) => s.kind === 'unsupported');
    assert.deepEqual(unknown, [], line);
    assert.equal(renderRule({ ...parsed, family: 'ip' }), body, line);
  }
});

test('kube-proxy shapes parse to the expected statements', () => {
  assert.deepEqual(parseRuleBody('ip daddr . meta l4proto . th dport vmap @service-ips'), {
    statements: [
      {
        kind: 'vmap',
        key: {
          kind: 'concat',
          parts: [
            { kind: 'payload', base: 'ip', field: 'daddr' },
            { kind: 'meta', key: 'l4proto' },
            { kind: 'payload', base: 'th', field: 'dport' },
          ],
        },
        map: { kind: 'setref', name: 'service-ips' },
      },
    ],
  });
  assert.deepEqual(parseStatements('meta l4proto tcp dnat to [fd00::1]:80'), [
    {
      kind: 'match',
      left: { kind: 'meta', key: 'l4proto' },
      op: '==',
      right: { kind: 'value', value: 'tcp' },
    },
    {
      kind: 'nat',
      type: 'dnat',
      addrPort: false,
      to: { kind: 'address', addr: 'fd00::1', port: 80 },
    },
  ]);
  assert.deepEqual(parseRuleBody('ip daddr @cluster-ips reject comment "a b"'), {
    statements: [
      {
        kind: 'match',
        left: { kind: 'payload', base: 'ip', field: 'daddr' },
        op: '==',
        right: { kind: 'setref', name: 'cluster-ips' },
      },
      { kind: 'verdict', verdict: { kind: 'reject' } },
    ],
    comment: 'a b',
  });
});

/** What nft 1.0.6 prints (nft list ruleset) → what kube-proxy writes. */
const KERNEL_FORMS: readonly (readonly [string, string])[] = [
  [
    'meta mark & 0x00004000 != 0x00000000 meta mark set meta mark ^ 0x00004000 masquerade fully-random # handle 47',
    'mark and 0x4000 != 0 mark set mark xor 0x4000 masquerade fully-random',
  ],
  [
    'ip daddr @cluster-ips ip saddr != 10.0.0.0/8 meta mark set meta mark | 0x00004000 comment "masquerade clusterIP traffic from outside cluster" # handle 54',
    'ip daddr @cluster-ips ip saddr != 10.0.0.0/8 mark set mark or 0x4000 comment "masquerade clusterIP traffic from outside cluster"',
  ],
  [
    'meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.180.0.4 . 80, 1 : 10.180.0.5 . 80 } # handle 70',
    'meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.180.0.4 . 80 , 1 : 10.180.0.5 . 80 }',
  ],
  [
    'numgen random mod 2 vmap {\n\t\t\t0 : goto endpoint-a,\n\t\t\t1 : goto endpoint-b }',
    'numgen random mod 2 vmap { 0 : goto endpoint-a , 1 : goto endpoint-b }',
  ],
  ['counter packets 12 bytes 3400 jump services # handle 3', 'counter jump services'],
  ['tcp dport { 80, 443 } accept', 'tcp dport { 80 , 443 } accept'],
  ['ct state established,related accept', 'ct state established,related accept'],
  ['fib daddr . iif type local return', 'fib daddr . iif type local return'],
  ['update @affinity-x { ip6 saddr }', 'update @affinity-x { ip6 saddr }'],
  ['iifname "eth0" log prefix "x y" drop', 'iifname "eth0" log prefix "x y" drop'],
];

test('kernel-printed forms parse to what we render', () => {
  for (const [printed, ours] of KERNEL_FORMS) {
    const parsed = parseRuleBody(printed);
    assert.equal(renderRule({ ...parsed, family: 'ip' }), ours, printed);
    assert.deepEqual(parsed.statements, parseStatements(ours), printed);
  }
  assert.equal(parseRuleBody('jump services # handle 3').handle, 3);
});

test('a single-item anonymous set and the bare value are the same canonically', () => {
  const braced = parseStatements('ip daddr { 172.30.0.0/16 } drop');
  const bare = parseStatements('ip daddr 172.30.0.0/16 drop');
  assert.notDeepEqual(braced, bare);
  assert.deepEqual(canonicalStatements(braced), bare);
  assert.equal(renderStatements(braced), 'ip daddr { 172.30.0.0/16 } drop');
  // What nft sorts or prints as its default also folds.
  const pairs: readonly (readonly [string, string])[] = [
    [
      'ip saddr != { 192.168.0.0/16 , 10.0.0.0/8 } drop',
      'ip saddr != { 10.0.0.0/8, 192.168.0.0/16 } drop',
    ],
    ['ct state new,established accept', 'ct state established,new accept'],
    ['ct state { new } accept', 'ct state new accept'],
    ['reject with icmp type port-unreachable', 'reject'],
    ['reject with icmpv6 port-unreachable', 'reject'],
  ];
  for (const [ours, printed] of pairs) {
    assert.deepEqual(
      canonicalStatements(parseStatements(ours)),
      canonicalStatements(parseStatements(printed)),
      ours,
    );
  }
  assert.notDeepEqual(
    canonicalStatements(parseStatements('reject with tcp reset')),
    canonicalStatements(parseStatements('reject')),
  );
});

test('unknown syntax is kept word for word and never throws', () => {
  const cases = [
    'tcp flags & (syn|ack) == syn limit rate 10/second accept',
    'queue num 1',
    '{ } , : . @ "unterminated',
    '',
    'dnat to',
    'ip saddr',
  ];
  for (const text of cases) {
    const stmts: Statement[] = parseStatements(text);
    assert.equal(renderStatements(stmts), text.trim(), text);
  }
  assert.deepEqual(parseStatements('tcp flags syn accept'), [
    { kind: 'unsupported', text: 'tcp flags syn' },
    { kind: 'verdict', verdict: { kind: 'accept' } },
  ]);
});
