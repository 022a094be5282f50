// The assertions of testing.ts must fail when they should: on rules that differ (with a diff
// that shows the difference), on rules that are not jump-consistent, on any outcome, masquerade
// or probability other than the wanted one, and on rules the tracer cannot evaluate.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { sortIptablesText } from './compare.js';
import { DEFAULT_OPTIONS } from './options.js';
import { assertFlows, assertRulesEqual, type Flow, type FlowNode } from './testing.js';

const RULES = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -j MASQUERADE
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-SERVICES -m comment --comment "ns/a:p cluster IP" -m tcp -p tcp -d 10.96.0.1 --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SVC-A -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-1
-A KUBE-SVC-A -j KUBE-SEP-2
-A KUBE-SEP-1 -m tcp -p tcp -j DNAT --to-destination 10.244.1.1:8080
-A KUBE-SEP-2 -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080
COMMIT
*filter
:KUBE-SERVICES - [0:0]
-A KUBE-SERVICES -m tcp -p tcp -d 10.96.0.2 --dport 80 -j REJECT
COMMIT
`;

const NODE: FlowNode = {
  nodeIP: '192.168.0.2',
  localAddresses: ['127.0.0.1/8'],
  localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
};

function message(f: () => void): string {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AssertionError, String(e));
    return e.message;
  }
  assert.fail('expected an AssertionError');
}

test('assertRulesEqual: order and indentation do not matter, a changed rule does, with a diff', () => {
  const canonical = sortIptablesText(RULES);
  assert.notEqual(canonical, RULES, 'the canonical order differs from the input order');
  assert.doesNotThrow(() => {
    assertRulesEqual(canonical, RULES);
  });
  assert.doesNotThrow(() => {
    assertRulesEqual(
      RULES.split('\n')
        .map((l) => `    ${l}`)
        .join('\n\n'),
      RULES,
    );
  });
  const m = message(() => {
    assertRulesEqual(RULES, RULES.replace('--dport 80 -j REJECT', '--dport 81 -j REJECT'));
  });
  assert.match(m, /^rules do not match:/);
  assert.ok(
    m.includes(
      '- -A KUBE-SERVICES -m tcp -p tcp -d 10.96.0.2 --dport 80 -j REJECT\n' +
        '+ -A KUBE-SERVICES -m tcp -p tcp -d 10.96.0.2 --dport 81 -j REJECT',
    ),
    m,
  );
  assert.ok(m.includes('full actual rules (canonical order):\n*filter'), m);
});

test('assertRulesEqual: chain order inside a chain matters', () => {
  const swapped = RULES.replace(
    '-A KUBE-SEP-1 -m tcp -p tcp -j DNAT --to-destination 10.244.1.1:8080\n',
    '',
  ).replace(
    '-A KUBE-SVC-A ! -s',
    '-A KUBE-SEP-1 -m tcp -p tcp -j DNAT --to-destination 10.244.1.1:8080\n-A KUBE-SVC-A ! -s',
  );
  assert.doesNotThrow(() => {
    assertRulesEqual(RULES, swapped);
  }, 'rules of different chains may interleave');
  const reordered = RULES.replace(
    '-A KUBE-SVC-A ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ\n',
    '',
  ).replace(
    '-A KUBE-SVC-A -j KUBE-SEP-2\n',
    '-A KUBE-SVC-A -j KUBE-SEP-2\n-A KUBE-SVC-A ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ\n',
  );
  assert.match(
    message(() => {
      assertRulesEqual(RULES, reordered);
    }),
    /rules do not match/,
  );
});

test('assertRulesEqual: equal but not jump-consistent rules fail unless the check is off', () => {
  const undeclared = RULES.replace(':KUBE-SEP-2 - [0:0]\n', '').replace(
    '-A KUBE-SEP-2 -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080\n',
    '',
  );
  assert.match(
    message(() => {
      assertRulesEqual(undeclared, undeclared);
    }),
    /not jump-consistent:\nnat: KUBE-SVC-A jumps to undeclared chain KUBE-SEP-2/,
  );
  const unused = RULES.replace(
    ':KUBE-SEP-2 - [0:0]\n',
    ':KUBE-SEP-2 - [0:0]\n:KUBE-SVC-B - [0:0]\n',
  );
  assert.match(
    message(() => {
      assertRulesEqual(unused, unused);
    }),
    /chain KUBE-SVC-B is declared but never jumped to/,
  );
  assert.doesNotThrow(() => {
    assertRulesEqual(unused, unused, { checkJumps: false });
  });
});

test('assertFlows: outcomes, masquerade and probabilities must all be as wanted', () => {
  const ok: Flow[] = [
    { src: '10.244.0.5', dst: '10.96.0.1', port: 80, want: '10.244.1.1:8080, 10.244.1.2:8080' },
    { src: '10.244.0.5', dst: '10.96.0.1', port: 80, want: ['10.244.1.2:8080', '10.244.1.1:8080'] },
    {
      src: '10.244.0.5',
      dst: '10.96.0.1',
      port: 80,
      want: { '10.244.1.1:8080': 0.5, '10.244.1.2:8080': 0.5 },
    },
    {
      src: '203.0.113.9',
      dst: '10.96.0.1',
      port: 80,
      want: '10.244.1.1:8080, 10.244.1.2:8080',
      masq: true,
    },
    {
      src: '203.0.113.9',
      dst: '10.96.0.1',
      port: 80,
      want: ['10.244.1.1:8080 masq', '10.244.1.2:8080 masq'],
    },
    { src: '10.244.0.5', dst: '10.96.0.2', port: 80, want: 'REJECT' },
    { src: '10.244.0.5', dst: '10.96.0.3', port: 80, want: 'NONE' },
    { src: '10.244.0.5', dst: '10.96.0.1', port: 80, proto: 'udp', want: 'NONE' },
  ];
  assert.doesNotThrow(() => {
    assertFlows(RULES, ok, NODE);
  });
  const bad: [string, Flow, RegExp][] = [
    [
      'a missing endpoint',
      { src: '10.244.0.5', dst: '10.96.0.1', port: 80, want: '10.244.1.1:8080' },
      /want 10\.244\.1\.1:8080; got 10\.244\.1\.1:8080, 10\.244\.1\.2:8080/,
    ],
    [
      'masquerade not wanted',
      { src: '203.0.113.9', dst: '10.96.0.1', port: 80, want: '10.244.1.1:8080, 10.244.1.2:8080' },
      /got 10\.244\.1\.1:8080 masq, 10\.244\.1\.2:8080 masq/,
    ],
    [
      'masquerade wanted',
      {
        src: '10.244.0.5',
        dst: '10.96.0.1',
        port: 80,
        want: '10.244.1.1:8080, 10.244.1.2:8080',
        masq: true,
      },
      /want 10\.244\.1\.1:8080 masq/,
    ],
    [
      'a probability',
      {
        src: '10.244.0.5',
        dst: '10.96.0.1',
        port: 80,
        want: { '10.244.1.1:8080': 0.25, '10.244.1.2:8080': 0.75 },
      },
      /10\.244\.1\.1:8080: want probability 0\.25, got 0\.5/,
    ],
    [
      'DROP is not REJECT',
      { src: '10.244.0.5', dst: '10.96.0.2', port: 80, want: 'DROP' },
      /want DROP; got REJECT/,
    ],
    [
      'NONE is not ACCEPT',
      { src: '10.244.0.5', dst: '10.96.0.3', port: 80, want: 'ACCEPT' },
      /want ACCEPT; got NONE/,
    ],
  ];
  for (const [name, flow, re] of bad) {
    const m = message(() => {
      assertFlows(RULES, [...ok, { ...flow, name }], NODE);
    });
    assert.match(m, new RegExp(`^1 of ${ok.length + 1} flows differ:\\nflow "${name}"`), name);
    assert.match(m, re, name);
    assert.match(m, /via PREROUTING > /, `${name}: the paths are shown`);
  }
});

test('assertFlows: rules the tracer cannot evaluate fail the flow; kernel dumps may be required to carry hooks', () => {
  const withSet = RULES.replace(
    '-A KUBE-SVC-A ! -s',
    '-A KUBE-SVC-A -m set --match-set X src -j KUBE-SEP-1\n-A KUBE-SVC-A ! -s',
  );
  assert.match(
    message(() => {
      assertFlows(
        withSet,
        [
          {
            src: '10.244.0.5',
            dst: '10.96.0.1',
            port: 80,
            want: '10.244.1.1:8080, 10.244.1.2:8080',
          },
        ],
        NODE,
      );
    }),
    /the tracer met rules it cannot evaluate: KUBE-SVC-A #1: .*-m set/,
  );
  const flow: Flow = {
    src: '10.244.0.5',
    dst: '10.96.0.1',
    port: 80,
    want: '10.244.1.1:8080, 10.244.1.2:8080',
  };
  assert.match(
    message(() => {
      assertFlows(RULES, [flow], NODE, { requireHooks: true });
    }),
    /want 10\.244\.1\.1:8080, 10\.244\.1\.2:8080; got NONE/,
  );
  const hooked = RULES.replace(
    '*nat\n',
    '*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j KUBE-SERVICES\n',
  );
  assert.doesNotThrow(() => {
    assertFlows(hooked, [flow], NODE, { requireHooks: true });
  });
});

test('assertFlows: the origin is inferred from the source, or given', () => {
  const node = { ...NODE, localAddresses: [...DEFAULT_OPTIONS.localAddresses, '192.168.0.2/24'] };
  // From the node itself the packet takes OUTPUT (and is masqueraded: not from a pod).
  assert.match(
    message(() => {
      assertFlows(RULES, [{ src: '192.168.0.2', dst: '10.96.0.1', port: 80, want: 'NONE' }], node);
    }),
    /from node:[\s\S]*via OUTPUT > /,
  );
  assert.match(
    message(() => {
      assertFlows(
        RULES,
        [{ src: '192.168.0.2', dst: '10.96.0.1', port: 80, from: 'external', want: 'NONE' }],
        node,
      );
    }),
    /from external:[\s\S]*via PREROUTING > /,
  );
});
