// The lab's proxies as kind's: the kube-system/kube-proxy DaemonSet from deploy/kube-proxy.yaml,
// one Pod per node run by the node agent (hostNetwork, `svcnet proxy --config` reading the
// kube-proxy ConfigMap through its configMap volume). A fresh lab of 3 nodes × 10 Pods comes up
// (its `lab up` time is printed); `kubectl -n kube-system get ds kube-proxy` shows
// DESIRED = READY = 3; `kubectl logs ds/kube-proxy` prints the proxy's lines; `lab status`
// lists the proxy Pods. Then the ConfigMap's minSyncPeriod is patched: the agents swap the
// volume's `..data`, every proxy sees its config.conf change and exits, its container is
// restarted (RESTARTS ≥ 1) within 30 s with the new setting in its /configz, and a curl loop
// to a ClusterIP from a Pod loses no request meanwhile (the rules stay in the kernel). The
// cluster DNS likewise is deploy/coredns.yaml's Deployment: `kubectl -n kube-system get deploy
// coredns` is ready, each DNS Pod's configMap volume holds exactly the ConfigMap's Corefile,
// and patching the Corefile (`ttl 30` → `ttl 7`) reaches every DNS Pod through the volume:
// svcnet dns's `reload` applies it and dig at each Pod sees the new TTL within 15 s.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { ConfigMap, KubeObject, Pod } from '../../src/kube/types.js';
import { describeLabProxies } from '../../src/lab/lab.js';
import { volumeDir } from '../../src/lab/configmap-volume.js';
import { E2E_PROXY_MODE, E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { kubectlOk } from './lib/kubectl.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const NS = 'addons';
const SYNC_SECTION = E2E_PROXY_MODE === 'nftables' ? 'nftables' : 'iptables';

function web(replicas: number): KubeObject[] {
  const labels = { app: 'web' };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS, labels },
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
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
    },
  ] as KubeObject[];
}

async function dnsPods(lab: E2eLab): Promise<Pod[]> {
  return lab.client.list('Pod', { namespace: 'kube-system', labelSelector: 'k8s-app=kube-dns' });
}

/** The Corefile a DNS Pod's `svcnet dns --corefile` reads: its configMap volume's file. */
/** The coredns ConfigMap's Corefile, as `kubectl get cm coredns` shows it. */
function corednsCorefile(lab: E2eLab): Promise<string> {
  return kubectlOk(lab, [
    '-n',
    'kube-system',
    'get',
    'cm',
    'coredns',
    '-o',
    'jsonpath={.data.Corefile}',
  ]);
}

function podCorefile(lab: E2eLab, pod: Pod): string {
  const root = join(lab.lab.stateDir, 'nodes', pod.spec?.nodeName ?? '', 'volumes');
  return readFileSync(join(volumeDir(root, pod, 'config-volume'), 'Corefile'), 'utf8');
}

/** A kubectl table's one row as column → value. */
function tableRow(out: string): (name: string) => string {
  const [header = '', row = ''] = out.trim().split('\n');
  const cols = header.split(/\s+/);
  const vals = row.split(/\s+/);
  return (name) => vals[cols.indexOf(name)] ?? '';
}

async function proxyPods(lab: E2eLab): Promise<Pod[]> {
  return lab.client.list('Pod', { namespace: 'kube-system', labelSelector: 'k8s-app=kube-proxy' });
}

