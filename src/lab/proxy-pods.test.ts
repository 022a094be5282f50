import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../kube/api-client.js';
import type { Pod } from '../kube/types.js';
import type { Clock } from '../util/clock.js';
import { describeProxyPods, proxyRestartTarget, restartProxyPods } from './proxy-pods.js';

function proxyPod(name: string, node: string, uid: string, ready: boolean, restarts = 0): Pod {
  return {
    metadata: { name, namespace: 'kube-system', uid, labels: { 'k8s-app': 'kube-proxy' } },
    spec: { nodeName: node, hostNetwork: true, containers: [{ name: 'kube-proxy' }] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [{ name: 'kube-proxy', ready, restartCount: restarts }],
    },
  };
}

test('proxy-NODE names one node, proxy every node; other names are not proxies', () => {
  const nodes = ['cp', 'w1'];
  assert.deepEqual(proxyRestartTarget('proxy-w1', nodes), ['w1']);
  assert.deepEqual(proxyRestartTarget('proxy', nodes), nodes);
  assert.equal(proxyRestartTarget('proxy-nope', nodes), undefined);
  assert.equal(proxyRestartTarget('agent-w1', nodes), undefined);
});

test('lab status lists a proxy Pod per node with its restarts; a node without a Ready one is down', () => {
  const out = describeProxyPods([proxyPod('kube-proxy-a', 'cp', 'a', true, 2)], ['cp', 'w1']);
  assert.match(out.text, /proxy-cp\s+ready\s+2 {2}pod kube-system\/kube-proxy-a/);
  assert.match(out.text, /proxy-w1\s+no pod\s+0/);
  assert.deepEqual(out.down, ['proxy-w1']);
});

test("restart deletes the node's proxy Pod (uid precondition) and waits for the DaemonSet's new one to be Ready", async () => {
  let pods = [proxyPod('kube-proxy-a', 'cp', 'a', true), proxyPod('kube-proxy-b', 'w1', 'b', true)];
  const deleted: string[] = [];
  let lists = 0;
  const client = {
    list: () => {
      lists += 1;
      // The DaemonSet's replacement shows up, then turns Ready.
      if (lists === 3) pods = [...pods, proxyPod('kube-proxy-c', 'w1', 'c', false)];
      if (lists === 4)
        pods = pods.map((p) =>
          p.metadata?.uid === 'c' ? proxyPod('kube-proxy-c', 'w1', 'c', true) : p,
        );
      return Promise.resolve(pods);
    },
    delete: (_kind: string, _ns: string, name: string, opts?: { uid?: string }) => {
      deleted.push(`${name} ${opts?.uid ?? ''}`);
      pods = pods.filter((p) => p.metadata?.name !== name);
      return Promise.resolve();
    },
  } as unknown as KubeClient;
  let t = 0;
  const clock = {
    now: () => t,
    sleep: (ms: number) => {
      t += ms;
      return Promise.resolve();
    },
  } as unknown as Clock;
  const lines = await restartProxyPods(client, ['w1'], 60_000, clock);
  assert.deepEqual(deleted, ['kube-proxy-b b']);
  assert.deepEqual(lines, ['proxy-w1: pod kube-proxy-b deleted; kube-proxy-c is Ready']);
});
