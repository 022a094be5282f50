import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startApiServer, writeKubeconfig } from './daemon.js';

describe('startApiServer files', () => {
  it('--write-kubeconfig onto an existing 0644 file leaves it 0600 with the token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcnet-daemon-'));
    const server = await startApiServer({
      listen: '127.0.0.1:0',
      insecureHttp: true,
      token: 'sekret',
      maxConnections: 100,
    });
    try {
      const path = join(dir, 'kubeconfig');
      writeFileSync(path, 'stale');
      chmodSync(path, 0o644);
      writeKubeconfig(path, server);
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.match(readFileSync(path, 'utf8'), /token: sekret/);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
