// Tests of the hooks of a full sync: missing jumps are inserted at the top in kube-proxy's
// order, present ones are not duplicated, canaries are declared only when missing, a shared
// chain (KUBE-FIREWALL) that exists is never redeclared (flushed), and the order the kernel
// ends up with is the one `hooksInLiveOrder` gives the tracer.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import type { IptablesTableName } from '../../netfilter/iptables/model.js';
import { renderRule } from '../../netfilter/iptables/render.js';
import { hooksInLiveOrder } from './hooks.js';
import { jumpRules } from './plan-fixed.js';
import { addHooks, scanKernelState, withHooks } from './plan-hooks.js';
import type { KernelState } from './plan-hooks.js';
import type { PlanTable } from './plan.js';
import { DEFAULT_OPTIONS } from './options.js';
import { planFromObjects } from './plan-objects.js';

const canaries = (['mangle', 'nat', 'filter'] as const).map((table) => ({
  table,
  chain: 'KUBE-PROXY-CANARY',
}));

/** A plan text of two tables that only declare their fixed chains, and where they lie. */
function planOf(chains: Record<'filter' | 'nat', string[]>): {
  text: string;
  tables: PlanTable[];
} {
  let text = '';
  const tables: PlanTable[] = [];
  for (const name of ['filter', 'nat'] as const) {
    const start = text.length;
    text += `*${name}\n${chains[name].map((c) => `:${c} - [0:0]\n`).join('')}`;
    tables.push({
      name,
      start,
      rulesStart: text.length,
      end: text.length,
      fixedChains: chains[name],
    });
    text += 'COMMIT\n';
  }
  return { text, tables };
}

const plan = planOf({
  filter: [
    'KUBE-SERVICES',
    'KUBE-EXTERNAL-SERVICES',
    'KUBE-FORWARD',
    'KUBE-NODEPORTS',
    'KUBE-PROXY-FIREWALL',
  ],
  nat: ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ'],
});

function hooks(state: KernelState) {
  const declares = (t: IptablesTableName, chain: string): boolean =>
    plan.tables.some((p) => p.name === t && p.fixedChains.includes(chain));
  const h = addHooks(jumpRules(), canaries, state, declares);
  return { ...h, text: withHooks(plan.text, plan.tables, h) };
}

test('first full sync on an empty node: every jump inserted once, canaries declared', async () => {
  const ipt = new FakeIptables('IPv4');
  const { text, insertedJumps, createdChains } = hooks(scanKernelState(await ipt.save()));
  assert.equal(insertedJumps, jumpRules().length);
  assert.equal(createdChains, 4, 'three canaries and KUBE-FIREWALL');
  assert.match(text, /^\*mangle\n:KUBE-PROXY-CANARY - \[0:0\]\nCOMMIT\n\*filter\n/);
  await ipt.restore(text, { noflush: true });
  const nat = ipt.chainRules('nat', 'OUTPUT');
  assert.equal(
    nat,
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n',
  );
  const input = ipt.chainRules('filter', 'INPUT').trim().split('\n');
  assert.equal(
    input[0],
    '-A INPUT -j KUBE-FIREWALL',
    'the last ensured jump is on top, like kube-proxy',
  );
  assert.equal(await ipt.chainExists('mangle', 'KUBE-PROXY-CANARY'), true);

  // A second full sync finds everything and adds nothing.
  const again = hooks(scanKernelState(await ipt.save()));
  assert.equal(again.insertedJumps, 0);
  assert.equal(again.createdChains, 0);
  assert.doesNotMatch(again.text, /-I |KUBE-PROXY-CANARY|KUBE-FIREWALL|mangle/);
});

