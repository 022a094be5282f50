// The listener's connection accounting against a real loopback socket: an upgraded
// connection (exec, attach, port-forward) counts as a request in flight for as long as it
// streams, so the first-request deadline that closes silent connections leaves it alone.
// The tracker's clock is a plain number the test moves; the sweeper's interval runs on a
// FakeClock, so only the test's own sweep() closes anything.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import { FakeClock } from '../util/clock.js';
import { ConnectionTracker } from './connections.js';
import { serverFactory } from './listener.js';

const DEADLINE_MS = 10_000;

async function dial(port: number): Promise<{ sock: Socket; closed: Promise<unknown> }> {
  const sock = connect(port, '127.0.0.1');
  await once(sock, 'connect');
  return { sock, closed: once(sock, 'close') };
}

/** Resolves with what the socket has received once `text` is in it (the socket stays open). */
function received(sock: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const onData = (chunk: Buffer): void => {
      got += chunk.toString();
      if (!got.includes(text)) return;
      sock.off('data', onData);
      resolve(got);
    };
    sock.on('data', onData);
  });
}

test('an upgraded connection outlives the first-request deadline; a silent one does not', async () => {
  const now = { ms: 0 };
  const tracker = new ConnectionTracker(
    { maxConnections: 100, firstRequestTimeoutMs: DEADLINE_MS },
    { now: () => now.ms },
  );
  const make = serverFactory({
    maxRequestBytes: 1024,
    connections: tracker,
    clock: new FakeClock(),
  });
  const server = make({}, (_req, res) => res.end('ok'));
  const upgraded: Duplex[] = [];
  server.on('upgrade', (_req, socket: Duplex) => {
    upgraded.push(socket);
    // The server's sockets are half-open: a real handler ends its side when the client does.
    socket.on('end', () => socket.end());
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n',
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    const streaming = await dial(port);
    streaming.sock.write(
      'GET /exec HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n',
    );
    assert.match(await received(streaming.sock, '\r\n\r\n'), /^HTTP\/1.1 101/);
    const silent = await dial(port);
    while (tracker.stats().open < 2) await new Promise((r) => setImmediate(r));

    now.ms = DEADLINE_MS + 1;
    assert.equal(tracker.sweep(), 1, 'only the connection that never sent a request expires');
    await silent.closed;
    assert.equal(streaming.sock.destroyed, false);
    assert.equal(tracker.stats().active, 1, 'the upgraded stream is a request in flight');

    // Its end is the request's end: the tracker forgets it.
    streaming.sock.destroy();
    await streaming.closed;
    while (tracker.stats().open > 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(tracker.stats().active, 0);
  } finally {
    for (const s of upgraded) s.destroy();
    server.closeAllConnections();
    server.close();
  }
});
