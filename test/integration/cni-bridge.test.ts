// svcnet-cni's `bridge` and `flannel` types against the kernel, through our runtime, with
// the plugin bundled and installed under those names (as a node's /opt/cni/bin would hold
// it). In a "node" namespace: two Pods on one bridge (cni0, and kubenet's cbr0) reach each
// other (ping and TCP, unmasqueraded) and the gateway, CHECK passes, DEL leaves no veth and frees the addresses; the
// flannel type with a subnet.env written here gives a Pod an address in FLANNEL_SUBNET with
// FLANNEL_MTU and a route to FLANNEL_NETWORK, and DEL still works after subnet.env changed
// (with FLANNEL_IPMASQ=false the bridge masquerades, in the node's namespace only);
// and Debian's reference `bridge` plugin and ours share one cni0 and one host-local dataDir:
// their Pods reach each other, each DEL leaves the other Pod working, no address twice.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { FileResultCache } from '../../src/cni/runtime/cache.js';
import { parseConflist } from '../../src/cni/runtime/parse-conflist.js';
import { CniRuntime, type Attachment } from '../../src/cni/runtime/runtime.js';
import type { CniResult } from '../../src/cni/types.js';
import {
  cniSkipReason,
  NetnsLab,
  netnsPath,
  pluginDir,
  REFERENCE_DIR,
  tempDir,
} from './lib/cni-lab.js';
import { skipOrFail } from './lib/prereq.js';
import { Client, startServer, stopAgents } from './lib/trace-netns.js';

const skip = skipOrFail(cniSkipReason({ reference: true, ping: true, nft: true }));

function addressOf(r: CniResult): string {
  return r.ips?.[0]?.address.split('/')[0] ?? '';
}

/** The reserved addresses in a host-local dataDir of one network (files named by IP). */
async function reserved(dataDir: string, network: string): Promise<string[]> {
  const names = await readdir(join(dataDir, network)).catch(() => []);
  return names.filter((n) => /^\d+\.\d+\.\d+\.\d+$/.test(n)).sort();
}

