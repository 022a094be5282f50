// The DaemonSet controller and `kubectl rollout` end to end: `svcnet apiserver` and
// `svcnet controller --fake-kubelet` as child processes on loopback, three Linux Nodes (one
// with the control-plane taint), deploy/kube-proxy.yaml and deploy/coredns.yaml applied with
// the real kubectl. kube-proxy gets one pod per node (`kube-proxy-xxxxx`), `kubectl get ds`
// reports 3 everywhere, a deleted pod comes back, and `rollout restart` + `rollout status`
// replace every pod of the DaemonSet and of the coredns Deployment, and `rollout history` /
// `rollout undo --to-revision` list and restore the DaemonSet's templates (ControllerRevisions).
// The children are killed by PID in after().

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { startApiServerChild, type ApiServerChild } from './lib/apiserver-child.js';
import { findKubectls, KubectlRunner, tableRows } from './lib/apiserver-kubectl.js';
import { skipOrFail } from './lib/prereq.js';

const REPO = new URL('../../', import.meta.url).pathname;
const DEPLOY = join(REPO, 'deploy');
const NS = ['-n', 'kube-system'];

function nodeYaml(name: string, i: number, controlPlane: boolean): string {
  return `apiVersion: v1
kind: Node
metadata:
  name: ${name}
  labels: {kubernetes.io/hostname: ${name}, kubernetes.io/os: linux}
spec:
  podCIDR: 10.244.${i}.0/24
  podCIDRs: [10.244.${i}.0/24]
${controlPlane ? '  taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]\n' : ''}status:
  addresses: [{type: InternalIP, address: 172.18.0.${i + 2}}]
  conditions: [{type: Ready, status: 'True'}]
`;
}

interface PodList {
  items: {
    metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
    spec: { nodeName?: string };
  }[];
}

const kubectl = findKubectls(29).at(-1);

