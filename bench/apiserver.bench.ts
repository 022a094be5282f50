// `npm run bench -- apiserver [--json]`: the embedded API server over HTTPS with its bearer
// token (server and clients in this one process): create 10k Services and 30k Pods with 64
// requests in flight, while 10 cluster-wide pod watchers measure event latency (request sent
// -> ADDED line received); then a full LIST. Run twice: in memory, and on a --data-dir
// (SQLite, synchronous=FULL, group commit: every 201 is durable). Then a data dir of 100k
// objects is restarted. Prints throughput, latency percentiles, memory and restart time;
// with --json one line per figure.

import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiServer } from '../src/apiserver/daemon.js';
import { PODS as POD_RESOURCE } from '../src/apiserver/resources.js';
import { SqliteStorage } from '../src/apiserver/sqlite-storage.js';
import { newTestApi } from '../src/apiserver/testing.js';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 10_000);
const PODS = Number(process.env.BENCH_PODS ?? 30_000);
const IN_FLIGHT = 64;
const WATCHERS = 10;
const RESTART_OBJECTS = Number(process.env.BENCH_RESTART_OBJECTS ?? 100_000);
const JSON_OUT = process.argv.includes('--json');

function figure(name: string, value: number, unit: string, target?: number): void {
  if (!JSON_OUT) return;
  process.stdout.write(
    `${JSON.stringify({ bench: 'apiserver', figure: name, value: Number(value.toFixed(3)), unit, ...(target !== undefined ? { target } : {}) })}\n`,
  );
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

export async function run(): Promise<void> {
  const memory = await createRun(undefined);
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-bench-apiserver-'));
  try {
    const durable = await createRun(join(dir, 'creates'));
    const restart = await restartRun(join(dir, 'restart'));
    figure('create_per_s', durable.podsPerS, '1/s', 3000);
    figure('create_per_s_memory', memory.podsPerS, '1/s');
    figure('service_create_per_s', durable.svcPerS, '1/s');
    figure('service_create_per_s_memory', memory.svcPerS, '1/s');
    figure('restart_s', restart, 's', 5);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Fills a data dir with RESTART_OBJECTS pods, then times a server start on it. */
async function restartRun(dataDir: string): Promise<number> {
  const storage = new SqliteStorage(dataDir);
  const api = newTestApi({ backend: storage });
  await api.store.durable();
  for (let i = 0; i < RESTART_OBJECTS; i++) {
    api.store.create(POD_RESOURCE, 'default', {
      metadata: { name: `pod-${i}`, labels: { app: `app-${i % 100}` } },
      spec: {
        nodeName: `node-${i % 50}`,
        containers: [{ name: 'c', image: 'registry.k8s.io/e2e-test-images/agnhost:2.53' }],
      },
    });
    if (i % 5000 === 4999) api.store.flush();
  }
  api.store.flush();
  storage.close();
  gc();
  const start = performance.now();
  const server = await startApiServer({ listen: '127.0.0.1:0', dataDir });
  const seconds = (performance.now() - start) / 1000;
  const pods = server.store.count(POD_RESOURCE);
  await server.close();
  if (pods !== RESTART_OBJECTS) throw new Error(`restart: ${pods} pods, want ${RESTART_OBJECTS}`);
  if (!JSON_OUT)
    process.stdout.write(
      `restart:          ${RESTART_OBJECTS} pods in the data dir, ready in ${seconds.toFixed(2)} s\n`,
    );
  return seconds;
}

async function createRun(
  dataDir: string | undefined,
): Promise<{ podsPerS: number; svcPerS: number }> {
  const server = await startApiServer({
    listen: '127.0.0.1:0',
    historySize: 5000,
    ...(dataDir !== undefined ? { dataDir } : {}),
  });
  const ca = server.caCert ?? '';
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT + WATCHERS + 4, ca });
  const auth = `Bearer ${server.token}`;

  const call = (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        server.url + path,
        {
          method,
          agent,
          headers: {
            Authorization: auth,
            Accept: 'application/json',
            ...(data !== undefined
              ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (data !== undefined) req.write(data);
      req.end();
    });

  // 10 cluster-wide pod watchers
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let received = 0;
  const list = JSON.parse((await call('GET', '/api/v1/pods')).text) as {
    metadata: { resourceVersion: string };
  };
  const watchReqs = Array.from({ length: WATCHERS }, () => {
    const req = request(
      server.url + `/api/v1/pods?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
      {
        agent,
        headers: { Authorization: auth },
      },
    );
    req.on('response', (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim() === '') continue;
          const m = /"name":"(pod-\d+)"/.exec(line);
          const t = m ? sentAt.get(m[1] ?? '') : undefined;
          if (t !== undefined) latencies.push(performance.now() - t);
          received++;
        }
      });
    });
    req.on('error', () => undefined);
    req.end();
    return req;
  });
  await new Promise((r) => setTimeout(r, 200));

  gc();
  const heapBefore = process.memoryUsage().heapUsed;

  const pool = async (n: number, make: (i: number) => Promise<void>): Promise<number> => {
    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < n) await make(next++);
      }),
    );
    return performance.now() - start;
  };

  const svcMs = await pool(SERVICES, async (i) => {
    const r = await call('POST', '/api/v1/namespaces/default/services', {
      metadata: { name: `svc-${i}`, labels: { app: `app-${i % 100}` } },
      spec: {
        selector: { app: `app-${i % 100}` },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      },
    });
    if (r.status !== 201) throw new Error(`service ${i}: ${r.status} ${r.text}`);
  });
  const podMs = await pool(PODS, async (i) => {
    const name = `pod-${i}`;
    sentAt.set(name, performance.now());
    const r = await call('POST', '/api/v1/namespaces/default/pods', {
      metadata: { name, labels: { app: `app-${i % 100}` } },
      spec: {
        nodeName: `node-${i % 50}`,
        containers: [
          {
            name: 'c',
            image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
            ports: [{ containerPort: 8080 }],
          },
        ],
      },
    });
    if (r.status !== 201) throw new Error(`pod ${i}: ${r.status} ${r.text}`);
  });
  const deadline = Date.now() + 30_000;
  while (received < PODS * WATCHERS && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));

  const listStart = performance.now();
  const big = await call('GET', '/api/v1/pods');
  const listMs = performance.now() - listStart;

  gc();
  const mem = process.memoryUsage();
  latencies.sort((a, b) => a - b);
  const lines = [
    dataDir !== undefined
      ? `-- on a data dir (SQLite, synchronous=FULL, group commit)`
      : `-- in memory`,
    `services created: ${SERVICES} in ${(svcMs / 1000).toFixed(2)} s = ${Math.round(SERVICES / (svcMs / 1000))}/s (HTTPS, ${IN_FLIGHT} in flight)`,
    `pods created:     ${PODS} in ${(podMs / 1000).toFixed(2)} s = ${Math.round(PODS / (podMs / 1000))}/s (while ${WATCHERS} watchers stream every event)`,
    `watch events:     ${received}/${PODS * WATCHERS} delivered; latency request->event p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${(latencies[latencies.length - 1] ?? NaN).toFixed(1)} ms`,
    `list all pods:    ${(big.text.length / 1024 / 1024).toFixed(1)} MiB JSON in ${listMs.toFixed(0)} ms`,
    `memory:           heap ${mb(mem.heapUsed)} (+${mb(mem.heapUsed - heapBefore)} for ${SERVICES + PODS} objects), rss ${mb(mem.rss)}`,
  ];
  if (!JSON_OUT) process.stdout.write(`${lines.join('\n')}\n`);
  for (const r of watchReqs) r.destroy();
  agent.destroy();
  await server.close();
  return { podsPerS: PODS / (podMs / 1000), svcPerS: SERVICES / (svcMs / 1000) };
}
