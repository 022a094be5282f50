import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { closeQuietly } from './close.js';

test('closeQuietly waits for a real socket to close and accepts nothing to close', async () => {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  await closeQuietly(sock);
  assert.throws(() => sock.address(), /Not running/);
  await closeQuietly(undefined);
});
