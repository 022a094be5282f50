// Tests of the iptables backend choice (variant.ts) on fake `*-save` outputs: kubelet's hint
// chains, then KUBE-* rule counts, then any rules, else nft; the detection's order of reads
// through a scripted FakeExecer; and the once-per-execer memo.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../../os/exec.js';
import type { ExpectedCall } from '../../os/exec.js';
import {
  chooseIptablesVariant,
  commandsOfChoice,
  countRules,
  detectIptablesVariant,
  parseVariantFromVersion,
  resolveIptablesVariant,
} from './variant.js';

const mangle = (extra: string) =>
  `*mangle\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n${extra}COMMIT\n`;
const HINT = mangle(':KUBE-IPTABLES-HINT - [0:0]\n');
const CANARY = mangle(':KUBE-KUBELET-CANARY - [0:0]\n');
const KUBE_RULES = `*nat\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-X\nCOMMIT\n`;
const OTHER_RULES = `*filter\n-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\nCOMMIT\n`;

const variantOf = (legacySave: string, nftSave: string) =>
  chooseIptablesVariant({ legacySave, nftSave }).variant;

test('the hint chain decides: in legacy only → legacy, in nft only → nft, in both → nft', () => {
  assert.equal(variantOf(HINT, ''), 'legacy');
  assert.equal(variantOf('', HINT), 'nft');
  assert.equal(variantOf(HINT, HINT), 'nft');
  // The hint beats rule counts: kubelet's chain marks the node's backend.
  assert.equal(variantOf(HINT, KUBE_RULES + OTHER_RULES), 'legacy');
  assert.match(
    chooseIptablesVariant({ legacySave: HINT, nftSave: '' }).reason,
    /KUBE-IPTABLES-HINT.*legacy/,
  );
});

test('the kubelet canary chain counts as a hint', () => {
  assert.equal(variantOf(CANARY, ''), 'legacy');
  assert.equal(variantOf('', CANARY), 'nft');
  assert.match(
    chooseIptablesVariant({ legacySave: '', nftSave: CANARY }).reason,
    /KUBE-KUBELET-CANARY/,
  );
  // A chain whose name only starts like a hint is no hint.
  assert.equal(variantOf(mangle(':KUBE-IPTABLES-HINTX - [0:0]\n'), ''), 'nft');
});

test('without hints, more KUBE-* rules win, then more rules of any kind', () => {
  assert.equal(variantOf(KUBE_RULES, ''), 'legacy');
  assert.equal(variantOf('', KUBE_RULES), 'nft');
  // KUBE-* rules outweigh more rules of other kinds.
  assert.equal(variantOf(KUBE_RULES, OTHER_RULES), 'legacy');
  assert.equal(variantOf(OTHER_RULES, KUBE_RULES), 'nft');
  assert.equal(variantOf(OTHER_RULES, ''), 'legacy');
  assert.equal(variantOf('', OTHER_RULES), 'nft');
  const c = chooseIptablesVariant({ legacySave: KUBE_RULES, nftSave: OTHER_RULES });
  assert.equal(c.reason, 'the legacy tables hold 2 KUBE-* rules, the nft tables 0');
  assert.deepEqual(countRules(KUBE_RULES), { all: 2, kube: 2 });
});

test('no rules anywhere, or a tie → nft; a missing backend is never chosen', () => {
  assert.equal(variantOf('', ''), 'nft');
  assert.equal(variantOf(mangle(''), mangle('')), 'nft');
  assert.equal(variantOf(OTHER_RULES, OTHER_RULES), 'nft');
  assert.match(chooseIptablesVariant({ legacySave: '', nftSave: '' }).reason, /no rules/);
  assert.deepEqual(chooseIptablesVariant({ legacySave: HINT }), {
    variant: 'legacy',
    specific: true,
    reason: 'only iptables-legacy is installed',
  });
  assert.equal(chooseIptablesVariant({ nftSave: '' }).variant, 'nft');
});

test('parseVariantFromVersion', () => {
  assert.equal(parseVariantFromVersion('iptables v1.8.9 (nf_tables)\n'), 'nft');
  assert.equal(parseVariantFromVersion('iptables v1.8.7 (legacy)\n'), 'legacy');
  assert.equal(parseVariantFromVersion('iptables v1.6.1\n'), 'legacy');
  assert.equal(parseVariantFromVersion(''), undefined);
});

const save = (cmd: string, stdout: string, args: string[] = [], code = 0): ExpectedCall => ({
  cmd,
  args,
  result: { code, stdout },
});

test('detection reads nft mangle first and stops at a hint there', async () => {
  const ex = new FakeExecer().expect(
    save('iptables-nft-save', CANARY, ['-t', 'mangle']),
    save('ip6tables-nft-save', '', ['-t', 'mangle']),
  );
  assert.deepEqual(await detectIptablesVariant(ex), {
    variant: 'nft',
    specific: true,
    reason: "kubelet's KUBE-KUBELET-CANARY chain is in the nft tables",
  });
  ex.verify();
});

test('detection reads whole legacy dumps (never -t mangle), then whole nft dumps', async () => {
  const ex = new FakeExecer().expect(
    save('iptables-nft-save', mangle(''), ['-t', 'mangle']),
    save('ip6tables-nft-save', mangle(''), ['-t', 'mangle']),
    save('iptables-legacy-save', ''),
    save('ip6tables-legacy-save', HINT),
    save('iptables-nft-save', OTHER_RULES),
    save('ip6tables-nft-save', ''),
  );
  const c = await detectIptablesVariant(ex);
  assert.equal(c.variant, 'legacy');
  assert.match(c.reason, /KUBE-IPTABLES-HINT chain is in the legacy tables/);
  ex.verify();
  const cmds = commandsOfChoice(c, 'IPv6');
  assert.deepEqual(cmds, {
    iptables: 'ip6tables-legacy',
    restore: 'ip6tables-legacy-restore',
    save: 'ip6tables-legacy-save',
  });
});

test('detection without variant tools falls back to plain iptables and its version', async () => {
  const ex = new FakeExecer().expect(
    save('iptables-nft-save', '', ['-t', 'mangle'], 127),
    save('ip6tables-nft-save', '', ['-t', 'mangle'], 127),
    save('iptables-legacy-save', '', [], 127),
    save('ip6tables-legacy-save', '', [], 127),
    { cmd: 'iptables', args: ['--version'], result: { stdout: 'iptables v1.6.1\n' } },
  );
  const c = await detectIptablesVariant(ex);
  assert.deepEqual([c.variant, c.specific], ['legacy', false]);
  assert.equal(commandsOfChoice(c, 'IPv4').restore, 'iptables-restore');
  ex.verify();
});

test('resolveIptablesVariant detects once per execer; a forced setting runs nothing', async () => {
  const ex = new FakeExecer().expect(
    save('iptables-nft-save', HINT, ['-t', 'mangle']),
    save('ip6tables-nft-save', '', ['-t', 'mangle']),
  );
  const first = await resolveIptablesVariant('auto', ex);
  const again = await resolveIptablesVariant('auto', ex);
  assert.equal(again, first);
  ex.verify();
  const forced = await resolveIptablesVariant('legacy', new FakeExecer());
  assert.deepEqual([forced.variant, forced.specific], ['legacy', true]);
  assert.match(forced.reason, /--iptables-variant/);
});
