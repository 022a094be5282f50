import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KILLED, startNetexecContainer } from './netexec-container.js';

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${String(port)}${path}`);
  return { status: r.status, body: await r.text() };
}

test('every port serves; SIGTERM fails /readyz until the delay ends, then it exits 0', async () => {
  const lines: string[] = [];
  const c = await startNetexecContainer({
    hostname: 'web-0',
    httpPort: 0,
    udpPort: -1,
    extraPorts: [{ port: 0, protocol: 'tcp' }],
    delayShutdownSeconds: 1,
    log: (l) => lines.push(l),
  });
  const [a, b] = c.tcpPorts;
  assert.ok(a !== undefined && b !== undefined);
  assert.equal((await get(b, '/hostname')).body, 'web-0');
  assert.match(lines.join('\n'), /Started HTTP server on port/);
  c.terminate();
  assert.equal((await get(a, '/readyz')).status, 503);
  assert.equal((await get(b, '/hostname')).body, 'web-0', 'still serving during the delay');
  assert.equal(await c.exited, 0);
});

test('kill exits 137 at once; /exit exits with its code', async () => {
  const k = await startNetexecContainer({
    hostname: 'x',
    httpPort: 0,
    udpPort: -1,
    log: () => undefined,
  });
  k.kill();
  assert.equal(await k.exited, KILLED);
  const e = await startNetexecContainer({
    hostname: 'x',
    httpPort: 0,
    udpPort: -1,
    log: () => undefined,
  });
  await fetch(`http://127.0.0.1:${String(e.tcpPorts[0])}/exit?code=4&timeout=0`).catch(
    () => undefined,
  );
  assert.equal(await e.exited, 4);
});

test('a port that cannot listen fails the start and closes what did', async () => {
  const first = await startNetexecContainer({
    hostname: 'x',
    httpPort: 0,
    udpPort: -1,
    log: () => undefined,
  });
  const taken = first.tcpPorts[0] ?? 0;
  await assert.rejects(
    startNetexecContainer({
      hostname: 'y',
      httpPort: 0,
      udpPort: -1,
      extraPorts: [{ port: taken, protocol: 'tcp' }],
      log: () => undefined,
    }),
    /EADDRINUSE/,
  );
  first.kill();
  await first.exited;
});
