import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../../../test/conformance/harness.js';
import { SvcnetError } from '../../errors.js';
import { checkEntry } from './entry.js';
import { FakeIpset, IpsetError } from './fake.js';
import { defaultIpsetOptions, isIpsetType, type IpsetSet, type IpsetType } from './model.js';
import { parseRestore, parseSave } from './parse.js';
import { renderRestore, renderSave, type IpsetOperation } from './render.js';

const DIR = join(fixturesDir(), 'kube-proxy', 'ipvs');

function readJson(file: string): unknown {
  const path = join(DIR, file);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as unknown) : undefined;
}

function newSet(name: string, type: IpsetType, family: 'inet' | 'inet6' = 'inet'): IpsetSet {
  return {
    name,
    type,
    ...(type === 'bitmap:port' ? {} : { family }),
    options: defaultIpsetOptions(type),
    entries: [],
  };
}

/** Captured from ipset v7.17 in a private network namespace. */
const REAL_SAVE = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x50096c94
add KUBE-CLUSTER-IP 10.0.0.1,tcp:80 comment "hi there"
create P bitmap:port range 0-65535
add P 3001
create L hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0xe6eb39a6
add L fd00::1,tcp:80,fd00::1
create N hash:ip,port,net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0xbda8de5a
add N 1.2.3.4,sctp:53,10.0.0.1
add N 1.2.3.4,udp:53,10.0.0.0/8
`;

test('real ipset 7 save output parses, restores into the Fake and saves back canonically', () => {
  const sets = parseSave(REAL_SAVE);
  assert.deepEqual([...sets.keys()], ['KUBE-CLUSTER-IP', 'P', 'L', 'N']);
  assert.deepEqual(sets.get('KUBE-CLUSTER-IP')?.entries, [
    { value: '10.0.0.1,tcp:80', comment: 'hi there' },
  ]);
  const fake = new FakeIpset();
  fake.restore(REAL_SAVE);
  const saved = fake.save();
  assert.equal(
    saved,
    'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 comment\n' +
      'add KUBE-CLUSTER-IP 10.0.0.1,tcp:80 comment "hi there"\n' +
      'create L hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536\n' +
      'add L fd00::1,tcp:80,fd00::1\n' +
      'create N hash:ip,port,net family inet hashsize 1024 maxelem 65536\n' +
      'add N 1.2.3.4,sctp:53,10.0.0.1\n' +
      'add N 1.2.3.4,udp:53,10.0.0.0/8\n' +
      'create P bitmap:port range 0-65535\n' +
      'add P 3001\n',
  );
  assert.equal(renderSave(parseSave(saved)), saved);
});

test('restore verbs render and parse both ways', () => {
  const ops: IpsetOperation[] = [
    { verb: 'create', set: newSet('KUBE-6-LOOP-BACK', 'hash:ip,port,ip', 'inet6'), exist: true },
    {
      verb: 'add',
      name: 'KUBE-6-LOOP-BACK',
      entry: { value: 'fd00::1,tcp:80,fd00::1' },
      exist: true,
    },
    { verb: 'del', name: 'KUBE-6-LOOP-BACK', entry: { value: 'fd00::1,tcp:80,fd00::1' } },
    { verb: 'flush', name: 'KUBE-6-LOOP-BACK' },
    { verb: 'swap', name: 'A', other: 'B' },
    { verb: 'destroy', name: 'A' },
    { verb: 'destroy' },
  ];
  const text = renderRestore(ops);
  assert.equal(
    text.split('\n')[0],
    'create KUBE-6-LOOP-BACK hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536 -exist',
  );
  assert.deepEqual(parseRestore(text), ops);
  assert.throws(
    () => parseRestore('create X hash:foo\n'),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'INVALID_INPUT' &&
      /line 1: unsupported set type/.test(e.message),
  );
  assert.throws(() => parseRestore('add X "unterminated\n'), /unterminated/);
  assert.throws(() => parseSave('add X 1\n'), /before its create line/);
});

test('every set of ipvs-reference.json accepts its example entry (and its IPv6 name fits)', (t) => {
  const ref = readJson('ipvs-reference.json') as
    | { ipsets: { sets: { name: string; type: string; ipv6Name: string; example: string }[] } }
    | undefined;
  if (!ref) {
    t.skip('fixtures absent');
    return;
  }
  const fake = new FakeIpset();
  for (const s of ref.ipsets.sets) {
    assert.ok(isIpsetType(s.type), s.name);
    fake.run([
      { verb: 'create', set: newSet(s.name, s.type) },
      { verb: 'add', name: s.name, entry: { value: s.example } },
      { verb: 'create', set: newSet(s.ipv6Name, s.type, 'inet6') },
    ]);
    assert.deepEqual(fake.entries(s.name), [s.example], s.name);
  }
});

test('entry validation follows the set type and family, and canonicalizes', () => {
  const ok = (
    type: IpsetType,
    value: string,
    family: 'inet' | 'inet6' = 'inet',
  ): string | undefined => {
    const r = checkEntry(newSet('S', type, family), value);
    return r.ok ? r.value : undefined;
  };
  assert.equal(ok('hash:ip,port', '10.0.0.1,TCP:80'), '10.0.0.1,tcp:80');
  assert.equal(
    ok('hash:ip,port', 'FE80::0202:B3FF:FE1E:8329,sctp:80', 'inet6'),
    'fe80::202:b3ff:fe1e:8329,sctp:80',
  );
  assert.equal(ok('hash:ip,port,net', '1.2.3.4,udp:53,10.1.2.3/8'), '1.2.3.4,udp:53,10.0.0.0/8');
  assert.equal(ok('hash:ip,port,net', '1.2.3.4,udp:53,10.1.2.3/32'), '1.2.3.4,udp:53,10.1.2.3');
  assert.equal(ok('hash:net', '10.0.0.0/16'), '10.0.0.0/16');
  assert.equal(ok('hash:ip', '10.0.0.1'), '10.0.0.1');
  assert.equal(ok('bitmap:port', '3001'), '3001');
  for (const [type, value, family] of [
    ['hash:ip,port', '10.0.0.1,icmp:80', 'inet'],
    ['hash:ip,port', '10.0.0.1,tcp:65536', 'inet'],
    ['hash:ip,port', '10.0.0.1', 'inet'],
    ['hash:ip,port', 'fd00::1,tcp:80', 'inet'],
    ['hash:ip,port', '10.0.0.1,tcp:80', 'inet6'],
    ['hash:ip,port,ip', '172.17.0.4,tcp:80:172.17.0.4', 'inet'],
    ['hash:ip,port,net', '1.2.3.4,tcp:80,10.0.0.0/33', 'inet'],
    ['hash:ip,port,net', '1.2.3.4,tcp:80,0.0.0.0/0', 'inet'],
    ['bitmap:port', 'x', 'inet'],
  ] as const) {
    assert.equal(ok(type, value, family), undefined, `${type} ${value}`);
  }
  const narrow = checkEntry(
    { type: 'bitmap:port', options: { range: { from: 30000, to: 32767 } } },
    '80',
  );
  assert.equal(narrow.ok, false);
});

test('FakeIpset refusals and atomic scripts', () => {
  const fake = new FakeIpset();
  const code = (text: string): string => {
    try {
      fake.restore(text);
    } catch (err) {
      assert.ok(err instanceof IpsetError);
      return err.code;
    }
    return 'no error';
  };
  fake.run([{ verb: 'create', set: newSet('A', 'hash:ip,port') }]);
  const before = fake.save();
  assert.equal(code('add A 10.0.0.1,tcp:80\nadd A 10.0.0.1,tcp:80\n'), 'CONFLICT');
  assert.equal(fake.save(), before, 'nothing of a failed script sticks');
  assert.equal(
    code('create A hash:ip,port family inet hashsize 1024 maxelem 65536 -exist\n'),
    'no error',
  );
  assert.equal(code('create A hash:ip family inet -exist\n'), 'CONFLICT');
  assert.equal(code('create A hash:ip,port family inet hashsize 1024 maxelem 65536\n'), 'CONFLICT');
  assert.equal(code('del A 10.0.0.9,tcp:80\n'), 'NOT_FOUND');
  assert.equal(code('del A 10.0.0.9,tcp:80 -exist\n'), 'no error');
  assert.equal(code('add B 10.0.0.1,tcp:80\n'), 'NOT_FOUND');
  assert.equal(code('add A 10.0.0.1,tcp:80 comment "x"\n'), 'INVALID_INPUT');
  assert.equal(code('add A bogus\n'), 'INVALID_INPUT');
  assert.equal(code(`create ${'X'.repeat(32)} hash:ip\n`), 'INVALID_INPUT');
  assert.equal(code('create T bitmap:port range 0-65535\nswap A T\n'), 'CONFLICT');
  assert.equal(
    code('create Small hash:ip maxelem 1\nadd Small 1.1.1.1\nadd Small 1.1.1.2\n'),
    'CONFLICT',
  );
  fake.setInUse('A', true);
  assert.equal(code('destroy A\n'), 'CONFLICT');
  fake.setInUse('A', false);
});

test('FakeIpset swap, flush and destroy', () => {
  const fake = new FakeIpset();
  fake.restore(
    'create A hash:ip,port family inet hashsize 1024 maxelem 65536\nadd A 10.0.0.1,tcp:80\n' +
      'create A-tmp hash:ip,port family inet hashsize 1024 maxelem 65536\nadd A-tmp 10.0.0.2,udp:53\n' +
      'swap A A-tmp\n',
  );
  assert.deepEqual(fake.entries('A'), ['10.0.0.2,udp:53']);
  assert.deepEqual(fake.entries('A-tmp'), ['10.0.0.1,tcp:80']);
  fake.restore('flush\n');
  assert.deepEqual(fake.entries('A'), []);
  fake.restore('destroy A-tmp\n');
  assert.equal(fake.has('A-tmp'), false);
  fake.restore('destroy\n');
  assert.equal(fake.state().size, 0);
});
