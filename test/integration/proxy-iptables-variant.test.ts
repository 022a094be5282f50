// The iptables backend choice against the real binaries and kernel (#16): in a fresh node
// namespace, seed one backend's tables the way a node's kubelet or an earlier proxy would,
// start the proxy with --iptables-variant auto (in-process, its commands run in the
// namespace), and check that it chose that backend and wrote everything there — its
// KUBE-SERVICES rules and its canary — and nothing through the other one. The detection alone
// is also run against the binaries for the cases that need no proxy.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { detectIptablesVariant } from '../../src/netfilter/iptables/variant.js';
import { NetnsExecer, service, slice, startInProcessProxy } from './lib/proxy-driver.js';
import type { InProcessProxy } from './lib/proxy-driver.js';
import { nsExec, sh, skipReason, sweep, waitFor } from './lib/proxy-lab.js';
import { skipOrFail } from './lib/prereq.js';

const STEM = 'svcnet-ipv';
const PREFIX = `${STEM}-t${String(process.pid)}-`;
const TOOLS = [
  'ip',
  'iptables-legacy',
  'iptables-legacy-save',
  'iptables-nft',
  'iptables-nft-save',
];
const skip = skipOrFail(skipReason(TOOLS));

let seq = 0;
/** A fresh namespace with lo up; deleted by the suite's `after`. */
function freshNs(): string {
  const ns = `${PREFIX}${String(seq++)}`;
  sh('ip', ['netns', 'add', ns]);
  nsExec(ns, 'ip', ['link', 'set', 'lo', 'up']);
  return ns;
}

/** Runs `iptables-VARIANT ARGS` in the namespace. */
function ipt(ns: string, variant: 'legacy' | 'nft', args: string[]): string {
  return nsExec(ns, `iptables-${variant}`, ['-w', '5', ...args]);
}

function save(ns: string, variant: 'legacy' | 'nft'): string {
  return nsExec(ns, `iptables-${variant}-save`, []);
}

describe(
  '--iptables-variant auto picks the backend already holding the node rules',
  { skip },
  () => {
    before(() => {
      sweep(STEM);
    });
    after(() => {
      sweep(PREFIX);
    });

    /** Starts a proxy in `ns` (auto), programs one Service and waits for it in `variant`. */
    async function proxyIn(ns: string, variant: 'legacy' | 'nft'): Promise<InProcessProxy> {
      const proxy = await startInProcessProxy(ns, 'node-a', { iptablesVariant: 'auto' });
      try {
        proxy.services.upsert(service('web', '10.96.0.10', 80));
        proxy.slices.upsert(slice('web', 80, ['10.244.0.5'], 'node-a'));
        await proxy.startInformers();
        await waitFor(
          () => /^-A KUBE-SERVICES .*10\.96\.0\.10\/32/m.test(save(ns, variant)),
          15_000,
          `the Service's rules in iptables-${variant}`,
        );
        // The canary is created at the first sync, through the same backend.
        await waitFor(
          () => /^:KUBE-PROXY-CANARY /m.test(save(ns, variant)),
          5_000,
          `KUBE-PROXY-CANARY in iptables-${variant}`,
        );
      } catch (e) {
        await proxy.stop();
        throw e;
      }
      return proxy;
    }

    test('KUBE-IPTABLES-HINT in legacy mangle: the proxy programs iptables-legacy only', async () => {
      const ns = freshNs();
      ipt(ns, 'legacy', ['-t', 'mangle', '-N', 'KUBE-IPTABLES-HINT']);
      const proxy = await proxyIn(ns, 'legacy');
      try {
        assert.equal(proxy.daemon.variant, 'legacy');
        assert.match(save(ns, 'legacy'), /^:KUBE-SERVICES /m);
        const nft = save(ns, 'nft');
        assert.doesNotMatch(nft, /KUBE-/, 'nothing of the proxy in iptables-nft');
      } finally {
        await proxy.stop();
      }
    });

    test('KUBE-IPTABLES-HINT in nft mangle wins over more rules in legacy: iptables-nft only', async () => {
      const ns = freshNs();
      ipt(ns, 'nft', ['-t', 'mangle', '-N', 'KUBE-IPTABLES-HINT']);
      for (let i = 0; i < 3; i++) ipt(ns, 'legacy', ['-A', 'INPUT', '-j', 'ACCEPT']);
      const proxy = await proxyIn(ns, 'nft');
      try {
        assert.equal(proxy.daemon.variant, 'nft');
        assert.doesNotMatch(save(ns, 'legacy'), /KUBE-/, 'nothing of the proxy in iptables-legacy');
      } finally {
        await proxy.stop();
      }
    });

    test('detection against the binaries: canary, KUBE-* rules, any rules, nothing', async () => {
      const detect = async (ns: string) =>
        (await detectIptablesVariant(new NetnsExecer(ns))).variant;
      const canary = freshNs();
      ipt(canary, 'legacy', ['-t', 'mangle', '-N', 'KUBE-KUBELET-CANARY']);
      assert.equal(await detect(canary), 'legacy');

      // An earlier proxy's rules in legacy outweigh more non-KUBE rules in nft.
      const kube = freshNs();
      ipt(kube, 'legacy', ['-t', 'nat', '-N', 'KUBE-SERVICES']);
      ipt(kube, 'legacy', ['-t', 'nat', '-A', 'OUTPUT', '-j', 'KUBE-SERVICES']);
      for (let i = 0; i < 3; i++) ipt(kube, 'nft', ['-A', 'INPUT', '-j', 'ACCEPT']);
      assert.equal(await detect(kube), 'legacy');

      const anyRules = freshNs();
      ipt(anyRules, 'legacy', ['-A', 'INPUT', '-j', 'ACCEPT']);
      assert.equal(await detect(anyRules), 'legacy');

      const empty = freshNs();
      const choice = await detectIptablesVariant(new NetnsExecer(empty));
      assert.equal(choice.variant, 'nft');
      assert.match(choice.reason, /no rules/);
      // Detection itself created no table in legacy (it never asks for -t mangle there).
      assert.equal(save(empty, 'legacy').trim(), '');
    });
  },
);
