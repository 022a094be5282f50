import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import { chooseIptablesVariant } from '../netfilter/iptables/variant.js';
import { FakeExecer } from '../os/exec.js';
import { LAB_IPTABLES_VARIANT } from './iptables-variant.js';
import { ensureKubeletChains, kubeletChainsRestore, kubeletIptables } from './kubelet-chains.js';

test('the hint chain in mangle and the canary in mangle, nat and filter, both families', async () => {
  const v4 = new FakeIptables('IPv4');
  const v6 = new FakeIptables('IPv6');
  assert.deepEqual(await ensureKubeletChains([v4, v6], () => undefined), ['IPv4', 'IPv6']);
  for (const ipt of [v4, v6]) {
    const mangle = ipt.saveSync('mangle');
    assert.match(mangle, /^:KUBE-IPTABLES-HINT - \[0:0\]$/m);
    assert.match(mangle, /^:KUBE-KUBELET-CANARY - \[0:0\]$/m);
    assert.match(ipt.saveSync('nat'), /^:KUBE-KUBELET-CANARY /m);
    assert.match(ipt.saveSync('filter'), /^:KUBE-KUBELET-CANARY /m);
    assert.doesNotMatch(ipt.saveSync(), /^-A /m, 'the chains are empty');
  }
  // Idempotent: a restarted agent finds them and changes nothing.
  const before = v4.saveSync();
  assert.deepEqual(await ensureKubeletChains([v4], () => undefined), ['IPv4']);
  assert.equal(v4.saveSync(), before);
});

test("a proxy's auto detection picks the backend the agent wrote its hint with", async () => {
  // The lab forces legacy on its proxies; the agent's hint in the legacy tables agrees.
  const legacy = new FakeIptables('IPv4');
  await ensureKubeletChains([legacy], () => undefined);
  const choice = chooseIptablesVariant({ legacySave: legacy.saveSync(), nftSave: '' });
  assert.equal(choice.variant, LAB_IPTABLES_VARIANT);
  assert.match(choice.reason, /KUBE-IPTABLES-HINT chain is in the legacy tables/);
});

test("the agent's iptables are the lab variant's binaries, e.g. iptables-legacy", async () => {
  const [v4, v6] = kubeletIptables(new FakeExecer(), 'legacy');
  assert.equal(v4?.commands.iptables, 'iptables-legacy');
  assert.equal(v6?.commands.iptables, 'ip6tables-legacy');
  const execer = new FakeExecer().expect({
    cmd: 'iptables-legacy-restore',
    args: ['-w', '5', '--noflush'],
    check: (req) => {
      assert.equal(req.stdin, kubeletChainsRestore());
    },
  });
  const [real] = kubeletIptables(execer, 'legacy');
  assert.deepEqual(await ensureKubeletChains(real ? [real] : [], () => undefined), ['IPv4']);
  execer.verify();
  const [plain] = kubeletIptables(new FakeExecer(), undefined);
  assert.equal(plain?.commands.iptables, 'iptables');
});

test('a family that cannot be written is logged and the other still gets its chains', async () => {
  const v4 = new FakeIptables('IPv4');
  const broken = {
    family: 'IPv6' as const,
    restore: () => Promise.reject(new Error('ip6tables-legacy: not installed')),
  } as unknown as FakeIptables;
  const logs: string[] = [];
  const done = await ensureKubeletChains([broken, v4], (f) => {
    logs.push(String(f.err));
  });
  assert.deepEqual(done, ['IPv4']);
  assert.deepEqual(logs, ['ip6tables-legacy: not installed']);
});
