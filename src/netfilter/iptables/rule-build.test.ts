import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSimpleRule, renderRuleText } from './rule-build.js';
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
    assert.deepEqual(parseRule(renderRuleArgs(rule)), rule, text);
  }
});
