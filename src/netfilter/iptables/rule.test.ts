import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { splitArgs } from './parse.js';
import {
  commentOf,
  jumpTargetOf,
  parseRule,
  renderRuleArgs,
  targetOf,
  targetPartOf,
  validateRule,
} from './rule.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');
const fixtures = process.env.SVCNET_FIXTURES ?? join(repo, '..', 'shared', 'fixtures');
const RULE_LINE = /^(?:\[\d+:\d+\] )?-[AI] (\S+)(?: (.*))?$/;

function stringsOf(v: unknown, out: string[]): void {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) stringsOf(x, out);
}

/** Every `-A`/`-I` line of the kube-proxy iptables fixtures and of our goldens. */
function corpus(): string[] {
  const texts: string[] = [];
  const dir = join(fixtures, 'kube-proxy', 'iptables');
  if (existsSync(dir))
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json')))
      stringsOf(JSON.parse(readFileSync(join(dir, f), 'utf8')), texts);
  texts.push(
    readFileSync(join(repo, 'src', 'proxy', 'iptables', 'testdata', 'kitchen-sink.golden'), 'utf8'),
  );
  const lines = new Set<string>();
  for (const t of texts)
    for (const l of t.split('\n')) if (RULE_LINE.test(l) && !l.includes(' -t ')) lines.add(l);
  return [...lines];
}

function roundTrips(words: readonly string[]): void {
  assert.deepEqual(renderRuleArgs(parseRule(words)), words, words.join(' '));
}

test('every rule of the kube-proxy fixtures and our goldens round-trips word for word', () => {
  const lines = corpus();
  assert.ok(lines.length > 100, `only ${lines.length} rule lines found`);
  let typed = 0;
  for (const l of lines) {
    const body = RULE_LINE.exec(l)?.[2] ?? '';
    const words = splitArgs(body);
    roundTrips(words);
    // The Fake refuses what validateRule reports: nothing kube-proxy writes may be refused.
    assert.deepEqual(validateRule(parseRule(words)), [], l);
    if (!parseRule(words).parts.some((p) => p.kind === 'unsupported')) typed++;
  }
  // Only the ipset rule (`-m set`) and prose lines of the fixtures are not fully typed.
  assert.ok(typed >= lines.length - 3, `${lines.length - typed} lines not fully typed`);
});

test('odd but valid syntax round-trips: interleaved options, old negation, implicit modules', () => {
  for (const r of [
    '-m tcp -p tcp -d 172.30.0.41 --dport 80 -j X',
    '-p tcp --dport 81 -j X',
    '-s ! 10.0.0.0/8 -j X',
    '! -s 10.0.0.0/8 -p tcp -m tcp ! --dport 80 -j X',
    '-m comment --comment kubernetes service portals -j KUBE-SERVICES',
    '-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j X',
    '-m set --match-set KUBE-IPS dst -j ACCEPT',
    '-p tcp -m tcp --tcp-option 2 -j ACCEPT',
    '-j DNAT -s 1.2.3.4 --to-destination 10.0.0.1:80',
    '-m tcp -m comment --comment x --dport 80 -j X',
    '-j X --foo bar',
    'stray -j',
    '--orphan 1 -m',
    '-f -c 1 2 -j ACCEPT !',
  ])
    roundTrips(splitArgs(r));
});

test('parts are typed by kind', () => {
  const r = parseRule(
    splitArgs('-m tcp -p tcp -d 10.0.0.1 --dport 80 -j DNAT --to-destination 10.1.1.1:80'),
  );
  assert.deepEqual(
    r.parts.map((p) => (p.kind === 'match' ? `${p.kind}:${p.module}:${p.header}` : p.kind)),
    ['match:tcp:explicit', 'protocol', 'destination', 'match:tcp:continued', 'target'],
  );
  assert.equal(targetPartOf(r)?.name, 'DNAT');
  const set = parseRule(splitArgs('-m set --match-set KUBE-IPS dst -j ACCEPT'));
  assert.equal(set.parts[0]?.kind, 'match');
  const unknown = parseRule(splitArgs('-m foo --bar 1 -j ACCEPT'));
  assert.deepEqual(unknown.parts[0], {
    kind: 'unsupported',
    what: 'match',
    module: 'foo',
    header: 'explicit',
    flag: '-m',
    negate: false,
    options: [{ name: '--bar', values: ['1'], negate: false, known: false }],
  });
});

test('accessors read the comment and the target', () => {
  const args = splitArgs('-m comment --comment "ns/svc:p cluster IP" -g KUBE-SVC-X');
  assert.equal(commentOf(args), 'ns/svc:p cluster IP');
  assert.equal(targetOf(args), 'KUBE-SVC-X');
  assert.equal(jumpTargetOf(args), undefined);
  assert.equal(commentOf(splitArgs('-j ACCEPT')), undefined);
});

test('validateRule names what iptables-restore would refuse', () => {
  assert.deepEqual(validateRule(parseRule(splitArgs('-p tcp -j DNAT'))), [
    'DNAT: missing --to-destination',
  ]);
  assert.deepEqual(validateRule(parseRule(splitArgs('-j MARK'))), [
    'MARK: one of --set-mark, --set-xmark, --or-mark, --and-mark, --xor-mark is required',
  ]);
  assert.deepEqual(validateRule(parseRule(splitArgs('-p tcp -m tcp --dport'))), [
    'tcp --dport: needs 1 value(s)',
  ]);
  assert.deepEqual(validateRule(parseRule(splitArgs('-d'))), ['-d needs a value']);
  assert.deepEqual(
    validateRule(
      parseRule(splitArgs('-m tcp -p tcp --dport 80 -j DNAT --to-destination 1.1.1.1:80')),
    ),
    [],
  );
});
