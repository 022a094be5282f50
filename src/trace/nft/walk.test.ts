import { test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ChainHook,
  ChainState,
  ChainType,
  NftElement,
  Ruleset,
  SetState,
} from '../../netfilter/nftables/model.js';
import { elementKey } from '../../netfilter/nftables/model.js';
import { parseRuleBody } from '../../netfilter/nftables/rule.js';
import { parseIP, type ParsedIP } from '../../util/ip.js';
import { formatTraceText, traceToJSON } from '../format.js';
import { defaultContext, parsePacketSpec, type Origin, type TraceContext } from '../packet.js';
import type { TraceResult } from '../result.js';
import { traceNftPacket } from './trace.js';

function ip(s: string): ParsedIP {
  const p = parseIP(s);
  if (!p) throw new Error(s);
  return p;
}

interface ChainSpec {
  readonly base?: readonly [ChainType, ChainHook, number];
  readonly policy?: 'drop';
  readonly rules: readonly string[];
}

interface SetSpec {
  readonly keyType: readonly string[];
  readonly map?: boolean;
  readonly timeout?: number;
  /** `key . parts` or `key . parts : verdict` (verdict maps), `# comment` after the key. */
  readonly elements: readonly string[];
}

/** A one-table ruleset from chain rule texts and set elements (nft -f body syntax). */
function ruleset(
  chains: Record<string, ChainSpec>,
  sets: Record<string, SetSpec> = {},
  family: 'ip' | 'ip6' = 'ip',
): Ruleset {
  const ref = { family, table: 'kube-proxy' } as const;
  const chainStates = new Map<string, ChainState>();
  for (const [name, spec] of Object.entries(chains)) {
    chainStates.set(name, {
      chain: {
        kind: 'chain',
        ...ref,
        name,
        ...(spec.base ? { type: spec.base[0], hook: spec.base[1], priority: spec.base[2] } : {}),
        ...(spec.policy ? { policy: spec.policy } : {}),
      },
      rules: spec.rules.map((text) => {
        const body = parseRuleBody(text);
        return {
          kind: 'rule',
          ...ref,
          chain: name,
          statements: body.statements,
          ...(body.comment !== undefined ? { comment: body.comment } : {}),
        };
      }),
    });
  }
  const setStates = new Map<string, SetState>();
  for (const [name, spec] of Object.entries(sets)) {
    const elements = new Map<string, NftElement>();
    for (const text of spec.elements) {
      const [keyAndComment = '', verdict] = text.split(' : ');
      const [keyText = '', comment] = keyAndComment.split(' # ');
      const key = keyText.split(' . ');
      const v = verdict === undefined ? undefined : parseRuleBody(verdict).statements[0];
      elements.set(elementKey(key), {
        kind: 'element',
        ...ref,
        set: name,
        key,
        ...(v?.kind === 'verdict' ? { value: v.verdict } : {}),
        ...(comment !== undefined ? { comment } : {}),
      });
    }
    setStates.set(name, {
      set: {
        kind: spec.map ? 'map' : 'set',
        ...ref,
        name,
        keyType: spec.keyType,
        ...(spec.map ? { valueType: ['verdict'] } : {}),
        ...(spec.timeout !== undefined ? { timeoutSeconds: spec.timeout } : {}),
      },
      elements,
    });
  }
  return {
    tables: new Map([
      [
        `${family} kube-proxy`,
        { table: { kind: 'table', ...ref }, chains: chainStates, sets: setStates },
      ],
    ]),
  };
}

const SVC = ['ipv4_addr', 'inet_proto', 'inet_service'];

