// Tests of the nftables apply side without a kernel: the Fake-backed backend, the cache-free
// encoding (same objects, fewer cache fetches; lines map back to operations), the split at
// regular chains, and the real backend's command lines, fallback and error naming through a
// scripted FakeExecer. The kernel itself is exercised by bench/nftables.bench.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../../os/exec.js';
import type { NftElement, NftRule, NftSet, Operation, Transaction } from './model.js';
import { parseTransaction } from './parse.js';
import { renderTransaction } from './render.js';
import { encodeFast, encodePlain, operationAt, setKey } from './apply-encode.js';
import { splitTransaction } from './apply-split.js';
import {
  FakeNftBackend,
  NftApplyError,
  RealNftBackend,
  locateNftError,
  nftFamilyOf,
} from './backend.js';

const T = { family: 'ip', table: 'kube-proxy' } as const;

const TX_TEXT = `add table ip kube-proxy { comment "rules for kube-proxy" ; }
add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy services
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy nat-prerouting jump services
add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.180.0.1 . 80 , 1 : 10.180.0.2 . 80 }
add chain ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80
flush chain ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80
add rule ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80 meta l4proto tcp dnat to 10.180.0.3:80
add element ip kube-proxy cluster-ips { 172.30.0.41 }
add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
add element ip kube-proxy cluster-ips { 172.30.0.42 }
add element ip kube-proxy service-ips { 172.30.0.42 . tcp . 80 : goto service-42NFTM6N-ns2/svc2/tcp/p80 }
`;

const tx = (): Operation[] => parseTransaction(TX_TEXT);

test('nftFamilyOf: ip for IPv4, ip6 for IPv6', () => {
  assert.equal(nftFamilyOf('IPv4'), 'ip');
  assert.equal(nftFamilyOf('IPv6'), 'ip6');
});

