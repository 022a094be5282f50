// The proxy's own endpoints and its restart, on every lab node: `:10256/healthz` (kube-proxy's
// JSON health body, bound to 0.0.0.0 by default) and `:10249/proxyMode` (metrics server,
// bound to 127.0.0.1 by default), and a restart of a node's proxy (`lab restart proxy-NODE`:
// its kube-system/kube-proxy DaemonSet Pod deleted and replaced, as on kind) that no client
// of a Service notices, because the kernel rules stay while the proxy is down. Modelled on sig-network's
// test/e2e/network/networking.go and service.go.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service } from '../../src/kube/testing.js';
import type { KubeObject, Pod } from '../../src/kube/types.js';
import { E2E_PROXY_MODE, E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';
import { kubectlOk } from './lib/kubectl.js';

const skip = skipOrFail(e2eSkipReason());
/** kube-proxy's nftables mode serves no NodePort on 127.0.0.1 (reference §1.2 row 9). */
const localhostNodePorts =
  E2E_PROXY_MODE === 'iptables' ? {} : { skip: 'NodePorts on 127.0.0.1 are iptables mode only' };
const NS = 'proxy-restart';

interface HttpAnswer {
  /** curl's exit code: 0 ok, 7 refused, 28 timed out. */
  readonly code: number;
  /** HTTP status, 0 without an answer. */
  readonly status: number;
  readonly body: string;
}

function clusterIPService(name: string, port: number): KubeObject {
  return service(`${NS}/${name}`, {
    selector: { app: 'backend' },
    ports: [{ name: 'http', port, targetPort: 8080, protocol: 'TCP' }],
  });
}

/** The kube-proxy Pod (DaemonSet kube-system/kube-proxy) on a node. */
async function proxyPodOn(lab: E2eLab, node: string): Promise<Pod | undefined> {
  const pods = await lab.client.list('Pod', {
    namespace: 'kube-system',
    labelSelector: 'k8s-app=kube-proxy',
  });
  return pods.find((p) => p.spec?.nodeName === node && p.metadata?.deletionTimestamp === undefined);
}

/** How many lines of a kube-proxy Pod's log contain `text`. */
async function logCount(lab: E2eLab, pod: string, text: string): Promise<number> {
  const log = await kubectlOk(lab, ['logs', '-n', 'kube-system', pod]);
  return log.split('\n').filter((l) => l.includes(text)).length;
}

describe('kube-proxy health and restart', { skip }, () => {
  let lab: E2eLab;

  /** GET with the HTTP status, from a node or Pod. */
  async function get(from: string, url: string, timeoutSeconds = 3): Promise<HttpAnswer> {
    const r = await lab.exec(from, [
      'curl',
      '-sS',
      '-m',
      String(timeoutSeconds),
      '-w',
      '\n%{http_code}',
      url,
    ]);
    const lines = r.stdout.split('\n');
    const status = Number(lines.pop() ?? '0');
    return { code: r.code, status: Number.isFinite(status) ? status : 0, body: lines.join('\n') };
  }

  before(async () => {
    lab = await E2eLab.up('d');
  });
  after(async () => {
    await lab.down();
  });

  // [sig-network] Networking should check kube-proxy urls
  test('every node: healthz 200 with the JSON body on 127.0.0.1 and the node IP; proxyMode (the lab mode) on 127.0.0.1', async () => {
    assert.equal(lab.nodes.length, 3);
    for (const node of lab.nodes) {
      for (const host of ['127.0.0.1', node.ip]) {
        const h = await get(node.name, `http://${host}:10256/healthz`);
        assert.equal(
          h.code,
          0,
          `${node.name}: curl ${host}:10256/healthz exited ${String(h.code)}`,
        );
        assert.equal(h.status, 200, `${node.name}: ${host}:10256/healthz said ${h.body}`);
        const body = JSON.parse(h.body) as Record<string, unknown>;
        assert.match(
          String(body.lastUpdated),
          /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC$/,
        );
        assert.match(
          String(body.currentTime),
          /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC$/,
        );
        assert.equal(body.nodeEligible, true);
        const live = await get(node.name, `http://${host}:10256/livez`);
        assert.equal(live.status, 200, `${node.name}: ${host}:10256/livez said ${live.body}`);
      }
      // The healthz port is reachable from the other nodes too (load balancers probe it).
      const other = lab.nodes.find((n) => n !== node);
      const remote = await get(other?.name ?? '', `http://${node.ip}:10256/healthz`);
      assert.equal(remote.status, 200, `${other?.name ?? ''} -> ${node.ip}:10256/healthz`);
      const mode = await get(node.name, 'http://127.0.0.1:10249/proxyMode');
      assert.deepEqual(
        mode,
        { code: 0, status: 200, body: E2E_PROXY_MODE },
        `${node.name} proxyMode`,
      );
      // The metrics server binds loopback only: the node address refuses.
      const outside = await get(node.name, `http://${node.ip}:10249/proxyMode`);
      assert.equal(
        outside.code,
        7,
        `${node.name}: ${node.ip}:10249 should refuse, got ${JSON.stringify(outside)}`,
      );
      const metrics = await get(node.name, 'http://127.0.0.1:10249/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.body, /^kubeproxy_sync_proxy_rules_last_timestamp_seconds /m);
    }
  });

  // [sig-network] Services should work after restarting kube-proxy [Disruptive]
  test('restarting a node proxy: every request during and after succeeds; a new Service works after', async (t) => {
    const worker = `${lab.name}-worker`;
    const worker2 = `${lab.name}-worker2`;
    const proxy = `proxy-${worker}`;
    const node = lab.nodes.find((n) => n.name === worker);
    assert.ok(node, `no node ${worker}`);
    await lab.createNamespace(NS);
    await lab.apply([
      netexecPod(NS, 'client', { node: worker }),
      netexecPod(NS, 'backend-a', { node: worker, labels: { app: 'backend' } }),
      netexecPod(NS, 'backend-b', { node: worker2, labels: { app: 'backend' } }),
      clusterIPService('before-restart', 80),
    ]);
    await lab.podsReady(NS, ['client', 'backend-a', 'backend-b'], 90_000);
    await eventually('before-restart to have 2 endpoints', async () =>
      (await lab.endpoints(NS, 'before-restart')).length === 2 ? true : undefined,
    );
    const ip = (await lab.service(NS, 'before-restart'))?.spec?.clusterIP ?? '';
    assert.match(ip, /^10\.\d+\.\d+\.\d+$/);
    const url = `http://${ip}/hostname`;
    const byName = `http://before-restart/hostname`;
    // Both ways the loop below asks must work before the restart: the ClusterIP, and the name
    // (which also needs the DNS Pods to have seen the new Service).
    for (const u of [url, byName])
      await eventually(`${u} to answer from the client`, async () => {
        const r = await lab.curl(`${NS}/client`, u);
        return r.code === 0 && /^backend-[ab]$/.test(r.body);
      });

    const old = (await proxyPodOn(lab, worker))?.metadata?.name ?? '';
    assert.notEqual(old, '', `no kube-proxy Pod on ${worker}`);
    const starts = await logCount(lab, old, 'Proxy started');
    assert.equal(starts, 1, `${old} log: ${String(starts)} starts before the restart`);

    // The client loop: one request after another from the Pod on that node, alternately to
    // the ClusterIP and by name (so its DNS lookups, UDP to the kube-dns ClusterIP, go
    // through that node's rules too).
    const results: { at: number; url: string; code: number; body: string }[] = [];
    const ctl = { stop: false };
    const loop = (async () => {
      while (!ctl.stop) {
        const u = results.length % 2 === 0 ? url : byName;
        const r = await lab.curl(`${NS}/client`, u, 3);
        results.push({ at: Date.now(), url: u, ...r });
      }
    })();
    try {
      await eventually(
        '3 requests before the restart',
        () => Promise.resolve(results.length >= 3),
        30_000,
      );
      const t0 = Date.now();
      await lab.restart(proxy);
      await eventually(
        `${proxy} healthz to answer 200 again`,
        async () => (await get(worker, 'http://127.0.0.1:10256/healthz')).status === 200,
        60_000,
        500,
      );
      const healthyAt = Date.now();
      // Some more requests after the new proxy has synced.
      await eventually(
        '5 requests after the restart',
        () => Promise.resolve(results.filter((r) => r.at > healthyAt).length >= 5),
        30_000,
      );
      ctl.stop = true;
      await loop;
      t.diagnostic(
        `${String(results.length)} requests, ${String(results.filter((r) => r.at > t0 && r.at <= healthyAt).length)} while ${proxy} restarted (${String(healthyAt - t0)} ms until healthz 200)`,
      );
      const during = results.filter((r) => r.at > t0 && r.at <= healthyAt);
      const failed = results.filter((r) => r.code !== 0 || !/^backend-[ab]$/.test(r.body));
      assert.deepEqual(failed, [], `${String(failed.length)} of ${String(results.length)} failed`);
      assert.ok(during.length >= 1, 'no request ran while the proxy restarted');
      // The DaemonSet replaced the Pod: the old one is gone, the new one started once.
      const fresh = (await proxyPodOn(lab, worker))?.metadata?.name ?? '';
      assert.ok(fresh !== '' && fresh !== old, `${old} replaced by ${fresh}`);
      assert.equal(await lab.pod('kube-system', old), undefined, `${old} still exists`);
      assert.equal(await logCount(lab, fresh, 'Proxy started'), 1, `${fresh} did not start`);
    } finally {
      ctl.stop = true;
      await loop;
    }

    // The restarted proxy programs what changes after it came back.
    await lab.apply([clusterIPService('after-restart', 81)]);
    await eventually('after-restart to have 2 endpoints', async () =>
      (await lab.endpoints(NS, 'after-restart')).length === 2 ? true : undefined,
    );
    const ip2 = (await lab.service(NS, 'after-restart'))?.spec?.clusterIP ?? '';
    const seen = new Set<string>();
    await eventually(
      'after-restart to answer from both backends through the restarted proxy',
      async () => {
        const r = await lab.curl(`${NS}/client`, `http://${ip2}:81/hostname`);
        if (r.code === 0) seen.add(r.body);
        return seen.has('backend-a') && seen.has('backend-b');
      },
      45_000,
      200,
    );
  });

  // KEP-3836 (kube-proxy improved ingress connectivity reliability): /healthz is what cloud
  // load balancers probe, so a node being drained by the cluster autoscaler answers 503
  // there while /livez (the proxy itself) stays 200.
  test('healthz answers 503 with nodeEligible false while the node carries ToBeDeletedByClusterAutoscaler', async () => {
    const worker2 = `${lab.name}-worker2`;
    const node = lab.nodes.find((n) => n.name === worker2);
    assert.ok(node, `no node ${worker2}`);
    const url = `http://${node.ip}:10256/healthz`;
    const before = (await lab.client.get('Node', '', worker2))?.spec?.taints ?? [];
    await lab.client.patch('Node', '', worker2, {
      spec: {
        taints: [
          ...before,
          { key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' },
        ],
      },
    });
    try {
      const h = await eventually(
        'healthz of the tainted node to say 503',
        async () => {
          const r = await get(lab.nodes[0]?.name ?? '', url);
          return r.status === 503 ? r : undefined;
        },
        30_000,
        500,
      );
      assert.equal((JSON.parse(h.body) as { nodeEligible?: unknown }).nodeEligible, false);
      const live = await get(worker2, 'http://127.0.0.1:10256/livez');
      assert.equal(live.status, 200, `livez said ${live.body}`);
      // The other nodes are unaffected.
      const other = await get(lab.nodes[0]?.name ?? '', 'http://127.0.0.1:10256/healthz');
      assert.equal(other.status, 200);
    } finally {
      await lab.client.patch('Node', '', worker2, { spec: { taints: before } });
    }
    await eventually(
      'healthz to say 200 again once the taint is gone',
      async () => (await get(lab.nodes[0]?.name ?? '', url)).status === 200,
      30_000,
      500,
    );
  });

  // [sig-network] KubeProxy should update metric for tracking accepted packets destined for
  // localhost nodeports: the traffic half (a client on the node reaches a NodePort on
  // 127.0.0.1, which needs route_localnet and the proxy's localhost rules).
  test('a NodePort answers on 127.0.0.1 from every node', localhostNodePorts, async () => {
    await lab.apply([
      service(`${NS}/localhost-np`, {
        type: 'NodePort',
        selector: { app: 'backend' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
    ]);
    const nodePort = (await lab.service(NS, 'localhost-np'))?.spec?.ports?.[0]?.nodePort;
    assert.ok(
      nodePort !== undefined && nodePort >= 30000 && nodePort <= 32767,
      `nodePort ${String(nodePort)}`,
    );
    await eventually('localhost-np to have 2 endpoints', async () =>
      (await lab.endpoints(NS, 'localhost-np')).length === 2 ? true : undefined,
    );
    for (const node of lab.nodes)
      await eventually(
        `${node.name}: 127.0.0.1:${String(nodePort)} to answer`,
        async () => {
          const r = await lab.curl(node.name, `http://127.0.0.1:${String(nodePort)}/hostname`);
          assert.equal(
            r.code,
            0,
            `${node.name}: curl 127.0.0.1:${String(nodePort)} exited ${String(r.code)}`,
          );
          assert.match(r.body, /^backend-[ab]$/);
          return true;
        },
        30_000,
        500,
      );
  });

  // The same upstream test's metric half.
  test(
    'localhost NodePort packets are counted in kubeproxy_iptables_localhost_nodeports_accepted_packets_total',
    localhostNodePorts,
    async () => {
      const worker = `${lab.name}-worker`;
      const nodePort = (await lab.service(NS, 'localhost-np'))?.spec?.ports?.[0]?.nodePort ?? 0;
      const counter = async (): Promise<number> => {
        const m = await get(worker, 'http://127.0.0.1:10249/metrics');
        const line = /^kubeproxy_iptables_localhost_nodeports_accepted_packets_total (\d+)/m.exec(
          m.body,
        );
        assert.ok(line, 'no kubeproxy_iptables_localhost_nodeports_accepted_packets_total');
        return Number(line[1]);
      };
      const before = await counter();
      const r = await lab.curl(worker, `http://127.0.0.1:${String(nodePort)}/hostname`);
      assert.equal(r.code, 0);
      await eventually('the counter to grow', async () => (await counter()) > before, 30_000, 500);
      // Its sibling nfacct counter (INVALID drops) is exported too.
      assert.match(
        (await get(worker, 'http://127.0.0.1:10249/metrics')).body,
        /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total \d+$/m,
      );
    },
  );

  // The lab-heals issue, item 5: kube-proxy full-syncs at start, hourly, on canary loss or
  // after a failure, never because Pods come and go. Scaling makes veths and their addresses
  // come and go on every node, which once turned most syncs into full ones.
  test('scaling a Deployment 1→10→1 over and over makes no full sync on any node', async (t) => {
    const seconds = Number(process.env.SVCNET_E2E_CHURN_SECONDS ?? '60');
    await lab.apply([churnDeployment(1), churnService()]);
    await eventually('churn to have 1 endpoint', async () =>
      (await lab.endpoints(NS, 'churn')).length === 1 ? true : undefined,
    );
    const syncs = async (): Promise<Map<string, SyncCounts>> => {
      const m = new Map<string, SyncCounts>();
      for (const n of lab.nodes) {
        const body = await eventually(`${n.name}'s proxy metrics`, async () => {
          const r = await get(n.name, 'http://127.0.0.1:10249/metrics', 10);
          return r.status === 200 ? r.body : undefined;
        });
        m.set(n.name, syncCounts(body));
      }
      return m;
    };
    const before = await syncs();
    const deadline = Date.now() + seconds * 1000;
    let rounds = 0;
    while (Date.now() < deadline) {
      for (const replicas of [10, 1]) {
        await lab.apply([churnDeployment(replicas)]);
        await eventually(
          `churn to have ${String(replicas)} ready endpoints`,
          async () => ((await lab.endpoints(NS, 'churn')).length === replicas ? true : undefined),
          120_000,
          250,
        );
      }
      rounds++;
    }
    const after = await syncs();
    for (const n of lab.nodes) {
      const b = before.get(n.name);
      const a = after.get(n.name);
      assert.ok(a && b);
      const count = a.count - b.count;
      const meanMs = count > 0 ? ((a.sum - b.sum) / count) * 1000 : 0;
      t.diagnostic(
        `${n.name}: ${String(rounds)} rounds of 1→10→1 in ${String(seconds)} s: ${String(count)} syncs (mean ${meanMs.toFixed(1)} ms), ${String(a.full - b.full)} full`,
      );
      // Every round changes the endpoints, so the proxy syncs at least once per round, unless
      // rounds come faster than its minSyncPeriod (1 s in deploy/kube-proxy.yaml), which folds
      // them together: then it must still have synced about once a second (half of that, for
      // a busy machine). Since Pods start in a fraction of a second, rounds often do.
      const expected = Math.min(rounds, Math.floor(seconds / 2));
      assert.ok(
        count >= expected,
        `${n.name}: only ${String(count)} syncs in ${String(rounds)} rounds of ${String(seconds)} s (expected ${String(expected)})`,
      );
      assert.equal(a.full - b.full, 0, `${n.name}: full syncs during pod churn`);
    }
  });
});

interface SyncCounts {
  /** Syncs of any kind, and their total duration in seconds. */
  readonly count: number;
  readonly sum: number;
  /** Full syncs. */
  readonly full: number;
}

/** The proxy's sync counters from its /metrics text. */
function syncCounts(metrics: string): SyncCounts {
  const value = (name: string): number => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics);
    assert.ok(m, `no ${name} in the proxy's metrics`);
    return Number(m[1]);
  };
  return {
    count: value('kubeproxy_sync_proxy_rules_duration_seconds_count'),
    sum: value('kubeproxy_sync_proxy_rules_duration_seconds_sum'),
    full: value('kubeproxy_sync_full_proxy_rules_duration_seconds_count'),
  };
}

function churnDeployment(replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'churn', namespace: NS, labels: { app: 'churn' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'churn' } },
      template: {
        metadata: { labels: { app: 'churn' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'agnhost',
              image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
              args: ['netexec', '--http-port=8080'],
              ports: [{ containerPort: 8080 }],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

function churnService(): KubeObject {
  return service(`${NS}/churn`, {
    selector: { app: 'churn' },
    ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
  });
}