/** A kube-proxy-shaped ruleset (after TestOverallNFTablesRules, trimmed). */
const KP = ruleset(
  {
    'filter-prerouting-pre-dnat': {
      base: ['filter', 'prerouting', -110],
      rules: ['ct state new jump firewall-check'],
    },
    'nat-prerouting': { base: ['nat', 'prerouting', -100], rules: ['jump services'] },
    'nat-output': { base: ['nat', 'output', -100], rules: ['jump services'] },
    'filter-output': {
      base: ['filter', 'output', 0],
      rules: ['ct state new jump service-endpoints-check', 'ct state new jump cluster-ips-check'],
    },
    'filter-forward': {
      base: ['filter', 'forward', 0],
      rules: ['ct state new jump service-endpoints-check', 'ct state new jump cluster-ips-check'],
    },
    'filter-input': {
      base: ['filter', 'input', 0],
      rules: [
        'ct state new jump nodeport-endpoints-check',
        'ct state new jump service-endpoints-check',
      ],
    },
    'nat-postrouting': { base: ['nat', 'postrouting', 100], rules: ['jump masquerading'] },
    masquerading: {
      rules: [
        'mark and 0x4000 != 0 mark set mark xor 0x4000 masquerade fully-random',
        'ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random',
      ],
    },
    'cluster-ips-check': {
      rules: [
        'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
        'ip daddr { 172.30.0.0/16 } drop comment "Drop traffic to unallocated ClusterIPs"',
      ],
    },
    'firewall-check': { rules: ['ip daddr . meta l4proto . th dport vmap @firewall-ips'] },
    'service-endpoints-check': {
      rules: ['ip daddr . meta l4proto . th dport vmap @no-endpoint-services'],
    },
    'nodeport-endpoints-check': {
      rules: ['ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports'],
    },
    'reject-chain': { rules: ['reject'] },
    services: {
      rules: [
        'ip daddr @cluster-ips ip saddr != 10.0.0.0/8 mark set mark or 0x4000 comment "masquerade clusterIP traffic from outside cluster"',
        'ip daddr . meta l4proto . th dport vmap @service-ips',
        'ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports',
      ],
    },
    'service-ULMVA6XW-ns1/svc1/tcp/p80': {
      rules: [
        'meta l4proto tcp dnat ip addr . port to numgen random mod 1 map { 0 : 10.180.0.1 . 80 }',
      ],
    },
    'service-LAUZTJTB-ns4/svc4/tcp/p80': {
      rules: [
        'meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.180.0.4 . 80 , 1 : 10.180.0.5 . 80 }',
      ],
    },
    'external-LAUZTJTB-ns4/svc4/tcp/p80': {
      rules: [
        'mark set mark or 0x4000 comment "masquerade"',
        'goto service-LAUZTJTB-ns4/svc4/tcp/p80',
      ],
    },
    'service-HVFWP5L3-ns5/svc5/tcp/p80': {
      rules: [
        'ip saddr @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80',
        'numgen random mod 1 vmap { 0 : goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 }',
      ],
    },
    'external-HVFWP5L3-ns5/svc5/tcp/p80': {
      rules: [
        'mark set mark or 0x4000 comment "masquerade"',
        'goto service-HVFWP5L3-ns5/svc5/tcp/p80',
      ],
    },
    'endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80': {
      rules: [
        'update @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 { ip saddr }',
        'meta l4proto tcp dnat to 10.180.0.3:80',
      ],
    },
    'firewall-HVFWP5L3-ns5/svc5/tcp/p80': { rules: ['ip saddr != { 203.0.113.0/25 } drop'] },
  },
  {
    'cluster-ips': {
      keyType: ['ipv4_addr'],
      elements: ['172.30.0.41', '172.30.0.44', '172.30.0.45', '172.30.0.46'],
    },
    'nodeport-ips': { keyType: ['ipv4_addr'], elements: ['192.168.0.2'] },
    'hairpin-connections': {
      keyType: ['ipv4_addr', 'ipv4_addr', 'inet_proto', 'inet_service'],
      elements: ['10.180.0.1 . 10.180.0.1 . tcp . 80', '10.180.0.5 . 10.180.0.5 . tcp . 80'],
    },
    'affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80': {
      keyType: ['ipv4_addr'],
      timeout: 10800,
      elements: [],
    },
    'service-ips': {
      keyType: SVC,
      map: true,
      elements: [
        '172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80',
        '172.30.0.44 . tcp . 80 : goto service-LAUZTJTB-ns4/svc4/tcp/p80',
        '192.168.99.33 . tcp . 80 : goto external-LAUZTJTB-ns4/svc4/tcp/p80',
        '172.30.0.45 . tcp . 80 : goto service-HVFWP5L3-ns5/svc5/tcp/p80',
        '5.6.7.8 . tcp . 80 : goto external-HVFWP5L3-ns5/svc5/tcp/p80',
      ],
    },
    'service-nodeports': {
      keyType: ['inet_proto', 'inet_service'],
      map: true,
      elements: ['tcp . 3002 : goto external-HVFWP5L3-ns5/svc5/tcp/p80'],
    },
    'firewall-ips': {
      keyType: SVC,
      map: true,
      elements: ['5.6.7.8 . tcp . 80 : goto firewall-HVFWP5L3-ns5/svc5/tcp/p80'],
    },
    'no-endpoint-services': {
      keyType: SVC,
      map: true,
      elements: ['172.30.0.46 . tcp . 80 # ns6/svc6:p80 : goto reject-chain'],
    },
    'no-endpoint-nodeports': {
      keyType: ['inet_proto', 'inet_service'],
      map: true,
      elements: ['tcp . 3001 # ns2/svc2:p80 : drop'],
    },
  },
);

