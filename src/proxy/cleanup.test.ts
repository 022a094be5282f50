// Unit tests of the mode-leftover cleanup against Fakes: the daemon in nftables mode removes
// iptables mode's chains and hooks and keeps its own table; in iptables mode it removes the
// nftables tables and keeps its chains; --cleanup removes both; a missing tool is not fatal.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import type { CleanupSeams, NftTableCleaner } from './cleanup.js';
import { cleanupLeftovers, formatCleanup, nftTableCleaner } from './cleanup.js';
import { FakeNftBackend } from '../netfilter/nftables/backend.js';

const log = pino({ level: 'silent' });

/** iptables mode's leftovers: a service chain, KUBE-SERVICES and its hook from PREROUTING. */
function iptablesWithLeftovers(): FakeIptables {
  const ipt = new FakeIptables('IPv4');
  ipt.restoreSync(
    [
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':KUBE-SERVICES - [0:0]',
      ':KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]',
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A PREROUTING -j ACCEPT',
      '-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-SVC-AAAAAAAAAAAAAAAA',
      'COMMIT',
      '',
    ].join('\n'),
    { noflush: true },
  );
  return ipt;
}

/** An nftables table per family, present or not. */
function tables(present: Record<string, boolean>): NftTableCleaner[] {
  return (['IPv4', 'IPv6'] as const).map((family) => ({
    family,
    removeTable: () => {
      const was = present[family] ?? false;
      present[family] = false;
      return Promise.resolve(was);
    },
  }));
}

function seams(ipt: FakeIptables, present: Record<string, boolean>): CleanupSeams {
  return {
    iptables: () => Promise.resolve([ipt]),
    nftables: () => Promise.resolve(tables(present)),
  };
}

test('nftables mode removes iptables chains and their hooks, and keeps its own tables', async () => {
  const ipt = iptablesWithLeftovers();
  const present = { IPv4: true, IPv6: true };
  const out = await cleanupLeftovers('nftables', seams(ipt, present), log);
  const nat = ipt.saveSync('nat');
  assert.doesNotMatch(nat, /KUBE-/);
  assert.match(nat, /^-A PREROUTING -j ACCEPT$/m, 'a rule that is not a hook stays');
  assert.deepEqual(present, { IPv4: true, IPv6: true });
  assert.deepEqual(
    out.map((r) => [r.mode, r.family, r.chains, r.rules]),
    [['iptables', 'IPv4', 2, 1]],
  );
});

test('iptables mode removes the nftables tables and keeps its chains', async () => {
  const ipt = iptablesWithLeftovers();
  const present = { IPv4: true, IPv6: false };
  const out = await cleanupLeftovers('iptables', seams(ipt, present), log);
  assert.match(ipt.saveSync('nat'), /KUBE-SVC-AAAAAAAAAAAAAAAA/);
  assert.deepEqual(present, { IPv4: false, IPv6: false });
  assert.equal(
    formatCleanup(out),
    'IPv4: removed nftables table ip kube-proxy\nIPv6: no nftables table ip6 kube-proxy',
  );
});

test('--cleanup removes every mode; an iptables failure then fails it, at start it is only logged', async () => {
  const ipt = iptablesWithLeftovers();
  const present = { IPv4: true, IPv6: true };
  const out = await cleanupLeftovers('all', seams(ipt, present), log);
  assert.doesNotMatch(ipt.saveSync('nat'), /KUBE-/);
  assert.deepEqual(present, { IPv4: false, IPv6: false });
  assert.deepEqual(
    out.map((r) => `${r.mode} ${r.family}`),
    ['iptables IPv4', 'nftables IPv4', 'nftables IPv6'],
  );
  const broken: CleanupSeams = {
    iptables: () => Promise.reject(new Error('iptables: command not found')),
    nftables: () => Promise.resolve([]),
  };
  await assert.rejects(cleanupLeftovers('all', broken, log), /command not found/);
  assert.deepEqual(await cleanupLeftovers('nftables', broken, log), []);
});

test('the nft cleaner deletes the whole table when present, through the backend', async () => {
  const nft = new FakeNftBackend('IPv4');
  nft.kernel.load(
    'add table ip kube-proxy\nadd chain ip kube-proxy services\nadd table ip filter\n',
  );
  const cleaner = nftTableCleaner(nft);
  assert.equal(await cleaner.removeTable(), true);
  assert.deepEqual([...nft.kernel.ruleset().tables.keys()], ['ip filter']);
  assert.equal(await cleaner.removeTable(), false);
});