describe('svcnet-cni bridge and flannel types in namespaces', { skip }, () => {
  const lab = new NetnsLab('brg');
  let bin = '';
  let work: { dir: string; remove: () => Promise<void> };

  before(async () => {
    await lab.sweep();
    bin = await pluginDir();
    // Installed under the reference plugins' names, as on a node.
    await symlink('svcnet-cni', join(bin, 'bridge'));
    await symlink('svcnet-cni', join(bin, 'flannel'));
    work = await tempDir('brg');
  });
  after(async () => {
    stopAgents();
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  });

  function runtime(tag: string, cniPath: string[]): CniRuntime {
    return new CniRuntime({
      execer: new RealExecer(),
      cniPath,
      cache: new FileResultCache(join(work.dir, `cache-${tag}`)),
    });
  }

  const kinds = [
    { tag: 'cni0', bridge: undefined, octet: 30, extra: {} },
    // kubenet: cbr0 holding the node podCIDR's gateway, hairpin ports, host-local over it.
    { tag: 'kubenet', bridge: 'cbr0', octet: 31, extra: { hairpinMode: true, mtu: 1460 } },
  ] as const;
  for (const k of kinds) {
    test(`${k.tag}: two Pods on ${k.bridge ?? 'cni0'} reach each other and the gateway; DEL frees`, async () => {
      const node = await lab.add(`${k.tag}-node`);
      const dataDir = join(work.dir, `ipam-${k.tag}`);
      const conflist = parseConflist(
        JSON.stringify({
          cniVersion: '1.0.0',
          name: `net-${k.tag}`,
          plugins: [
            {
              type: 'bridge',
              ...(k.bridge ? { bridge: k.bridge } : {}),
              isGateway: true,
              ...k.extra,
              ipam: {
                type: 'host-local',
                subnet: `10.244.${k.octet}.0/24`,
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir,
              },
            },
          ],
        }),
      );
      const rt = runtime(k.tag, [bin]);
      const atts: Attachment[] = [];
      const results: CniResult[] = [];
      for (const i of [1, 2]) {
        const pod = await lab.add(`${k.tag}-p${i}`);
        const att = {
          containerId: `c-${k.tag}-${i}`,
          netns: netnsPath(pod),
          ifName: 'eth0',
          conflist,
          hostNetns: netnsPath(node),
        };
        atts.push(att);
        results.push(await rt.add(att));
      }
      const [p1, p2] = atts.map((a) => a.netns.replace('/run/netns/', ''));
      const [r1, r2] = results;
      const gw = `10.244.${k.octet}.1`;
      assert.deepEqual(
        results.map((r) => r.interfaces?.map((i) => i.name)[0]),
        [k.bridge ?? 'cni0', k.bridge ?? 'cni0'],
      );
      assert.deepEqual(results.map(addressOf), [`10.244.${k.octet}.2`, `10.244.${k.octet}.3`]);
      assert.ok(await lab.ping(p1!, addressOf(r2!)), 'Pod 1 reaches Pod 2 across the bridge');
      assert.ok(await lab.ping(p2!, addressOf(r1!)), 'Pod 2 reaches Pod 1');
      assert.ok(await lab.ping(p1!, gw), 'Pod 1 reaches the gateway on the bridge');
      assert.ok(await lab.ping(node, addressOf(r2!)), 'the node reaches Pod 2');
      // TCP too, and Pod 2 sees Pod 1's own address: nothing is masqueraded on the bridge.
      await startServer(p2!, addressOf(r2!), [8080], []);
      const o = await new Client(p1!).send({
        proto: 'tcp',
        dst: addressOf(r2!),
        port: 8080,
        timeoutMs: 5000,
      });
      assert.ok(o.kind === 'reply', JSON.stringify(o));
      assert.equal(o.server, `${addressOf(r2!)}:8080`);
      assert.equal(o.client, addressOf(r1!), 'Pod 2 sees Pod 1 unmasqueraded');
      assert.match(
        await lab.ip(node, 'addr', 'show', 'dev', k.bridge ?? 'cni0'),
        new RegExp(`inet ${gw.replace(/\./g, '\\.')}/24`),
      );
      if ('mtu' in k.extra) assert.match(await lab.ip(p1!, 'link', 'show', 'eth0'), / mtu 1460 /);
      for (const a of atts) await rt.check(a);
      for (const a of atts) {
        await rt.del(a);
        await rt.del(a);
      }
      assert.doesNotMatch(await lab.ip(node, '-o', 'link', 'show'), /veth/);
      assert.deepEqual(await reserved(dataDir, `net-${k.tag}`), []);
    });
  }

  test('flannel: address in FLANNEL_SUBNET, FLANNEL_MTU, route to FLANNEL_NETWORK; DEL after subnet.env changed', async () => {
    const node = await lab.add('fl-node');
    const pod = await lab.add('fl-p1');
    const subnetFile = join(work.dir, 'subnet.env');
    const stateDir = join(work.dir, 'flannel-state');
    const dataDir = join(work.dir, 'ipam-flannel');
    await writeFile(
      subnetFile,
      'FLANNEL_NETWORK=10.246.0.0/16\nFLANNEL_SUBNET=10.246.7.1/24\nFLANNEL_MTU=1400\nFLANNEL_IPMASQ=true\n',
    );
    const conflist = parseConflist(
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'cbr0',
        plugins: [
          {
            type: 'flannel',
            subnetFile,
            dataDir: stateDir,
            ipam: { dataDir },
            delegate: { hairpinMode: true, isDefaultGateway: true },
          },
        ],
      }),
    );
    const rt = runtime('flannel', [bin]);
    const att = {
      containerId: 'c-fl',
      netns: netnsPath(pod),
      ifName: 'eth0',
      conflist,
      hostNetns: netnsPath(node),
    };
    const r = await rt.add(att);
    assert.equal(r.ips?.[0]?.address, '10.246.7.2/24');
    assert.equal(r.ips[0].gateway, '10.246.7.1');
    assert.match(await lab.ip(pod, 'link', 'show', 'eth0'), / mtu 1400 /);
    assert.match(await lab.ip(node, 'link', 'show', 'cni0'), / mtu 1400 /);
    assert.match(
      await lab.ip(pod, 'route', 'show'),
      /10\.246\.0\.0\/16 via 10\.246\.7\.1 dev eth0/,
    );
    assert.ok(await lab.ping(pod, '10.246.7.1'), 'the Pod reaches its gateway on cni0');
    assert.deepEqual(await readdir(stateDir), ['c-fl'], 'the delegate config is kept for DEL');
    await rt.check(att);
    // The node's subnet changed (flanneld restarted with another lease): DEL still frees the
    // address the Pod had, from the stored delegate config.
    await writeFile(
      subnetFile,
      'FLANNEL_NETWORK=10.246.0.0/16\nFLANNEL_SUBNET=10.246.8.1/24\nFLANNEL_MTU=1400\nFLANNEL_IPMASQ=true\n',
    );
    await rt.del(att);
    await rt.del(att);
    assert.deepEqual(await reserved(dataDir, 'cbr0'), []);
    assert.deepEqual(await readdir(stateDir), []);
    assert.doesNotMatch(await lab.ip(node, '-o', 'link', 'show'), /veth/);
  });

  test('flannel with FLANNEL_IPMASQ=false: the bridge masquerades, in the node namespace only', async () => {
    const node = await lab.add('flm-node');
    const pod = await lab.add('flm-p1');
    const subnetFile = join(work.dir, 'subnet-masq.env');
    await writeFile(
      subnetFile,
      'FLANNEL_NETWORK=10.248.0.0/16\nFLANNEL_SUBNET=10.248.4.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n',
    );
    const conflist = parseConflist(
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'flm',
        plugins: [
          {
            type: 'flannel',
            subnetFile,
            dataDir: join(work.dir, 'flannel-masq-state'),
            ipam: { dataDir: join(work.dir, 'ipam-flm') },
          },
        ],
      }),
    );
    const rt = runtime('flm', [bin]);
    const att = {
      containerId: 'c-flm',
      netns: netnsPath(pod),
      ifName: 'eth0',
      conflist,
      hostNetns: netnsPath(node),
    };
    const addr = addressOf(await rt.add(att));
    const masqMap = async (ns: string | undefined): Promise<string> => {
      const res = await new RealExecer().run({
        cmd: ns ? 'ip' : 'nft',
        args: [
          ...(ns ? ['netns', 'exec', ns, 'nft'] : []),
          'list',
          'map',
          'ip',
          'svcnet_cni',
          'pod_masq',
        ],
      });
      return res.stdout;
    };
    assert.match(await masqMap(node), new RegExp(`${addr.replace(/\./g, '\\.')} : jump masq_`));
    assert.equal(await masqMap(undefined), '', "nothing in the test process's own namespace");
    await rt.del(att);
    assert.doesNotMatch(await masqMap(node), /10\.248\.4\.\d+ : jump/);
  });

  test('interop: the reference bridge and ours on one cni0 and one host-local dataDir', async () => {
    const node = await lab.add('io-node');
    const dataDir = join(work.dir, 'ipam-shared');
    const list = (): ReturnType<typeof parseConflist> =>
      parseConflist(
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'shared',
          plugins: [
            {
              type: 'bridge',
              bridge: 'cni0',
              isGateway: true,
              ipam: { type: 'host-local', ranges: [[{ subnet: '10.247.0.0/24' }]], dataDir },
            },
          ],
        }),
      );
    const ref = runtime('io-ref', [REFERENCE_DIR]);
    const ours = runtime('io-ours', [bin]);
    const podA = await lab.add('io-a');
    const podB = await lab.add('io-b');
    const attA = {
      containerId: 'c-a',
      netns: netnsPath(podA),
      ifName: 'eth0',
      conflist: list(),
      hostNetns: netnsPath(node),
    };
    const attB = {
      containerId: 'c-b',
      netns: netnsPath(podB),
      ifName: 'eth0',
      conflist: list(),
      hostNetns: netnsPath(node),
    };
    // One after the other: host-local's flock and our lock file do not exclude each other.
    const a1 = addressOf(await ref.add(attA));
    const b = addressOf(await ours.add(attB));
    assert.notEqual(a1, b, 'ours skips the address the reference host-local reserved');
    assert.deepEqual(await reserved(dataDir, 'shared'), [a1, b].sort());
    assert.ok(await lab.ping(podA, b), 'reference Pod reaches our Pod');
    assert.ok(await lab.ping(podB, a1), 'our Pod reaches the reference Pod');
    await ref.check(attA);
    await ours.check(attB);

    await ref.del(attA);
    assert.ok(await lab.ping(podB, '10.247.0.1'), 'the reference DEL leaves our Pod working');
    await ours.check(attB);
    const a2 = addressOf(await ref.add(attA));
    assert.notEqual(a2, b, 'the reference host-local skips the address ours reserved');
    assert.ok(await lab.ping(podA, b));

    await ours.del(attB);
    assert.ok(await lab.ping(podA, '10.247.0.1'), 'our DEL leaves the reference Pod working');
    await ref.check(attA);
    assert.deepEqual(await reserved(dataDir, 'shared'), [a2]);
    await ref.del(attA);
    assert.deepEqual(await reserved(dataDir, 'shared'), []);
    assert.doesNotMatch(await lab.ip(node, '-o', 'link', 'show'), /veth/);
  });
});