const NODE = [ip('192.168.0.2'), ip('192.168.1.2')];

function trace(
  src: string,
  dst: string,
  origin: Origin = 'pod',
  over: Partial<TraceContext> = {},
  rules: Ruleset = KP,
): TraceResult {
  return traceNftPacket(rules, parsePacketSpec({ src, dst }), defaultContext(origin, NODE, over));
}

/** `verdict dnat masq p` per outcome. */
function summary(r: TraceResult): string[] {
  return r.outcomes.map(
    (o) =>
      `${o.verdict}${o.dnat !== undefined ? ` ${o.dnat}` : ''}${o.masquerade ? ' masq' : ''}${o.delivery !== undefined ? ` ${o.delivery}` : ''} ${Number(o.probability.toFixed(4))}`,
  );
}

test('ClusterIP: service-ips vmap, numgen map DNAT; each branch with its probability', () => {
  assert.deepEqual(summary(trace('10.180.0.9', '172.30.0.41:80')), [
    'accept 10.180.0.1:80 forward 1',
  ]);
  const r = trace('10.180.0.9', '172.30.0.44:80');
  assert.deepEqual(summary(r), [
    'accept 10.180.0.4:80 forward 0.5',
    'accept 10.180.0.5:80 forward 0.5',
  ]);
  const o = r.outcomes[0];
  assert.ok(o);
  assert.equal(o.servicePort, 'ns4/svc4:p80');
  assert.equal(o.endpoint, '10.180.0.4:80');
  const dnat = o.path.find((s) => s.effect === 'dnat');
  assert.equal(dnat?.table, 'ip kube-proxy');
  assert.equal(dnat.chain, 'service-LAUZTJTB-ns4/svc4/tcp/p80');
  assert.match(dnat.detail, /^chosen at random \(probability 0.5\): DNAT to 10.180.0.4:80$/);
  const lookup = o.path.find((s) => s.chain === 'services' && s.effect === 'goto');
  assert.match(lookup?.detail ?? '', /172\.30\.0\.44 \. tcp \. 80 in @service-ips: goto service-/);
  assert.equal(lookup?.servicePort, 'ns4/svc4:p80');
});

test('masquerade: from outside the pod CIDR (mark), hairpin (set match); fixture mode agrees', () => {
  assert.deepEqual(summary(trace('192.168.5.5', '172.30.0.41:80', 'external')), [
    'accept 10.180.0.1:80 masq forward 1',
  ]);
  assert.deepEqual(summary(trace('10.180.0.1', '172.30.0.41:80')), [
    'accept 10.180.0.1:80 masq forward 1',
  ]);
  const fixture = { mode: 'fixture-compatible' } as const;
  assert.deepEqual(summary(trace('10.180.0.1', '172.30.0.41:80', 'pod', fixture)), [
    'accept 10.180.0.1:80 masq 1',
  ]);
  // The external IP path marks on one branch only through the external chain, for both.
  assert.deepEqual(summary(trace('10.180.0.9', '192.168.99.33:80', 'pod', fixture)), [
    'accept 10.180.0.4:80 masq 0.5',
    'accept 10.180.0.5:80 masq 0.5',
  ]);
});

