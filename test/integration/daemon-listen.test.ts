// Daemons fail whole or not at all (issue 24): when one listener's port is taken, `svcnet
// dns`, `proxy`, `apiserver` and `controller` each exit 1 with one line naming the address
// and the flag to change, before serving anything, and leave nothing listening (the DNS
// port they had bound is free again). No root needed: the proxy binds its listeners before
// it touches the kernel.
//
// And they say so at once: the addresses are bound (held) before the Kubernetes client
// library loads, which alone costs 1.3 s on an idle machine and 3-5 s on a loaded one. The
// issue's figure is 2 s from process start; as the machine may be shared, the bound asserted
// is relative to it instead: 2.5 times the cheapest failure of the same command (a bad
// --listen, refused before any socket or library; the slower of two runs). Binding first
// takes 1-1.5 times that; loading the client library first takes 3-4 times. Every figure, the
// bound and the 2 s verdict are printed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lines, runCli } from './lib/cli.js';
import { freePort } from '../../src/util/free-port.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-listen-'));
const KUBECONFIG = join(dir, 'kubeconfig');
writeFileSync(
  KUBECONFIG,
  'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
);
let taken: Server;
let port = 0;
/** Seconds an exit may take: 2.5 times the start-up reference (see the header). */
let bound = 2;

before(async () => {
  taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  port = (taken.address() as { port: number }).port;
  let ref = 0;
  for (let i = 0; i < 2; i++) {
    const r = await runCli(['dns', '--listen', 'nope'], { timeoutMs: 60_000 });
    assert.equal(r.code, 2, r.stderr);
    ref = Math.max(ref, r.seconds);
  }
  bound = 2.5 * ref;
  process.stdout.write(
    `# reference (dns --listen nope): exit 2 after ${ref.toFixed(2)} s; bound ${bound.toFixed(2)} s\n`,
  );
});
after(() => {
  taken.close();
  rmSync(dir, { recursive: true, force: true });
});

/** True when TCP and UDP on 127.0.0.1:p can be bound (nobody holds them). */
async function isFree(p: number): Promise<boolean> {
  const tcp = createServer();
  const tcpOk = await new Promise<boolean>((r) => {
    tcp.once('error', () => {
      r(false);
    });
    tcp.listen(p, '127.0.0.1', () => {
      r(true);
    });
  });
  if (tcpOk)
    await new Promise<void>((r) =>
      tcp.close(() => {
        r();
      }),
    );
  const udp = createSocket('udp4');
  const udpOk = await new Promise<boolean>((r) => {
    udp.once('error', () => {
      r(false);
    });
    udp.bind(p, '127.0.0.1', () => {
      r(true);
    });
  });
  udp.close();
  return tcpOk && udpOk;
}

const CASES: { name: string; flag: string; what: string; args: (dnsPort: number) => string[] }[] = [
  {
    name: 'dns (health port taken)',
    flag: '--health-listen',
    what: '/health',
    args: (d) => [
      'dns',
      '--kubeconfig',
      KUBECONFIG,
      '--upstream',
      '127.0.0.1:53',
      '--listen',
      `127.0.0.1:${d}`,
      '--health-listen',
      `127.0.0.1:${port}`,
      '--ready-listen',
      '127.0.0.1:0',
      '--metrics-listen',
      '',
    ],
  },
  {
    name: 'dns (metrics port taken)',
    flag: '--metrics-listen',
    what: '/metrics',
    args: (d) => [
      'dns',
      '--kubeconfig',
      KUBECONFIG,
      '--upstream',
      '127.0.0.1:53',
      '--listen',
      `127.0.0.1:${d}`,
      '--health-listen',
      '127.0.0.1:0',
      '--ready-listen',
      '127.0.0.1:0',
      '--metrics-listen',
      `127.0.0.1:${port}`,
    ],
  },
  {
    name: 'dns (DNS port taken)',
    flag: '--listen',
    what: 'DNS',
    args: () => [
      'dns',
      '--kubeconfig',
      KUBECONFIG,
      '--upstream',
      '127.0.0.1:53',
      '--listen',
      `127.0.0.1:${port}`,
      '--health-listen',
      '',
      '--ready-listen',
      '',
      '--metrics-listen',
      '',
    ],
  },
  {
    name: 'proxy (healthz port taken)',
    flag: '--healthz-bind-address',
    what: '/healthz',
    args: () => [
      'proxy',
      '--kubeconfig',
      KUBECONFIG,
      '--hostname-override',
      'n1',
      '--healthz-bind-address',
      `127.0.0.1:${port}`,
      '--metrics-bind-address',
      '',
    ],
  },
  {
    name: 'proxy (metrics port taken)',
    flag: '--metrics-bind-address',
    what: '/metrics',
    args: () => [
      'proxy',
      '--kubeconfig',
      KUBECONFIG,
      '--hostname-override',
      'n1',
      '--healthz-bind-address',
      '127.0.0.1:0',
      '--metrics-bind-address',
      `127.0.0.1:${port}`,
    ],
  },
  {
    name: 'apiserver',
    flag: '--listen',
    what: 'API server',
    args: () => ['apiserver', '--listen', `127.0.0.1:${port}`],
  },
  {
    name: 'controller',
    flag: '--healthz-bind-address',
    what: '/healthz',
    args: () => [
      'controller',
      '--kubeconfig',
      KUBECONFIG,
      '--healthz-bind-address',
      `127.0.0.1:${port}`,
    ],
  },
];

for (const c of CASES)
  test(`svcnet ${c.name}: exit 1 naming the address and ${c.flag}, nothing left listening`, async () => {
    const dnsPort = await freePort();
    // A daemon that did not exit would run forever: kill it after 60 s and fail.
    const run = await runCli([...c.args(dnsPort), '--logging-format', 'json'], {
      timeoutMs: 60_000,
    });
    process.stdout.write(
      `# ${c.name}: exit ${run.code} after ${run.seconds.toFixed(2)} s (${run.seconds <= 2 ? 'within' : 'over'} 2 s)\n`,
    );
    const errs = lines(run.stderr).filter((l) => l.startsWith('svcnet '));
    assert.equal(run.code, 1, run.stderr);
    assert.ok(
      run.seconds <= bound,
      `exit after ${run.seconds.toFixed(2)} s, more than ${bound.toFixed(2)} s`,
    );
    assert.deepEqual(errs, [
      `svcnet ${c.name.split(' ')[0] ?? ''}: cannot listen on 127.0.0.1:${port} (${c.what}): address already in use; change ${c.flag}`,
    ]);
    assert.ok(!lines(run.stderr).some((l) => /^\s+at /.test(l)), 'no stack trace');
    assert.ok(await isFree(dnsPort), 'the DNS port bound before the failure is free again');
  });
