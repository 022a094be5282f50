// `svcnet dns --corefile` as a process, with kubeadm's default Corefile (its forward pointed
// at a FakeUpstream, its ports at free loopback ones) against an in-process `svcnet apiserver`:
// A, SRV and PTR answers equal those of a daemon built from the YAML defaults with the same
// ttl; names outside the cluster go to the upstream. Then `reload`: the Corefile is replaced
// the way a ConfigMap volume does it (a new `..data` symlink renamed over the old one) with
// `ttl 5`, then written in place with a misspelt plugin (logged, the old config keeps
// serving), then in place with `ttl 7` and a new port (applied, the port reported as needing
// a restart). A misspelt plugin stops the CLI with exit 2 naming its line. Loopback only.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as dnsPacket from 'dns-packet';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { q, udp } from '../../src/dns/client.js';
import { buildDnsConfig } from '../../src/dns/config.js';
import { DnsDaemon } from '../../src/dns/daemon.js';
import { FakeUpstream } from '../../src/dns/fake-upstream.js';
import {
  createInformer,
  ENDPOINT_SLICES,
  loadKubeConfig,
  NAMESPACES,
  SERVICES,
} from '../../src/kube/client.js';
import { endpoint, service, slice } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject, Service } from '../../src/kube/types.js';
import { lines, REPO, runCli } from './lib/cli.js';
import { freePort } from '../../src/util/free-port.js';

const KUBEADM = readFileSync(join(REPO, 'src', 'dns', 'testdata', 'Corefile.kubeadm'), 'utf8');

let api: RunningApiServer;
let upstream: FakeUpstream;
let yamlDaemon: DnsDaemon;
let yamlPort = 0;
let child: ChildProcess;
let stderr = '';
let dir: string;
const ports = { dns: 0, health: 0, ready: 0, metrics: 0 };

/** kubeadm's Corefile with loopback ports, the fake upstream, and `ttl`. */
function corefile(ttl: number, dnsPort = ports.dns): string {
  return KUBEADM.replace('.:53 {', `.:${dnsPort} {\n    bind 127.0.0.1`)
    .replace('health {', `health 127.0.0.1:${ports.health} {`)
    .replace('    ready\n', `    ready 127.0.0.1:${ports.ready}\n`)
    .replace('prometheus :9153', `prometheus 127.0.0.1:${ports.metrics}`)
    .replace('forward . /etc/resolv.conf', `forward . 127.0.0.1:${upstream.port}`)
    .replace('ttl 30', `ttl ${ttl}`);
}

async function eventually<T>(
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  what: string,
  withinMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const v = await fn().catch((e: unknown) => e as T);
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`${what}: still ${String(v)}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Rr = [string, number, unknown];
async function ask(
  port: number,
  name: string,
  type: dnsPacket.RecordType,
): Promise<{ rcode: number; rrs: Rr[] }> {
  const out = await udp(port, q(name, type));
  assert.ok(out, `no answer for ${name} ${type}`);
  const m = dnsPacket.decode(out);
  const rrs = (m.answers ?? [])
    .filter((a) => a.type !== 'OPT')
    .map((a): Rr => [a.name, a.ttl ?? 0, a.data]);
  return { rcode: (m.flags ?? 0) & 0xf, rrs };
}

async function post(path: string, body: unknown): Promise<void> {
  const res = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.text());
}

/** Log lines (JSON) of the child with this message. */
function logged(msg: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}

/**
 * Starts `svcnet dns --corefile` on free ports and waits for /ready. A port found free can be
 * taken by another process before the child binds it: the child then exits naming the
 * address, and it is started again on other ports.
 */
async function startCorefileChild(kcPath: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    for (const k of ['dns', 'health', 'ready', 'metrics'] as const) ports[k] = await freePort();
    rmSync(join(dir, 'cm'), { recursive: true, force: true });
    // The ConfigMap volume's layout: Corefile -> ..data/Corefile, ..data -> ..v1.
    mkdirSync(join(dir, 'cm', '..v1'), { recursive: true });
    writeFileSync(join(dir, 'cm', '..v1', 'Corefile'), corefile(30));
    symlinkSync('..v1', join(dir, 'cm', '..data'));
    symlinkSync('..data/Corefile', join(dir, 'cm', 'Corefile'));
    stderr = '';
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(REPO, 'src', 'cli', 'main.ts'),
        'dns',
        '--corefile',
        join(dir, 'cm', 'Corefile'),
        '--kubeconfig',
        kcPath,
        '--logging-format',
        'json',
      ],
      { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const started = child;
    await eventually(
      () =>
        started.exitCode !== null
          ? Promise.resolve(-1)
          : fetch(`http://127.0.0.1:${ports.ready}/ready`).then((r) => r.status),
      (s) => s === 200 || s === -1,
      '/ready of svcnet dns --corefile',
      // Loading the client library takes seconds, more on a busy machine.
      90_000,
    );
    if (started.exitCode === null) return;
    if (!stderr.includes('address already in use') || attempt >= 3)
      assert.fail(`svcnet dns --corefile exited ${String(started.exitCode)}:\n${stderr}`);
  }
}

