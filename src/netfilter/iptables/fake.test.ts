import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SvcnetError } from '../../errors.js';
import { FakeIptables } from './fake.js';

const base = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-A - [0:0]
-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-A
-A KUBE-SVC-A -j KUBE-SEP-A
-A KUBE-SEP-A -j DNAT --to-destination 10.244.0.5:80
COMMIT
`;

function failsWith(fn: () => void, re: RegExp): void {
  assert.throws(
    fn,
    (e: unknown) =>
      e instanceof SvcnetError && e.code === 'IPTABLES_RESTORE_FAILED' && re.test(e.message),
  );
}

test('--noflush: declared chains are flushed and refilled, undeclared chains keep their rules', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync(base, { noflush: true });
  ipt.restoreSync(
    '*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d 10.96.0.2/32 -j KUBE-SVC-A\nCOMMIT\n',
    { noflush: true },
  );
  assert.equal(
    ipt.chainRules('nat', 'KUBE-SERVICES'),
    '-A KUBE-SERVICES -d 10.96.0.2/32 -j KUBE-SVC-A\n',
  );
  assert.equal(
    ipt.chainRules('nat', 'KUBE-SEP-A'),
    '-A KUBE-SEP-A -j DNAT --to-destination 10.244.0.5:80\n',
  );
});

test('without --noflush every table in the input is replaced', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync(base, { noflush: true });
  ipt.restoreSync('*nat\n:KUBE-OTHER - [0:0]\nCOMMIT\n', { noflush: false });
  assert.deepEqual(ipt.chainNames('nat').sort(), [
    'INPUT',
    'KUBE-OTHER',
    'OUTPUT',
    'POSTROUTING',
    'PREROUTING',
  ]);
});

test('a jump to an undeclared chain fails the whole restore and changes nothing', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync(base, { noflush: true });
  const before = ipt.saveSync();
  failsWith(() => {
    ipt.restoreSync(
      '*filter\n:KUBE-FORWARD - [0:0]\n-A KUBE-FORWARD -j ACCEPT\nCOMMIT\n*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A -j KUBE-SEP-MISSING\nCOMMIT\n',
      { noflush: true },
    );
  }, /KUBE-SEP-MISSING/);
  assert.equal(ipt.saveSync(), before, 'not even the filter table changed');
  assert.equal(ipt.restores.at(-1)?.ok, false);
});

test('-X deletes; deleting a referenced, missing or built-in chain fails atomically', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync(base, { noflush: true });
  const before = ipt.saveSync();
  failsWith(() => {
    ipt.restoreSync('*nat\n:KUBE-SEP-A - [0:0]\n-X KUBE-SEP-A\nCOMMIT\n', { noflush: true });
  }, /still referenced/);
  failsWith(() => {
    ipt.restoreSync('*nat\n-X KUBE-NOPE\nCOMMIT\n', { noflush: true });
  }, /no chain/);
  failsWith(() => {
    ipt.restoreSync('*nat\n-X PREROUTING\nCOMMIT\n', { noflush: true });
  }, /built-in/);
  assert.equal(ipt.saveSync(), before);
  ipt.restoreSync(
    '*nat\n:KUBE-SVC-A - [0:0]\n:KUBE-SEP-A - [0:0]\n-A KUBE-SVC-A -j RETURN\n-X KUBE-SEP-A\nCOMMIT\n',
    { noflush: true },
  );
  assert.ok(!ipt.chainNames('nat').includes('KUBE-SEP-A'));
});

test('appending to a chain that does not exist fails; a parse error fails', () => {
  const ipt = new FakeIptables();
  failsWith(() => {
    ipt.restoreSync('*nat\n-A KUBE-NOPE -j ACCEPT\nCOMMIT\n', { noflush: true });
  }, /KUBE-NOPE: no chain/);
  failsWith(() => {
    ipt.restoreSync('*nat\n-A PREROUTING -j ACCEPT\n', { noflush: true });
  }, /no COMMIT/);
});

test('save dumps iptables-save text: built-ins first, user chains sorted', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync(base, { noflush: true });
  ipt.ensureRuleSync('prepend', 'nat', 'PREROUTING', [
    '-m',
    'comment',
    '--comment',
    'kubernetes service portals',
    '-j',
    'KUBE-SERVICES',
  ]);
  assert.equal(
    ipt.saveSync('nat'),
    `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SEP-A - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-SEP-A -j DNAT --to-destination 10.244.0.5:80
-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-A
-A KUBE-SVC-A -j KUBE-SEP-A
COMMIT
`,
  );
});

test('ensureChain / ensureRule are idempotent and prepend', () => {
  const ipt = new FakeIptables();
  assert.equal(ipt.ensureChainSync('filter', 'KUBE-FORWARD'), false);
  assert.equal(ipt.ensureChainSync('filter', 'KUBE-FORWARD'), true);
  ipt.ensureRuleSync('append', 'filter', 'FORWARD', ['-j', 'ACCEPT']);
  assert.equal(ipt.ensureRuleSync('prepend', 'filter', 'FORWARD', ['-j', 'KUBE-FORWARD']), false);
  assert.equal(ipt.ensureRuleSync('prepend', 'filter', 'FORWARD', ['-j', 'KUBE-FORWARD']), true);
  assert.equal(
    ipt.chainRules('filter', 'FORWARD'),
    '-A FORWARD -j KUBE-FORWARD\n-A FORWARD -j ACCEPT\n',
  );
  assert.throws(
    () => ipt.ensureRuleSync('append', 'filter', 'INPUT', ['-j', 'KUBE-NOPE']),
    /KUBE-NOPE/,
  );
});

test('a rule its typed form refuses fails the whole restore', () => {
  const ipt = new FakeIptables();
  ipt.restoreSync('*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j ACCEPT\nCOMMIT\n', { noflush: true });
  const before = ipt.saveSync('nat');
  assert.throws(
    () => {
      ipt.restoreSync('*nat\n:KUBE-B - [0:0]\n-A KUBE-B -p tcp -j DNAT\nCOMMIT\n', {
        noflush: true,
      });
    },
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'IPTABLES_RESTORE_FAILED' &&
      /line 3: nat: KUBE-B: DNAT: missing --to-destination/.test(e.message),
  );
  assert.equal(ipt.saveSync('nat'), before);
  assert.throws(
    () => ipt.ensureRuleSync('append', 'nat', 'KUBE-A', ['-j', 'MARK']),
    /nat: KUBE-A: MARK: one of --set-mark/,
  );
});
