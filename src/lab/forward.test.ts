import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startForwarder } from './forward.js';

test('TCP → unix socket → TCP carries HTTP requests and responses both ways', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-fwd-'));
  const api = createServer((req, res) => {
    res.end(`hello ${req.url ?? ''}`);
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  const apiPort = (api.address() as AddressInfo).port;
  const sock = join(dir, 'api.sock');
  const inner = await startForwarder({ path: sock }, { host: '127.0.0.1', port: apiPort });
  const outer = await startForwarder({ host: '127.0.0.1', port: 0 }, { path: sock });
  try {
    const port = 'port' in outer.listening ? outer.listening.port : 0;
    for (const path of ['/api', '/apis/apps/v1']) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      assert.equal(await res.text(), `hello ${path}`);
    }
  } finally {
    await outer.close();
    await inner.close();
    api.closeAllConnections();
    await new Promise<void>((r) =>
      api.close(() => {
        r();
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a dead target closes the client connection instead of hanging', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-fwd-'));
  const fwd = await startForwarder(
    { host: '127.0.0.1', port: 0 },
    { path: join(dir, 'nobody.sock') },
  );
  try {
    const port = 'port' in fwd.listening ? fwd.listening.port : 0;
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`));
  } finally {
    await fwd.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