before(async () => {
  api = await startApiServer({ listen: '127.0.0.1:0', insecureHttp: true });
  upstream = new FakeUpstream();
  upstream.setStubs([
    {
      query: { name: 'example.com', type: 'A' },
      response: {
        rcode: 'NOERROR',
        answer: [{ name: 'example.com', type: 'A', ttl: 60, data: '192.0.2.7' }],
      },
    },
  ]);
  await upstream.start();
  dir = mkdtempSync(join(tmpdir(), `svcnet-t${process.pid}-corefile-`));
  const kcPath = join(dir, 'kubeconfig');
  writeFileSync(kcPath, api.kubeconfig());
  await post(
    '/api/v1/namespaces/default/services',
    service('web', { clusterIP: '10.96.0.50', clusterIPs: ['10.96.0.50'] }),
  );
  await post(
    '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
    slice('web', [endpoint('10.244.0.10', { conditions: { ready: true } })]),
  );
  await startCorefileChild(kcPath);
  const kc = loadKubeConfig(kcPath);
  yamlDaemon = new DnsDaemon({
    config: buildDnsConfig('ttl: 30\n', {
      listen: '127.0.0.1:0',
      healthListen: 'off',
      readyListen: 'off',
      metricsListen: 'off',
      upstream: [`127.0.0.1:${upstream.port}`],
    }),
    services: createInformer<Service>(kc, SERVICES),
    endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES),
    namespaces: createInformer<KubeObject>(kc, NAMESPACES),
    upstreams: [{ host: '127.0.0.1', port: upstream.port }],
    registry: new Registry(),
    log: pino({ level: 'silent' }),
  });
  yamlPort = (await yamlDaemon.start()).dns;
  await eventually(
    () => Promise.resolve(yamlDaemon.isSynced()),
    (v) => v,
    'YAML daemon synced',
  );
});

after(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    child.kill('SIGTERM'); // the second ends the lameduck
    await exited;
  }
  await yamlDaemon.stop();
  await upstream.stop();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

const QUESTIONS: [string, dnsPacket.RecordType][] = [
  ['web.default.svc.cluster.local', 'A'],
  ['_http._tcp.web.default.svc.cluster.local', 'SRV'],
  ['50.0.96.10.in-addr.arpa', 'PTR'],
  ['10.0.244.10.in-addr.arpa', 'PTR'],
  ['nope.default.svc.cluster.local', 'A'],
  ['example.com', 'A'],
];

