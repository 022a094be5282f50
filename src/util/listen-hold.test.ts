import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { SvcnetError } from '../errors.js';
import { holdListenAddresses } from './listen-hold.js';
import { freePort } from './free-port.js';

/** A port nobody holds on 127.0.0.1 (TCP and UDP), found by binding port 0. */

function tcpBinds(port: number): Promise<boolean> {
  const s = createServer();
  return new Promise((resolve) => {
    s.once('error', () => {
      resolve(false);
    });
    s.listen(port, '127.0.0.1', () =>
      s.close(() => {
        resolve(true);
      }),
    );
  });
}

function udpBinds(port: number): Promise<boolean> {
  const s = createSocket('udp4');
  return new Promise((resolve) => {
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind(port, '127.0.0.1', () =>
      s.close(() => {
        resolve(true);
      }),
    );
  });
}

test('held addresses cannot be bound by others, serve nothing, and are free after release', async () => {
  const dns = await freePort();
  const health = await freePort();
  const hold = await holdListenAddresses([
    { what: 'DNS', host: '127.0.0.1', port: dns, flag: '--listen', udp: true },
    { what: '/health', host: '127.0.0.1', port: health, flag: '--health-listen' },
  ]);
  assert.equal(await tcpBinds(dns), false);
  assert.equal(await udpBinds(dns), false);
  assert.equal(await tcpBinds(health), false);
  assert.equal(await udpBinds(health), true, 'UDP only where asked');
  // A client that connects while the port is held gets the connection closed, no answer.
  const got = await new Promise<string>((resolve) => {
    let data = '';
    const c = connect(health, '127.0.0.1', () => c.write('GET /health HTTP/1.0\r\n\r\n'));
    c.setEncoding('utf8').on('data', (d: string) => (data += d));
    c.on('error', () => undefined);
    c.on('close', () => {
      resolve(data);
    });
  });
  assert.equal(got, '');
  await hold.release();
  assert.equal(await tcpBinds(dns), true);
  assert.equal(await udpBinds(dns), true);
  assert.equal(await tcpBinds(health), true);
});

test('a taken port: LISTEN_FAILED naming it and its flag, and nothing else left held', async () => {
  const first = await freePort();
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const port = (taken.address() as { port: number }).port;
  try {
    await assert.rejects(
      holdListenAddresses([
        { what: 'DNS', host: '127.0.0.1', port: first, flag: '--listen', udp: true },
        { what: '/ready', host: '127.0.0.1', port: 0, flag: '--ready-listen' },
        { what: '/metrics', host: '127.0.0.1', port, flag: '--metrics-listen' },
      ]),
      (e: unknown) =>
        e instanceof SvcnetError &&
        e.code === 'LISTEN_FAILED' &&
        e.message ===
          `cannot listen on 127.0.0.1:${port} (/metrics): address already in use; change --metrics-listen`,
    );
    assert.equal(await tcpBinds(first), true, 'the address held before the failure is free');
    assert.equal(await udpBinds(first), true);
  } finally {
    await new Promise<void>((r) =>
      taken.close(() => {
        r();
      }),
    );
  }
});