describe(
  'DaemonSet controller and kubectl rollout against svcnet apiserver',
  {
    skip: skipOrFail(
      kubectl === undefined ? 'no kubectl installed; install: bash scripts/install-deps.sh' : false,
    ),
  },
  () => {
    let server: ApiServerChild;
    let controller: ChildProcess;
    let kc: KubectlRunner;
    const ctlLog: string[] = [];

    const livePods = async (selector: string): Promise<PodList['items']> => {
      const list = JSON.parse(
        await kc.ok(['get', 'pods', ...NS, '-l', selector, '-o', 'json']),
      ) as PodList;
      return list.items.filter((p) => p.metadata.deletionTimestamp === undefined);
    };

    const waitFor = async <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> => {
      const end = Date.now() + 60_000;
      for (;;) {
        const v = await fn();
        if (v !== undefined) return v;
        if (Date.now() > end)
          throw new Error(`timed out: ${what}\ncontroller log:\n${ctlLog.join('').slice(-3000)}`);
        await delay(300);
      }
    };

    before(async () => {
      server = await startApiServerChild();
      kc = new KubectlRunner(kubectl!, server.kubeconfig);
      controller = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(REPO, 'src/cli/main.ts'),
          'controller',
          '--kubeconfig',
          server.kubeconfig,
          '--fake-kubelet',
        ],
        { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      controller.stderr?.setEncoding('utf8');
      controller.stderr?.on('data', (d: string) => {
        ctlLog.push(d);
        if (ctlLog.length > 2000) ctlLog.splice(0, 1000);
      });
      const nodes = ['cp', 'worker', 'worker2'].map((n, i) => nodeYaml(n, i, i === 0));
      await kc.ok(['apply', '-f', '-'], { stdin: nodes.join('---\n') });
      await kc.ok(['apply', '-f', join(DEPLOY, 'kube-proxy.yaml')]);
      await kc.ok(['apply', '-f', join(DEPLOY, 'coredns.yaml')]);
    });

    after(async () => {
      if (controller.exitCode === null && controller.pid !== undefined) {
        const exited = new Promise((r) => controller.once('exit', r));
        process.kill(controller.pid, 'SIGTERM');
        await exited;
      }
      await server.stop();
    });

    it('runs one kube-proxy pod per node, control plane included, and reports 3 ready', async () => {
      const status = await kc.ok(['rollout', 'status', ...NS, 'ds/kube-proxy', '--timeout=60s']);
      assert.match(status, /daemon set "kube-proxy" successfully rolled out/);
      const pods = await livePods('k8s-app=kube-proxy');
      assert.deepEqual(pods.map((p) => p.spec.nodeName).sort(), ['cp', 'worker', 'worker2']);
      for (const p of pods) {
        assert.match(p.metadata.name, /^kube-proxy-[a-z0-9]{5}$/);
        assert.equal(p.metadata.labels?.['pod-template-generation'], '1');
        assert.ok(p.metadata.labels['controller-revision-hash']);
      }
      const rows = tableRows(await kc.ok(['get', ...NS, 'ds', 'kube-proxy']));
      assert.deepEqual(rows[1]?.slice(0, 6), ['kube-proxy', '3', '3', '3', '3', '3']);
    });

    it('recreates a deleted pod on its node', async () => {
      const before = await livePods('k8s-app=kube-proxy');
      const victim = before.find((p) => p.spec.nodeName === 'worker')!;
      await kc.ok(['delete', 'pod', ...NS, victim.metadata.name]);
      const again = await waitFor('a new kube-proxy pod on worker', async () => {
        const pods = await livePods('k8s-app=kube-proxy');
        const p = pods.find((x) => x.spec.nodeName === 'worker');
        return pods.length === 3 && p !== undefined && p.metadata.name !== victim.metadata.name
          ? p
          : undefined;
      });
      assert.match(again.metadata.name, /^kube-proxy-[a-z0-9]{5}$/);
    });

    for (const [kind, name, selector, count] of [
      ['ds', 'kube-proxy', 'k8s-app=kube-proxy', 3],
      ['deploy', 'coredns', 'k8s-app=kube-dns', 2],
    ] as const)
      it(`rollout restart ${kind}/${name} replaces every pod and rollout status waits for it`, async () => {
        await kc.ok(['rollout', 'status', ...NS, `${kind}/${name}`, '--timeout=60s']);
        const old = new Set((await livePods(selector)).map((p) => p.metadata.name));
        assert.equal(old.size, count);
        assert.match(
          await kc.ok(['rollout', 'restart', ...NS, `${kind}/${name}`]),
          new RegExp(`${name} restarted`),
        );
        const done = await kc.ok(['rollout', 'status', ...NS, `${kind}/${name}`, '--timeout=60s']);
        assert.match(done, /successfully rolled out/);
        const pods = await waitFor(`${count} new ${name} pods`, async () => {
          const now = await livePods(selector);
          return now.length === count && now.every((p) => !old.has(p.metadata.name))
            ? now
            : undefined;
        });
        if (kind === 'ds')
          for (const p of pods) assert.equal(p.metadata.labels?.['pod-template-generation'], '2');
      });

    it('rollout history lists the templates and rollout undo goes back to one', async () => {
      const history = await kc.ok(['rollout', 'history', ...NS, 'ds/kube-proxy']);
      assert.match(history, /daemonset\.apps\/kube-proxy/);
      assert.deepEqual(
        tableRows(history.slice(history.indexOf('REVISION')))
          .slice(1)
          .map((r) => r[0]),
        ['1', '2'],
      );
      const rev1 = await kc.ok(['rollout', 'history', ...NS, 'ds/kube-proxy', '--revision=1']);
      assert.doesNotMatch(rev1, /restartedAt/, 'revision 1 is the template before the restart');
      const revs = tableRows(await kc.ok(['get', ...NS, 'controllerrevisions']));
      assert.deepEqual(revs[0]?.slice(0, 3), ['NAME', 'CONTROLLER', 'REVISION']);
      assert.ok(revs.slice(1).some((r) => r[1] === 'daemonset.apps/kube-proxy' && r[2] === '2'));

      const firstHash = (await livePods('k8s-app=kube-proxy'))[0]?.metadata.labels?.[
        'controller-revision-hash'
      ];
      assert.match(
        await kc.ok(['rollout', 'undo', ...NS, 'ds/kube-proxy', '--to-revision=1']),
        /kube-proxy rolled back/,
      );
      await kc.ok(['rollout', 'status', ...NS, 'ds/kube-proxy', '--timeout=60s']);
      const pods = await waitFor('kube-proxy pods on the first template', async () => {
        const now = await livePods('k8s-app=kube-proxy');
        const hashes = new Set(now.map((p) => p.metadata.labels?.['controller-revision-hash']));
        return now.length === 3 && hashes.size === 1 && !hashes.has(firstHash) ? now : undefined;
      });
      assert.equal(pods.length, 3);
      const after = await kc.ok(['rollout', 'history', ...NS, 'ds/kube-proxy']);
      assert.deepEqual(
        tableRows(after.slice(after.indexOf('REVISION')))
          .slice(1)
          .map((r) => r[0]),
        ['2', '3'],
        'the restored template is renumbered as the newest revision',
      );
    });
  },
);
