// Tests of the --cleanup plan: it removes the proxy's chains and the hooks into them in one
// atomic restore, and leaves everybody else's rules alone.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { planCleanup } from './plan-cleanup.js';

test('cleanup removes KUBE chains and their jumps, keeps foreign rules', async () => {
  const ipt = new FakeIptables('IPv4');
  ipt.restoreSync(
    [
      '*mangle',
      ':KUBE-PROXY-CANARY - [0:0]',
      'COMMIT',
      '*nat',
      ':KUBE-SERVICES - [0:0]',
      ':KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]',
      ':KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]',
      ':KUBE-MARK-MASQ - [0:0]',
      ':DOCKER - [0:0]',
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A PREROUTING -j DOCKER',
      '-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-AAAAAAAAAAAAAAAA',
      '-A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB',
      '-A KUBE-SEP-BBBBBBBBBBBBBBBB -j KUBE-MARK-MASQ',
      '-A DOCKER -j RETURN',
      'COMMIT',
      '*filter',
      ':KUBE-FORWARD - [0:0]',
      '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
      '-A FORWARD -j ACCEPT',
      'COMMIT',
      '',
    ].join('\n'),
    { noflush: true },
  );
  const plan = planCleanup(parseDocument(await ipt.save()));
  assert.equal(plan.deletedChains, 6);
  assert.equal(plan.deletedRules, 2);
  await ipt.restore(plan.text, { noflush: true });
  const after = await ipt.save();
  assert.doesNotMatch(after, /KUBE-/);
  assert.match(after, /-A PREROUTING -j DOCKER/);
  assert.match(after, /-A FORWARD -j ACCEPT/);
  assert.equal(planCleanup(parseDocument(after)).text, '', 'nothing left to do');
});
