// svcnet-cni against the kernel, through our runtime: a "node" namespace (the plugin's host
// side, entered with nsenter) and 20 Pod namespaces per mode. 20 concurrent ADDs (separate
// plugin processes racing on the IPAM lock) get 20 distinct addresses; every Pod reaches
// the node, a neighbour and itself; CHECK passes and then names a route deleted by hand;
// DEL removes veths, routes and reservations, is idempotent and copes with a vanished netns.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { FileResultCache } from '../../src/cni/runtime/cache.js';
import { parseConflist, type NetworkConfigList } from '../../src/cni/runtime/parse-conflist.js';
import { CniRuntime, type Attachment } from '../../src/cni/runtime/runtime.js';
import { CniError, type CniResult } from '../../src/cni/types.js';
import { cniSkipReason, NetnsLab, netnsPath, pluginDir, tempDir } from './lib/cni-lab.js';
import { skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(cniSkipReason({ ping: true, nft: true }));
const PODS = 20;

async function inBatches<T>(
  items: readonly T[],
  n: number,
  fn: (t: T, i: number) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < items.length; i += n)
    await Promise.all(items.slice(i, i + n).map((t, j) => fn(t, i + j)));
}

describe('svcnet-cni attaches Pods in namespaces', { skip }, () => {
  const lab = new NetnsLab('att');
  let bin = '';
  let work: { dir: string; remove: () => Promise<void> };

  before(async () => {
    await lab.sweep();
    bin = await pluginDir();
    work = await tempDir('att');
  });

  after(async () => {
    await lab.cleanup();
    await work.remove();
    const { rm } = await import('node:fs/promises');
    await rm(bin, { recursive: true, force: true });
  });

  for (const mode of ['ptp', 'bridge'] as const) {
    test(`${mode}: 20 concurrent ADDs, reachability, CHECK, DEL`, async () => {
      const octet = mode === 'ptp' ? 1 : 2;
      const subnet = `10.244.${octet}.0/24`;
      const gw = `10.244.${octet}.1`;
      const node = await lab.add(`${mode}-node`);
      const pods: string[] = [];
      for (let i = 0; i < PODS; i++) pods.push(await lab.add(`${mode}-p${i}`));
      // Pods start with lo down: the plugin must bring it up.
      for (const p of pods) await lab.ip(p, 'link', 'set', 'lo', 'down');
      const dataDir = join(work.dir, `ipam-${mode}`);
      const conflist: NetworkConfigList = parseConflist(
        JSON.stringify({
          cniVersion: '1.1.0',
          name: `svc-${mode}`,
          plugins: [
            {
              type: 'svcnet-cni',
              mode,
              ...(mode === 'bridge'
                ? { bridge: 'svc-br0', isGateway: true, hairpinMode: true, ipMasq: true }
                : {}),
              ipam: {
                type: 'host-local',
                ranges: [[{ subnet }]],
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir,
              },
            },
          ],
        }),
      );
      const rt = new CniRuntime({
        execer: new RealExecer(),
        cniPath: [bin],
        cache: new FileResultCache(join(work.dir, `cache-${mode}`)),
      });
      const att = (i: number): Attachment => ({
        containerId: `pod${i}`,
        netns: netnsPath(pods[i] ?? ''),
        ifName: 'eth0',
        conflist,
        hostNetns: netnsPath(node),
        args: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: `web-${i}` },
      });

      const results: CniResult[] = await Promise.all(pods.map((_, i) => rt.add(att(i))));
      const ips = results.map((r) => r.ips?.[0]?.address.split('/')[0] ?? '');
      assert.equal(new Set(ips).size, PODS, `distinct addresses: ${ips.join(' ')}`);
      for (const [i, r] of results.entries()) {
        assert.equal(r.cniVersion, '1.1.0');
        const ifaces = r.interfaces ?? [];
        assert.equal(ifaces.length, mode === 'ptp' ? 2 : 3);
        const ip = r.ips?.[0];
        assert.ok(ip && ip.interface !== undefined);
        assert.equal(ifaces[ip.interface]?.sandbox, netnsPath(pods[i] ?? ''));
        assert.equal(ifaces[ip.interface]?.name, 'eth0');
        assert.match(ip.address, new RegExp(`^10\\.244\\.${octet}\\.\\d+/24$`));
        assert.equal(ip.gateway, gw);
        assert.notEqual(ip.address, `${gw}/24`);
        assert.equal(ip.version, undefined, '1.x results carry no ips[].version');
        assert.deepEqual(r.routes, [{ dst: '0.0.0.0/0' }]);
      }

      if (mode === 'bridge') {
        const nft = (
          await lab.execer.run({
            cmd: 'ip',
            args: ['netns', 'exec', node, 'nft', 'list', 'map', 'ip', 'svcnet_cni', 'pod_masq'],
          })
        ).stdout;
        for (const ip of ips)
          assert.match(
            nft,
            new RegExp(`${ip.replaceAll('.', '\\.')} : jump masq_`),
            `${ip} is masqueraded`,
          );
      }
      await inBatches(pods, 5, async (p, i) => {
        assert.ok(await lab.ping(p, gw), `${p} reaches the node at ${gw}`);
        assert.ok(await lab.ping(p, ips[(i + 1) % PODS] ?? ''), `${p} reaches its neighbour`);
        assert.ok(await lab.ping(p, ips[i] ?? ''), `${p} reaches itself`);
      });

      await rt.check(att(0));
      if (mode === 'ptp') {
        const veth = results[0]?.interfaces?.[0]?.name ?? '';
        await lab.ip(node, 'route', 'del', `${ips[0] ?? ''}/32`, 'dev', veth);
        await assert.rejects(rt.check(att(0)), (e: unknown) => {
          assert.ok(e instanceof CniError);
          assert.match(
            e.message,
            new RegExp(
              `route ${(ips[0] ?? '').replaceAll('.', '\\.')}/32 dev ${veth} is missing in the host namespace`,
            ),
          );
          return true;
        });
      } else {
        await lab.ip(pods[0] ?? '', 'route', 'del', 'default');
        await assert.rejects(
          rt.check(att(0)),
          /route 0\.0\.0\.0\/0 is missing in the Pod namespace/,
        );
      }

      // The last Pod's namespace vanishes before DEL: DEL must still release its address.
      await lab.remove(pods[PODS - 1] ?? '');
      await Promise.all(pods.map((_, i) => rt.del(att(i))));
      await Promise.all(pods.map((_, i) => rt.del(att(i))));
      const links = await lab.ip(node, '-o', 'link', 'show');
      assert.doesNotMatch(links, /veth[0-9a-f]{8}/, 'no host veth left');
      const routes = await lab.ip(node, 'route', 'show');
      assert.doesNotMatch(routes, /10\.244\.\d+\.\d+ dev veth/, 'no per-Pod route left');
      const reserved = (await readdir(join(dataDir, `svc-${mode}`))).filter((f) =>
        /^\d+\.\d+\.\d+\.\d+$/.test(f),
      );
      assert.deepEqual(reserved, [], 'every reservation released');
      if (mode === 'bridge') {
        const nft = (
          await lab.execer.run({
            cmd: 'ip',
            args: ['netns', 'exec', node, 'nft', 'list', 'map', 'ip', 'svcnet_cni', 'pod_masq'],
          })
        ).stdout;
        assert.doesNotMatch(nft, /10\.244\.2\.\d+ : jump/, 'masquerade elements removed');
      }
      for (const p of pods.slice(0, 3))
        assert.doesNotMatch(await lab.ip(p, '-o', 'link', 'show'), /eth0/);
    });
  }
});
