import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNetexec, answerUdp, type NetexecOptions } from './netexec.js';
import { FakeExecer } from '../os/exec.js';

const uploads = await mkdtemp(join(tmpdir(), 'netexec-test-'));
const server = await startNetexec({
  httpPort: 0,
  udpPort: 0,
  hostname: 'web-0',
  host: '127.0.0.1',
  uploadDir: uploads,
});
after(async () => {
  await server.close();
  await rm(uploads, { recursive: true, force: true });
});
const base = `http://127.0.0.1:${String(server.httpPort)}`;

async function get(
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { redirect: 'manual', ...init });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

async function own(
  opts: Partial<NetexecOptions>,
  use: (url: string) => Promise<void>,
): Promise<void> {
  const s = await startNetexec({
    httpPort: 0,
    udpPort: -1,
    hostname: 'x',
    host: '127.0.0.1',
    ...opts,
  });
  try {
    await use(`http://127.0.0.1:${String(s.httpPort)}`);
  } finally {
    await s.close();
  }
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

test('/hostname, /hostName, /clientip, / and unknown paths answer as agnhost', async () => {
  assert.equal((await get('/hostname')).body, 'web-0');
  assert.equal((await get('/hostName')).body, 'web-0');
  const ip = await get('/clientip');
  assert.match(ip.body, /^127\.0\.0\.1:\d+$/);
  assert.equal(ip.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.match((await get('/')).body, /^NOW: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC$/);
  assert.match((await get('/no/such/route')).body, /^NOW: /);
  // fetch cleans paths itself; a raw request keeps `//`.
  const unclean = await new Promise<IncomingMessage>((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port: server.httpPort, path: '//hostname?x=1' }, (res) => {
      res.resume();
      resolve(res);
    }).on('error', reject);
  });
  assert.equal(unclean.statusCode, 301);
  assert.equal(unclean.headers.location, '/hostname?x=1');
  assert.equal((await get('/serverport')).body, String(server.httpPort));
});

test('/echo returns msg with the optional code; a bad code is reported, an impossible one drops', async () => {
  assert.deepEqual(
    [(await get('/echo?msg=hi')).status, (await get('/echo?msg=hi')).body],
    [200, 'hi'],
  );
  const teapot = await get('/echo?msg=hi&code=418');
  assert.deepEqual([teapot.status, teapot.body], [418, 'hi']);
  const bad = await get('/echo?msg=hi&code=abc');
  assert.deepEqual(
    [bad.status, bad.body],
    [200, `argument 'code' must be an integer or empty, got "abc"\n`],
  );
  await assert.rejects(get('/echo?msg=hi&code=42'));
});

test('/header returns one header by key, or all of them as Go JSON', async () => {
  const one = await get('/header?key=x-forwarded-for', {
    headers: { 'X-Forwarded-For': '1.2.3.4' },
  });
  assert.equal(one.body, '1.2.3.4');
  assert.equal((await get('/header?key=X-Missing')).body, '');
  const all = JSON.parse((await get('/header', { headers: { 'x-test': 'a' } })).body) as Record<
    string,
    string[]
  >;
  assert.deepEqual(all['X-Test'], ['a']);
  assert.equal(all.Host, undefined);
});