test('reject / drop: wrong ClusterIP port, unallocated ClusterIP, no endpoints (element comment names the Service)', () => {
  assert.deepEqual(summary(trace('10.180.0.9', '172.30.0.41:443')), ['reject 1']);
  assert.deepEqual(summary(trace('10.180.0.9', '172.30.0.50:80')), ['drop 1']);
  const r = trace('10.180.0.9', '172.30.0.46:80');
  assert.deepEqual(summary(r), ['reject 1']);
  assert.equal(r.outcomes[0]?.servicePort, 'ns6/svc6:p80');
  assert.equal(r.outcomes[0].path.at(-1)?.chain, 'reject-chain');
  // A NodePort without endpoints on a node address: filter-input drops it.
  const np = trace('203.0.113.9', '192.168.0.2:3001', 'external');
  assert.deepEqual(summary(np), ['drop 1']);
  assert.equal(np.outcomes[0]?.path.at(-1)?.hook, 'INPUT');
  // Not a kube-proxy destination: delivered untouched.
  assert.deepEqual(summary(trace('10.180.0.9', '192.168.1.2:22')), ['accept local 1']);
});

test('LoadBalancer source ranges, affinity set (empty, or the source in it), NodePort', () => {
  assert.deepEqual(summary(trace('203.0.113.130', '5.6.7.8:80', 'external')), ['drop 1']);
  const ok = trace('203.0.113.2', '5.6.7.8:80', 'external');
  assert.deepEqual(summary(ok), ['accept 10.180.0.3:80 masq forward 1']);
  assert.ok(ok.outcomes[0]?.path.some((s) => s.effect === 'set-update'));
  assert.equal(ok.outcomes[0]?.servicePort, 'ns5/svc5:p80');
  const aff = trace('203.0.113.2', '172.30.0.45:80', 'external', {
    recent: [{ name: 'affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80', ageSeconds: 5 }],
  });
  const first = aff.outcomes[0]?.path.find((s) => s.chain === 'service-HVFWP5L3-ns5/svc5/tcp/p80');
  assert.equal(first?.rule, 1);
  assert.equal(first.effect, 'goto');
  assert.deepEqual(summary(trace('203.0.113.2', '192.168.0.2:3002', 'external')), [
    'accept 10.180.0.3:80 masq forward 1',
  ]);
  // Only the nodeport-ips address takes NodePorts.
  assert.deepEqual(summary(trace('203.0.113.2', '192.168.1.2:3002', 'external')), [
    'accept local 1',
  ]);
});

test('from the node: nat-output DNATs, filter-output rejects; established skips nat', () => {
  assert.deepEqual(summary(trace('192.168.0.2', '172.30.0.44:80', 'node')), [
    'accept 10.180.0.4:80 masq forward 0.5',
    'accept 10.180.0.5:80 masq forward 0.5',
  ]);
  assert.deepEqual(summary(trace('192.168.0.2', '172.30.0.46:80', 'node')), ['reject 1']);
  const est = trace('10.180.0.9', '172.30.0.41:80', 'pod', { ctState: 'ESTABLISHED' });
  assert.deepEqual(summary(est), ['accept forward 1']);
  assert.ok(est.notes.some((n) => n.includes('nat chains are not consulted')));
});