test('FakeNftBackend applies atomically, reads back with or without rules, deletes the table', async () => {
  const b = new FakeNftBackend();
  assert.ok((await b.apply(tx())) > 0);
  const full = await b.readTable(T);
  assert.equal(full?.chains.get('services')?.rules.length, 1);
  const light = await b.readTable(T, { rules: false });
  assert.equal(light?.chains.get('services')?.rules.length, 0);
  assert.equal(light.sets.get('service-ips')?.elements.size, 2);
  assert.match(await b.listRuleset(), /add chain ip kube-proxy services/);
  // A bad transaction names its operation and changes nothing.
  const bad: Transaction = [
    { verb: 'add', object: { ...T, kind: 'chain', name: 'x' } },
    { verb: 'add', object: { ...T, kind: 'rule', chain: 'nope', statements: [] } },
  ];
  await assert.rejects(b.apply(bad), (e: unknown) => {
    assert.ok(e instanceof NftApplyError);
    assert.equal(e.index, 1);
    assert.match(e.message, /operation 2 \(add rule ip kube-proxy nope/);
    return true;
  });
  assert.equal((await b.readTable(T))?.chains.has('x'), false);
  assert.equal(await b.deleteTable(T), true);
  assert.equal(await b.deleteTable(T), false);
  assert.equal((await b.availability()).ok, true);
});

test('encodeFast: rules go inside add chain, elements inside their set definition', () => {
  const enc = encodeFast(tx(), new Map());
  const lines = enc.text.trimEnd().split('\n');
  assert.ok(
    lines.includes(
      'add chain ip kube-proxy services { ip daddr . meta l4proto . th dport vmap @service-ips ; }',
    ),
  );
  assert.ok(lines.includes('add chain ip kube-proxy nat-prerouting { jump services ; }'));
  assert.ok(
    lines.includes(
      'add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; elements = { 172.30.0.41, 172.30.0.42 } ; }',
    ),
  );
  assert.ok(
    lines.some((l) =>
      l.startsWith(
        'add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; elements = { 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80, 172.30.0.42',
      ),
    ),
  );
  // Nothing left that makes nft 1.0.6 fetch its cache.
  assert.ok(lines.every((l) => !l.startsWith('add rule') && !l.startsWith('add element')));
  assert.equal(enc.lines.length, lines.length);
  // The grouped element line maps columns back to each element's operation.
  const k = lines.findIndex(
    (l) => l.startsWith('add set ip kube-proxy cluster-ips') && l.includes('elements'),
  );
  const line = lines[k] ?? '';
  assert.equal(operationAt(enc, k + 1, line.indexOf('172.30.0.42') + 1), 15);
  assert.equal(operationAt(enc, k + 1, line.indexOf('172.30.0.41') + 1), 13);
});

test('encodeFast: a rule naming a set not declared in the transaction', () => {
  const rule: NftRule = {
    ...T,
    kind: 'rule',
    chain: 'services',
    statements: [
      {
        kind: 'match',
        left: { kind: 'payload', base: 'ip', field: 'daddr' },
        op: '==',
        right: { kind: 'setref', name: 'cluster-ips' },
      },
      { kind: 'verdict', verdict: { kind: 'accept' } },
    ],
  };
  const one: Transaction = [{ verb: 'add', object: rule }];
  // Definition unknown: the plain line (nft must fetch the set).
  assert.equal(
    encodeFast(one, new Map()).text,
    'add rule ip kube-proxy services ip daddr @cluster-ips accept\n',
  );
  // Known: re-declared first, then the chain form.
  const def: NftSet = { ...T, kind: 'set', name: 'cluster-ips', keyType: ['ipv4_addr'] };
  const known = new Map([[setKey(T, 'cluster-ips'), def]]);
  assert.equal(
    encodeFast(one, known).text,
    'add set ip kube-proxy cluster-ips { type ipv4_addr ; }\n' +
      'add chain ip kube-proxy services { ip daddr @cluster-ips accept ; }\n',
  );
});

test('encodeFast: deletes grouped per set; interval sets and unknown sets stay plain', () => {
  const el = (set: string, key: string[]): NftElement => ({ ...T, kind: 'element', set, key });
  const ops: Transaction = [
    { verb: 'delete', object: el('cluster-ips', ['172.30.0.41']) },
    { verb: 'delete', object: el('cluster-ips', ['172.30.0.42']) },
    { verb: 'add', object: el('ranges', ['10.0.0.0/8']) },
    { verb: 'add', object: el('mystery', ['1.2.3.4']) },
  ];
  const ranges: NftSet = {
    ...T,
    kind: 'set',
    name: 'ranges',
    keyType: ['ipv4_addr'],
    flags: ['interval'],
  };
  const enc = encodeFast(ops, new Map([[setKey(T, 'ranges'), ranges]]));
  assert.equal(
    enc.text,
    'delete element ip kube-proxy cluster-ips { 172.30.0.41, 172.30.0.42 }\n' +
      'add element ip kube-proxy ranges { 10.0.0.0/8 }\n' +
      'add element ip kube-proxy mystery { 1.2.3.4 }\n',
  );
});

test('encodePlain is the renderer text, one operation per line', () => {
  const enc = encodePlain(tx());
  assert.equal(enc.text, renderTransaction(tx()));
  assert.deepEqual(enc.lines[3], { ops: [3] });
});

test('splitTransaction cuts only before a regular chain once a part is full', () => {
  const chain = (name: string, hook?: boolean): Operation => ({
    verb: 'add',
    object: {
      ...T,
      kind: 'chain',
      name,
      ...(hook === true ? { type: 'nat', hook: 'prerouting', priority: -100 } : {}),
    },
  });
  const flush = (name: string): Operation => ({
    verb: 'flush',
    object: { ...T, kind: 'chain', name },
  });
  const ops = [
    chain('base', true),
    chain('a'),
    flush('a'),
    chain('b'),
    flush('b'),
    chain('c'),
    flush('c'),
  ];
  const parts = splitTransaction(ops, 2);
  assert.deepEqual(
    parts.map((p) => [p.start, p.ops.length]),
    [
      [0, 3],
      [3, 2],
      [5, 2],
    ],
  );
  assert.equal(splitTransaction(ops, 100).length, 1);
});

test('locateNftError reads nft -f - locations', () => {
  assert.deepEqual(
    locateNftError(
      '/dev/stdin:2:25-31: Error: Could not process rule: No such file or directory\nadd chain …\n',
    ),
    { line: 2, column: 25, message: 'Could not process rule: No such file or directory' },
  );
  assert.equal(locateNftError('Error: syntax error'), undefined);
});

test('RealNftBackend: the fast text first; a refusal retries plain and names the operation', async () => {
  const ops = tx();
  const fast = encodeFast(ops, new Map()).text;
  const ex = new FakeExecer().expect(
    {
      cmd: 'nft',
      args: ['-f', '-'],
      check: (r) => {
        assert.equal(r.stdin, fast);
      },
      result: {
        code: 1,
        stderr: '/dev/stdin:9:30-40: Error: Could not process rule: File exists\n',
      },
    },
    {
      cmd: 'nft',
      args: ['-f', '-'],
      check: (r) => {
        assert.equal(r.stdin, renderTransaction(ops));
      },
      result: {
        code: 1,
        stderr: '/dev/stdin:14:41-51: Error: Could not process rule: File exists\n',
      },
    },
  );
  const b = new RealNftBackend(ex, 'IPv4');
  await assert.rejects(b.apply(ops), (e: unknown) => {
    assert.ok(e instanceof NftApplyError);
    assert.equal(e.index, 13);
    assert.equal(e.line, 14);
    assert.match(
      e.message,
      /operation 14 \(add element ip kube-proxy cluster-ips \{ 172\.30\.0\.41 \}\): Could not process rule: File exists/,
    );
    return true;
  });
  ex.verify();
});

test('RealNftBackend: a split apply runs each part; known definitions carry over', async () => {
  const ops = tx();
  const ex = new FakeExecer();
  for (let k = 0; k < 3; k++) ex.expect({ cmd: 'nft', args: ['-f', '-'] });
  const b = new RealNftBackend(ex, 'IPv4', { partOps: 4 });
  await b.apply(ops, { split: true });
  assert.equal(ex.calls.length, 3);
  // The last part's elements are written inside the definitions learnt from part 1.
  assert.match(
    String(ex.calls[2]?.stdin),
    /^add set ip kube-proxy cluster-ips \{ type ipv4_addr ; comment "Active ClusterIPs" ; elements = /m,
  );
  ex.verify();
});

test('RealNftBackend: readTable without rules lists chains, named sets, and elements of non-dynamic sets', async () => {
  const chains =
    'table ip kube-proxy {\n\tchain services {\n\t}\n\tchain service-X-ns/s/tcp/p {\n\t}\n}\ntable ip other {\n\tchain c {\n\t}\n}\n';
  const sets =
    'table ip kube-proxy {\n\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\tcomment "Active ClusterIPs"\n\t}\n\tset affinity-X {\n\t\ttype ipv4_addr\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n\t}\n}\n';
  const maps = 'table ip kube-proxy {\n}\n';
  const listed =
    'table ip kube-proxy {\n\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\tcomment "Active ClusterIPs"\n\t\telements = { 172.30.0.41, 172.30.0.42 }\n\t}\n}\n';
  const ex = new FakeExecer().expect(
    { cmd: 'nft', args: ['list', 'chains', 'ip'], result: { stdout: chains } },
    { cmd: 'nft', args: ['-t', 'list', 'sets', 'ip'], result: { stdout: sets } },
    { cmd: 'nft', args: ['-t', 'list', 'maps', 'ip'], result: { stdout: maps } },
    {
      cmd: 'nft',
      args: ['list', 'set', 'ip', 'kube-proxy', 'cluster-ips'],
      result: { stdout: listed },
    },
  );
  const t = await new RealNftBackend(ex, 'IPv4').readTable(T, { rules: false });
  assert.deepEqual([...(t?.chains.keys() ?? [])], ['services', 'service-X-ns/s/tcp/p']);
  assert.equal(t?.sets.get('cluster-ips')?.elements.size, 2);
  assert.deepEqual(t.sets.get('affinity-X')?.set.flags, ['dynamic', 'timeout']);
  ex.verify();
});

test('RealNftBackend: missing table reads as undefined; delete of a missing table is false; availability', async () => {
  const missing = { code: 1, stderr: 'Error: No such file or directory\n' };
  const ex = new FakeExecer().expect(
    { cmd: 'nft', args: ['list', 'table', 'ip', 'kube-proxy'], result: missing },
    { cmd: 'nft', args: ['delete', 'table', 'ip', 'kube-proxy'], result: missing },
    { cmd: 'nft', args: ['--version'], result: { stdout: 'nftables v1.0.6 (Lester Gooch #5)\n' } },
    {
      cmd: 'nft',
      args: ['list', 'tables'],
      result: { code: 1, stderr: 'Error: Operation not permitted\n' },
    },
  );
  const b = new RealNftBackend(ex, 'IPv4');
  assert.equal(await b.readTable(T), undefined);
  assert.equal(await b.deleteTable(T), false);
  const a = await b.availability();
  assert.equal(a.ok, false);
  assert.equal(a.version, '1.0.6');
  assert.match(a.reason ?? '', /Operation not permitted/);
  ex.verify();
});
