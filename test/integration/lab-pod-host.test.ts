// The pod host in real namespaces: one process (this test's) serves two "Pods", each in a
// network namespace of its own reached over a veth pair, and each answers as itself. A
// request to a Pod's IP gets its hostname; its listeners exist only inside its namespace;
// the client address it sees is the caller's; /dial from Pod A to Pod B leaves from A's IP;
// its log lines reach its log FIFO; SIGTERM fails /readyz and ends the run with 0 after
// the shutdown delay; /exit ends it with the code asked; a second agent (client) adopts a
// run that still serves; forget closes it. Needs root, ip and curl.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import pino from 'pino';
import { NetnsLab, netnsPath, tempDir } from './lib/cni-lab.js';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';
import { RealNetnsEnterer } from '../../src/os/netns-enter.js';
import { makeFifo, openFifoReader } from '../../src/os/fifo.js';
import { PodHost } from '../../src/lab/pod-host.js';
import { PodHostClient, type HostedRun } from '../../src/lab/pod-host-client.js';
import type { HostedContainer } from '../../src/lab/pod-host-protocol.js';
import { Socket } from 'node:net';

const skip = skipOrFail(
  process.getuid?.() !== 0 ? 'needs root' : missingToolsReason(['ip', 'curl']),
);

async function httpGet(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text() };
}

function udpAsk(ip: string, port: number, msg: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    const t = setTimeout(() => {
      s.close();
      reject(new Error(`no UDP answer from ${ip}:${String(port)}`));
    }, 3000);
    s.on('message', (m) => {
      clearTimeout(t);
      s.close();
      resolve(m.toString());
    });
    s.send(msg, port, ip);
  });
}

function refused(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => {
      resolve(true);
    });
  });
}

