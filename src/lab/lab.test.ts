// findLab, the sweep and the API server identity checks against state folders made by hand:
// a dead run's ready state, a live run's folder holding another run's state, a run still
// starting, and API endpoints that are not the run's server. The "supervisor" of a live run
// is this test process, its sandbox init a `cat` child waiting on its stdin.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderKubeconfig } from '../apiserver/daemon.js';
import { createServingCert } from '../apiserver/x509.js';
import { certFingerprint, identify, newRunId, writeRunRecord, type RunRecord } from './run.js';
import { hostKubeconfig, HOST_KUBECONFIG, STATE_FILE, type LabState } from './supervisor.js';
import { planLab } from './topology.js';

const root = mkdtempSync(join(tmpdir(), 'svcnet-lab-unit-'));
process.env.SVCNET_LAB_ROOT = root;
const { describeComponents, findLab, labKubeconfigText, sweepDeadLabs, verifyApiServer } =
  await import('./lab.js');

// The stand-in sandbox init: the first child of this process, as `unshare`'s is.
const init = spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] });
after(() => {
  init.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const me = identify(process.pid) ?? assert.fail('cannot read /proc/self/stat');
const dead = { pid: process.pid, startTime: '1' };

function makeFolder(name: string, run: RunRecord, state?: Partial<LabState>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeRunRecord(dir, run);
  if (state)
    writeFileSync(
      join(dir, STATE_FILE),
      JSON.stringify({
        status: 'ready',
        plan: planLab({ name, nodes: 1 }),
        cni: 'svcnet',
        startedAt: new Date().toISOString(),
        ...state,
      }),
    );
  return dir;
}

test('a dead run is not running, even with a ready state, and the sweep removes it', () => {
  const runId = newRunId();
  const dir = makeFolder(
    'deadlab',
    { runId, starter: dead, supervisor: dead },
    { runId, apiServer: 'https://127.0.0.1:44129' },
  );
  assert.equal(findLab('deadlab'), undefined);
  assert.ok(sweepDeadLabs().includes('deadlab'));
  assert.ok(!existsSync(dir));
});

test("a live run's folder with another run's state has no lab yet, and is not swept", () => {
  const runId = newRunId();
  const dir = makeFolder(
    'livelab',
    { runId, starter: dead, supervisor: me },
    { runId: newRunId(), apiServer: 'https://127.0.0.1:44129' },
  );
  assert.equal(findLab('livelab'), undefined);
  assert.ok(!sweepDeadLabs().includes('livelab'));
  makeFolder('livelab', { runId, starter: dead, supervisor: me }, { runId });
  const lab = findLab('livelab');
  assert.equal(lab?.runId, runId);
  assert.equal(lab.initPid, init.pid);
  assert.equal(lab.unsharePid, process.pid);
  rmSync(dir, { recursive: true });
});

test('a run still starting (starter alive, no supervisor yet) is kept', () => {
  const dir = makeFolder('startinglab', { runId: newRunId(), starter: me });
  assert.equal(findLab('startinglab'), undefined);
  assert.ok(!sweepDeadLabs().includes('startinglab'));
  assert.ok(existsSync(dir));
  rmSync(dir, { recursive: true });
});

test('half-made folders: kept while young, swept once old or their starter is dead', () => {
  const young = join(root, '.new-young');
  mkdirSync(young);
  const old = join(root, '.new-old');
  mkdirSync(old);
  utimesSync(old, new Date(0), new Date(0));
  const orphan = makeFolder('.new-orphan', { runId: newRunId(), starter: dead });
  assert.deepEqual(sweepDeadLabs(), []); // half-made folders are no labs: not reported
  assert.ok(existsSync(young));
  assert.ok(!existsSync(old));
  assert.ok(!existsSync(orphan));
  rmSync(young, { recursive: true });
});

/** A live lab whose API endpoint is `port` and whose recorded certificate is `cert`. */
function liveLab(name: string, port: number, cert: string, kubeconfigCert = cert) {
  const runId = newRunId();
  const server = `https://127.0.0.1:${String(port)}`;
  const dir = makeFolder(
    name,
    { runId, starter: dead, supervisor: me },
    {
      runId,
      apiServer: server,
      kubeconfig: join(root, name, HOST_KUBECONFIG),
      apiServerCA: certFingerprint(cert),
    },
  );
  writeFileSync(
    join(dir, HOST_KUBECONFIG),
    hostKubeconfig(renderKubeconfig('https://10.0.0.1:6443', 'tok', kubeconfigCert), server, name),
  );
  const lab = findLab(name);
  assert.ok(lab);
  return lab;
}

const certA = createServingCert(['127.0.0.1']);
const certB = createServingCert(['127.0.0.1']);

test("the kubeconfig counts only with this run's server and certificate", () => {
  const ok = liveLab('kcgood', 40001, certA.cert);
  assert.match(labKubeconfigText(ok), /server: https:\/\/127\.0\.0\.1:40001\n/);
  const other = liveLab('kcother', 40002, certA.cert, certB.cert);
  assert.throws(() => labKubeconfigText(other), {
    code: 'CONFLICT',
    message: new RegExp(
      `kcother/kubeconfig: clusters\\[0\\]\\.cluster\\.certificate-authority-data: not the certificate of run ${other.runId}`,
    ),
  });
  writeFileSync(
    join(root, 'kcgood', HOST_KUBECONFIG),
    hostKubeconfig(
      renderKubeconfig('https://10.0.0.1:6443', 'tok', certA.cert),
      'https://127.0.0.1:44129',
      'kcgood',
    ),
  );
  assert.throws(() => labKubeconfigText(ok), {
    code: 'CONFLICT',
    message: /server: https:\/\/127\.0\.0\.1:44129 is not this run's API server/,
  });
});

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve((server.address() as AddressInfo).port);
    });
  });
}

