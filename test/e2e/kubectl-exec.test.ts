// `kubectl exec` and `kubectl port-forward` against the lab, as the walkthrough uses them:
// the real kubectl (WebSocket v5.channel.k8s.io for exec; SPDY/3.1 tunnelled in WebSocket for
// port-forward) through the API server to the node agent's kubelet API. A command runs in the
// Pod's network namespace with its resolv.conf, gets stdin, answers under a pseudo-terminal
// and hands its exit code back; a forwarded local port reaches an nginx Pod through
// `svc/nginx-svc` and `pod/NAME`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { RealExecer, type ExecResult } from '../../src/os/exec.js';
import { startPiped, type PipedProcess } from '../../src/os/piped-process.js';
import { freePort } from '../../src/util/free-port.js';
import { E2eLab, e2eSkipReason, eventually } from './lib/lab.js';
import { kubectl, kubectlJson } from './lib/kubectl.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const examples = join(import.meta.dirname, '..', '..', 'examples', 'lab');
const execer = new RealExecer();

/** GET http://127.0.0.1:port/path; the body, or the error text. */
function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

describe('kubectl exec and port-forward', { skip }, () => {
  let lab: E2eLab;
  let kubeconfig: string;
  const forwarders: PipedProcess[] = [];

  before(async () => {
    lab = await E2eLab.up('x');
    kubeconfig = lab.lab.state.kubeconfig ?? '';
    for (const f of readdirSync(examples).sort())
      await lab.apply(readFileSync(join(examples, f), 'utf8'));
    await lab.settled();
  });
  after(async () => {
    for (const p of forwarders) p.kill();
    await lab.down();
  });

  test('exec cat /etc/resolv.conf shows the Pod resolv.conf', async () => {
    const r = await kubectl(lab, ['exec', 'client', '--', 'cat', '/etc/resolv.conf']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^nameserver 10\.96\.0\.10$/m);
    assert.match(
      r.stdout,
      /^search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local$/m,
    );
    assert.match(r.stdout, /^options ndots:5$/m);
  });

  test('exec -i passes stdin through', async () => {
    const r = await execer.run({
      cmd: 'kubectl',
      args: [
        '--kubeconfig',
        kubeconfig,
        'exec',
        '-i',
        'client',
        '--',
        'sh',
        '-c',
        'read x; echo got $x',
      ],
      stdin: 'hi\n',
      timeoutMs: 30_000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'got hi\n');
  });

  test('exec propagates exit codes and keeps stdout and stderr apart', async () => {
    assert.equal((await kubectl(lab, ['exec', 'client', '--', 'false'])).code, 1);
    const r = await kubectl(lab, [
      'exec',
      'client',
      '--',
      'sh',
      '-c',
      'echo out; echo err >&2; exit 3',
    ]);
    assert.equal(r.code, 3);
    assert.equal(r.stdout, 'out\n');
    assert.match(r.stderr, /^err$/m);
  });

  test('exec reaches a Service from inside the Pod', async () => {
    const r = await kubectl(lab, ['exec', 'client', '--', 'curl', '-s', 'nginx-svc:3000/hostname']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^nginx-/);
  });

  test('exec -it under a pseudo-terminal runs hostname and exits', async () => {
    const r: ExecResult = await execer.run({
      cmd: 'script',
      args: ['-qec', `kubectl --kubeconfig ${kubeconfig} exec -it client -- sh`, '/dev/null'],
      stdin: 'hostname\nexit\n',
      timeoutMs: 30_000,
    });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    // The shell's prompt precedes the answer on its line; the echoed input is `hostname`.
    assert.match(r.stdout, /^(# )?client\r$/m);
  });

  async function forward(args: readonly string[]): Promise<number> {
    const port = await freePort();
    const p = startPiped(
      [
        'kubectl',
        '--kubeconfig',
        kubeconfig,
        'port-forward',
        ...args.map((a) => a.replace('PORT', String(port))),
      ],
      {},
      false,
    );
    forwarders.push(p);
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    p.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    await eventually(`kubectl port-forward ${args.join(' ')} to listen`, () =>
      Promise.resolve(out.includes('Forwarding from 127.0.0.1')),
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}; kubectl said: ${out}`);
    });
    return port;
  }

  test('port-forward svc/nginx-svc (port 3000, targetPort 80) answers from an nginx Pod', async () => {
    const port = await forward(['svc/nginx-svc', 'PORT:3000']);
    for (let i = 0; i < 3; i++) {
      const r = await get(port, '/hostname');
      assert.equal(r.status, 200);
      assert.match(r.body, /^nginx-/);
    }
  });

  test('port-forward pod/NAME reaches that Pod', async () => {
    const pods = await kubectlJson<{ items: { metadata: { name: string } }[] }>(lab, [
      'get',
      'pods',
      '-l',
      'app=nginx',
    ]);
    const name = pods.items[0]?.metadata.name ?? '';
    assert.notEqual(name, '');
    const port = await forward([`pod/${name}`, 'PORT:80']);
    assert.equal((await get(port, '/hostname')).body, name);
  });
});
