// Tests of the lab's iptables backend: legacy (the one that scales, by measurement) where the
// kernel has it, nft otherwise; it reaching every node proxy (the kube-proxy ConfigMap's
// config.conf) and agent in iptables mode only; and the nat dump of the chosen backend.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeExecer } from '../os/exec.js';
import { planComponents, labPaths } from './components.js';
import type { ComponentOptions } from './components.js';
import { planLab } from './topology.js';
import { parse } from 'yaml';
import type { ConfigMap } from '../kube/types.js';
import { readDeployManifest } from './deploy-manifest.js';
import { KUBE_PROXY_MANIFEST, kubeProxyObjects } from './kube-proxy-addon.js';
import {
  LAB_IPTABLES_VARIANT,
  chooseLabIptablesVariant,
  natSaveCommand,
  throwawayNetnsExecer,
  withLabIptablesVariant,
} from './iptables-variant.js';

const probe = { cmd: 'iptables-legacy', args: ['-w', '5', '-t', 'nat', '-S', 'OUTPUT'] };

test('the lab picks legacy where it works, nft where the kernel lacks it', async () => {
  assert.equal(LAB_IPTABLES_VARIANT, 'legacy');
  const ok = new FakeExecer().expect({ ...probe, result: { code: 0 } });
  assert.equal((await chooseLabIptablesVariant(ok)).variant, 'legacy');
  ok.verify();
  const stderr =
    "iptables v1.8.9 (legacy): can't initialize iptables table `nat': Table does not exist\n";
  const none = new FakeExecer().expect({ ...probe, result: { code: 3, stderr } });
  const c = await chooseLabIptablesVariant(none);
  assert.equal(c.variant, 'nft');
  assert.match(c.reason, /does not work on this kernel \(.*Table does not exist\)/);
});

test("iptables mode: the kube-proxy config's svcnetVariant and every agent's --iptables-variant; nftables mode: none, no probe", async () => {
  const base: ComponentOptions = { cni: 'svcnet', cniBinDir: '/b' };
  const lines: string[] = [];
  const ex = new FakeExecer().expect({ ...probe, result: { code: 0 } });
  const opts = await withLabIptablesVariant(base, ex, (l) => lines.push(l));
  assert.equal(opts.iptablesVariant, 'legacy');
  assert.match(lines[0] ?? '', /^node proxies use iptables-legacy: /);
  // The proxies are the kube-proxy DaemonSet's Pods: their backend is in its config.conf.
  const proxyVariant = (o: ComponentOptions): string => {
    const cm = kubeProxyObjects(readDeployManifest(KUBE_PROXY_MANIFEST), planLab({ nodes: 2 }), {
      proxyMode: o.proxyMode ?? 'iptables',
      ...(o.iptablesVariant === undefined ? {} : { iptablesVariant: o.iptablesVariant }),
    }).find((x) => (x as { kind?: string }).kind === 'ConfigMap') as ConfigMap | undefined;
    const conf = parse(cm?.data?.['config.conf'] ?? '') as {
      iptables?: { svcnetVariant?: string };
    };
    return conf.iptables?.svcnetVariant ?? '-';
  };
  const variants = (o: ComponentOptions, component: string) =>
    planComponents(planLab({ nodes: 2 }), labPaths('/s'), o)
      .filter((s) => s.name.startsWith(component))
      .map((s) =>
        s.args.includes('--iptables-variant')
          ? s.args[s.args.indexOf('--iptables-variant') + 1]
          : '-',
      );
  assert.equal(proxyVariant(opts), 'legacy');
  // The agents write the kubelet's hint chains with the same backend (kubelet-chains.ts).
  assert.deepEqual(variants(opts, 'agent-'), ['legacy', 'legacy']);
  assert.equal(proxyVariant(base), '-');
  assert.deepEqual(variants(base, 'agent-'), ['-', '-']);
  const nft: ComponentOptions = { ...base, proxyMode: 'nftables' };
  assert.equal(await withLabIptablesVariant(nft, new FakeExecer(), () => undefined), nft);
  assert.equal(proxyVariant({ ...nft, iptablesVariant: 'legacy' }), '-');
  assert.deepEqual(variants({ ...nft, iptablesVariant: 'legacy' }, 'agent-'), ['-', '-']);
});

test('the probe runs in a network namespace of its own (unshare --net)', async () => {
  const ex = new FakeExecer().expect({
    cmd: 'unshare',
    args: ['--net', 'iptables-legacy', '-w', '5', '-t', 'nat', '-S', 'OUTPUT'],
  });
  assert.equal((await chooseLabIptablesVariant(throwawayNetnsExecer(ex))).variant, 'legacy');
  ex.verify();
});

test('natSaveCommand reads the chosen backend; older states fall back to a search', () => {
  assert.deepEqual(natSaveCommand('legacy'), ['iptables-legacy-save', '-t', 'nat']);
  assert.deepEqual(natSaveCommand('nft'), ['iptables-nft-save', '-t', 'nat']);
  assert.equal(natSaveCommand(undefined)[0], 'sh');
});