test("kubeadm's Corefile answers A, SRV and PTR as the YAML config does", async () => {
  for (const [name, type] of QUESTIONS)
    assert.deepEqual(
      await ask(ports.dns, name, type),
      await ask(yamlPort, name, type),
      `${name} ${type}`,
    );
  const a = await ask(ports.dns, 'web.default.svc.cluster.local', 'A');
  assert.deepEqual(a.rrs, [['web.default.svc.cluster.local', 30, '10.96.0.50']]);
  const srv = await ask(ports.dns, '_http._tcp.web.default.svc.cluster.local', 'SRV');
  assert.deepEqual(
    srv.rrs.map((r) => r[2]),
    [{ priority: 0, weight: 100, port: 80, target: 'web.default.svc.cluster.local' }],
  );
  const ptr = await ask(ports.dns, '50.0.96.10.in-addr.arpa', 'PTR');
  assert.deepEqual(ptr.rrs, [['50.0.96.10.in-addr.arpa', 30, 'web.default.svc.cluster.local']]);
  // Asked before: from `cache 30`, which caps the upstream's 60 s.
  assert.deepEqual((await ask(ports.dns, 'example.com', 'A')).rrs, [
    ['example.com', 30, '192.0.2.7'],
  ]);
  assert.ok(upstream.received.includes('example.com A'), 'forwarded to the upstream');
  assert.deepEqual(
    logged('Corefile setting accepted but not implemented').map((l) => [l.line, l.setting]),
    [
      [21, 'plugin loop'],
      [23, 'plugin loadbalance'],
    ],
  );
});

test('reload: a ConfigMap-style swap, an invalid file kept out, an in-place write', async () => {
  const name = 'web.default.svc.cluster.local';
  const ttl = async (): Promise<number> => (await ask(ports.dns, name, 'A')).rrs[0]?.[1] ?? -1;
  // The kubelet's update: a new ..vN directory, a new ..data link renamed over the old.
  mkdirSync(join(dir, 'cm', '..v2'));
  writeFileSync(join(dir, 'cm', '..v2', 'Corefile'), corefile(5));
  symlinkSync('..v2', join(dir, 'cm', '..data_tmp'));
  renameSync(join(dir, 'cm', '..data_tmp'), join(dir, 'cm', '..data'));
  rmSync(join(dir, 'cm', '..v1'), { recursive: true });
  await eventually(ttl, (t) => t === 5, 'ttl 5 after the swap');
  assert.equal(logged('Reloaded Corefile').length, 1);

  // A misspelt plugin: logged with its line, the running configuration stays.
  writeFileSync(
    join(dir, 'cm', '..v2', 'Corefile'),
    corefile(5).replace('kubernetes cluster.local', 'kubernets cluster.local'),
  );
  await eventually(
    () => Promise.resolve(logged('Corefile is not valid; keeping the running configuration')),
    (l) => l.length === 1,
    'invalid Corefile logged',
  );
  assert.match(
    String(logged('Corefile is not valid; keeping the running configuration')[0]?.err),
    /Corefile:8: unknown plugin "kubernets"/,
  );
  assert.equal(await ttl(), 5);

  // In place again, valid, with a new port: the ttl is applied, the port needs a restart.
  writeFileSync(join(dir, 'cm', '..v2', 'Corefile'), corefile(7, ports.dns + 1));
  await eventually(ttl, (t) => t === 7, 'ttl 7 after the in-place write');
  const warn = await eventually(
    () => Promise.resolve(logged('Corefile changes that need a restart were not applied')),
    (l) => l.length === 1,
    'restart-needed warning',
  );
  assert.deepEqual(warn[0]?.settings, ['listen']);
  assert.equal(child.exitCode, null, 'still running');
});

test('a misspelt plugin: exit 2 before serving, one line naming the file and line', async () => {
  const bad = join(dir, 'Corefile.bad');
  writeFileSync(bad, corefile(30).replace('    loop\n', '    lopp\n'));
  const run = await runCli(['dns', '--corefile', bad], { timeoutMs: 120_000 });
  assert.equal(run.code, 2, run.stderr);
  assert.deepEqual(lines(run.stderr), [`svcnet dns: Corefile ${bad}:21: unknown plugin "lopp"`]);
});
