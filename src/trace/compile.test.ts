import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRule, evaluateMatches } from './compile.js';
import type { MatchEnv, MatchResult } from './eval-match.js';
import { splitArgs } from '../netfilter/iptables/parse.js';
import { parseIP, type ParsedIP } from '../util/ip.js';

function ip(s: string): ParsedIP {
  const p = parseIP(s);
  if (!p) throw new Error(s);
  return p;
}

function env(over: Partial<MatchEnv> = {}): MatchEnv {
  return {
    src: ip('10.0.0.2'),
    dst: ip('172.30.0.41'),
    protocol: 'tcp',
    srcPort: 40000,
    dstPort: 80,
    inInterface: undefined,
    outInterface: undefined,
    mark: 0n,
    ctState: 'NEW',
    dnatDone: false,
    snatDone: false,
    isLocal: (a) => a.value === ip('192.168.0.2').value || a.value >> 24n === 127n,
    recentAge: () => undefined,
    neverMatchStateful: false,
    ...over,
  };
}

function run(rule: string, e: Partial<MatchEnv> = {}): MatchResult {
  const c = compileRule(splitArgs(rule));
  assert.deepEqual(c.unsupported, [], `unexpected unsupported in ${rule}`);
  return evaluateMatches(c, env(e));
}

test('addresses, negation, masks and protocol modules (explicit and implicit)', () => {
  const cases: [string, Partial<MatchEnv>, MatchResult][] = [
    ['-d 172.30.0.41/32 -p tcp -m tcp --dport 80 -j X', {}, true],
    ['-m tcp -p tcp -d 172.30.0.41 --dport 80 -j X', {}, true],
    ['-p tcp --dport 81 -j X', {}, false],
    ['-p udp --dport 80 -j X', {}, false],
    ['! -s 10.0.0.0/8 -j X', {}, false],
    ['-s ! 10.0.0.0/8 -j X', { src: ip('203.0.113.2') }, true],
    ['-s 10.0.0.0/255.0.0.0 -j X', {}, true],
    ['-s 10.0.0.7/8 -j X', {}, true],
    ['-p tcp -m tcp ! --dport 80 -j X', {}, false],
    ['-p tcp -m tcp --dport 70:90 -j X', {}, true],
    ['-p tcp -m multiport --dports 22,443,8000:9000 -j X', { dstPort: 8080 }, true],
    ['-p tcp -m multiport --dports 22,443 -j X', {}, false],
    ['-p tcp --syn -j X', {}, true],
    ['-p tcp --tcp-flags SYN,ACK ACK -j X', {}, false],
    ['-i eth+ -j X', { inInterface: 'eth0' }, true],
    ['! -i eth+ -j X', { inInterface: 'eth0' }, false],
    ['-o cni0 -j X', {}, false],
  ];
  for (const [rule, e, want] of cases) assert.deepEqual(run(rule, e), want, rule);
});

test('addrtype, mark, conntrack (incl. the DNAT virtual state), recent, nfacct and statistic', () => {
  const cases: [string, Partial<MatchEnv>, MatchResult][] = [
    ['-m addrtype --dst-type LOCAL -j X', { dst: ip('192.168.0.2') }, true],
    ['-m addrtype --dst-type LOCAL -j X', {}, false],
    ['-m addrtype ! --dst-type LOCAL -j X', {}, true],
    ['-m addrtype --src-type LOCAL -j X', { src: ip('127.0.0.1') }, true],
    ['-m mark --mark 0x4000/0x4000 -j X', { mark: 0x4001n }, true],
    ['-m mark ! --mark 0x4000/0x4000 -j X', { mark: 0x4001n }, false],
    ['-m conntrack --ctstate NEW -j X', {}, true],
    ['-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j X', { dnatDone: true }, false],
    ['-m state --state ESTABLISHED -j X', { ctState: 'ESTABLISHED' }, true],
    ['-m recent --name KUBE-SEP-A --rcheck --seconds 10800 --reap -j X', {}, false],
    [
      '-m recent --name KUBE-SEP-A --rcheck --seconds 10800 --reap -j X',
      { recentAge: (n) => (n === 'KUBE-SEP-A' ? 60 : undefined) },
      true,
    ],
    [
      '-m recent --name KUBE-SEP-A --rcheck --seconds 30 --reap -j X',
      { recentAge: () => 60 },
      false,
    ],
    ['-m recent --name KUBE-SEP-A --set -p tcp -j DNAT --to-destination 10.1.1.1:80', {}, true],
    // As iptables-save prints it back.
    [
      '-m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j X',
      { recentAge: () => 1 },
      true,
    ],
    ['-m nfacct --nfacct-name localhost_nps_accepted_pkts -j X', {}, true],
    ['-m statistic --mode random --probability 0.2500000000 -j X', {}, { probability: 0.25 }],
    ['-m statistic --mode nth --every 4 --packet 0 -j X', {}, { probability: 0.25 }],
    // fixture-compatible: stateful matches never match, even negated.
    ['-m mark ! --mark 0x4000/0x4000 -j RETURN', { neverMatchStateful: true }, false],
  ];
  for (const [rule, e, want] of cases) assert.deepEqual(run(rule, e), want, rule);
});

test('targets are parsed with their options', () => {
  assert.deepEqual(compileRule(splitArgs('-j MARK --or-mark 0x4000')).target, {
    kind: 'MARK',
    op: 'or',
    value: 0x4000n,
    mask: 0xffffffffn,
  });
  const dnat = compileRule(splitArgs('-p tcp -j DNAT --to-destination [fd00::1]:8080')).target;
  assert.ok(dnat.kind === 'DNAT');
  assert.equal(dnat.port, 8080);
  assert.deepEqual(compileRule(splitArgs('-j REJECT --reject-with tcp-reset')).target, {
    kind: 'REJECT',
    rejectWith: 'tcp-reset',
  });
  assert.deepEqual(compileRule(splitArgs('-g KUBE-X')).target, {
    kind: 'chain',
    chain: 'KUBE-X',
    goto: true,
  });
  assert.deepEqual(compileRule(splitArgs('-m comment --comment x')).target, { kind: 'none' });
});

test('unknown matches and options are reported, never thrown', () => {
  const set = compileRule(splitArgs('-m set --match-set KUBE-IPS dst -j ACCEPT'));
  assert.deepEqual(set.unsupported, ['match -m set is not supported']);
  const opt = compileRule(splitArgs('-p tcp -m tcp --tcp-option 2 -j ACCEPT'));
  assert.match(opt.unsupported.join(), /option --tcp-option is not supported/);
  const junk = compileRule(splitArgs('-d not-an-ip -j ACCEPT'));
  assert.match(junk.unsupported.join(), /-d not-an-ip: not an address/);
  const stat = compileRule(splitArgs('-m statistic --mode random --probability 7 -j X'));
  assert.match(stat.unsupported.join(), /not a probability/);
});

test('an unquoted multi-word comment (hand-written dumps) is read as one comment', () => {
  const c = compileRule(
    splitArgs('-m comment --comment kubernetes service portals -j KUBE-SERVICES'),
  );
  assert.equal(c.comment, 'kubernetes service portals');
  assert.deepEqual(c.unsupported, []);
  assert.equal(c.notes.length, 1);
  assert.deepEqual(c.target, { kind: 'chain', chain: 'KUBE-SERVICES', goto: false });
});
