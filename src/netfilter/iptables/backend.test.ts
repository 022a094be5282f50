// Tests of the real iptables backend's command lines through a scripted FakeExecer: restore
// flags and error reporting, and check-then-insert for jump rules (variant choice:
// variant.test.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../../os/exec.js';
import {
  MALLOC_HUGETLB,
  RealIptables,
  commandsFor,
  IptablesRestoreError,
  legacyEnv,
} from './backend.js';

test('commandsFor names one variant and family', () => {
  assert.deepEqual(commandsFor('IPv6', 'nft'), {
    iptables: 'ip6tables-nft',
    restore: 'ip6tables-nft-restore',
    save: 'ip6tables-nft-save',
  });
  assert.equal(commandsFor('IPv4', undefined).restore, 'iptables-restore');
});

test('restore sends the text with -w --noflush --counters and names the failing line', async () => {
  const text = '*nat\n:FOO - [0:0]\n-A FOO -j BADTARGET\nCOMMIT\n';
  const ex = new FakeExecer().expect(
    {
      cmd: 'iptables-nft-restore',
      args: ['-w', '5', '--noflush', '--counters'],
      check: (req) => {
        assert.equal(req.stdin, text);
      },
    },
    {
      cmd: 'iptables-nft-restore',
      result: {
        code: 2,
        stderr:
          "iptables-restore v1.8.9 (nf_tables): Chain 'BADTARGET' does not exist\nError occurred at line: 3\n",
      },
    },
  );
  const ipt = new RealIptables(ex, 'IPv4', commandsFor('IPv4', 'nft'));
  await ipt.restore(text, { noflush: true, counters: true });
  await assert.rejects(ipt.restore(text, { noflush: true, counters: true }), (e: unknown) => {
    assert.ok(e instanceof IptablesRestoreError);
    assert.equal(e.line, 3);
    assert.equal(e.code, 'IPTABLES_RESTORE_FAILED');
    assert.match(e.message, /input line 3: -A FOO -j BADTARGET/);
    return true;
  });
  ex.verify();
});

test('ensureRule checks first and inserts only when missing; chainExists maps exit codes', async () => {
  const jump = ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'];
  const ex = new FakeExecer().expect(
    {
      cmd: 'iptables',
      args: ['-w', '5', '-t', 'nat', '-C', 'OUTPUT', ...jump],
      result: { code: 0 },
    },
    {
      cmd: 'iptables',
      args: ['-w', '5', '-t', 'nat', '-C', 'OUTPUT', ...jump],
      result: { code: 1 },
    },
    { cmd: 'iptables', args: ['-w', '5', '-t', 'nat', '-I', 'OUTPUT', ...jump] },
    {
      cmd: 'iptables',
      args: ['-w', '5', '-t', 'mangle', '-S', 'KUBE-PROXY-CANARY', '1'],
      result: { code: 1 },
    },
    {
      cmd: 'iptables',
      args: ['-w', '5', '-t', 'mangle', '-S', 'KUBE-PROXY-CANARY', '1'],
      result: { code: 0 },
    },
    {
      cmd: 'iptables',
      args: ['-w', '5', '-t', 'mangle', '-S', 'KUBE-PROXY-CANARY', '1'],
      result: { code: 4, stderr: 'lock' },
    },
  );
  const ipt = new RealIptables(ex, 'IPv4');
  assert.equal(await ipt.ensureRule('prepend', 'nat', 'OUTPUT', jump), true);
  assert.equal(await ipt.ensureRule('prepend', 'nat', 'OUTPUT', jump), false);
  assert.equal(await ipt.chainExists('mangle', 'KUBE-PROXY-CANARY'), false);
  assert.equal(await ipt.chainExists('mangle', 'KUBE-PROXY-CANARY'), true);
  await assert.rejects(ipt.chainExists('mangle', 'KUBE-PROXY-CANARY'), /exit 4/);
  ex.verify();
});

test('legacyEnv adds the huge-page malloc tunable to any existing tunables, once', () => {
  assert.deepEqual(legacyEnv(undefined), { GLIBC_TUNABLES: MALLOC_HUGETLB });
  assert.deepEqual(legacyEnv(''), { GLIBC_TUNABLES: MALLOC_HUGETLB });
  assert.deepEqual(legacyEnv('glibc.malloc.arena_max=2'), {
    GLIBC_TUNABLES: `glibc.malloc.arena_max=2:${MALLOC_HUGETLB}`,
  });
  assert.deepEqual(legacyEnv(`a=1:${MALLOC_HUGETLB}`), {});
});

test('the legacy binaries run with legacyEnv, the nft ones with the environment as it is', async () => {
  const ex = new FakeExecer().expect(
    {
      cmd: 'iptables-legacy-restore',
      check: (req) => {
        assert.match(req.env?.GLIBC_TUNABLES ?? '', /hugetlb=1/);
      },
    },
    {
      cmd: 'iptables-legacy-save',
      check: (req) => {
        assert.match(req.env?.GLIBC_TUNABLES ?? '', /hugetlb=1/);
      },
    },
    {
      cmd: 'iptables-nft-restore',
      check: (req) => {
        assert.equal(req.env, undefined);
      },
    },
  );
  await new RealIptables(ex, 'IPv4', commandsFor('IPv4', 'legacy')).restore('*nat\nCOMMIT\n', {
    noflush: true,
  });
  await new RealIptables(ex, 'IPv4', commandsFor('IPv4', 'legacy')).save('nat');
  await new RealIptables(ex, 'IPv4', commandsFor('IPv4', 'nft')).restore('*nat\nCOMMIT\n', {
    noflush: true,
  });
  ex.verify();
});
