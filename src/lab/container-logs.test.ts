import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../kube/types.js';
import { startProcess } from '../os/process.js';
import { ContainerLogs } from './container-log-capture.js';
import { podLogDir } from './container-log-files.js';
import { containerLogsHandler } from './container-logs.js';
import { kubeletServer, listenKubelet } from './kubelet-server.js';

let dir: string;
let sock: string;
let server: Server;
let logs: ContainerLogs;

const pod: Pod = {
  metadata: { namespace: 'default', name: 'web', uid: 'u1' },
  spec: { containers: [{ name: 'web' }, { name: 'side' }] },
};

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svcnet-container-logs-'));
  logs = new ContainerLogs(join(dir, 'pods'));
  server = kubeletServer({ containerLogs: containerLogsHandler(logs, 50) });
  sock = join(dir, 'kubelet.sock');
  await listenKubelet(server, sock);
});

after(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: sock, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.once('error', reject);
    req.end();
  });
}

/** Runs `script` as the container's process, its output captured; resolves when it exits. */
function run(script: string): Promise<string> {
  const capture = logs.capture(pod, 'web');
  let proc;
  try {
    proc = startProcess('sh', ['-c', script], capture.output);
  } finally {
    capture.spawned();
  }
  void proc.exited.then(() => {
    logs.exited(capture.path);
  });
  return Promise.resolve(capture.path);
}

test('before any run: waiting to start; no previous run: not found (the kubelet words)', async () => {
  const w = await get('/containerLogs/default/web/web');
  assert.equal(w.status, 400);
  assert.equal(w.body, 'container "web" in pod "web" is waiting to start: ContainerCreating\n');
  await run('echo one');
  const p = await get('/containerLogs/default/web/web?previous=true');
  assert.equal(p.status, 400);
  assert.equal(p.body, 'previous terminated container "web" in pod "web" not found\n');
});

test('follow streams lines as they come and ends when the process ends', async () => {
  const path = await run('echo first; echo oops >&2; sleep 0.6; echo later; sleep 0.3');
  const started = Date.now();
  const r = await get('/containerLogs/default/web/web?follow=true');
  assert.equal(r.status, 200);
  assert.equal(r.body, 'first\noops\nlater\n');
  assert.ok(Date.now() - started >= 500, 'it waited for the later line');
  await logs.ended(path);
  assert.equal(logs.isLive(path), false);
  assert.equal(existsSync(`${path}.stdout`), false, 'the FIFOs go with the run');
});

test('tailLines, timestamps, limitBytes, sinceSeconds, previous; the other container is empty', async () => {
  const path = await run('for i in 1 2 3 4; do echo line $i; done');
  await logs.ended(path);
  assert.equal((await get('/containerLogs/default/web/web?tailLines=2')).body, 'line 3\nline 4\n');
  const ts = (await get('/containerLogs/default/web/web?tailLines=1&timestamps=true')).body;
  assert.match(ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line 4\n$/);
  assert.equal((await get('/containerLogs/default/web/web?limitBytes=9')).body, 'line 1\nli');
  assert.equal(
    (await get('/containerLogs/default/web/web?sinceSeconds=60')).body,
    'line 1\nline 2\nline 3\nline 4\n',
  );
  const prev = await get('/containerLogs/default/web/web?previous=true');
  assert.equal(prev.body, 'first\noops\nlater\n');
  assert.equal(
    (await get('/containerLogs/default/web/web?follow=true')).body.split('\n').length,
    5,
  );
  const side = await get('/containerLogs/default/web/side');
  assert.deepEqual(side, { status: 200, body: '' });
  const bad = await get('/containerLogs/default/web/web?tailLines=many');
  assert.equal(bad.status, 400);
  assert.match(bad.body, /tailLines/);
});

test("an init container's output is a run of its own; removing the Pod removes its logs", async () => {
  logs.writeInit(pod, 'setup', 'prepared\ndone');
  assert.equal((await get('/containerLogs/default/web/setup')).body, 'prepared\ndone\n');
  logs.remove(pod);
  assert.equal(existsSync(podLogDir(logs.root, pod)), false);
  assert.equal((await get('/containerLogs/default/web/web')).status, 400);
});

test('the process outlives the agent that read its output; the next agent reads on', async () => {
  const path = await run('echo before; sleep 0.4; echo after; sleep 0.2');
  await new Promise((r) => setTimeout(r, 150));
  logs.detachAll(); // the agent stops; the process keeps writing into its pipes
  assert.equal(logs.isLive(path), false);
  const next = new ContainerLogs(logs.root);
  assert.equal(next.reattach(pod, 'web'), path);
  await next.ended(path); // EOF once the process is gone
  assert.equal(next.isLive(path), false);
  assert.equal((await get('/containerLogs/default/web/web?tailLines=2')).body, 'before\nafter\n');
});
