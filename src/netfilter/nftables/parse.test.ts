import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcnetError } from '../../errors.js';
import { canonicalRuleset } from './compare.js';
import { NftFake } from './fake.js';
import { detectFormat, parseRuleset, parseTransaction } from './parse.js';
import { dump } from './render.js';
import { fixtureText } from './testing.js';

const here = dirname(fileURLToPath(import.meta.url));
/** `nft -a list ruleset` from nft 1.0.6 after loading TestOverallNFTablesRules' ruleset. */
const kernelDump = readFileSync(join(here, 'testdata', 'overall-kernel.nft'), 'utf8');

test('a kernel dump parses to the same state as the text that was loaded', (t) => {
  const text = fixtureText('TestOverallNFTablesRules', 'expectRuleset');
  if (text === undefined) {
    t.skip('fixtures not found');
    return;
  }
  const fake = new NftFake();
  fake.load(text);
  const fromKernel = parseRuleset(kernelDump);
  assert.deepEqual(canonicalRuleset(fromKernel), canonicalRuleset(fake.ruleset()));
});

test('parseRuleset reads symbolic priorities, handles, multi-line elements and timeouts', () => {
  const rs = parseRuleset(kernelDump);
  const t = rs.tables.get('ip kube-proxy');
  assert.ok(t !== undefined);
  assert.equal(t.table.comment, 'rules for kube-proxy');
  const pre = t.chains.get('filter-prerouting-pre-dnat');
  assert.deepEqual(pre?.chain, {
    kind: 'chain',
    family: 'ip',
    table: 'kube-proxy',
    name: 'filter-prerouting-pre-dnat',
    type: 'filter',
    hook: 'prerouting',
    priority: -110,
  });
  assert.equal(t.chains.get('nat-postrouting')?.chain.priority, 100);
  assert.equal(t.chains.get('nat-prerouting')?.chain.priority, -100);
  assert.equal(t.chains.get('masquerading')?.rules[0]?.handle, 47);
  assert.equal(t.sets.get('cluster-ips')?.elements.size, 6);
  assert.equal(t.sets.get('service-ips')?.elements.size, 9);
  const aff = [...t.sets.values()].find((s) => s.set.name.startsWith('affinity-'))?.set;
  assert.deepEqual(aff?.flags, ['dynamic', 'timeout']);
  assert.equal(aff.timeoutSeconds, 10800);
  assert.deepEqual(t.sets.get('no-endpoint-services')?.elements.get('172.30.0.46 . tcp . 80'), {
    kind: 'element',
    family: 'ip',
    table: 'kube-proxy',
    set: 'no-endpoint-services',
    key: ['172.30.0.46', 'tcp', '80'],
    comment: 'ns6/svc6:p80',
    value: { kind: 'goto', chain: 'reject-chain' },
  });
});

test('parseRuleset tolerates what kube-proxy never writes', () => {
  const text = `table inet filter {
	counter c1 {
		packets 0 bytes 0
	}
	set allowed {
		type ipv4_addr
		flags interval
		auto-merge
		elements = { 10.0.0.0/8, 192.168.1.1-192.168.1.9 }
	}
	chain input {
		type filter hook input priority filter + 5; policy drop;
		ct state established,related accept
		iifname "lo" counter packets 10 bytes 840 accept
		tcp flags syn limit rate 10/second accept
		ip saddr @allowed tcp dport { 22, 80 } accept
	}
}
table ip6 nat {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth0" masquerade
	}
}
`;
  const rs = parseRuleset(text);
  const input = rs.tables.get('inet filter')?.chains.get('input');
  assert.equal(input?.chain.priority, 5);
  assert.equal(input.chain.policy, 'drop');
  assert.equal(input.rules.length, 4);
  assert.equal(input.rules[2]?.statements[0]?.kind, 'unsupported');
  assert.deepEqual(
    [...(rs.tables.get('inet filter')?.sets.get('allowed')?.elements.keys() ?? [])],
    ['10.0.0.0/8', '192.168.1.1-192.168.1.9'],
  );
  assert.equal(rs.tables.get('ip6 nat')?.chains.get('post')?.chain.policy, undefined);
  assert.match(
    dump(rs),
    /add rule inet filter input ip saddr @allowed tcp dport \{ 22 , 80 \} accept/,
  );
});

test('parseTransaction reads commands spanning lines and one op per element', () => {
  const ops = parseTransaction(
    [
      'add table ip t',
      'add set ip t s {',
      '  type ipv4_addr . inet_service',
      '  flags interval',
      '  elements = { 10.0.0.0/8 . 80, 10.1.0.0/16 . 443 }',
      '}',
      'add element ip t s { 1.2.3.4 . 1, 5.6.7.8 . 2 } ; flush set ip t s',
      'delete rule ip t c handle 4',
      'insert rule ip t c position 3 accept',
    ].join('\n'),
  );
  assert.deepEqual(
    ops.map((o) => `${o.verb} ${o.object.kind}`),
    [
      'add table',
      'add set',
      'add element',
      'add element',
      'add element',
      'add element',
      'flush set',
      'delete rule',
      'insert rule',
    ],
  );
  const last = ops.at(-1)?.object;
  assert.equal(last?.kind === 'rule' ? last.handle : undefined, 3);
});

test('parseTransaction errors name the line', () => {
  const cases: readonly (readonly [string, RegExp])[] = [
    ['add table ip t\n\nad chain ip t c', /^line 3: unknown command "ad"/],
    ['add table ip t\nadd widget ip t w', /^line 2: unknown object "widget" after add/],
    ['add chain ip', /^line 1: missing table name/],
    ['add element ip t s { 1.2.3.4', /^line 1: malformed element list/],
    ['delete rule ip t c', /^line 1: delete rule needs a handle/],
    ['add table ip t }', /^line 1: unexpected '}'/],
  ];
  for (const [text, re] of cases) {
    assert.throws(
      () => parseTransaction(text),
      (e: unknown) => e instanceof SvcnetError && e.code === 'INVALID_INPUT' && re.test(e.message),
      text,
    );
  }
});

test('detectFormat tells the forms apart', () => {
  assert.equal(detectFormat(kernelDump), 'nft-ruleset');
  assert.equal(detectFormat('\n# x\nadd table ip kube-proxy\n'), 'nft-transaction');
  assert.equal(detectFormat('flush chain ip t c'), 'nft-transaction');
  assert.equal(detectFormat('# Generated by iptables-save v1.8.9\n*nat\n'), 'iptables-save');
  assert.equal(detectFormat('*filter\n:INPUT ACCEPT [0:0]\n'), 'iptables-save');
  assert.equal(detectFormat('hello'), 'unknown');
  assert.equal(detectFormat(''), 'unknown');
});
