import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addressPart,
  buildRule,
  buildSimpleRule,
  commentPart,
  jumpPart,
  matchPart,
  protocolPart,
  renderRuleText,
  renderSimpleRule,
  ruleOption,
  setPart,
} from './rule-build.js';
import { parseRule, renderRuleArgs, validateRule } from './rule.js';
import type { TypedRule } from './rule.js';
import { setOf } from './rule-views.js';

test('simple rules render in kube-proxy word order and parse back to the same typed rule', () => {
  const cases: [Parameters<typeof buildSimpleRule>[0], string][] = [
    [
      {
        comment: 'ns/svc:p80 cluster IP',
        proto: 'tcp',
        dst: '172.30.0.41',
        dport: 80,
        jump: 'KUBE-SVC-X',
      },
      '-m comment --comment "ns/svc:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-X',
    ],
    [
      { comment: 'ns/svc:p80', proto: 'udp', dport: 3001, jump: 'KUBE-EXT-X' },
      '-m comment --comment ns/svc:p80 -m udp -p udp --dport 3001 -j KUBE-EXT-X',
    ],
    [
      { comment: 'ns/svc:p80 loadbalancer IP', src: '192.168.0.0/24', jump: 'KUBE-EXT-X' },
      '-m comment --comment "ns/svc:p80 loadbalancer IP" -s 192.168.0.0/24 -j KUBE-EXT-X',
    ],
    [{ jump: 'ACCEPT' }, '-j ACCEPT'],
  ];
  for (const [spec, text] of cases) {
    const rule = buildSimpleRule(spec);
    assert.equal(renderRuleText(rule), text);
    assert.equal(renderSimpleRule(spec), text);
    assert.deepEqual(parseRule(renderRuleArgs(rule)), rule, text);
  }
});

test('renderSimpleRule equals rendering the built typed rule, for every combination of fields', () => {
  for (const comment of [undefined, 'a', 'a b', 'say "hi"', ''])
    for (const proto of [undefined, 'tcp', 'sctp'] as const)
      for (const src of [undefined, '10.0.0.0/8'])
        for (const dst of [undefined, 'fd00::1'])
          for (const dport of [undefined, 8080])
            for (const jump of ['KUBE-SVC-X', 'DROP']) {
              const spec = {
                ...(comment !== undefined ? { comment } : {}),
                ...(proto !== undefined ? { proto } : {}),
                ...(src !== undefined ? { src } : {}),
                ...(dst !== undefined ? { dst } : {}),
                ...(dport !== undefined ? { dport } : {}),
                jump,
              };
              assert.equal(renderSimpleRule(spec), renderRuleText(buildSimpleRule(spec)));
            }
});

test('part builders: any rule shape, negations included, parses back to the same typed rule', () => {
  const cases: [TypedRule, string][] = [
    [
      buildRule(
        protocolPart('sctp'),
        commentPart('nodeport sctp'),
        setPart('KUBE-NODE-PORT-SCTP-HASH', 'dst,dst'),
        jumpPart('KUBE-MARK-MASQ'),
      ),
      '-p sctp -m comment --comment "nodeport sctp" -m set --match-set KUBE-NODE-PORT-SCTP-HASH dst,dst -j KUBE-MARK-MASQ',
    ],
    [
      buildRule(
        [setPart('KUBE-EXTERNAL-IP', 'dst,dst'), setPart('KUBE-6-LOOP-BACK', 'dst,dst,src', true)],
        matchPart('physdev', ruleOption('--physdev-is-in', [], true)),
        jumpPart('ACCEPT'),
      ),
      '-m set --match-set KUBE-EXTERNAL-IP dst,dst -m set ! --match-set KUBE-6-LOOP-BACK dst,dst,src -m physdev ! --physdev-is-in -j ACCEPT',
    ],
    [
      buildRule(
        addressPart('source', '10.0.0.0/8', true),
        addressPart('destination', 'fd00::1'),
        jumpPart('MASQUERADE', ruleOption('--random-fully')),
      ),
      '! -s 10.0.0.0/8 -d fd00::1 -j MASQUERADE --random-fully',
    ],
    [
      buildRule(
        addressPart('source', '198.51.100.7'),
        matchPart(
          'ipvs',
          ruleOption('--vaddr', ['198.51.100.7']),
          ruleOption('--vproto', ['tcp']),
          ruleOption('--vport', ['80']),
        ),
        jumpPart('DROP'),
      ),
      '-s 198.51.100.7 -m ipvs --vaddr 198.51.100.7 --vproto tcp --vport 80 -j DROP',
    ],
  ];
  for (const [rule, text] of cases) {
    assert.equal(renderRuleText(rule), text);
    assert.deepEqual(parseRule(renderRuleArgs(rule)), rule, text);
    assert.deepEqual(validateRule(rule), [], text);
  }
  const set = cases[1]?.[0].parts[1];
  assert.ok(set?.kind === 'match');
  assert.deepEqual(setOf(set.options).sets, [
    { name: 'KUBE-6-LOOP-BACK', flags: ['dst', 'dst', 'src'], negate: true },
  ]);
});
