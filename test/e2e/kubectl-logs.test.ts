// `kubectl logs` against the lab, as a user of kind types it: a netexec Pod's log shows one
// line per request (as agnhost's does), `--tail`, `--timestamps` and `--since` choose lines,
// `-f` streams a line written after it attached, `-l` and `deploy/NAME` pick Pods by label,
// `--previous` shows the run before a restart, `-c nope` is kubectl's error, and the DNS
// Pods in kube-system have logs too. The path is kubectl → API server → the node agent's
// kubelet socket → the container's CRI log file.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { KubeObject, Pod } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { kubectl, kubectlOk } from './lib/kubectl.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'logs';

function deployment(name: string, replicas: number): KubeObject {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'agnhost',
              image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
              args: ['netexec', '--http-port=8080', '--udp-port=-1'],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

describe('kubectl logs', { skip }, () => {
  let lab: E2eLab;
  let web: Pod;
  let node = '';

  /** A request to the web Pod from a node, which its log then shows. */
  async function hit(path: string): Promise<void> {
    const r = await lab.curl(node, `http://${web.status?.podIP ?? ''}:8080${path}`);
    assert.equal(r.code, 0, `curl ${path}`);
  }

  before(async () => {
    lab = await E2eLab.up('logs');
    await lab.createNamespace(NS);
    await lab.apply([netexecPod(NS, 'web', { labels: { app: 'web' } }), deployment('echo', 2)]);
    web = (await lab.podsReady(NS, ['web']))[0] ?? {};
    node = lab.nodes[0]?.name ?? '';
    await eventually('the echo Deployment to have 2 running Pods', async () => {
      const pods = await lab.client.list('Pod', { namespace: NS, labelSelector: 'app=echo' });
      return pods.filter((p) => p.status?.podIP !== undefined && p.status.podIP !== '').length === 2
        ? true
        : undefined;
    });
  });
  after(async () => {
    await lab.down();
  });

  test('a netexec Pod logs its start and one line per request; --tail, --timestamps, --since', async () => {
    await hit('/hostname');
    await hit('/echo?msg=second');
    const all = await kubectlOk(lab, ['logs', '-n', NS, 'web']);
    assert.match(all, /Started HTTP server on port 8080/);
    assert.match(all, /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d GET \/hostname$/m);
    const tail = await kubectlOk(lab, ['logs', '-n', NS, 'web', '--tail', '1']);
    assert.match(tail, /^\S+ \S+ GET \/echo\?msg=second\n$/);
    const stamped = await kubectlOk(lab, ['logs', '-n', NS, 'pod/web', '--tail=1', '--timestamps']);
    assert.match(
      stamped,
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z \S+ \S+ GET \/echo\?msg=second\n$/,
    );
    const since = await kubectlOk(lab, ['logs', '-n', NS, 'web', '--since=1h']);
    assert.equal(since, all);
    assert.equal(
      await kubectlOk(lab, ['logs', '-n', NS, 'web', '--limit-bytes=5']),
      all.slice(0, 5),
    );
  });

  test('kubectl logs -f streams a line written after it attached', async () => {
    const child = spawn(
      'kubectl',
      ['--kubeconfig', lab.lab.state.kubeconfig ?? '', 'logs', '-f', '-n', NS, 'web', '--tail=1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      await eventually('kubectl logs -f to print the last line', () =>
        Promise.resolve(out.includes('GET /echo?msg=second') ? true : undefined),
      );
      await hit('/echo?msg=after-attach');
      const started = Date.now();
      await eventually(
        'the line written after attaching',
        () => Promise.resolve(out.includes('GET /echo?msg=after-attach') ? true : undefined),
        5000,
      );
      console.log(
        `kubectl logs -f: a new line shown ${String(Date.now() - started)} ms after the request`,
      );
      assert.equal(child.exitCode, null, 'still following');
    } finally {
      child.kill('SIGTERM'); // our own child, by its handle (pid)
      await exited;
    }
  });

  test('kubectl logs -l and deploy/NAME pick Pods by label', async () => {
    const byLabel = await kubectlOk(lab, ['logs', '-n', NS, '-l', 'app=echo', '--prefix']);
    const prefixes = new Set(
      byLabel
        .split('\n')
        .filter((l) => l.includes('Started HTTP server'))
        .map((l) => l.split(' ')[0]),
    );
    assert.equal(prefixes.size, 2, byLabel);
    const deploy = await kubectlOk(lab, ['logs', '-n', NS, 'deploy/echo']);
    assert.match(deploy, /Started HTTP server on port 8080/);
  });

  test('kubectl logs -c nope is an error naming the container', async () => {
    const r = await kubectl(lab, ['logs', '-n', NS, 'web', '-c', 'nope']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /container nope is not valid for pod web/);
  });

  test('--previous shows the run before a restart; before one it is not found', async () => {
    const none = await kubectl(lab, ['logs', '-n', NS, 'web', '--previous']);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /previous terminated container "agnhost" in pod "web" not found/);
    // /exit ends the process; restartPolicy Always starts it again in the same sandbox.
    await lab.curl(node, `http://${web.status?.podIP ?? ''}:8080/exit?code=3`);
    await eventually('web to restart', async () => {
      const p = await lab.pod(NS, 'web');
      const cs = p?.status?.containerStatuses?.[0];
      return (cs?.restartCount ?? 0) >= 1 && cs?.ready === true ? true : undefined;
    });
    const previous = await kubectlOk(lab, ['logs', '-n', NS, 'web', '--previous']);
    assert.match(previous, /GET \/exit\?code=3/);
    assert.match(previous, /GET \/hostname/);
    const current = await kubectlOk(lab, ['logs', '-n', NS, 'web']);
    assert.match(current, /Started HTTP server on port 8080/);
    assert.doesNotMatch(current, /GET \/exit/);
  });

  test('the DNS Pods in kube-system have logs (deploy/coredns)', async () => {
    const pods = await kubectlOk(lab, ['get', 'pods', '-n', 'kube-system', '-o', 'name']);
    assert.ok(pods.trim() !== '', 'kube-system Pods exist');
    const r = await kubectl(lab, ['logs', '-n', 'kube-system', 'deploy/coredns', '--tail', '5']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.trim().split('\n').length >= 1, r.stdout);
  });
});
