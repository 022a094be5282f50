// Tests of the small-file seam: RealTextFiles against a temporary directory and the Fake.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryTextFiles, RealTextFiles, type TextFiles } from './text-files.js';

async function behaves(files: TextFiles, dir: string): Promise<void> {
  const path = join(dir, 'a', 'b', 'c1');
  assert.equal(await files.read(path), undefined, 'a missing file reads as undefined');
  await files.write(path, 'one\n');
  await files.write(path, 'two\n');
  assert.equal(await files.read(path), 'two\n');
  await files.write(join(dir, 'a', 'b', 'c0'), '');
  assert.deepEqual(await files.list(join(dir, 'a', 'b')), ['c0', 'c1']);
  assert.deepEqual(await files.list(join(dir, 'a')), [], 'files only, not directories');
  assert.deepEqual(await files.list(join(dir, 'nowhere')), []);
  await files.remove(join(dir, 'a', 'b', 'c0'));
  await files.remove(path);
  await files.remove(path);
  assert.equal(await files.read(path), undefined);
}

test('RealTextFiles: parents created, replace by rename, remove idempotent', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svcnet-text-files-'));
  try {
    await behaves(new RealTextFiles(), dir);
    assert.deepEqual(await readdir(join(dir, 'a', 'b')), [], 'no temporary file left');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('MemoryTextFiles behaves the same', async () => {
  await behaves(new MemoryTextFiles(), '/x');
  assert.equal(await new MemoryTextFiles({ '/f': 'x' }).read('/f'), 'x');
});
