// A hostile client for connection tests, run as its own process (its own event loop and
// descriptor budget): holds RAW idle TCP connections that never start a TLS handshake and
// TLS connections that complete it and then say nothing, to 127.0.0.1:PORT, reopening each
// one the server closes after 100 ms. Prints `{"held":N,"reconnects":M,"errors":E}` once a
// second on stdout; stops (closing everything) on SIGTERM or when stdin closes.
//   node --import tsx idle-flood.ts PORT RAW TLS

import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

const [port, rawCount, tlsCount] = process.argv.slice(2).map(Number);
const socks = new Set<Socket>();
let reconnects = 0;
let errors = 0;
let stopped = false;

function open(tls: boolean): Promise<void> {
  return new Promise((resolve) => {
    if (stopped) {
      resolve();
      return;
    }
    const opts = { host: '127.0.0.1', port: port ?? 0 };
    const sock: Socket = tls
      ? connectTls({ ...opts, rejectUnauthorized: false }, resolve)
      : connectTcp(opts, resolve);
    socks.add(sock);
    sock.on('error', () => {
      errors++;
      resolve();
    });
    sock.on('close', () => {
      socks.delete(sock);
      resolve();
      if (stopped) return;
      reconnects++;
      setTimeout(() => void open(tls), 100);
    });
  });
}

async function fill(n: number, tls: boolean, parallel: number): Promise<void> {
  for (let i = 0; i < n; i += parallel)
    await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, () => open(tls)));
}

function stop(): void {
  stopped = true;
  for (const s of socks) s.destroy();
  process.exit(0);
}

process.on('SIGTERM', stop);
process.stdin.on('close', stop);
process.stdin.resume();
setInterval(() => {
  process.stdout.write(`${JSON.stringify({ held: socks.size, reconnects, errors })}\n`);
}, 1000);
await fill(tlsCount ?? 0, true, 50);
await fill(rawCount ?? 0, false, 500);
process.stdout.write(`${JSON.stringify({ filled: true, held: socks.size, reconnects, errors })}\n`);
