import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSimpleRule, renderRuleText, renderSimpleRule } from './rule-build.js';
import { parseRule, renderRuleArgs } from './rule.js';

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
