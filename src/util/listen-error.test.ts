import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { listenFailed } from './listen-error.js';

test('a taken port is one line naming the address, its purpose and the flag to change', async () => {
  const a = createServer();
  await new Promise<void>((r) => a.listen(0, '127.0.0.1', r));
  const port = (a.address() as { port: number }).port;
  const b = createServer();
  const err = await new Promise<Error>((r) => {
    b.once('error', r);
    b.listen(port, '127.0.0.1');
  });
  a.close();
  const e = listenFailed('/health', '127.0.0.1', port, '--health-listen', err);
  assert.equal(e.code, 'LISTEN_FAILED');
  assert.equal(
    e.message,
    `cannot listen on 127.0.0.1:${port} (/health): address already in use; change --health-listen`,
  );
  assert.match(
    listenFailed('DNS', '::1', 53, '--listen', err).message,
    /^cannot listen on \[::1\]:53 /,
  );
});
