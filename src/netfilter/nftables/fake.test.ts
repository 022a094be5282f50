import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { NftError, NftFake } from './fake.js';
import { parseTransaction } from './parse.js';

const T = { family: 'ip', table: 'kube-proxy' } as const;

const BASE = `
add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy services
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy reject-chain
add chain ip kube-proxy service-a
add set ip kube-proxy cluster-ips { type ipv4_addr ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy reject-chain reject
add element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 : goto service-a }
`;

function base(): NftFake {
  const f = new NftFake();
  f.runText(BASE);
  return f;
}

/** Runs `text` on a fresh base Fake; returns the error message (and checks atomicity). */
function refusal(text: string): string {
  const f = base();
  const before = f.dump();
  const last = f.lastTransaction;
  try {
    f.run(parseTransaction(text));
  } catch (e) {
    assert.ok(e instanceof NftError, String(e));
    assert.equal(e.code, 'NFT_FAILED');
    assert.equal(f.dump(), before, 'state changed by a refused transaction');
    assert.equal(f.lastTransaction, last);
    return e.message;
  }
  assert.fail(`accepted: ${text}`);
}

test('a refused transaction changes nothing, and the error names the operation', () => {
  const msg = refusal('add chain ip kube-proxy new-one\nadd rule ip kube-proxy nope drop');
  assert.equal(msg, 'operation 2 (add rule ip kube-proxy nope drop): no such chain "nope"');
});

test('references must exist', () => {
  const cases: readonly (readonly [string, RegExp])[] = [
    ['add chain ip other x', /no such table ip other/],
    ['add rule ip kube-proxy services jump missing', /no such chain "missing"/],
    ['add rule ip kube-proxy services goto nat-prerouting', /cannot jump to base chain/],
    ['add rule ip kube-proxy services ip daddr @nope drop', /no such set or map "nope"/],
    [
      'add rule ip kube-proxy services ip daddr vmap @cluster-ips',
      /"cluster-ips" is not a verdict map/,
    ],
    [
      'add rule ip kube-proxy services numgen random mod 1 vmap { 0 : goto gone }',
      /no such chain "gone"/,
    ],
    ['add rule ip kube-proxy services update @aff { ip saddr }', /no such set or map "aff"/],
    [
      'add element ip kube-proxy service-ips { 1.2.3.4 . tcp . 80 : goto gone }',
      /no such chain "gone"/,
    ],
    ['add element ip kube-proxy nope { 1.2.3.4 }', /no such set or map "nope"/],
  ];
  for (const [text, re] of cases) assert.match(refusal(text), re, text);
});

test('create refuses existing objects; delete refuses missing ones', () => {
  const cases: readonly (readonly [string, RegExp])[] = [
    ['create table ip kube-proxy', /table ip kube-proxy exists/],
    ['create chain ip kube-proxy services', /chain "services" exists/],
    ['create set ip kube-proxy cluster-ips { type ipv4_addr ; }', /set "cluster-ips" exists/],
    [
      'create element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 : goto service-a }',
      /exists/,
    ],
    ['delete chain ip kube-proxy gone', /no such chain "gone"/],
    ['delete set ip kube-proxy gone', /no such set or map "gone"/],
    [
      'delete element ip kube-proxy cluster-ips { 1.2.3.4 }',
      /no element \{ 1.2.3.4 \} in cluster-ips/,
    ],
    ['delete rule ip kube-proxy services handle 999', /no rule with handle 999/],
    ['delete table ip gone', /no such table ip gone/],
    ['add set ip kube-proxy cluster-ips { type ipv6_addr ; }', /exists with a different type/],
    [
      'add map ip kube-proxy cluster-ips { type ipv4_addr : verdict ; }',
      /exists with a different type/,
    ],
  ];
  for (const [text, re] of cases) assert.match(refusal(text), re, text);
});

test('chains in use cannot be deleted; flush, unreference, then delete works', () => {
  assert.match(refusal('delete chain ip kube-proxy reject-chain'), /"reject-chain" is not empty/);
  assert.match(
    refusal('flush chain ip kube-proxy services\ndelete chain ip kube-proxy services'),
    /referenced by a rule in chain nat-prerouting/,
  );
  assert.match(
    refusal('delete chain ip kube-proxy service-a'),
    /referenced by an element of map service-ips/,
  );
  assert.match(
    refusal('delete map ip kube-proxy service-ips'),
    /map "service-ips" is used by a rule in chain services/,
  );
  const f = base();
  f.runText(
    [
      'flush chain ip kube-proxy service-a',
      'delete element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 }',
      'delete chain ip kube-proxy service-a',
    ].join('\n'),
  );
  assert.equal(f.lastTransaction?.length, 3);
  assert.ok(!f.listChains(T).includes('service-a'));
});

test('references made or dropped earlier in the same transaction count', () => {
  const f = base();
  f.runText('add chain ip kube-proxy spare-1\nadd chain ip kube-proxy spare-2');
  // The first delete builds the reference index; later operations must keep it current.
  assert.match(
    refusal(
      [
        'add chain ip kube-proxy spare-3',
        'delete chain ip kube-proxy spare-3',
        'add rule ip kube-proxy services jump reject-chain',
        'flush chain ip kube-proxy reject-chain',
        'delete chain ip kube-proxy reject-chain',
      ].join('\n'),
    ),
    /operation 5 .*referenced by a rule in chain services/,
  );
  assert.match(
    refusal(
      [
        'add chain ip kube-proxy spare-3',
        'delete chain ip kube-proxy spare-3',
        'add element ip kube-proxy service-ips { 172.30.0.9 . udp . 53 : jump reject-chain }',
        'flush chain ip kube-proxy reject-chain',
        'delete chain ip kube-proxy reject-chain',
      ].join('\n'),
    ),
    /referenced by an element of map service-ips/,
  );
  f.runText(
    [
      'delete chain ip kube-proxy spare-1',
      'add rule ip kube-proxy services jump spare-2',
      'flush chain ip kube-proxy services',
      'delete chain ip kube-proxy spare-2',
      'flush map ip kube-proxy service-ips',
      'delete chain ip kube-proxy service-a',
    ].join('\n'),
  );
  assert.deepEqual(f.listChains(T), ['nat-prerouting', 'reject-chain', 'services']);
});

