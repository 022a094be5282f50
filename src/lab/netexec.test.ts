import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { startNetexec, answerUdp } from './netexec.js';
import { FakeExecer } from '../os/exec.js';

const server = await startNetexec({
  httpPort: 0,
  udpPort: 0,
  hostname: 'web-0',
  host: '127.0.0.1',
  dialTimeoutMs: 500,
});
after(() => server.close());
const base = `http://127.0.0.1:${server.httpPort!}`;

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${base}${path}`, { redirect: 'manual' });
  return { status: res.status, body: await res.text() };
}

function udpAsk(port: number, payload: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.on('message', (m) => {
      s.close();
      resolve(m.toString());
    });
    s.on('error', reject);
    s.send(payload, port, '127.0.0.1');
  });
}

test('HTTP endpoints answer as agnhost netexec does', async () => {
  assert.deepEqual(await get('/hostname'), { status: 200, body: 'web-0' });
  assert.match((await get('/clientip')).body, /^127\.0\.0\.1:\d+$/);
  assert.deepEqual(await get('/echo?msg=hi&code=418'), { status: 418, body: 'hi' });
  assert.equal((await get('/healthz')).status, 200);
  assert.equal((await get('/shell?cmd=id')).status, 404);
  assert.equal((await get('/serverport')).body, String(server.httpPort!));
});

test('/readyz fails once terminating while traffic is still served', async () => {
  const s = await startNetexec({ httpPort: 0, udpPort: -1, hostname: 'x', host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${s.httpPort!}`;
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    s.markTerminating();
    assert.equal((await fetch(`${url}/readyz`)).status, 503);
    assert.equal(await (await fetch(`${url}/hostname`)).text(), 'x');
  } finally {
    await s.close();
  }
});

test('UDP answers hostname, echo and clientip; unknown commands get no answer', async () => {
  const port = server.udpPort!;
  assert.equal(await udpAsk(port, 'hostname\n'), 'web-0');
  assert.equal(await udpAsk(port, 'echo hello world'), 'hello world');
  assert.equal(answerUdp('bogus', 'h', 'p'), undefined);
});

test('/dial reports responses and errors with 200 or 417, and 400 on bad parameters', async () => {
  const ok = await get(
    `/dial?host=127.0.0.1&port=${server.httpPort!}&request=hostname&protocol=http&tries=2`,
  );
  assert.equal(ok.status, 200);
  assert.deepEqual(JSON.parse(ok.body), { responses: ['web-0', 'web-0'], errors: [] });
  const udp = await get(
    `/dial?host=127.0.0.1&port=${server.udpPort}&request=hostname&protocol=udp&tries=1`,
  );
  assert.deepEqual(JSON.parse(udp.body), { responses: ['web-0'], errors: [] });
  const refused = await get('/dial?host=127.0.0.1&port=1&request=hostname&protocol=http&tries=1');
  assert.equal(refused.status, 417);
  assert.equal((JSON.parse(refused.body) as { errors: string[] }).errors.length, 1);
  assert.equal((await get('/dial?host=127.0.0.1&port=0&request=x')).status, 400);
});

test('/dial over UDP to a closed port reports the refusal, not a timeout', async () => {
  const closed = createSocket('udp4');
  await new Promise<void>((resolve) => closed.bind(0, '127.0.0.1', resolve));
  const port = closed.address().port;
  await new Promise<void>((resolve) =>
    closed.close(() => {
      resolve();
    }),
  );
  const r = await get(`/dial?host=127.0.0.1&port=${port}&request=hostname&protocol=udp&tries=1`);
  assert.equal(r.status, 417);
  const errors = (JSON.parse(r.body) as { errors: string[] }).errors;
  assert.equal(errors.length, 1);
  assert.match(errors[0] ?? '', /connection refused/);
});

test('/shell runs /bin/sh -c through the Execer and reports failures in execFile wording', async () => {
  const execer = new FakeExecer().expect(
    { cmd: '/bin/sh', args: ['-c', 'echo hi'], result: { stdout: 'hi\n' } },
    {
      cmd: '/bin/sh',
      args: ['-c', 'echo out; echo boom >&2; exit 3'],
      result: { code: 3, stdout: 'out\n', stderr: 'boom\n' },
    },
  );
  const s = await startNetexec({
    httpPort: 0,
    udpPort: -1,
    hostname: 'x',
    host: '127.0.0.1',
    enableShell: true,
    execer,
  });
  try {
    const url = `http://127.0.0.1:${s.httpPort!}/shell?cmd=`;
    const ok = await fetch(`${url}${encodeURIComponent('echo hi')}`);
    assert.deepEqual([ok.status, await ok.text()], [200, '{"output":"hi\\n","error":""}']);
    const bad = await fetch(`${url}${encodeURIComponent('echo out; echo boom >&2; exit 3')}`);
    assert.deepEqual(
      [bad.status, await bad.text()],
      [
        417,
        '{"output":"out\\nboom\\n","error":"Command failed: /bin/sh -c echo out; echo boom >&2; exit 3\\nboom\\n"}',
      ],
    );
    execer.verify();
  } finally {
    await s.close();
  }
});
