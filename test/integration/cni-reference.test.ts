// The runtime drives Debian's reference plugins (bridge + host-local + loopback, and ptp;
// containernetworking-plugins 1.1.1, CNI <= 1.0.0) and svcnet-cni with the same conflist
// shapes: version negotiation settles on 1.0.0 (what every plugin in the list speaks), the results
// have the same structure (interfaces, ips with interface index and gateway, routes, dns),
// the Pods are reachable, CHECK passes and DEL cleans up for both.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { FileResultCache } from '../../src/cni/runtime/cache.js';
import { parseConflist } from '../../src/cni/runtime/parse-conflist.js';
import { CniRuntime, type Attachment } from '../../src/cni/runtime/runtime.js';
import { CniError, type CniResult } from '../../src/cni/types.js';
import {
  cniSkipReason,
  NetnsLab,
  netnsPath,
  pluginDir,
  REFERENCE_DIR,
  tempDir,
} from './lib/cni-lab.js';
import { skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(cniSkipReason({ reference: true, ping: true }));

/** The structure of a result with values that legitimately differ (MACs, veth names) masked. */
function shape(r: CniResult): unknown {
  return {
    interfaces: (r.interfaces ?? []).map((i) => ({
      name: i.name.startsWith('veth') ? 'veth*' : i.name === 'eth0' ? 'eth0' : 'bridge',
      mac: typeof i.mac === 'string' && /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(i.mac),
      sandbox: i.sandbox !== undefined,
    })),
    ips: (r.ips ?? []).map((ip) => ({
      interface: ip.interface,
      prefix: ip.address.split('/')[1],
      gatewayHost: ip.gateway?.split('.').at(-1),
      version: ip.version,
    })),
    routes: r.routes,
    dns: r.dns,
  };
}

describe('runtime drives reference plugins and svcnet-cni alike', { skip }, () => {
  const lab = new NetnsLab('ref');
  let bin = '';
  let work: { dir: string; remove: () => Promise<void> };

  before(async () => {
    await lab.sweep();
    bin = await pluginDir();
    work = await tempDir('ref');
  });
  after(async () => {
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  });

  for (const mode of ['ptp', 'bridge'] as const) {
    test(`${mode}: same conflist shape, equivalent results`, async () => {
      const node = await lab.add(`${mode}-node`);
      const rt = new CniRuntime({
        execer: new RealExecer(),
        cniPath: [bin, REFERENCE_DIR],
        cache: new FileResultCache(join(work.dir, `cache-${mode}`)),
      });
      const results: Record<string, CniResult> = {};
      const pods: Record<string, string> = {};
      const atts: Record<string, Attachment> = {};
      for (const [who, octet] of [
        ['ref', mode === 'ptp' ? 11 : 12],
        ['ours', mode === 'ptp' ? 13 : 14],
      ] as const) {
        const ipam = {
          type: 'host-local',
          ranges: [[{ subnet: `10.245.${octet}.0/24` }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(work.dir, 'ipam'),
        };
        const linkPlugin =
          mode === 'ptp'
            ? { type: who === 'ref' ? 'ptp' : 'svcnet-cni', ipam }
            : {
                type: who === 'ref' ? 'bridge' : 'svcnet-cni',
                ...(who === 'ours' ? { mode: 'bridge' } : {}),
                bridge: `br-${who}`,
                isGateway: true,
                hairpinMode: true,
                ipam,
              };
        const conflist = parseConflist(
          JSON.stringify({
            cniVersion: '1.0.0',
            cniVersions: ['1.0.0', '1.1.0'],
            name: `net-${who}-${mode}`,
            plugins: [linkPlugin, { type: 'loopback' }],
          }),
        );
        const pod = await lab.add(`${mode}-${who}`);
        await lab.ip(pod, 'link', 'set', 'lo', 'down');
        pods[who] = pod;
        atts[who] = {
          containerId: `c-${who}-${mode}`,
          netns: netnsPath(pod),
          ifName: 'eth0',
          conflist,
          hostNetns: netnsPath(node),
        };
        results[who] = await rt.add(atts[who]);
      }
      const ref = results.ref!;
      const ours = results.ours!;
      // cniVersions allows 1.1.0, but the chained reference loopback stops at 1.0.0.
      assert.equal(ref.cniVersion, '1.0.0');
      assert.equal(ours.cniVersion, '1.0.0');
      assert.ok((await rt.pluginVersions('svcnet-cni')).includes('1.1.0'));
      assert.deepEqual(shape(ours), shape(ref));
      assert.equal(
        ours.ips?.[0]?.address,
        '10.245.' + (mode === 'ptp' ? '13' : '14') + '.2/24',
        'first address after the gateway, as host-local',
      );
      assert.equal(ref.ips?.[0]?.address, '10.245.' + (mode === 'ptp' ? '11' : '12') + '.2/24');

      for (const who of ['ref', 'ours']) {
        const r = results[who]!;
        const addr = r.ips?.[0]?.address.split('/')[0] ?? '';
        assert.ok(
          await lab.ping(pods[who]!, r.ips?.[0]?.gateway ?? ''),
          `${who}: Pod reaches the node`,
        );
        assert.ok(await lab.ping(pods[who]!, addr), `${who}: Pod reaches itself (loopback up)`);
        await rt.check(atts[who]!);
        await rt.del(atts[who]!);
        await rt.del(atts[who]!);
        assert.doesNotMatch(
          await lab.ip(node, '-o', 'link', 'show'),
          new RegExp(`veth.*link-netns ${pods[who]!}`),
        );
      }
    });
  }

  test('a 1.1.0-only conflist is refused for the reference plugins with code 1', async () => {
    const rt = new CniRuntime({
      execer: new RealExecer(),
      cniPath: [REFERENCE_DIR],
      cache: new FileResultCache(join(work.dir, 'cache-v')),
    });
    const conflist = parseConflist(
      JSON.stringify({ cniVersion: '1.1.0', name: 'only-new', plugins: [{ type: 'loopback' }] }),
    );
    await assert.rejects(
      rt.add({ containerId: 'c1', netns: '/run/netns/none', ifName: 'lo', conflist }),
      (e: unknown) => {
        assert.ok(e instanceof CniError);
        assert.equal(e.cniCode, 1);
        assert.match(
          e.message,
          /no CNI version in common: config allows \[1\.1\.0\].*loopback supports \[0\.1\.0 0\.2\.0 0\.3\.0 0\.3\.1 0\.4\.0 1\.0\.0\]/,
        );
        return true;
      },
    );
  });
});
