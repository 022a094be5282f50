import assert from 'node:assert/strict';
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { writeSecretFile } from './secret-file.js';

describe('writeSecretFile', () => {
  it('leaves a pre-existing 0644 file 0600 with the new content and no temp file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcnet-secret-'));
    try {
      const path = join(dir, 'kubeconfig');
      writeFileSync(path, 'old');
      chmodSync(path, 0o644);
      writeSecretFile(path, 'token: secret\n');
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.equal(readFileSync(path, 'utf8'), 'token: secret\n');
      assert.deepEqual(readdirSync(dir), ['kubeconfig']);
      chmodSync(path, 0o666);
      writeSecretFile(path, Buffer.from('again'));
      assert.equal(statSync(path).mode & 0o777, 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('creates a missing file 0600 and fails cleanly when the directory is missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcnet-secret-'));
    try {
      writeSecretFile(join(dir, 'tls.key'), 'key');
      assert.equal(statSync(join(dir, 'tls.key')).mode & 0o777, 0o600);
      assert.throws(() => {
        writeSecretFile(join(dir, 'nope', 'x'), 'y');
      }, /ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
