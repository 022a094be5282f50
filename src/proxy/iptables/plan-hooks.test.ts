// Tests of folding hooks into the full-sync restore: missing jumps are inserted at the top
// in kube-proxy's order, present ones are not duplicated, canaries are declared only when
// missing, and a shared chain (KUBE-FIREWALL) that exists is never redeclared (flushed).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { renderDocument } from '../../netfilter/iptables/render.js';
import { jumpRules } from './plan-fixed.js';
import { addHooks, scanKernelState } from './plan-hooks.js';

const canaries = (['mangle', 'nat', 'filter'] as const).map((table) => ({
  table,
  chain: 'KUBE-PROXY-CANARY',
}));
const planDoc = {
  tables: [
    {
      name: 'filter' as const,
      chains: [
        'KUBE-SERVICES',
        'KUBE-EXTERNAL-SERVICES',
        'KUBE-FORWARD',
        'KUBE-NODEPORTS',
        'KUBE-PROXY-FIREWALL',
      ].map((name) => ({ name, policy: '-' })),
      rules: [],
      deleteChains: [],
    },
    {
      name: 'nat' as const,
      chains: ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ'].map(
        (name) => ({ name, policy: '-' }),
      ),
      rules: [],
      deleteChains: [],
    },
  ],
};

test('first full sync on an empty node: every jump inserted once, canaries declared', async () => {
  const ipt = new FakeIptables('IPv4');
  const state = scanKernelState(await ipt.save());
  const { document, insertedJumps, createdChains } = addHooks(
    planDoc,
    jumpRules(),
    canaries,
    state,
  );
  assert.equal(insertedJumps, jumpRules().length);
  assert.equal(createdChains, 4, 'three canaries and KUBE-FIREWALL');
  await ipt.restore(renderDocument(document), { noflush: true });
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
  const again = addHooks(planDoc, jumpRules(), canaries, scanKernelState(await ipt.save()));
  assert.equal(again.insertedJumps, 0);
  assert.equal(again.createdChains, 0);
  assert.doesNotMatch(renderDocument(again.document), /-I |KUBE-PROXY-CANARY|KUBE-FIREWALL/);
});

test('after someone flushed nat, only the nat jumps come back; an existing KUBE-FIREWALL keeps its rules', async () => {
  const ipt = new FakeIptables('IPv4');
  const first = addHooks(planDoc, jumpRules(), canaries, scanKernelState(await ipt.save()));
  await ipt.restore(renderDocument(first.document), { noflush: true });
  ipt.restoreSync('*filter\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n', { noflush: true });
  ipt.flushTable('nat');
  const state = scanKernelState(await ipt.save());
  const { document, insertedJumps } = addHooks(planDoc, jumpRules(), canaries, state);
  assert.equal(insertedJumps, 3, 'nat OUTPUT, PREROUTING and POSTROUTING');
  await ipt.restore(renderDocument(document), { noflush: true });
  assert.equal(ipt.chainRules('filter', 'KUBE-FIREWALL'), '-A KUBE-FIREWALL -j DROP\n');
  assert.match(ipt.chainRules('nat', 'PREROUTING'), /-j KUBE-SERVICES/);
});
