import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { Operation } from './model.js';
import { parseTransaction } from './parse.js';
import { dump, renderOperation, renderTransaction, sortTransactionText } from './render.js';
import { NftFake } from './fake.js';
import { fixtureTexts, nftFixtureDir } from './testing.js';

test('every add line of every fixture text parses and renders back identically', (t) => {
  if (!existsSync(nftFixtureDir)) {
    t.skip(`fixtures not found at ${nftFixtureDir}`);
    return;
  }
  const texts = fixtureTexts();
  assert.ok(texts.length >= 16, `only ${String(texts.length)} texts`);
  let count = 0;
  for (const { name, text } of texts) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('add ')) continue;
      const ops = parseTransaction(line);
      assert.equal(ops.length, 1, `${name}: ${line}`);
      const [op] = ops as [Operation];
      assert.equal(renderOperation(op), line, name);
      count++;
    }
  }
  assert.ok(count > 1000, `only ${String(count)} lines`);
});

test('the Fake dump of each fixture ruleset equals the fixture in nft-sorted order', (t) => {
  if (!existsSync(nftFixtureDir)) {
    t.skip(`fixtures not found at ${nftFixtureDir}`);
    return;
  }
  for (const { name, text } of fixtureTexts()) {
    const fake = new NftFake();
    fake.load(text);
    assert.equal(sortTransactionText(fake.dump()), sortTransactionText(text), name);
  }
});

const T = { family: 'ip', table: 'kube-proxy' } as const;

test('renderOperation writes each verb as knftables does', () => {
  const cases: readonly (readonly [Operation, string])[] = [
    [
      { verb: 'add', object: { kind: 'table', ...T, comment: 'rules for kube-proxy' } },
      'add table ip kube-proxy { comment "rules for kube-proxy" ; }',
    ],
    [
      { verb: 'delete', object: { kind: 'table', ...T, comment: 'x' } },
      'delete table ip kube-proxy',
    ],
    [
      {
        verb: 'add',
        object: {
          kind: 'chain',
          ...T,
          name: 'filter-input',
          type: 'filter',
          hook: 'input',
          priority: 0,
        },
      },
      'add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }',
    ],
    [
      { verb: 'flush', object: { kind: 'chain', ...T, name: 'services' } },
      'flush chain ip kube-proxy services',
    ],
    [
      { verb: 'create', object: { kind: 'chain', ...T, name: 'x' } },
      'create chain ip kube-proxy x',
    ],
    [
      {
        verb: 'add',
        object: {
          kind: 'set',
          ...T,
          name: 'aff',
          keyType: ['ipv4_addr'],
          flags: ['dynamic', 'timeout'],
          timeoutSeconds: 10800,
        },
      },
      'add set ip kube-proxy aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
    ],
    [
      { verb: 'delete', object: { kind: 'set', ...T, name: 'aff', keyType: [] } },
      'delete set ip kube-proxy aff',
    ],
    [
      {
        verb: 'add',
        object: {
          kind: 'map',
          ...T,
          name: 'service-nodeports',
          keyType: ['inet_proto', 'inet_service'],
          valueType: ['verdict'],
          comment: 'NodePort traffic',
        },
      },
      'add map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }',
    ],
    [
      {
        verb: 'add',
        object: {
          kind: 'element',
          ...T,
          set: 'no-endpoint-services',
          key: ['172.30.0.46', 'tcp', '80'],
          comment: 'ns6/svc6:p80',
          value: { kind: 'goto', chain: 'reject-chain' },
        },
      },
      'add element ip kube-proxy no-endpoint-services { 172.30.0.46 . tcp . 80 comment "ns6/svc6:p80" : goto reject-chain }',
    ],
    [
      {
        verb: 'delete',
        object: {
          kind: 'element',
          ...T,
          set: 's',
          key: ['1.2.3.4', 'tcp', '80'],
          value: { kind: 'drop' },
        },
      },
      'delete element ip kube-proxy s { 1.2.3.4 . tcp . 80 }',
    ],
    [
      {
        verb: 'insert',
        object: {
          kind: 'rule',
          ...T,
          chain: 'c',
          statements: [{ kind: 'verdict', verdict: { kind: 'drop' } }],
          index: 0,
        },
      },
      'insert rule ip kube-proxy c index 0 drop',
    ],
    [
      {
        verb: 'replace',
        object: {
          kind: 'rule',
          ...T,
          chain: 'c',
          statements: [{ kind: 'verdict', verdict: { kind: 'accept' } }],
          comment: 'x',
          handle: 7,
        },
      },
      'replace rule ip kube-proxy c handle 7 accept comment "x"',
    ],
    [
      { verb: 'delete', object: { kind: 'rule', ...T, chain: 'c', statements: [], handle: 7 } },
      'delete rule ip kube-proxy c handle 7',
    ],
  ];
  for (const [op, line] of cases) {
    assert.equal(renderOperation(op), line);
    assert.equal(renderOperation(parseTransaction(line)[0] as Operation), line, line);
  }
  assert.equal(
    renderTransaction(cases.slice(0, 2).map(([op]) => op)),
    `${cases[0]?.[1] ?? ''}\ndelete table ip kube-proxy\n`,
  );
});

