// `svcnet dns --workers 2` as a user runs it (a child process under tsx) against the
// embedded API server on loopback: it becomes ready, answers Services created before and
// after it started (the primary ships index changes to both workers), both worker processes
// answer part of a burst of queries from many source ports, /metrics counts every query
// exactly once whichever worker answered (coredns_dns_requests_total summed over the
// workers), coredns_build_info stays 1, and SIGTERM runs the lameduck and exits 0 with the
// workers gone. Loopback only; no root needed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { q, udp } from '../../src/dns/client.js';
import { service } from '../../src/kube/testing.js';
import { freePort } from '../../src/util/free-port.js';
import { REPO } from './lib/cli.js';
import { apiRequest } from './lib/api-request.js';

let api: RunningApiServer;
let dir: string;
let child: ChildProcess;
let stderr = '';
let dnsPort = 0;
let metricsPort = 0;
let readyPort = 0;
/** Every query this test sent to the daemon (each one is a request in the metrics). */
let sent = 0;

function call(method: string, path: string, body?: unknown): Promise<number> {
  return apiRequest(api, method, path, body);
}

async function eventually(fn: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > deadline) assert.fail(`${what}; daemon stderr:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function resolvesTo(name: string, ip: string): Promise<boolean> {
  sent++;
  const out = await udp(dnsPort, q(name), 1000);
  if (!out) return false;
  const a = dnsPacket.decode(out).answers?.[0];
  return a?.type === 'A' && a.data === ip;
}

async function metrics(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  return res.text();
}

/** The values of `name`'s series in a Prometheus text exposition. */
function series(text: string, name: string): { labels: string; value: number }[] {
  const re = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm');
  return [...text.matchAll(re)].map((m) => ({ labels: m[1] ?? '', value: Number(m[2]) }));
}

before(async () => {
  api = await startApiServer({ listen: '127.0.0.1:0', insecureHttp: true });
  dir = mkdtempSync(join(tmpdir(), `svcnet-t${process.pid}-dnsworkers-`));
  const kc = join(dir, 'kubeconfig');
  writeFileSync(kc, api.kubeconfig());
  const ip = '10.96.7.1';
  const body = service('early', { clusterIP: ip, clusterIPs: [ip] });
  assert.equal(await call('POST', '/api/v1/namespaces/default/services', body), 201);
  [dnsPort, metricsPort, readyPort] = [await freePort(), await freePort(), await freePort()];
  child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(REPO, 'src', 'cli', 'main.ts'),
      'dns',
      '--workers',
      '2',
      '--kubeconfig',
      kc,
      '--listen',
      `127.0.0.1:${dnsPort}`,
      '--upstream',
      '127.0.0.1:9',
      '--health-listen',
      'off',
      '--ready-listen',
      `127.0.0.1:${readyPort}`,
      '--metrics-listen',
      `127.0.0.1:${metricsPort}`,
      '--lameduck',
      '500ms',
    ],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await eventually(async () => {
    const res = await fetch(`http://127.0.0.1:${readyPort}/ready`);
    await res.text();
    return res.status === 200;
  }, '/ready 200');
});

after(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

test('both workers answer from the index the primary ships them, and every query is counted once', async () => {
  await eventually(
    () => resolvesTo('early.default.svc.cluster.local', '10.96.7.1'),
    'a Service from before the start',
  );
  const ip = '10.96.7.2';
  const late = service('late', { clusterIP: ip, clusterIPs: [ip] });
  assert.equal(await call('POST', '/api/v1/namespaces/default/services', late), 201);
  await eventually(
    () => resolvesTo('late.default.svc.cluster.local', ip),
    'a Service created after the start',
  );
  // A burst from 16 sockets (source ports), 200 queries each, all outstanding at once.
  const burst = await Promise.all(
    Array.from(
      { length: 16 },
      (_, s) =>
        new Promise<number>((resolve) => {
          const sock = createSocket('udp4');
          let got = 0;
          const timer = setTimeout(() => {
            sock.close();
            resolve(got);
          }, 10_000);
          sock.on('message', () => {
            if (++got === 200) {
              clearTimeout(timer);
              sock.close();
              resolve(got);
            }
          });
          sock.bind(0, '127.0.0.1', () => {
            for (let i = 0; i < 200; i++)
              sock.send(
                q('late.default.svc.cluster.local', 'A', s * 200 + i),
                dnsPort,
                '127.0.0.1',
              );
          });
        }),
    ),
  );
  sent += 16 * 200;
  assert.equal(
    burst.reduce((a, b) => a + b, 0),
    16 * 200,
    'every query of the burst answered',
  );
  const text = await metrics();
  const requests = series(text, 'coredns_dns_requests_total').reduce((n, s) => n + s.value, 0);
  assert.equal(requests, sent, 'coredns_dns_requests_total: each query once');
  const responses = series(text, 'coredns_dns_responses_total').reduce((n, s) => n + s.value, 0);
  assert.equal(responses, sent, 'coredns_dns_responses_total: each answer once');
  const perWorker = series(text, 'svcnet_dns_worker_messages_total');
  assert.equal(perWorker.length, 2, `two workers: ${JSON.stringify(perWorker)}`);
  assert.equal(
    perWorker.reduce((n, s) => n + s.value, 0),
    sent,
  );
  for (const w of perWorker) assert.ok(w.value > 0, `worker ${w.labels} answered none`);
  assert.deepEqual(
    series(text, 'coredns_build_info').map((s) => s.value),
    [1],
  );
  process.stdout.write(
    `figure: --workers 2 split ${sent} queries as ${perWorker.map((w) => `${w.labels} ${w.value}`).join(', ')}\n`,
  );
});

test('SIGTERM: lameduck, then the primary and both workers exit 0', async () => {
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /lameduck/i);
  // The workers are gone with the primary: the port no longer answers.
  assert.equal(await udp(dnsPort, q('late.default.svc.cluster.local'), 300), undefined);
});
