// The kubelet's container lifecycle in the lab, seen as a user of kind sees it: a DNS Pod's
// server killed with SIGKILL (by the pid in its containerID, never by name) is started again
// at once in the same sandbox and counted (RESTARTS 1, lastState terminated 137); a node's
// kube-proxy container (a DaemonSet Pod's) killed the same way is restarted by the node agent
// with its rules left in place meanwhile; a container that exits 1 goes to CrashLoopBackOff with growing delays (at once,
// then 10 s, then 20 s); a failing liveness probe kills and restarts its container. Prints the
// proxy's and the DNS Pod's restart times (kill -9 until healthz and rules, or dig, answer).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { KubeObject, Pod } from '../../src/kube/types.js';
import { ensureLabBinaries } from '../../src/lab/binaries.js';
import { inLab } from '../../src/lab/lab.js';
import { RealExecer } from '../../src/os/exec.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod, sleep } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'lifecycle';

function first(p: Pod | undefined) {
  return p?.status?.containerStatuses?.at(0);
}

/** The pid of a running container, from its containerID (svcnet://PID). */
function pidOf(p: Pod | undefined): number {
  const m = /^svcnet:\/\/(\d+)$/.exec(first(p)?.containerID ?? '');
  assert.ok(m, `no svcnet:// containerID in ${JSON.stringify(first(p))}`);
  return Number(m[1]);
}