test('elements must fit their set type', () => {
  const cases: readonly (readonly [string, RegExp])[] = [
    [
      'add element ip kube-proxy service-ips { tcp . 80 : drop }',
      /has 2 parts; map service-ips has type ipv4_addr \. inet_proto \. inet_service/,
    ],
    [
      'add element ip kube-proxy service-ips { 1.2.3.4 . tcp . 70000 : drop }',
      /"70000" is not a valid inet_service/,
    ],
    [
      'add element ip kube-proxy service-ips { fd00::1 . tcp . 80 : drop }',
      /"fd00::1" is not a valid ipv4_addr/,
    ],
    [
      'add element ip kube-proxy service-ips { 1.2.3.4 . bogus . 80 : drop }',
      /not a valid inet_proto/,
    ],
    ['add element ip kube-proxy cluster-ips { 10.0.0.0/8 }', /not a valid ipv4_addr/],
    ['add element ip kube-proxy cluster-ips { 1.2.3.4 : drop }', /set cluster-ips takes no values/],
    [
      'add element ip kube-proxy service-ips { 1.2.3.4 . tcp . 80 }',
      /needs a value of type verdict/,
    ],
    ['add element ip kube-proxy service-ips { 1.2.3.4 . tcp . 80 : 10.0.0.1 }', /holds verdicts/],
    [
      'add element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 : drop }',
      /with a different value/,
    ],
  ];
  for (const [text, re] of cases) assert.match(refusal(text), re, text);
  const f = base();
  // Adding an identical element again is not an error (nft's `add`).
  f.runText('add element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 : goto service-a }');
  f.runText(
    'add set ip kube-proxy r { type ipv4_addr ; flags interval ; }\nadd element ip kube-proxy r { 10.0.0.0/8 }',
  );
  f.runText(
    'add map ip kube-proxy d { type inet_service : ipv4_addr . inet_service ; }\nadd element ip kube-proxy d { 80 : 10.0.0.1 . 8080 }',
  );
  assert.deepEqual(
    f.listElements(T, 'd').map((e) => e.value),
    [{ kind: 'data', parts: ['10.0.0.1', '8080'] }],
  );
});

test('rules get handles; insert, index, replace and delete place them', () => {
  const f = base();
  const handles = f.listRules(T, 'services').map((r) => r.handle);
  assert.equal(handles.length, 1);
  f.runText(
    [
      'insert rule ip kube-proxy services ip daddr @cluster-ips accept',
      'add rule ip kube-proxy services drop',
      'add rule ip kube-proxy services index 0 return',
    ].join('\n'),
  );
  const body = (): string[] =>
    f.listRules(T, 'services').map((r) => r.statements.map((s) => s.kind).join(','));
  assert.deepEqual(body(), ['match,verdict', 'verdict', 'vmap', 'verdict']);
  const rules = f.listRules(T, 'services');
  const dropHandle = rules[3]?.handle ?? 0;
  f.runText(`replace rule ip kube-proxy services handle ${String(dropHandle)} accept comment "x"`);
  assert.equal(f.listRules(T, 'services')[3]?.comment, 'x');
  assert.equal(f.listRules(T, 'services')[3]?.handle, dropHandle);
  f.runText(`delete rule ip kube-proxy services handle ${String(dropHandle)}`);
  assert.equal(f.listRules(T, 'services').length, 3);
  assert.equal(new Set(f.listRules(T, 'services').map((r) => r.handle)).size, 3);
});

test('flush empties; lists and lastTransaction report state', () => {
  const f = base();
  assert.deepEqual(f.listChains(T), ['nat-prerouting', 'reject-chain', 'service-a', 'services']);
  assert.deepEqual(f.listSets(T), ['cluster-ips']);
  assert.deepEqual(f.listSets(T, 'map'), ['service-ips']);
  f.runText('flush map ip kube-proxy service-ips\nflush chain ip kube-proxy services');
  assert.equal(f.lastTransaction?.length, 2);
  assert.deepEqual(f.listElements(T, 'service-ips'), []);
  assert.deepEqual(f.listRules(T, 'services'), []);
  assert.throws(
    () => f.listChains({ family: 'ip6', table: 'kube-proxy' }),
    (e: unknown) => e instanceof SvcnetError && e.code === 'NOT_FOUND',
  );
  assert.throws(() => f.listElements(T, 'gone'), /no such set or map gone/);
  f.runText('delete table ip kube-proxy');
  assert.equal(f.dump(), '');
});

test('load applies definitions before references, whatever the text order', () => {
  const f = new NftFake();
  f.load(
    [
      'add rule ip kube-proxy services jump later',
      'add element ip kube-proxy s { 10.0.0.1 }',
      'add chain ip kube-proxy later',
      'add set ip kube-proxy s { type ipv4_addr ; }',
      'add chain ip kube-proxy services',
      'add table ip kube-proxy',
    ].join('\n'),
  );
  assert.equal(f.lastTransaction, undefined);
  assert.deepEqual(f.listChains(T), ['later', 'services']);
  assert.equal(f.listElements(T, 's').length, 1);
});