describe('kube-system add-ons: kube-proxy as a DaemonSet with its ConfigMap', { skip }, () => {
  let lab: E2eLab;

  before(async () => {
    lab = await E2eLab.up('addons', 3, 480_000, { objects: web(10) });
    // The figure: lab-up time of 3 nodes × 10 Pods (target ≤ 10 s).
    process.stdout.write(
      `# lab up, 3 nodes × 10 pods (${E2E_PROXY_MODE}): components ${String(lab.timings?.components)} ms, ready ${String(lab.timings?.ready)} ms (load average ${loadavg()[0]?.toFixed(1) ?? '?'})\n`,
    );
    await lab.apply([netexecPod(NS, 'client')]);
    await lab.podsReady(NS, ['client']);
  });
  after(async () => {
    await lab.down();
  });

  test('kubectl -n kube-system get ds kube-proxy: DESIRED = READY = 3', async () => {
    const out = await kubectlOk(lab, ['-n', 'kube-system', 'get', 'ds', 'kube-proxy']);
    const col = tableRow(out);
    assert.equal(col('NAME'), 'kube-proxy', out);
    assert.equal(col('DESIRED'), '3', out);
    assert.equal(col('READY'), '3', out);
    const pods = await proxyPods(lab);
    assert.deepEqual(pods.map((p) => p.spec?.nodeName).sort(), lab.nodes.map((n) => n.name).sort());
    for (const p of pods) assert.equal(p.spec?.hostNetwork, true);
    const status = await describeLabProxies(lab.lab);
    assert.deepEqual(status.down, [], status.text);
    assert.match(status.text, /proxy-\S+\s+ready/);
  });

  test("kubectl -n kube-system get deploy coredns: 2/2 ready; each DNS Pod reads the ConfigMap's Corefile", async () => {
    const col = tableRow(await kubectlOk(lab, ['-n', 'kube-system', 'get', 'deploy', 'coredns']));
    assert.equal(col('NAME'), 'coredns');
    assert.equal(col('READY'), '2/2');
    assert.equal(col('AVAILABLE'), '2');
    const corefile = await corednsCorefile(lab);
    assert.match(corefile, /^\s+kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{$/m);
    const pods = await dnsPods(lab);
    assert.equal(pods.length, 2);
    for (const p of pods) assert.equal(podCorefile(lab, p), corefile, p.metadata?.name);
  });

  test('patching the Corefile (ttl 30 -> 7) reaches every DNS Pod: svcnet dns reloads it', async () => {
    const name = 'kubernetes.default.svc.cluster.local';
    const ttlAt = async (ip: string): Promise<string> => {
      const r = await lab.exec(`${NS}/client`, [
        'dig',
        '+noall',
        '+answer',
        '+time=2',
        `@${ip}`,
        name,
      ]);
      return r.stdout.trim().split(/\s+/)[1] ?? '';
    };
    const pods = await dnsPods(lab);
    const ips = pods.map((p) => p.status?.podIP ?? '');
    for (const ip of ips) assert.equal(await ttlAt(ip), '30', `TTL at ${ip} before`);
    const corefile = await corednsCorefile(lab);
    const edited = corefile.replace(/^(\s+)ttl 30$/m, '$1ttl 7');
    assert.notEqual(edited, corefile);
    const t0 = Date.now();
    await kubectlOk(lab, [
      '-n',
      'kube-system',
      'patch',
      'configmap',
      'coredns',
      '--type',
      'merge',
      '-p',
      JSON.stringify({ data: { Corefile: edited } }),
    ]);
    for (const ip of ips)
      await eventually(
        `dig @${ip} to answer with TTL 7`,
        async () => ((await ttlAt(ip)) === '7' ? true : undefined),
        15_000,
      );
    process.stdout.write(
      `# Corefile patched -> both DNS Pods answer with the new TTL in ${String(Date.now() - t0)} ms\n`,
    );
    // Reloaded in place: the same Pods, no container restarted, each file the new Corefile.
    const after = await dnsPods(lab);
    assert.deepEqual(
      after.map((p) => p.metadata?.name).sort(),
      pods.map((p) => p.metadata?.name).sort(),
    );
    for (const p of after) {
      assert.equal(p.status?.containerStatuses?.[0]?.restartCount ?? 0, 0);
      assert.equal(podCorefile(lab, p), edited);
    }
    const logs = await kubectlOk(lab, ['logs', '-n', 'kube-system', 'deploy/coredns']);
    assert.match(logs, /Reloaded Corefile/);
  });

  test('kubectl logs -n kube-system ds/kube-proxy --tail 5 prints the proxy log lines', async () => {
    const out = await kubectlOk(lab, ['logs', '-n', 'kube-system', 'ds/kube-proxy', '--tail', '5']);
    const lines = out.trim().split('\n');
    assert.equal(lines.length, 5, out);
    const all = await kubectlOk(lab, ['logs', '-n', 'kube-system', 'ds/kube-proxy']);
    assert.match(all, /Proxy started/);
  });

  test('patching the ConfigMap restarts every proxy with the new minSyncPeriod; a curl loop loses nothing', async () => {
    const svc = await lab.mustService(NS, 'web');
    const url = `http://${svc.spec?.clusterIP ?? ''}:80/hostname`;
    const before = new Map((await proxyPods(lab)).map((p) => [p.metadata?.name ?? '', p]));
    assert.equal(before.size, 3);
    const cm = JSON.parse(
      await kubectlOk(lab, ['-n', 'kube-system', 'get', 'configmap', 'kube-proxy', '-o', 'json']),
    ) as ConfigMap;
    const conf = cm.data?.['config.conf'] ?? '';
    const parsed = parse(conf) as Record<string, Record<string, unknown>>;
    assert.equal(parsed[SYNC_SECTION]?.minSyncPeriod, '1s', conf);
    parsed[SYNC_SECTION] = { ...parsed[SYNC_SECTION], minSyncPeriod: '2s' };
    // A curl every 100 ms from a Pod, from before the patch until the stop file appears (the
    // lab has no mount namespaces: the Pod sees this machine's files); each line says when.
    const stopFile = join(mkdtempSync(join(tmpdir(), 'addons-loop-')), 'stop');
    const loop = lab.exec(`${NS}/client`, [
      'sh',
      '-c',
      `end=$(( $(date +%s) + 120 )); while [ ! -e ${stopFile} ] && [ $(date +%s) -lt $end ]; do ` +
        `if curl -sf -m 2 -o /dev/null ${url}; then echo "ok $(date +%s)"; else echo "FAIL $(date +%s)"; fi; sleep 0.1; done`,
    ]);
    await new Promise((r) => setTimeout(r, 2000));
    const t0 = Date.now();
    await kubectlOk(lab, [
      '-n',
      'kube-system',
      'patch',
      'configmap',
      'kube-proxy',
      '--type',
      'merge',
      '-p',
      JSON.stringify({ data: { 'config.conf': stringify(parsed) } }),
    ]);
    const restartedPods = (ready: boolean) => async (): Promise<Pod[] | undefined> => {
      const again = (await proxyPods(lab)).filter(
        (p) =>
          before.has(p.metadata?.name ?? '') &&
          (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 &&
          (!ready || p.status?.containerStatuses?.[0]?.ready === true),
      );
      return again.length === 3 ? again : undefined;
    };
    // The bound: every proxy Pod restarted within 30 s of the edit ...
    await eventually('every kube-proxy Pod to restart its container', restartedPods(false), 30_000);
    const restartMs = Date.now() - t0;
    // ... and Ready again (its first sync done) soon after.
    const restarted = await eventually(
      'every restarted kube-proxy Pod to be Ready',
      restartedPods(true),
      60_000,
    );
    const readyMs = Date.now() - t0;
    const restartedAt = Date.now();
    process.stdout.write(
      `# config.conf patched -> all 3 proxy containers restarted in ${String(restartMs)} ms, Ready in ${String(readyMs)} ms (load average ${loadavg()[0]?.toFixed(1) ?? '?'})\n`,
    );
    // The same Pods (containers restarted, not Pods replaced), each with the new setting.
    assert.deepEqual(restarted.map((p) => p.metadata?.name).sort(), [...before.keys()].sort());
    for (const n of lab.nodes) {
      const configz = await lab.exec(n.name, [
        'curl',
        '-sf',
        '-m',
        '2',
        'http://127.0.0.1:10249/configz',
      ]);
      const cfg = (JSON.parse(configz.stdout) as { kubeproxy: { minSyncPeriodMs: number } })
        .kubeproxy;
      assert.equal(cfg.minSyncPeriodMs, 2000, `${n.name} /configz`);
    }
    const previous = await kubectlOk(lab, [
      'logs',
      '-n',
      'kube-system',
      `pod/${restarted[0]?.metadata?.name ?? ''}`,
      '--previous',
    ]);
    assert.match(previous, /config/i, 'the previous run logged why it exited');
    await new Promise((r) => setTimeout(r, 2000));
    writeFileSync(stopFile, '');
    const results = (await loop).stdout.trim().split('\n');
    const failed = results.filter((l) => !l.startsWith('ok '));
    const at = (l: string): number => Number(l.split(' ')[1]) * 1000;
    const during = results.filter((l) => at(l) >= t0 - 1000 && at(l) <= restartedAt + 1000);
    process.stdout.write(
      `# curl loop to ${url}: ${String(results.length)} requests (${String(during.length)} while the proxies restarted), ${String(failed.length)} failed\n`,
    );
    assert.ok(during.length >= 5, `only ${String(during.length)} requests ran during the restarts`);
    assert.deepEqual(failed, []);
    const get = await kubectlOk(lab, [
      '-n',
      'kube-system',
      'get',
      'pods',
      '-l',
      'k8s-app=kube-proxy',
    ]);
    assert.match(get, /RESTARTS/);
  });
});