describe('pod host: one process serving Pods inside their namespaces', { skip }, () => {
  const lab = new NetnsLab('ph');
  let tmp: { dir: string; remove: () => Promise<void> };
  let host: PodHost;
  let enter: RealNetnsEnterer;
  let client: PodHostClient;
  const socketPath = (): string => join(tmp.dir, 'host.sock');
  const pods: { ns: string; ip: string; name: string }[] = [];
  const logs = new Map<string, string>();

  /** FIFOs for a run's log, with a reader collecting what arrives. */
  function logFifos(name: string): { stdout: string; stderr: string } {
    const dir = join(tmp.dir, name);
    mkdirSync(dir, { recursive: true });
    const paths = { stdout: join(dir, 'out'), stderr: join(dir, 'err') };
    for (const p of Object.values(paths)) makeFifo(p);
    const reader = new Socket({
      fd: openFifoReader(paths.stderr),
      readable: true,
      writable: false,
    });
    reader.setEncoding('utf8');
    reader.on('data', (d: string) => logs.set(name, (logs.get(name) ?? '') + d));
    reader.on('error', () => undefined);
    openFifoReader(paths.stdout);
    return paths;
  }

  function container(i: number, extra: Partial<HostedContainer> = {}): HostedContainer {
    const p = pods[i];
    assert.ok(p);
    return {
      id: p.ns,
      netns: netnsPath(p.ns),
      hostname: p.name,
      httpPort: 8080,
      udpPort: 8081,
      extraPorts: [],
      delayShutdownSeconds: 0,
      ...logFifos(`${p.name}-${String(Date.now())}`),
      ...extra,
    };
  }

  before(async () => {
    tmp = await tempDir('pod-host');
    await lab.sweep();
    for (const [i, name] of ['pod-a', 'pod-b'].entries()) {
      const ns = await lab.add(name);
      const ip = `10.77.${String(i)}.2`;
      const hostEnd = `ph${String(process.pid % 10000)}${String(i)}`;
      // Made here (the test's own namespace), with the Pod's end moved into the Pod.
      const made = await lab.execer.run({
        cmd: 'ip',
        args: ['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns],
      });
      assert.equal(made.code, 0, made.stderr);
      await lab.ip(ns, 'addr', 'add', `${ip}/24`, 'dev', 'eth0');
      await lab.ip(ns, 'link', 'set', 'eth0', 'up');
      await lab.ip(ns, 'route', 'add', 'default', 'via', `10.77.${String(i)}.1`);
      // The test's own namespace (unshare --net) is the "node": it routes between the Pods.
      for (const args of [
        ['addr', 'add', `10.77.${String(i)}.1/24`, 'dev', hostEnd],
        ['link', 'set', hostEnd, 'up'],
      ])
        await lab.execer.run({ cmd: 'ip', args });
      pods.push({ ns, ip, name });
    }
    await lab.execer.run({ cmd: 'sysctl', args: ['-qw', 'net.ipv4.ip_forward=1'] });
    enter = new RealNetnsEnterer();
    host = new PodHost({ enter, log: pino({ level: 'silent' }) });
    await host.listen(socketPath());
    client = new PodHostClient({
      socketPath: socketPath(),
      spawn: () => {
        throw new Error('the host runs in the test');
      },
    });
  });

  after(async () => {
    client.close();
    await host.killAll();
    enter.close();
    await lab.cleanup();
    await tmp.remove();
  });

  let runA: HostedRun;
  let runB: HostedRun;

  test('each Pod answers at its IP as itself, only inside its namespace', async () => {
    runA = await client.start(container(0));
    runB = await client.start(container(1));
    assert.equal(runA.pid, process.pid, 'the host is this process');
    const [a, b] = pods;
    assert.ok(a && b);
    assert.equal((await httpGet(`http://${a.ip}:8080/hostname`)).body, 'pod-a');
    assert.equal((await httpGet(`http://${b.ip}:8080/hostname`)).body, 'pod-b');
    assert.equal(await udpAsk(a.ip, 8081, 'hostname'), 'pod-a');
    assert.match((await httpGet(`http://${b.ip}:8080/clientip`)).body, /^10\.77\.1\.1:\d+$/);
    assert.ok(await refused('127.0.0.1', 8080), 'nothing listens in the node namespace');
    const ss = await lab.execer.run({ cmd: 'ip', args: ['netns', 'exec', a.ns, 'ss', '-ltn'] });
    assert.match(ss.stdout, /:8080\b/, 'the listener is in pod-a');
  });

  test('/dial from Pod A leaves from A and reaches B', async () => {
    const [a, b] = pods;
    assert.ok(a && b);
    const r = await httpGet(
      `http://${a.ip}:8080/dial?request=clientip&protocol=http&host=${b.ip}&port=8080&tries=1`,
    );
    assert.match(r.body, /"responses":\["10\.77\.0\.2:\d+"\]/, r.body);
    const u = await httpGet(
      `http://${a.ip}:8080/dial?request=hostname&protocol=udp&host=${b.ip}&port=8081&tries=1`,
    );
    assert.equal(u.body, '{"responses":["pod-b"]}');
  });

  test("the run's log lines reach its FIFO", async () => {
    const deadline = Date.now() + 3000;
    const text = (): string => [...logs].find(([k]) => k.startsWith('pod-a'))?.[1] ?? '';
    while (!text().includes('GET /dial') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.match(text(), /\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d Started HTTP server on port 8080/);
    assert.match(text(), /GET \/dial\?request=clientip/);
  });

  test('a second client adopts a running run; forget closes it', async () => {
    const other = new PodHostClient({
      socketPath: socketPath(),
      spawn: () => {
        throw new Error('no second host');
      },
    });
    const found = await other.find(runB.id, runB.run);
    assert.ok(found, 'run B is found running');
    assert.equal(await other.find(runB.id, runB.run + 1), undefined, 'no such run');
    await other.forget(runB.id);
    assert.equal(await runB.exited, 137, 'killed');
    assert.ok(await refused(pods[1]?.ip ?? '', 8080), 'pod-b no longer listens');
    other.close();
  });

  test('SIGTERM fails /readyz during the shutdown delay, then the run ends with 0', async () => {
    const a = pods[0];
    assert.ok(a);
    runA.signal('SIGKILL');
    assert.equal(await runA.exited, 137);
    const again = await client.start(container(0, { delayShutdownSeconds: 1 }));
    assert.equal(again.run, runA.run + 1, 'a new run of the same container');
    assert.equal((await httpGet(`http://${a.ip}:8080/readyz`)).status, 200);
    again.signal('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await httpGet(`http://${a.ip}:8080/readyz`)).status, 503, 'shutting down');
    assert.equal((await httpGet(`http://${a.ip}:8080/hostname`)).body, 'pod-a', 'still serving');
    assert.equal(await again.exited, 0);
    assert.ok(await refused(a.ip, 8080));
  });

  test('/exit?code=3 ends the run with 3', async () => {
    const a = pods[0];
    assert.ok(a);
    const run = await client.start(container(0));
    await fetch(`http://${a.ip}:8080/exit?code=3&timeout=0`).catch(() => undefined);
    assert.equal(await run.exited, 3);
  });
});