test('jump/return/goto, policy drop, unsupported statements reported by name, inet table', () => {
  const rs = ruleset({
    input: {
      base: ['filter', 'input', 0],
      policy: 'drop',
      rules: ['jump sub', 'tcp dport 22 accept', 'iifname "eth*" some-new-thing 3 accept'],
    },
    sub: {
      rules: [
        'ip saddr 10.0.0.0/8 return',
        'tcp dport { 80, 8000-8100 } counter',
        'th dport 8080 goto other',
      ],
    },
    other: { rules: ['meta l4proto udp accept'] },
  });
  const p = (dst: string, over: Partial<TraceContext> = {}) =>
    summary(trace('203.0.113.2', dst, 'external', { inInterface: 'eth0', ...over }, rs));
  assert.deepEqual(p('192.168.0.2:22'), ['accept local 1']);
  assert.deepEqual(p('192.168.0.2:8050'), ['drop 1']);
  // goto other: its end returns past `sub` to `input`, which then goes on.
  assert.deepEqual(p('192.168.0.2:8080'), ['drop 1']);
  const r = trace('203.0.113.2', '192.168.0.2:9', 'external', { inInterface: 'eth0' }, rs);
  assert.deepEqual(
    r.unsupported.map((u) => `${u.chain} #${u.rule}: ${u.reasons.join('; ')}`),
    ['input #3: unsupported statement "some-new-thing 3"'],
  );
  assert.equal(r.outcomes[0]?.verdictBy, 'policy');
});

test('the common text and JSON presentation name nft chains, Services and endpoints', () => {
  const r = trace('203.0.113.2', '5.6.7.8:80', 'external');
  const text = formatTraceText(r);
  assert.match(text, /^node addresses \(fib type local\): 127\.0\.0\.0\/8, 192\.168\.0\.2/m);
  assert.match(text, /DNAT to 10\.180\.0\.3:80 — Service ns5\/svc5:p80, endpoint 10\.180\.0\.3:80/);
  assert.match(
    text,
    /ip kube-proxy nat-prerouting #1: jump to services — kube-proxy: look the destination up/,
  );
  assert.match(
    text,
    /ip kube-proxy endpoint-GTK6MW7G-ns5\/svc5\/tcp\/p80__10\.180\.0\.3\/80 #2: DNAT to 10\.180\.0\.3:80/,
  );
  assert.match(text, /meta l4proto tcp dnat to 10\.180\.0\.3:80/);
  const json = traceToJSON(r) as { dataplane: string; outcomes: { servicePort: string }[] };
  assert.equal(json.dataplane, 'nftables');
  assert.equal(json.outcomes[0]?.servicePort, 'ns5/svc5:p80');
});

test('IPv6: ip6 table, bracketed endpoints, endpoint names with `.` for `:`', () => {
  const rs = ruleset(
    {
      'nat-prerouting': { base: ['nat', 'prerouting', -100], rules: ['jump services'] },
      services: {
        rules: [
          'ip6 daddr . meta l4proto . th dport vmap { fd00:10:96::1 . tcp . 80 : goto endpoint-AAAAAAAA-ns/s/tcp/http__fd00.10..2/8080 }',
        ],
      },
      'endpoint-AAAAAAAA-ns/s/tcp/http__fd00.10..2/8080': {
        rules: ['meta l4proto tcp dnat to [fd00:10::2]:8080'],
      },
    },
    {},
    'ip6',
  );
  const r = traceNftPacket(
    rs,
    parsePacketSpec({ src: 'fd00:10::9', dst: '[fd00:10:96::1]:80' }),
    defaultContext('pod', [ip('2001:db8::1')]),
  );
  assert.deepEqual(summary(r), ['accept [fd00:10::2]:8080 forward 1']);
  assert.equal(r.outcomes[0]?.servicePort, 'ns/s:http');
  const goto = r.outcomes[0].path.find((s) => s.effect === 'goto');
  assert.equal(goto?.endpoint, '[fd00:10::2]:8080');
  // An IPv4 packet sees no ip6 table.
  const v4 = traceNftPacket(
    rs,
    parsePacketSpec({ src: '10.0.0.1', dst: '10.0.0.2:80' }),
    defaultContext('pod', []),
  );
  assert.deepEqual(summary(v4), ['accept forward 1']);
});