test('sortTransactionText orders by type, then name, keeping rule order within a chain', () => {
  const text = [
    '# comment',
    'add element ip kube-proxy cluster-ips { 172.30.0.42 }',
    'add rule ip kube-proxy services b',
    '',
    'add element ip kube-proxy cluster-ips { 172.30.0.41 }',
    'add map ip kube-proxy m { type ipv4_addr : verdict ; }',
    'add rule ip kube-proxy alpha z',
    'add rule ip kube-proxy services a',
    'add set ip kube-proxy s { type ipv4_addr ; }',
    'add chain ip kube-proxy services',
    'add table ip kube-proxy',
  ].join('\n');
  assert.equal(
    sortTransactionText(text),
    [
      'add table ip kube-proxy',
      'add chain ip kube-proxy services',
      'add rule ip kube-proxy alpha z',
      'add rule ip kube-proxy services b',
      'add rule ip kube-proxy services a',
      'add set ip kube-proxy s { type ipv4_addr ; }',
      'add map ip kube-proxy m { type ipv4_addr : verdict ; }',
      'add element ip kube-proxy cluster-ips { 172.30.0.41 }',
      'add element ip kube-proxy cluster-ips { 172.30.0.42 }',
      '',
    ].join('\n'),
  );
});

test('dump prints the table, sorted definitions, rules per chain, then elements', () => {
  const fake = new NftFake();
  fake.runText(
    [
      'add table ip kube-proxy',
      'add chain ip kube-proxy zeta',
      'add chain ip kube-proxy alpha',
      'add map ip kube-proxy m { type ipv4_addr : verdict ; }',
      'add set ip kube-proxy s { type ipv4_addr ; }',
      'add rule ip kube-proxy zeta ip daddr @s drop',
      'add rule ip kube-proxy alpha ip daddr vmap @m',
      'add element ip kube-proxy m { 10.0.0.1 : goto zeta }',
      'add element ip kube-proxy s { 10.0.0.2 }',
    ].join('\n'),
  );
  assert.equal(
    dump(fake.ruleset()),
    [
      'add table ip kube-proxy',
      'add chain ip kube-proxy alpha',
      'add chain ip kube-proxy zeta',
      'add set ip kube-proxy s { type ipv4_addr ; }',
      'add map ip kube-proxy m { type ipv4_addr : verdict ; }',
      'add rule ip kube-proxy alpha ip daddr vmap @m',
      'add rule ip kube-proxy zeta ip daddr @s drop',
      'add element ip kube-proxy s { 10.0.0.2 }',
      'add element ip kube-proxy m { 10.0.0.1 : goto zeta }',
      '',
    ].join('\n'),
  );
});