describe('container lifecycle: restarts, back-off and liveness', { skip }, () => {
  let lab: E2eLab;
  const execer = new RealExecer();

  /** `kubectl get pod` columns (NAME READY STATUS RESTARTS AGE) through the lab's kubeconfig. */
  async function kubectlPod(namespace: string, name: string): Promise<string[]> {
    const r = await execer.run({
      cmd: 'kubectl',
      args: [
        '--kubeconfig',
        lab.lab.state.kubeconfig ?? '',
        'get',
        'pod',
        '-n',
        namespace,
        name,
        '--no-headers',
      ],
    });
    assert.equal(r.code, 0, `kubectl get pod: ${r.stderr}`);
    return r.stdout.trim().split(/\s+/);
  }

  /** The lines of a component's log that mention `text` (the last 40), for a failure. */
  function logTail(component: string, text: string): string {
    try {
      return readFileSync(join(lab.lab.stateDir, 'logs', `${component}.log`), 'utf8')
        .split('\n')
        .filter((l) => l.includes(text))
        .slice(-40)
        .join('\n');
    } catch (e) {
      return String(e);
    }
  }

  async function killInLab(pid: number): Promise<void> {
    const r = await inLab(lab.lab, lab.lab.state.plan.hubNetns, ['kill', '-KILL', String(pid)]);
    assert.equal(r.code, 0, `kill -KILL ${String(pid)}: ${r.stderr}`);
  }

  before(async () => {
    lab = await E2eLab.up('lc');
    await lab.createNamespace(NS);
  });
  after(async () => {
    await lab.down();
  });

  test('kill -9 of a DNS Pod server: answering again in seconds, RESTARTS 1, lastState 137', async (t) => {
    const pods = await lab.client.list('Pod', {
      namespace: 'kube-system',
      labelSelector: 'k8s-app=kube-dns',
    });
    const dns = pods[0];
    const name = dns?.metadata?.name ?? '';
    const ip = dns?.status?.podIP ?? '';
    assert.ok(name !== '' && ip !== '', 'a running DNS Pod');
    assert.equal(first(dns)?.restartCount, 0);
    const node = lab.nodes[0]?.name ?? '';
    const ask = (): Promise<string[]> =>
      lab.dig(node, [`@${ip}`, '+time=1', '+tries=1', 'kubernetes.default.svc.cluster.local']);
    assert.notDeepEqual(await ask(), [], 'the DNS Pod answers before the kill');
    const pid = pidOf(dns);
    const t0 = Date.now();
    await killInLab(pid);
    await eventually(
      'the DNS Pod to answer again',
      async () => (await ask()).length > 0,
      90_000,
      50,
    ).catch((e: unknown) => {
      t.diagnostic(logTail(`agent-${dns?.spec?.nodeName ?? ''}`, name));
      throw e;
    });
    const answerMs = Date.now() - t0;
    const after = await eventually(
      `${name} to report its restart`,
      async () => {
        const p = await lab.pod('kube-system', name);
        const ready = p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return first(p)?.restartCount === 1 && ready === true ? p : undefined;
      },
      30_000,
      100,
    );
    const readyMs = Date.now() - t0;
    const cs = first(after);
    const term = cs?.lastState?.terminated;
    // The agent starts the new process at once; the rest is the server's own start (a Node
    // process loading its bundle and listing from the API server), which a loaded machine slows.
    const restartMs =
      Date.parse(cs?.state?.running?.startedAt ?? '') - Date.parse(term?.finishedAt ?? '');
    assert.deepEqual(
      { exitCode: term?.exitCode, reason: term?.reason, containerID: term?.containerID },
      { exitCode: 137, reason: 'Error', containerID: `svcnet://${String(pid)}` },
    );
    assert.notEqual(pidOf(after), pid, 'a new process');
    assert.ok(cs?.state?.running?.startedAt, 'running again');
    assert.equal(after.status?.podIP, ip, 'same sandbox, same IP');
    const row = await kubectlPod('kube-system', name);
    assert.equal(row[2], 'Running', row.join(' '));
    assert.equal(row[3], '1', row.join(' '));
    assert.ok(restartMs < 2000, `the new process started ${String(restartMs)} ms after the exit`);
    const figure = `DNS Pod restart: kill -9 -> new process started ${String(restartMs)} ms after the exit (agent), answering dig again ${String(answerMs)} ms, Ready again with RESTARTS 1 ${String(readyMs)} ms (load average ${loadavg()[0]?.toFixed(1) ?? '?'})`;
    t.diagnostic(figure);
    console.log(figure);
  });

  test("kill -9 of a node's kube-proxy container: restarted by the agent, counted, rules intact", async (t) => {
    const node = lab.nodes[1];
    assert.ok(node);
    const proxyPod = async (): Promise<Pod | undefined> =>
      (
        await lab.client.list('Pod', {
          namespace: 'kube-system',
          labelSelector: 'k8s-app=kube-proxy',
        })
      ).find((p) => p.spec?.nodeName === node.name);
    const pod = await proxyPod();
    const name = pod?.metadata?.name ?? '';
    assert.ok(name !== '', `a kube-proxy Pod on ${node.name}`);
    const chains = (rules: string): string[] =>
      [...rules.matchAll(/^:(KUBE-SVC-\S+)/gm)].map((m) => m[1] ?? '').sort();
    const before = chains(await lab.proxyRules(node.name));
    assert.ok(before.length > 0, 'service chains before the kill');
    const restarts = first(pod)?.restartCount ?? 0;
    const pid = pidOf(pod);
    const t0 = Date.now();
    await killInLab(pid);
    const again = await eventually(
      `${name} to run a new process`,
      async () => {
        const p = await lab.pod('kube-system', name);
        return first(p)?.state?.running !== undefined && pidOf(p) !== pid ? p : undefined;
      },
      30_000,
      50,
    );
    const runningMs = Date.now() - t0;
    const answers: string[] = [];
    await eventually(
      `${name} healthz to answer 200`,
      async () => {
        const r = await lab.exec(node.name, [
          'curl',
          '-s',
          '-m',
          '1',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          'http://127.0.0.1:10256/healthz',
        ]);
        const code = r.stdout.trim();
        if (answers.at(-1)?.split(':')[1] !== code)
          answers.push(`${String(Date.now() - t0)}ms:${code}`);
        return code === '200';
      },
      90_000,
      50,
    );
    t.diagnostic(`healthz answers after the kill: ${answers.join(' ')}`);
    const healthzMs = Date.now() - t0;
    assert.deepEqual(chains(await lab.proxyRules(node.name)), before, 'the same service chains');
    assert.equal(first(again)?.restartCount, restarts + 1);
    assert.equal(first(again)?.lastState?.terminated?.exitCode, 137);
    const { self } = await ensureLabBinaries();
    const status = await execer.run({
      cmd: self[0] ?? process.execPath,
      args: [...self.slice(1), 'lab', 'status', '--name', lab.name],
    });
    t.diagnostic(status.stdout);
    assert.match(
      status.stdout,
      new RegExp(`proxy-${node.name}\\s+\\S+\\s+${String(restarts + 1)}\\s`),
    );
    const figure = `proxy restart: kill -9 -> running again ${String(runningMs)} ms, healthz 200 with rules intact ${String(healthzMs)} ms (load average ${loadavg()[0]?.toFixed(1) ?? '?'})`;
    t.diagnostic(figure);
    console.log(figure);
  });

  test('a container that exits 1 goes to CrashLoopBackOff with growing delays', async () => {
    const node = lab.nodes[2]?.name ?? '';
    const crash: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'crash', namespace: NS },
      spec: {
        nodeName: node,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'exit 1'] }],
      },
    } as KubeObject;
    await lab.apply([crash]);
    /** Wall-clock time each restartCount was first seen, and the back-off messages seen. */
    const seen = new Map<number, number>();
    const waits: string[] = [];
    let kubectlRow: string[] = [];
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !waits.some((w) => w.startsWith('back-off 20s'))) {
      const cs = first(await lab.pod(NS, 'crash'));
      if (cs !== undefined && !seen.has(cs.restartCount)) seen.set(cs.restartCount, Date.now());
      const w = cs?.state?.waiting;
      if (w?.reason === 'CrashLoopBackOff' && !waits.includes(w.message ?? '')) {
        waits.push(w.message ?? '');
        if (kubectlRow.length === 0) kubectlRow = await kubectlPod(NS, 'crash');
      }
      await sleep(100);
    }
    const p = await lab.pod(NS, 'crash');
    assert.deepEqual(
      waits.map((w) => w.split(' ')[1]),
      ['10s', '20s'],
      `the back-off messages: ${JSON.stringify(waits)}`,
    );
    assert.match(waits[0] ?? '', /restarting failed container=main pod=crash_lifecycle\(/);
    const r1 = seen.get(1);
    const r2 = seen.get(2);
    assert.ok(r1 !== undefined && r2 !== undefined, `restarts seen: ${JSON.stringify([...seen])}`);
    // The second restart waits out the 10 s back-off (the first is at once).
    assert.ok(
      r2 - r1 >= 9_000 && r2 - r1 <= 15_000,
      `restart 2 came ${String(r2 - r1)} ms after 1`,
    );
    const last = first(p)?.lastState?.terminated;
    assert.deepEqual([last?.exitCode, last?.reason], [1, 'Error']);
    assert.equal(p?.status?.phase, 'Running');
    assert.equal(kubectlRow[1], '0/1', kubectlRow.join(' '));
    assert.equal(kubectlRow[2], 'CrashLoopBackOff', kubectlRow.join(' '));
    assert.equal(kubectlRow[3], '1', kubectlRow.join(' '));
    await lab.deleteObject('Pod', NS, 'crash', 0);
  });

  test('restartPolicy Never: a container that exits 3 leaves the Pod Failed, not restarted', async () => {
    await lab.apply([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'once', namespace: NS },
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 1; exit 3'] },
          ],
        },
      } as KubeObject,
    ]);
    const p = await eventually(
      'once to fail',
      async () => {
        const x = await lab.pod(NS, 'once');
        return x?.status?.phase === 'Failed' ? x : undefined;
      },
      60_000,
    );
    assert.equal(first(p)?.state?.terminated?.exitCode, 3);
    assert.equal(first(p)?.restartCount, 0);
  });

  test('a failing liveness probe restarts the container, and RESTARTS counts it', async () => {
    const pod = netexecPod(NS, 'unhealthy', { node: lab.nodes[1]?.name ?? '' }) as Pod;
    const container = pod.spec?.containers[0];
    assert.ok(container);
    container.livenessProbe = {
      httpGet: { path: '/echo?msg=no&code=503', port: 8080 },
      periodSeconds: 1,
      failureThreshold: 2,
    };
    if (pod.spec) pod.spec.terminationGracePeriodSeconds = 2;
    await lab.apply([pod]);
    await lab.podsReady(NS, ['unhealthy'], 90_000);
    const p = await eventually(
      'the liveness probe to restart unhealthy',
      async () => {
        const x = await lab.pod(NS, 'unhealthy');
        return (first(x)?.restartCount ?? 0) >= 1 ? x : undefined;
      },
      60_000,
    );
    assert.ok(first(p)?.lastState?.terminated, 'the killed run is kept in lastState');
    const row = await kubectlPod(NS, 'unhealthy');
    assert.ok(Number(row[3]) >= 1, row.join(' '));
  });
});
