// Tests of the sysctl seam: key → path mapping, RealSysctl against a temporary tree, FakeSysctl.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeSysctl, RealSysctl, sysctlPath } from './sysctl.js';
import { SvcnetError } from '../errors.js';

test('sysctlPath maps dotted keys and rejects path tricks', () => {
  assert.equal(
    sysctlPath('net.ipv4.conf.all.route_localnet'),
    '/proc/sys/net/ipv4/conf/all/route_localnet',
  );
  assert.throws(() => sysctlPath('net/../../etc'), SvcnetError);
  assert.throws(() => sysctlPath('.net'), SvcnetError);
});

test('RealSysctl reads and writes files under its root', async () => {
  const root = await mkdtemp(join(tmpdir(), 'svcnet-sysctl-'));
  try {
    await mkdir(join(root, 'net/ipv4/conf/all'), { recursive: true });
    await writeFile(join(root, 'net/ipv4/conf/all/route_localnet'), '0\n');
    const s = new RealSysctl(root);
    assert.equal(await s.get('net.ipv4.conf.all.route_localnet'), '0');
    await s.set('net.ipv4.conf.all.route_localnet', '1');
    assert.equal(await readFile(join(root, 'net/ipv4/conf/all/route_localnet'), 'utf8'), '1\n');
    await assert.rejects(
      s.get('net.nope'),
      (e: unknown) => e instanceof SvcnetError && e.code === 'NOT_FOUND',
    );
    await assert.rejects(
      s.set('net.nope.x', '1'),
      (e: unknown) => e instanceof SvcnetError && e.code === 'NOT_FOUND',
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('FakeSysctl refuses unknown and read-only keys and records writes', async () => {
  const s = new FakeSysctl({ a: '1', b: '2' }, ['b']);
  await s.set('a', '3');
  assert.equal(await s.get('a'), '3');
  await assert.rejects(
    s.set('b', '3'),
    (e: unknown) => e instanceof SvcnetError && e.code === 'UNSUPPORTED',
  );
  await assert.rejects(s.get('c'));
  assert.deepEqual(s.writes, [{ key: 'a', value: '3' }]);
});
