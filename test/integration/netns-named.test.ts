// Pod namespaces made in-process (os/netns-named.ts) against the real kernel and iproute2:
// what `ip netns` sees must be what `ip netns add` + `ip link set lo up` would have made, the
// calling thread must end where it started, and removal must leave nothing. Needs root and ip.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readlinkSync } from 'node:fs';
import { NetnsLab, netnsPath } from './lib/cni-lab.js';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';
import { KernelSandboxNamespaces } from '../../src/os/netns-named.js';
import { IpError } from '../../src/os/ip.js';

const skip = skipOrFail(process.getuid?.() !== 0 ? 'needs root' : missingToolsReason(['ip']));

describe('Pod namespaces made in this process', { skip }, () => {
  // Only for its prefix, sweep and `ip -n`: the namespaces are made by the code under test.
  const lab = new NetnsLab('nn');
  let k: KernelSandboxNamespaces;
  const made: string[] = [];
  const name = (n: string): string => {
    made.push(`${lab.prefix}${n}`);
    return `${lab.prefix}${n}`;
  };

  before(async () => {
    await lab.sweep();
    k = new KernelSandboxNamespaces();
  });
  after(async () => {
    for (const n of made) await lab.remove(n);
  });

  test('a new namespace is listed by ip netns, has lo up, and this thread stays home', async () => {
    const home = readlinkSync('/proc/thread-self/ns/net');
    const ns = name('a');
    await k.create(ns);
    assert.equal(readlinkSync('/proc/thread-self/ns/net'), home);
    const list = (await lab.execer.run({ cmd: 'ip', args: ['netns', 'list'] })).stdout;
    assert.match(list, new RegExp(`^${ns}( |$)`, 'm'));
    const lo = await lab.ip(ns, '-j', 'link', 'show', 'lo');
    const flags = (JSON.parse(lo) as { flags: string[] }[])[0]?.flags ?? [];
    assert.ok(flags.includes('UP'), `lo flags: ${flags.join(',')}`);
    // Its own namespace, not this process's: the node's links are not there.
    const links = JSON.parse(await lab.ip(ns, '-j', 'link', 'show')) as unknown[];
    assert.equal(links.length, 1);
    const inode = readlinkSync(`/proc/${String(process.pid)}/ns/net`);
    const theirs = (
      await lab.execer.run({
        cmd: 'ip',
        args: ['netns', 'exec', ns, 'readlink', '/proc/self/ns/net'],
      })
    ).stdout.trim();
    assert.notEqual(theirs, inode);
  });

  test('creating an existing name fails naming the path; removing twice says it was gone', async () => {
    const ns = name('b');
    await k.create(ns);
    await assert.rejects(
      k.create(ns),
      (err: unknown) =>
        err instanceof IpError && err.message.includes(`"${netnsPath(ns)}": File exists`),
    );
    assert.equal(await k.remove(ns), true);
    assert.equal(existsSync(netnsPath(ns)), false);
    const list = (await lab.execer.run({ cmd: 'ip', args: ['netns', 'list'] })).stdout;
    assert.doesNotMatch(list, new RegExp(`^${ns}( |$)`, 'm'));
    assert.equal(await k.remove(ns), false);
  });

  test('a bad name is refused before anything is made', async () => {
    await assert.rejects(k.create('../etc'), /not a valid namespace name/);
  });

  test('ip netns del removes what this made (the same bind mount as ip netns add)', async () => {
    const ns = name('c');
    await k.create(ns);
    const r = await lab.execer.run({ cmd: 'ip', args: ['netns', 'del', ns] });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(netnsPath(ns)), false);
  });
});