test('hooksInLiveOrder is the order the inserts leave in the kernel', async () => {
  const ipt = new FakeIptables('IPv4');
  await ipt.restore(hooks(scanKernelState(await ipt.save())).text, { noflush: true });
  for (const [t, chain] of [
    ['filter', 'INPUT'],
    ['filter', 'FORWARD'],
    ['filter', 'OUTPUT'],
    ['nat', 'PREROUTING'],
    ['nat', 'OUTPUT'],
    ['nat', 'POSTROUTING'],
  ] as const) {
    const want = hooksInLiveOrder()
      .filter((j) => j.table === t && j.sourceChain === chain)
      .map((j) => `${renderRule({ chain, args: j.args })}\n`)
      .join('');
    assert.equal(ipt.chainRules(t, chain), want, `${t} ${chain}`);
  }
});

test('with kubelet first, its KUBE-FIREWALL jumps stay below the proxy ones', async () => {
  const ipt = new FakeIptables('IPv4');
  ipt.restoreSync(
    '*filter\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A OUTPUT -j KUBE-FIREWALL\nCOMMIT\n',
    { noflush: true },
  );
  const first = hooks(scanKernelState(await ipt.save()));
  assert.equal(first.insertedJumps, jumpRules().length - 2);
  await ipt.restore(first.text, { noflush: true });
  const want = hooksInLiveOrder('kubelet-first')
    .filter((j) => j.table === 'filter' && j.sourceChain === 'INPUT')
    .map((j) => `${renderRule({ chain: 'INPUT', args: j.args })}\n`)
    .join('');
  assert.equal(ipt.chainRules('filter', 'INPUT'), want);
  assert.match(
    want,
    /KUBE-PROXY-FIREWALL\n.*KUBE-NODEPORTS\n.*KUBE-EXTERNAL-SERVICES\n.*KUBE-FIREWALL\n$/s,
  );
});

test('after someone flushed nat, only the nat jumps come back; an existing KUBE-FIREWALL keeps its rules', async () => {
  const ipt = new FakeIptables('IPv4');
  const first = hooks(scanKernelState(await ipt.save()));
  await ipt.restore(first.text, { noflush: true });
  ipt.restoreSync('*filter\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n', { noflush: true });
  ipt.flushTable('nat');
  const { text, insertedJumps } = hooks(scanKernelState(await ipt.save()));
  assert.equal(insertedJumps, 3, 'nat OUTPUT, PREROUTING and POSTROUTING');
  await ipt.restore(text, { noflush: true });
  assert.equal(ipt.chainRules('filter', 'KUBE-FIREWALL'), '-A KUBE-FIREWALL -j DROP\n');
  assert.match(ipt.chainRules('nat', 'PREROUTING'), /-j KUBE-SERVICES/);
});

test('scanKernelState keeps declarations and built-in rules only', () => {
  const s = scanKernelState(
    [
      '# Generated by iptables-save',
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':KUBE-SERVICES - [0:0]',
      ':KUBE-SVC-X - [0:0]',
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-X',
      'COMMIT',
      '',
    ].join('\n'),
  );
  assert.deepEqual([...(s.chains.get('nat') ?? [])], ['PREROUTING', 'KUBE-SERVICES', 'KUBE-SVC-X']);
  assert.deepEqual(s.builtinRules.get('nat'), [
    {
      chain: 'PREROUTING',
      args: ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'],
    },
  ]);
});

test("a real plan's tables locate its text: declarations, then rules, then COMMIT", () => {
  const { plan: p } = planFromObjects(
    [],
    [],
    { ...DEFAULT_OPTIONS, nodeName: 'n', nodeIP: '' },
    'IPv4',
  );
  assert.deepEqual(
    p.tables.map((t) => t.name),
    ['filter', 'nat'],
  );
  assert.equal(p.tables.map((t) => `${p.text.slice(t.start, t.end)}COMMIT\n`).join(''), p.text);
  for (const t of p.tables) {
    const head = p.text.slice(t.start, t.rulesStart);
    assert.match(head, new RegExp(`^\\*${t.name}\\n(:\\S+ - \\[0:0\\]\\n)+$`));
    assert.match(p.text.slice(t.rulesStart, t.end), /^(-A .*\n)+$/);
  }
});
