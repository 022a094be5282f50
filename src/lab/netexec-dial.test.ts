import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { createSocket } from 'node:dgram';
import { startNetexec, type Netexec } from './netexec.js';

const client = await startNetexec({
  httpPort: 0,
  udpPort: 0,
  hostname: 'client',
  host: '127.0.0.1',
  dialTimeoutMs: 400,
});
const started: { close(): Promise<void> | void }[] = [client];
after(async () => {
  for (const s of started) await s.close();
});

async function dial(qs: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${String(client.httpPort)}/dial?${qs}`);
  return { status: res.status, body: await res.text() };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve((server.address() as { port: number }).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

/**
 * A tiny TCP load balancer on loopback: every accepted connection goes to the next backend
 * in turn, as a proxy spreads new connections. Counts connections.
 */
async function roundRobin(
  backends: readonly number[],
): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const sockets = new Set<Socket>();
  const server = createServer((downstream) => {
    const port = backends[n++ % backends.length] ?? 0;
    const upstream = new (downstream.constructor as typeof Socket)();
    sockets.add(downstream).add(upstream);
    upstream.connect(port, '127.0.0.1');
    downstream.pipe(upstream).pipe(downstream);
    const drop = (): void => {
      downstream.destroy();
      upstream.destroy();
    };
    downstream.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  const port = await listen(server);
  started.push({
    close: async () => {
      for (const s of sockets) s.destroy();
      await closeServer(server);
    },
  });
  return { port, connections: () => n };
}

async function backend(name: string): Promise<Netexec> {
  const s = await startNetexec({ httpPort: 0, udpPort: -1, hostname: name, host: '127.0.0.1' });
  started.push(s);
  return s;
}

test('/dial opens a new connection per try, so 30 tries through a balancer reach all 3 backends', async () => {
  const backends = await Promise.all(['b0', 'b1', 'b2'].map(backend));
  const lb = await roundRobin(backends.map((b) => b.httpPort ?? 0));
  const r = await dial(
    `request=hostname&protocol=http&host=127.0.0.1&port=${String(lb.port)}&tries=30`,
  );
  assert.equal(r.status, 200);
  const { responses } = JSON.parse(r.body) as { responses: string[] };
  assert.equal(lb.connections(), 30, 'one TCP connection per try (no keep-alive reuse)');
  assert.equal(responses.length, 30);
  for (const name of ['b0', 'b1', 'b2'])
    assert.equal(responses.filter((x) => x === name).length, 10, `${name} answered 10 of 30`);
});

test('/dial over http: body whatever the status, redirects followed, Go error texts, 200 always', async () => {
  const target = await backend('t');
  const port = String(target.httpPort);
  const ok = await dial(`request=hostname&host=127.0.0.1&port=${port}&tries=2`);
  assert.deepEqual(ok, { status: 200, body: '{"responses":["t","t"]}' });
  const echoed = await dial(
    `request=${encodeURIComponent('echo?msg=hi&code=500')}&host=127.0.0.1&port=${port}`,
  );
  assert.equal(echoed.body, '{"responses":["hi"]}');
  const redirected = await dial(
    `request=${encodeURIComponent('redirect?location=/hostname')}&host=127.0.0.1&port=${port}`,
  );
  assert.equal(redirected.body, '{"responses":["t"]}');
  const refused = await dial('request=hostname&host=127.0.0.1&port=1&tries=1');
  assert.deepEqual(refused, {
    status: 200,
    body: '{"errors":["Get \\"http://127.0.0.1:1/hostname\\": dial tcp 127.0.0.1:1: connect: connection refused"]}',
  });
  assert.equal((await dial('request=hostname&host=127.0.0.1&port=1&tries=0')).body, '{}');
});

test('/dial keeps agnhost quirk: responses are dropped when the last try failed', async () => {
  let n = 0;
  const flaky = createServer((s) => {
    s.resume(); // read (and drop) the request, so the client's FIN is seen
    if (n++ === 0) s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nup');
    else s.destroy();
  });
  const port = await listen(flaky);
  try {
    const r = await dial(`request=hostname&host=127.0.0.1&port=${String(port)}&tries=2`);
    assert.deepEqual(r, {
      status: 200,
      body: `{"errors":["Get \\"http://127.0.0.1:${String(port)}/hostname\\": EOF"]}`,
    });
  } finally {
    await closeServer(flaky);
  }
});

test('/dial over http gives up after the timeout, as Go client timeout reads', async () => {
  const silent = createServer((s) => s.resume());
  const port = await listen(silent);
  try {
    const r = await dial(`request=hostname&host=127.0.0.1&port=${String(port)}`);
    const { errors } = JSON.parse(r.body) as { errors: string[] };
    assert.deepEqual(errors, [
      `Get "http://127.0.0.1:${String(port)}/hostname": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    ]);
  } finally {
    await closeServer(silent);
  }
});

test('/dial over udp: one datagram each way; refusal and silence in agnhost words', async () => {
  const udpPort = String(client.udpPort);
  const ok = await dial(`request=hostname&protocol=udp&host=127.0.0.1&port=${udpPort}&tries=2`);
  assert.deepEqual(ok, { status: 200, body: '{"responses":["client","client"]}' });
  const echo = await dial(
    `request=${encodeURIComponent('echo Hello')}&protocol=udp&host=127.0.0.1&port=${udpPort}`,
  );
  assert.equal(echo.body, '{"responses":["hello"]}');

  const sock = createSocket('udp4');
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
  const quiet = sock.address().port;
  try {
    const timeout = await dial(
      `request=hostname&protocol=udp&host=127.0.0.1&port=${String(quiet)}`,
    );
    const [err] = (JSON.parse(timeout.body) as { errors: string[] }).errors;
    assert.match(
      err ?? '',
      new RegExp(
        `^reading from udp connection failed\\. err:'read udp 127\\.0\\.0\\.1:\\d+->127\\.0\\.0\\.1:${String(quiet)}: i/o timeout'$`,
      ),
    );
  } finally {
    await new Promise<void>((resolve) =>
      sock.close(() => {
        resolve();
      }),
    );
  }
  const refused = await dial(`request=hostname&protocol=udp&host=127.0.0.1&port=${String(quiet)}`);
  const [err] = (JSON.parse(refused.body) as { errors: string[] }).errors;
  assert.match(
    err ?? '',
    /^reading from udp connection failed\. err:'read udp .*: read: connection refused'$/,
  );
});

test('/dial answers 400 with agnhost texts on bad parameters', async () => {
  assert.deepEqual(await dial('host=127.0.0.1&port=80&tries=x&request=a'), {
    status: 400,
    body: 'tries parameter is invalid. strconv.Atoi: parsing "x": invalid syntax\n',
  });
  assert.deepEqual(await dial('host=127.0.0.1&port=80'), {
    status: 400,
    body: 'request parameter not specified. <nil>\n',
  });
  assert.equal((await dial('host=127.0.0.1&port=80&request=a&protocol=sctp')).status, 400);
  assert.equal((await dial('host=127.0.0.1&port=70000&request=a')).status, 400);
  const unknown = await dial('host=no-such-host.invalid&port=80&request=a');
  assert.deepEqual(unknown, {
    status: 400,
    body: 'host and/or port param are invalid. lookup no-such-host.invalid: no such host\n',
  });
});
