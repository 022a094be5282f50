// Runtime GC and STATUS with svcnet-cni at CNI 1.1.0 in namespaces: GC with a valid list
// DELs the cached attachment that is not in it (its veth and reservation go away) and sends
// GC to the plugin, which releases a reservation the runtime never knew about; the kept
// Pod stays attached and reachable. STATUS succeeds while addresses are free.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { FileResultCache } from '../../src/cni/runtime/cache.js';
import { parseConflist } from '../../src/cni/runtime/parse-conflist.js';
import { CniRuntime, type Attachment } from '../../src/cni/runtime/runtime.js';
import { cniSkipReason, NetnsLab, netnsPath, pluginDir, tempDir } from './lib/cni-lab.js';
import { skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(cniSkipReason({ ping: true }));

describe('runtime GC and STATUS against svcnet-cni', { skip }, () => {
  const lab = new NetnsLab('gc');
  let bin = '';
  let work: { dir: string; remove: () => Promise<void> };
  before(async () => {
    await lab.sweep();
    bin = await pluginDir();
    work = await tempDir('gc');
  });
  after(async () => {
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  });

  test('GC removes what is not in the valid list and nothing else', async () => {
    const node = await lab.add('node');
    const keep = await lab.add('keep');
    const drop = await lab.add('drop');
    const dataDir = join(work.dir, 'ipam');
    const conflist = parseConflist(
      JSON.stringify({
        cniVersion: '1.1.0',
        name: 'gcnet',
        plugins: [
          {
            type: 'svcnet-cni',
            ipam: { type: 'host-local', ranges: [[{ subnet: '10.246.0.0/24' }]], dataDir },
          },
        ],
      }),
    );
    const rt = new CniRuntime({
      execer: new RealExecer(),
      cniPath: [bin],
      cache: new FileResultCache(join(work.dir, 'cache')),
    });
    const att = (id: string, ns: string): Attachment => ({
      containerId: id,
      netns: netnsPath(ns),
      ifName: 'eth0',
      conflist,
      hostNetns: netnsPath(node),
    });
    await rt.status(conflist, { hostNetns: netnsPath(node) });
    const kept = await rt.add(att('keep', keep));
    const dropped = await rt.add(att('drop', drop));
    // A reservation leaked by some earlier, forgotten attachment: only plugin GC can free it.
    await writeFile(join(dataDir, 'gcnet', '10.246.0.200'), 'ghost\r\neth0');

    await rt.gc(conflist, [{ containerID: 'keep', ifname: 'eth0' }], {
      hostNetns: netnsPath(node),
    });

    const files = (await readdir(join(dataDir, 'gcnet'))).filter((f) => f.startsWith('10.')).sort();
    assert.deepEqual(files, [kept.ips?.[0]?.address.split('/')[0]]);
    const links = await lab.ip(node, '-o', 'link', 'show');
    assert.doesNotMatch(
      links,
      new RegExp(dropped.interfaces?.[0]?.name ?? 'x'),
      'dropped veth removed',
    );
    assert.match(links, new RegExp(kept.interfaces?.[0]?.name ?? 'x'), 'kept veth stays');
    assert.ok(
      await lab.ping(keep, kept.ips?.[0]?.gateway ?? ''),
      'kept Pod still reaches the node',
    );
    await rt.check(att('keep', keep));
    await rt.del(att('keep', keep));
  });
});