test("the API server proves it holds the run's certificate; anything else on the port fails", async () => {
  let accepted = 0;
  const right = createTlsServer({ key: certA.key, cert: certA.cert }, (s) => s.end());
  const wrong = createTlsServer({ key: certB.key, cert: certB.cert }, (s) => s.end());
  const plain = createTcpServer((s) => {
    accepted++;
    s.end('HTTP/1.1 200 OK\r\n\r\n');
  });
  try {
    await verifyApiServer(liveLab('tlsright', await listen(right), certA.cert));
    await assert.rejects(verifyApiServer(liveLab('tlswrong', await listen(wrong), certA.cert)), {
      code: 'CONFLICT',
      message: /API server https:\/\/127\.0\.0\.1:\d+ is not lab run [0-9a-f]+'s: /,
    });
    await assert.rejects(verifyApiServer(liveLab('tlsplain', await listen(plain), certA.cert)), {
      code: 'CONFLICT',
    });
    assert.equal(accepted, 1);
  } finally {
    right.close();
    wrong.close();
    plain.close();
  }
});

test('lab status lists each component with its state and restarts; any not running is down', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const { text, down } = describeComponents(
    [
      { name: 'apiserver', state: 'running', pid: 12, restarts: 1, lastExit: 'exited with 137' },
      {
        name: 'proxy-svcnet-worker',
        state: 'backoff',
        restarts: 3,
        nextStartAt: now + 19_500,
        lastExit: 'exited with 1',
      },
      { name: 'controller', state: 'restarting', restarts: 0 },
    ],
    now,
  );
  assert.deepEqual(down, ['proxy-svcnet-worker', 'controller']);
  const lines = text.split('\n');
  assert.match(lines[0] ?? '', /^ {2}COMPONENT +STATE +RESTARTS {2}DETAIL$/);
  assert.match(lines[1] ?? '', /^ {2}apiserver +running +1 {2}pid 12$/);
  assert.match(
    lines[2] ?? '',
    /proxy-svcnet-worker +backoff +3 {2}next start in 20 s; exited with 1$/,
  );
  assert.match(lines[3] ?? '', /controller +restarting +0 {2}starting$/);
});
