// Idle connections cannot lock out clients with a token (issue 27): an unauthenticated client
// on loopback holds 19,500 sockets to `svcnet apiserver` — 19,000 that never start their TLS
// handshake and 500 that complete it and then say nothing — and reconnects whatever the
// server closes, as an attacker would. Meanwhile an authenticated request (and the real
// kubectl, when installed) must answer within 2 s. The server runs as its own process with
// the machine's 20k descriptor limit: once with the default cap (what the 10 s handshake and
// first-request deadlines leave the attacker), once with --max-connections 5000, where new
// connections shed the attacker's idle ones.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { readNoFileLimit } from '../../src/os/rlimit.js';
import { startApiServerChild, type ApiServerChild } from './lib/apiserver-child.js';

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const RAW = 19_000;
const TLS = 500;

function authenticatedGet(
  srv: ApiServerChild,
  path: string,
): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: srv.port,
        path,
        agent: false,
        ca: readFileSync(srv.caFile),
        headers: { Authorization: `Bearer ${srv.token}` },
        timeout: 10_000,
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out after 10 s')));
    req.on('error', reject);
    req.end();
  });
}

interface FloodStatus {
  held: number;
  reconnects: number;
  errors: number;
  filled?: boolean;
}

/** Starts lib/idle-flood.ts against `port`; `last()` is its latest status line. */
function startFlood(port: number) {
  // Niced: a real attacker spends its own machine's CPU, not the server's; on this 2-core
  // box an un-niced flood would mostly measure the two processes fighting over a core.
  const child = spawn(
    'nice',
    [
      '-n',
      '19',
      process.execPath,
      '--import',
      'tsx',
      join(HERE, 'lib/idle-flood.ts'),
      String(port),
      String(RAW),
      String(TLS),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let status: FloodStatus = { held: 0, reconnects: 0, errors: 0 };
  let buf = '';
  child.stdout.on('data', (b: Buffer) => {
    buf += b.toString();
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) if (l.trim() !== '') status = JSON.parse(l) as FloodStatus;
  });
  return {
    last: () => status,
    waitFilled: async (ms: number) => {
      const t0 = Date.now();
      while (status.filled !== true && Date.now() - t0 < ms)
        await new Promise((r) => setTimeout(r, 250));
      return status;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) {
          resolve();
          return;
        }
        child.once('exit', () => {
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

describe('API server with 19,500 idle unauthenticated connections', async () => {
  const limit = await readNoFileLimit();
  const skip =
    limit.soft < RAW + TLS + 200
      ? `this process may open ${limit.soft} files; the test needs ${RAW + TLS + 200}`
      : false;
  let srv: ApiServerChild | undefined;
  let flood: ReturnType<typeof startFlood> | undefined;

  afterEach(async () => {
    await flood?.stop();
    await srv?.stop();
    flood = undefined;
    srv = undefined;
  });

  for (const cap of [undefined, 5000])
    it(
      cap === undefined
        ? 'answers an authenticated request within 2 s (default cap: open-file limit - 1024)'
        : `answers an authenticated request within 2 s with --max-connections ${cap} (shedding)`,
      { skip, timeout: 180_000 },
      async () => {
        srv = await startApiServerChild(
          cap === undefined ? [] : ['--max-connections', String(cap)],
        );
        const base = await authenticatedGet(srv, '/api/v1/namespaces/default/pods');
        assert.equal(base.status, 200);
        const t0 = performance.now();
        flood = startFlood(srv.port);
        // Sample the server's descriptors while the attacker fills (at most 45 s).
        let peakFds = 0;
        const sampler = setInterval(() => {
          peakFds = Math.max(peakFds, srv?.openFds() ?? 0);
        }, 250);
        try {
          const filled = await flood.waitFilled(45_000);
          console.log(
            `figure: ${cap === undefined ? 'default cap' : `cap ${cap}`}: attacker ${filled.filled === true ? 'opened' : 'still opening'} ${RAW} raw + ${TLS} TLS idle connections after ${((performance.now() - t0) / 1000).toFixed(1)} s; holds ${filled.held}; server fds peak ${peakFds}, RSS ${srv.rssMiB().toFixed(0)} MiB`,
          );
          const times: number[] = [];
          for (let i = 0; i < 10; i++) {
            const r = await authenticatedGet(srv, '/api/v1/namespaces/default/pods');
            assert.equal(r.status, 200);
            times.push(r.ms);
            await new Promise((res) => setTimeout(res, 300));
          }
          const worst = Math.max(...times);
          console.log(
            `figure: ${cap === undefined ? 'default cap' : `cap ${cap}`}: authenticated GET pods while the attacker holds ${flood.last().held}: worst ${worst.toFixed(0)} ms, median ${[...times].sort((a, b) => a - b)[5]?.toFixed(0)} ms; attacker reconnects ${flood.last().reconnects}; server fds peak ${peakFds}`,
          );
          // 2 s is the target; on this shared 2-core machine a neighbour's CPU burst can stall a
          // single request past it, so one straggler (still under 5 s) is tolerated.
          const late = times.filter((t) => t > 2000);
          assert.ok(
            late.length <= 1,
            `answered after 2 s: ${late.map((t) => t.toFixed(0)).join(', ')}`,
          );
          assert.ok(worst <= 5000, `worst ${worst} ms`);
          const kubectl = await run('kubectl', ['version', '--client'])
            .then(() => true)
            .catch(() => false);
          if (kubectl) {
            const k0 = performance.now();
            const out = await run(
              'kubectl',
              ['--kubeconfig', srv.kubeconfig, 'get', 'pods', '-A'],
              {
                timeout: 20_000,
              },
            ).catch((e: unknown) => ({ stdout: '', stderr: String(e) }));
            const ms = performance.now() - k0;
            console.log(
              `figure: kubectl get pods -A while held: ${ms.toFixed(0)} ms (${out.stderr.trim() || 'ok'})`,
            );
            assert.equal(out.stderr.trim(), 'No resources found');
            // kubectl makes several connections (discovery, then the list); reported, not timed.
          }
          // The attacker really occupied the server (its descriptors), not just the kernel queue;
          // with a cap, never more than the cap (plus the server's own files).
          assert.ok(
            peakFds > Math.min(cap ?? 5_000, 5_000) * 0.9,
            `the server held ${peakFds} descriptors at most`,
          );
          if (cap !== undefined)
            assert.ok(peakFds <= cap + 100, `${peakFds} descriptors past the cap`);
        } finally {
          clearInterval(sampler);
        }
      },
    );
});
