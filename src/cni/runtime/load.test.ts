import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadNetwork } from './load.js';

test('loadNetwork prefers .conflist files in lexical order, finds by name, wraps legacy .conf', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svcnet-netd-'));
  try {
    await writeFile(
      join(dir, '05-old.conf'),
      JSON.stringify({ cniVersion: '0.3.1', name: 'legacy', type: 'bridge' }),
    );
    await writeFile(
      join(dir, '20-b.conflist'),
      JSON.stringify({ cniVersion: '1.0.0', name: 'b', plugins: [{ type: 'ptp' }] }),
    );
    await writeFile(
      join(dir, '10-kindnet.conflist'),
      JSON.stringify({ cniVersion: '1.0.0', name: 'kindnet', plugins: [{ type: 'svcnet-cni' }] }),
    );
    await writeFile(join(dir, 'README.txt'), 'ignored');
    assert.equal((await loadNetwork(dir)).name, 'kindnet');
    assert.equal((await loadNetwork(dir, 'b')).source, '20-b.conflist');
    assert.deepEqual((await loadNetwork(dir, 'legacy')).plugins, [{ type: 'bridge' }]);
    await assert.rejects(
      loadNetwork(dir, 'nope'),
      /no network named "nope" among \[10-kindnet\.conflist, 20-b\.conflist, 05-old\.conf\]/,
    );
    await writeFile(join(dir, '00-bad.conflist'), '{"name": "x"}');
    await assert.rejects(
      loadNetwork(dir),
      /network config 00-bad\.conflist: cniVersion: must be a version/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
