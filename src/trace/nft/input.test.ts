import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../../../test/conformance/harness.js';
import { SvcnetError } from '../../errors.js';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { formatTraceText } from '../format.js';
import { defaultContext, parsePacketSpec, type Origin } from '../packet.js';
import type { TraceResult } from '../result.js';
import { detectRulesFormat, loadNftRules } from './input.js';
import { traceNftPacket } from './trace.js';

const OVERALL = join(fixturesDir(), 'kube-proxy', 'nftables', 'TestOverallNFTablesRules.json');
const KERNEL_DUMP = join(
  import.meta.dirname,
  '..',
  '..',
  'netfilter',
  'nftables',
  'testdata',
  'overall-kernel.nft',
);

/** kube-proxy's own expected ruleset text for TestOverallNFTablesRules (`add …` lines). */
function overallText(): string | undefined {
  if (!existsSync(OVERALL)) return undefined;
  const fx = JSON.parse(readFileSync(OVERALL, 'utf8')) as {
    steps: { action: string; text?: string }[];
  };
  return fx.steps.find((s) => s.action === 'expectRuleset')?.text;
}

const NODE: ParsedIP[] = ['192.168.0.2', '192.168.1.2', '192.168.99.11'].flatMap((a) => {
  const ip = parseIP(a);
  return ip ? [ip] : [];
});

function summary(r: TraceResult): string[] {
  return r.outcomes.map(
    (o) =>
      `${o.verdict}${o.dnat !== undefined ? ` ${o.dnat}` : ''}${o.masquerade ? ' masq' : ''} ${o.servicePort ?? '-'} ${Number(o.probability.toFixed(4))}`,
  );
}

/** Packets over TestOverallNFTablesRules' six Services, and what kube-proxy's rules do. */
const CASES: readonly (readonly [string, string, Origin, readonly string[]])[] = [
  ['10.180.0.9', '172.30.0.41:80', 'pod', ['accept 10.180.0.1:80 ns1/svc1:p80 1']],
  ['10.180.0.1', '172.30.0.41:80', 'pod', ['accept 10.180.0.1:80 masq ns1/svc1:p80 1']],
  [
    '10.180.0.9',
    '172.30.0.44:80',
    'pod',
    ['accept 10.180.0.4:80 ns4/svc4:p80 0.5', 'accept 10.180.0.5:80 ns4/svc4:p80 0.5'],
  ],
  // eTP=Local with no local endpoint: external traffic to the external IP is dropped.
  ['203.0.113.2', '192.168.99.22:80', 'external', ['drop ns2/svc2:p80 1']],
  // ... but a pod short-circuits to the cluster-wide endpoints.
  ['10.180.0.9', '192.168.99.22:80', 'pod', ['accept 10.180.0.2:80 ns2/svc2:p80 1']],
  ['203.0.113.130', '5.6.7.8:80', 'external', ['drop ns5/svc5:p80 1']],
  ['203.0.113.2', '5.6.7.8:80', 'external', ['accept 10.180.0.3:80 masq ns5/svc5:p80 1']],
  ['203.0.113.2', '192.168.0.2:3003', 'external', ['accept 10.180.0.3:80 masq ns3/svc3:p80 1']],
  ['10.180.0.9', '172.30.0.46:80', 'pod', ['reject ns6/svc6:p80 1']],
  ['10.180.0.9', '172.30.0.41:81', 'pod', ['reject - 1']],
  ['10.180.0.9', '172.30.0.99:80', 'pod', ['drop - 1']],
];

test("kube-proxy's TestOverallNFTablesRules text (`add …` dump) traces as kube-proxy behaves", (t) => {
  const text = overallText();
  if (text === undefined) {
    t.skip(`no fixture at ${OVERALL}`);
    return;
  }
  assert.equal(detectRulesFormat(text), 'nft');
  const rs = loadNftRules(text);
  for (const [src, dst, origin, want] of CASES) {
    const r = traceNftPacket(rs, parsePacketSpec({ src, dst }), defaultContext(origin, NODE));
    assert.deepEqual(summary(r), want, `${src} -> ${dst}`);
    assert.deepEqual(r.unsupported, [], `${src} -> ${dst}`);
  }
});

test('a kernel `nft list ruleset` dump of the same rules traces exactly like the text', (t) => {
  const text = overallText();
  if (text === undefined || !existsSync(KERNEL_DUMP)) {
    t.skip('fixture or kernel dump missing');
    return;
  }
  const dump = readFileSync(KERNEL_DUMP, 'utf8');
  assert.equal(detectRulesFormat(dump), 'nft');
  const fromText = loadNftRules(text);
  const fromKernel = loadNftRules(dump);
  for (const [src, dst, origin] of CASES) {
    const p = parsePacketSpec({ src, dst });
    const a = traceNftPacket(fromText, p, defaultContext(origin, NODE));
    const b = traceNftPacket(fromKernel, p, defaultContext(origin, NODE));
    assert.deepEqual(summary(b), summary(a), `${src} -> ${dst}`);
    assert.deepEqual(b.unsupported, [], `${src} -> ${dst}`);
    assert.equal(formatTraceText(b, 'brief'), formatTraceText(a, 'brief'));
  }
});

test('format detection and bad input', () => {
  assert.equal(detectRulesFormat('*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n'), 'iptables');
  assert.equal(detectRulesFormat('# comment\ntable ip t {\n}\n'), 'nft');
  assert.equal(detectRulesFormat('add table ip kube-proxy\n'), 'nft');
  assert.throws(
    () => loadNftRules('*nat\nCOMMIT\n'),
    (e) => e instanceof SvcnetError && e.code === 'INVALID_INPUT',
  );
  // A transaction the kernel would refuse is refused (a rule in a chain that does not exist).
  assert.throws(
    () => loadNftRules('add table ip t\nadd rule ip t nope accept\n'),
    (e) => e instanceof SvcnetError && e.code === 'INVALID_INPUT' && /nope/.test(e.message),
  );
});