test('/healthz is 200 with an empty body; /readyz says ok, then shutting down after SIGTERM', async () => {
  const h = await get('/healthz');
  assert.deepEqual([h.status, h.body, h.headers.get('content-type')], [200, '', null]);
  const s = await startNetexec({ httpPort: 0, udpPort: -1, hostname: 'x', host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${String(s.httpPort)}`;
    const ready = await fetch(`${url}/readyz`);
    assert.deepEqual([ready.status, await ready.text()], [200, 'ok']);
    s.markTerminating();
    const term = await fetch(`${url}/readyz`);
    assert.deepEqual([term.status, await term.text()], [503, 'shutting down']);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    assert.equal(await (await fetch(`${url}/hostname`)).text(), 'x');
  } finally {
    await s.close();
  }
});

test('/redirect sends 302 by default (or the code asked), with http.Redirect location and body', async () => {
  const r = await get(`/redirect?location=${encodeURIComponent('/echo?msg=foobar')}`);
  assert.equal(r.status, 302);
  assert.equal(r.headers.get('location'), '/echo?msg=foobar');
  assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(r.body, '<a href="/echo?msg=foobar">Found</a>.\n\n');
  const t = await get('/redirect?location=hostname&code=307');
  assert.deepEqual([t.status, t.headers.get('location')], [307, '/hostname']);
  const bad = await get('/redirect?location=/&code=x');
  assert.deepEqual(
    [bad.status, bad.body],
    [200, `argument 'code' must be an integer or empty, got "x"\n`],
  );
});

test('UDP answers hostname, echo (lower-cased, as agnhost) and clientip; unknown gets nothing', async () => {
  const port = server.udpPort ?? 0;
  assert.equal(await udpAsk(port, 'hostname\n'), 'web-0');
  assert.equal(await udpAsk(port, 'HOSTNAME'), 'web-0');
  assert.equal(await udpAsk(port, 'echo Hello World'), 'hello world');
  assert.match(await udpAsk(port, 'clientip'), /^127\.0\.0\.1:\d+$/);
  assert.equal(answerUdp('bogus', 'h', 'p'), undefined);
  assert.equal(answerUdp('echo', 'h', 'p'), undefined);
});

test('/upload stores the multipart file, answers 201 with its path; no file is an error', async () => {
  const form = new FormData();
  form.append('file', new Blob(['payload']), 'a.txt');
  const r = await get('/upload', { method: 'POST', body: form });
  assert.equal(r.status, 201);
  const { output } = JSON.parse(r.body) as { output: string };
  assert.match(output, new RegExp(`^${uploads}/upload\\d+$`));
  assert.equal(await readFile(output, 'utf8'), 'payload');
  assert.equal((await stat(output)).mode & 0o777, 0o700);
  assert.deepEqual(
    [(await get('/upload')).status, (await get('/upload')).body],
    [200, '{"error":"Unable to upload file."}'],
  );
});

test('/shell is off by default; when on it answers agnhost JSON, 200 even on failure', async () => {
  assert.equal((await get('/shell?cmd=id')).status, 404);
  const execer = new FakeExecer().expect(
    { cmd: '/bin/sh', args: ['-c', 'echo hi'], result: { stdout: 'hi\n' } },
    { cmd: '/bin/sh', args: ['-c', 'exit 3'], result: { code: 3, stderr: 'boom\n' } },
    { cmd: '/bin/sh', args: ['-c', 'true'], result: {} },
  );
  await own({ enableShell: true, execer }, async (url) => {
    const ok = await fetch(`${url}/shell?cmd=${encodeURIComponent('echo hi')}`);
    assert.deepEqual([ok.status, await ok.text()], [200, '{"output":"hi\\n"}']);
    const bad = await fetch(`${url}/shell?shellCommand=${encodeURIComponent('exit 3')}&cmd=no`);
    assert.deepEqual(
      [bad.status, await bad.text()],
      [200, '{"error":"exit status 3","output":"boom\\n"}'],
    );
    assert.equal(await (await fetch(`${url}/shell?cmd=true`)).text(), '{}');
  });
  execer.verify();
});

test('/exit with a timeout answers, then asks to exit gracefully with the code', async () => {
  const s = await startNetexec({ httpPort: 0, udpPort: -1, hostname: 'x', host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${String(s.httpPort)}`;
    const bad = await fetch(`${url}/exit?timeout=5`);
    assert.equal(
      await bad.text(),
      `argument 'timeout' must be a valid golang duration or empty, got "5"\n`,
    );
    const r = await fetch(`${url}/exit?code=3&timeout=1s&wait=10ms`);
    assert.deepEqual([r.status, await r.text()], [200, '']);
    assert.deepEqual(await s.exitRequested, { code: 3, immediate: false, graceMs: 1000 });
  } finally {
    await s.close();
  }
});

test('/exit without a timeout and /shutdown exit at once, without an answer', async () => {
  for (const [path, code] of [
    ['/exit?code=7', 7],
    ['/shutdown', 0],
  ] as const) {
    const s = await startNetexec({ httpPort: 0, udpPort: -1, hostname: 'x', host: '127.0.0.1' });
    try {
      await assert.rejects(fetch(`http://127.0.0.1:${String(s.httpPort)}${path}`));
      assert.deepEqual(await s.exitRequested, { code, immediate: true, graceMs: 0 });
    } finally {
      await s.close();
    }
  }
});

test('one log line per request, as agnhost logs them; the probe paths stay quiet', async () => {
  const lines: string[] = [];
  await own({ log: (l) => lines.push(l) }, async (url) => {
    for (const p of ['/hostname', '/healthz', '/readyz', '/echo?msg=hi'])
      await (await fetch(`${url}${p}`)).text();
  });
  assert.deepEqual(lines, ['GET /hostname', 'GET /echo?msg=hi']);
});
