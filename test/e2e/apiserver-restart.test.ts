// The lab's API server killed with SIGKILL (by the pid the lab records, never by name), as a
// control plane node loses its kube-apiserver container: the supervisor starts it again at
// once on its data dir, so it serves the objects created before with the same token and
// certificate; the host kubeconfig (written once at `lab up`) answers again, and every proxy,
// agent and controller reconnects and relists by itself (none of them is restarted): a Service
// created and a Deployment scaled afterwards reach every node's rules. A second kill within
// ten minutes meets the kubelet's back-off (10 s), during which `lab status` says so and exits 1.
// Prints the recovery times (host client answering; a later change in every node's rules).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { service } from '../../src/kube/testing.js';
import type { KubeObject } from '../../src/kube/types.js';
import { HttpKubeClient } from '../../src/kube/api-client.js';
import { loadKubeConfig } from '../../src/kube/client.js';
import { ensureLabBinaries } from '../../src/lab/binaries.js';
import { verifyApiServer } from '../../src/lab/lab.js';
import { RealExecer, type ExecResult } from '../../src/os/exec.js';
import { E2eLab, e2eSkipReason, eventually } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'apiserver-restart';

function deployment(replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: NS, labels: { app: 'web' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'agnhost',
              image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
              args: ['netexec', '--http-port=8080', '--udp-port=8081'],
              ports: [{ containerPort: 8080 }],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

function webService(name: string): KubeObject {
  return service(`${NS}/${name}`, {
    selector: { app: 'web' },
    ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
  });
}

describe('the lab API server killed with SIGKILL', { skip }, () => {
  let lab: E2eLab;
  let kubeconfigPath: string;
  let kubeconfigAtUp: string;
  let clusterKubeconfigAtUp: string;
  let firstDone = false;
  const execer = new RealExecer();
  const hasKubectl = existsSync('/usr/bin/kubectl') || existsSync('/usr/local/bin/kubectl');

  /** `svcnet lab status` as a user runs it. */
  async function labStatus(): Promise<ExecResult> {
    const { self } = await ensureLabBinaries();
    return execer.run({
      cmd: self[0] ?? process.execPath,
      args: [...self.slice(1), 'lab', 'status', '--name', lab.name],
    });
  }

  /**
   * The host's view through the kubeconfig `lab up` wrote: kubectl when installed, else a
   * client made afresh from the file. Resolves with the names of the Services in NS.
   */
  async function hostServices(): Promise<string[]> {
    if (hasKubectl) {
      const r = await execer.run({
        cmd: 'kubectl',
        args: [
          '--kubeconfig',
          kubeconfigPath,
          '--request-timeout=2s',
          'get',
          'services',
          '-n',
          NS,
          '-o',
          'jsonpath={.items[*].metadata.name}',
        ],
      });
      if (r.code !== 0) throw new Error(`kubectl: ${r.stderr.trim()}`);
      return r.stdout.trim().split(/\s+/).filter(Boolean).sort();
    }
    const client = new HttpKubeClient(loadKubeConfig(kubeconfigPath));
    return (await client.list('Service', { namespace: NS }))
      .map((s) => s.metadata?.name ?? '')
      .sort();
  }

  /** Milliseconds from `t0` until the host answers and lists `want`. */
  async function hostRecovery(t0: number, want: readonly string[]): Promise<number> {
    await eventually(
      `the host kubeconfig to list ${want.join(', ')} again`,
      async () => {
        const names = await hostServices();
        return want.every((w) => names.includes(w));
      },
      120_000,
      100,
    );
    return Date.now() - t0;
  }

  /**
   * Waits until every node's rules hold the Services' cluster IPs and at least `endpoints`
   * endpoints the API server lists for each; milliseconds from `t0`.
   */
  async function rulesRecovery(
    t0: number,
    services: readonly string[],
    endpoints: number,
  ): Promise<number> {
    const ips: string[] = [];
    for (const name of services) {
      const ip = (await lab.service(NS, name))?.spec?.clusterIP;
      assert.ok(ip, `${NS}/${name} has a cluster IP`);
      ips.push(ip);
    }
    const eps = await eventually(
      `${String(endpoints)} ready endpoints of ${services.join(', ')}`,
      async () => {
        const all = await Promise.all(services.map((s) => lab.endpoints(NS, s)));
        return all.every((e) => e.length >= endpoints) ? [...new Set(all.flat())] : undefined;
      },
      120_000,
      200,
    );
    const want = [...ips, ...eps];
    for (const n of lab.nodes)
      await eventually(
        `${n.name}'s rules to hold ${want.join(', ')}`,
        async () => {
          const rules = await lab.proxyRules(n.name);
          return want.every((x) => rules.includes(x));
        },
        120_000,
        100,
      );
    return Date.now() - t0;
  }

  before(async () => {
    lab = await E2eLab.up('k');
    kubeconfigPath = lab.lab.state.kubeconfig ?? '';
    kubeconfigAtUp = readFileSync(kubeconfigPath, 'utf8');
    clusterKubeconfigAtUp = readFileSync(join(lab.lab.stateDir, 'cluster.kubeconfig'), 'utf8');
    await lab.createNamespace(NS);
    await lab.apply([deployment(1), webService('before')]);
    await lab.settled();
  });
  after(async () => {
    await lab.down();
  });

  test('comes back at once with its objects and credentials; every client catches up without a restart', async () => {
    const others = lab.components().filter((c) => c.name !== 'apiserver');
    assert.ok(others.every((c) => c.state === 'running'));
    const status = await labStatus();
    assert.equal(status.code, 0, status.stdout + status.stderr);
    assert.match(status.stdout, /^ {2}apiserver +running +0 {2}pid \d+$/m);

    const beforeIP = (await lab.service(NS, 'before'))?.spec?.clusterIP ?? '';
    const oldPid = await lab.kill('apiserver');
    const t0 = Date.now();
    // The data plane does not need the API server: the rules stay and serve.
    const served = await lab.curl(lab.nodes[1]?.name ?? '', `http://${beforeIP}:80/hostname`);
    assert.equal(served.code, 0, 'the Service answers while the API server is down');

    const hostMs = await hostRecovery(t0, ['before']);
    // Same credentials: the kubeconfigs were not rewritten with others, and the server proves
    // it holds the certificate `lab up` recorded.
    assert.equal(readFileSync(kubeconfigPath, 'utf8'), kubeconfigAtUp);
    assert.equal(
      readFileSync(join(lab.lab.stateDir, 'cluster.kubeconfig'), 'utf8'),
      clusterKubeconfigAtUp,
    );
    await verifyApiServer(lab.lab);
    // Running once it has written its kubeconfig again, a moment after it answers.
    const api = await eventually('the API server to be recorded running', () =>
      Promise.resolve(lab.component('apiserver')).then((c) => c.state === 'running' && c),
    );
    assert.equal(api.restarts, 1);
    assert.notEqual(api.pid, oldPid);

    // A change made afterwards reaches every node's rules through informers that were never
    // restarted; the rules of before the kill are kept.
    const t1 = Date.now();
    await lab.apply([webService('after'), deployment(2)]);
    // The new Service needs only the proxies' informers; the new replica also a Pod start.
    const svcMs = await rulesRecovery(t1, ['after'], 1);
    const scaleMs = await rulesRecovery(t1, ['before', 'after'], 2);
    console.log(
      `apiserver kill -9 #1 (restarted at once): host ${hasKubectl ? 'kubectl' : 'client'} answers ${String(hostMs)} ms after the kill; of a write then, the new Service is in all ${String(lab.nodes.length)} nodes' rules after ${String(svcMs)} ms, the new replica after ${String(scaleMs)} ms (${String(Date.now() - t0)} ms after the kill)`,
    );
    for (const c of others) {
      const now = lab.component(c.name);
      assert.deepEqual(
        [now.state, now.restarts, now.pid],
        ['running', 0, c.pid],
        `${c.name} was not restarted`,
      );
    }
    await lab.settled();
    firstDone = true;
  });

  test('a second kill within 10 min waits out the 10 s back-off, shown by lab status (exit 1), then recovers', async () => {
    assert.ok(firstDone, 'runs after the first kill');
    await lab.kill('apiserver');
    const t0 = Date.now();
    const down = await eventually(
      'lab status to show the API server in its back-off',
      async () => {
        const r = await labStatus();
        return /^ {2}apiserver +backoff +1 {2}next start in \d+ s; exited with 137$/m.test(r.stdout)
          ? r
          : undefined;
      },
      5000,
      100,
    );
    assert.equal(down.code, 1);
    assert.match(down.stdout, /^not running: apiserver$/m);

    const hostMs = await hostRecovery(t0, ['before', 'after']);
    assert.ok(hostMs >= 9000, `restarted after the back-off, not at once (${String(hostMs)} ms)`);
    const t1 = Date.now();
    await lab.apply([webService('again'), deployment(3)]);
    const svcMs = await rulesRecovery(t1, ['again'], 2);
    const scaleMs = await rulesRecovery(t1, ['before', 'after', 'again'], 3);
    console.log(
      `apiserver kill -9 #2 (10 s back-off): host answers ${String(hostMs)} ms after the kill; of a write then, the new Service is in every node's rules after ${String(svcMs)} ms, the new replica after ${String(scaleMs)} ms (${String(Date.now() - t0)} ms after the kill)`,
    );
    const api = lab.component('apiserver');
    assert.deepEqual([api.state, api.restarts], ['running', 2]);
    const up = await labStatus();
    assert.equal(up.code, 0, up.stdout + up.stderr);
    assert.match(up.stdout, /^ {2}apiserver +running +2 {2}pid \d+$/m);
  });
});
