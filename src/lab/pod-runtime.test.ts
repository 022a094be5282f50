// The resolv.conf the lab's node agent writes for a Pod, per dnsPolicy and dnsConfig; and
// the sweep of sandboxes left by Pods deleted while no agent ran (hostNetwork ones included);
// exec probes through the Execer seam.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../kube/types.js';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeExecer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import {
  LabPodRuntime,
  podNetnsName,
  podResolvConfFor,
  serverContainerName,
} from './pod-runtime.js';

const NODE = 'nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n';

function pod(spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'team' },
    spec: { containers: [{ name: 'c' }], ...spec },
  };
}

test('ClusterFirst (the default): the cluster DNS, the namespace search path, then the node domains', () => {
  assert.equal(
    podResolvConfFor(pod(), NODE, '10.96.0.10', 'cluster.local'),
    'nameserver 10.96.0.10\nsearch team.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n',
  );
});

test('Default: the node resolv.conf', () => {
  assert.equal(
    podResolvConfFor(pod({ dnsPolicy: 'Default' }), NODE, '10.96.0.10', 'cluster.local'),
    'nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n',
  );
});

test('None: only the dnsConfig', () => {
  const p = pod({
    dnsPolicy: 'None',
    dnsConfig: {
      nameservers: ['1.1.1.1'],
      searches: ['resolv.conf.local'],
      options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
    },
  });
  assert.equal(
    podResolvConfFor(p, NODE, '10.96.0.10', 'cluster.local'),
    'nameserver 1.1.1.1\nsearch resolv.conf.local\noptions ndots:2 edns0\n',
  );
});

test('ClusterFirst with dnsConfig: nameservers and searches appended, options overridden by name', () => {
  const p = pod({
    dnsConfig: {
      nameservers: ['10.96.0.10', '1.1.1.1'],
      searches: ['extra.local'],
      options: [{ name: 'ndots', value: '2' }],
    },
  });
  assert.equal(
    podResolvConfFor(p, '', '10.96.0.10', 'cluster.local'),
    'nameserver 10.96.0.10\nnameserver 1.1.1.1\nsearch team.svc.cluster.local svc.cluster.local cluster.local extra.local\noptions ndots:2\n',
  );
});

test('a node resolv.conf that does not parse counts as empty; an unknown dnsPolicy is refused', () => {
  assert.equal(
    podResolvConfFor(pod({ dnsPolicy: 'Default' }), 'nameserver\n', '10.96.0.10', 'cluster.local'),
    '',
  );
  assert.throws(
    () => podResolvConfFor(pod({ dnsPolicy: 'Sometimes' }), NODE, '10.96.0.10', 'cluster.local'),
    /invalid dnsPolicy "Sometimes"/,
  );
});

test('sweep removes the sandboxes of Pods that no longer exist, and only those', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-sweep-'));
  try {
    // pid 2^22 + 1 is above Linux's pid_max: a server that is certainly gone.
    const rec = (uid: string, netns: string) =>
      JSON.stringify({
        key: `team/${uid}`,
        uid,
        netns,
        ip: '10.244.1.9',
        pid: 4194305,
        startedAt: '',
      });
    writeFileSync(join(dir, 'pod-aaaaaaaaaaaa.json'), rec('kept', 'pod-aaaaaaaaaaaa'));
    writeFileSync(join(dir, 'pod-bbbbbbbbbbbb.json'), rec('gone', 'pod-bbbbbbbbbbbb'));
    const dels: string[] = [];
    const execer = new FakeExecer().expect({
      cmd: 'ip',
      args: ['netns', 'del', 'pod-bbbbbbbbbbbb'],
    });
    const runtime = new LabPodRuntime({
      ip: new RealIp(execer),
      network: {
        add: () => Promise.reject(new Error('no ADD in a sweep')),
        del: (req) => {
          dels.push(`${req.podNamespace}/${req.podName} ${req.netnsPath}`);
          return Promise.resolve();
        },
      },
      self: ['svcnet'],
      logDir: dir,
      clusterDNS: '10.96.0.10',
      clusterDomain: 'cluster.local',
      recordDir: dir,
    });
    assert.deepEqual(await runtime.sweep(new Set(['kept'])), ['team/gone']);
    assert.deepEqual(dels, ['team/gone /run/netns/pod-bbbbbbbbbbbb']);
    execer.verify();
    assert.deepEqual(readdirSync(dir), ['pod-aaaaaaaaaaaa.json']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a hostNetwork Pod has no sandbox to remove: its record goes, no CNI DEL, no netns del', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-sweep-'));
  try {
    writeFileSync(
      join(dir, 'pod-cccccccccccc.json'),
      JSON.stringify({
        key: 'team/host',
        uid: 'host',
        netns: 'pod-cccccccccccc',
        ip: '172.18.0.3',
        pid: 4194305,
        startedAt: '',
        hostNetwork: true,
      }),
    );
    const runtime = new LabPodRuntime({
      ip: new RealIp(new FakeExecer()),
      network: {
        add: () => Promise.reject(new Error('no ADD')),
        del: () => Promise.reject(new Error('no CNI DEL for a hostNetwork Pod')),
      },
      self: ['svcnet'],
      logDir: dir,
      clusterDNS: '10.96.0.10',
      clusterDomain: 'cluster.local',
      recordDir: dir,
    });
    assert.deepEqual(await runtime.sweep(new Set()), ['team/host']);
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a hostNetwork Pod needs the node IP; an exec probe runs in the Pod namespace', async () => {
  const execer = new FakeExecer().expect({
    cmd: 'ip',
    args: ['netns', 'exec', podNetnsName(pod()), 'cat', '/tmp/ready'],
    result: { code: 1 },
  });
  const runtime = new LabPodRuntime({
    ip: new RealIp(new FakeExecer()),
    network: { add: () => Promise.reject(new Error('no ADD')), del: () => Promise.resolve() },
    self: ['svcnet'],
    logDir: tmpdir(),
    clusterDNS: '10.96.0.10',
    clusterDomain: 'cluster.local',
    execer,
  });
  await assert.rejects(runtime.start(pod({ hostNetwork: true })), /spec\.hostNetwork/);
  assert.equal(
    await runtime.probe(pod(), '10.244.1.2', { exec: { command: ['cat', '/tmp/ready'] } }),
    false,
  );
  execer.verify();
});

test("the Pod's one process logs as the container it stands for", () => {
  const pod = (containers: NonNullable<Pod['spec']>['containers']): Pod => ({
    metadata: { name: 'p' },
    spec: { containers },
  });
  assert.equal(serverContainerName(pod([{ name: 'only' }])), 'only');
  assert.equal(
    serverContainerName(pod([{ name: 'side' }, { name: 'web', args: ['netexec'] }])),
    'web',
  );
  assert.equal(
    serverContainerName(
      pod([
        { name: 'web', args: ['netexec'] },
        { name: 'dns', command: ['svcnet', 'dns'] },
      ]),
    ),
    'dns',
  );
  assert.equal(
    serverContainerName(pod([{ name: 'a' }, { name: 'sh', command: ['sh', '-c', 'sleep 1'] }])),
    'sh',
  );
});

test("a Pod's configMap volumes are written from the agent's ConfigMaps; a missing one fails the start, naming it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'podrt-vol-'));
  try {
    const cms = new Map([
      ['kube-system/kube-proxy', { data: { 'config.conf': 'mode: iptables\n' } }],
    ]);
    const runtime = new LabPodRuntime({
      ip: new RealIp(new FakeExecer()),
      network: {
        add: () => Promise.reject(new Error('no ADD')),
        del: () => Promise.resolve(),
      },
      self: ['svcnet'],
      logDir: join(dir, 'pods'),
      clusterDNS: '10.96.0.10',
      clusterDomain: 'cluster.local',
      volumeRoot: join(dir, 'volumes'),
      configMap: (ns, name) => cms.get(`${ns}/${name}`),
    });
    const proxy: Pod = {
      metadata: { name: 'kube-proxy-a', namespace: 'kube-system', uid: 'u1' },
      spec: {
        containers: [{ name: 'kube-proxy' }],
        volumes: [
          { name: 'kube-proxy', configMap: { name: 'kube-proxy' } },
          { name: 'extra', configMap: { name: 'absent', optional: true } },
        ],
      },
    };
    assert.deepEqual(runtime.syncVolumes(proxy), ['kube-proxy', 'extra']);
    const vol = join(dir, 'volumes', 'u1', 'volumes', 'kubernetes.io~configmap', 'kube-proxy');
    assert.equal(readFileSync(join(vol, 'config.conf'), 'utf8'), 'mode: iptables\n');
    assert.deepEqual(runtime.syncVolumes(proxy), [], 'unchanged: nothing rewritten');
    cms.set('kube-system/kube-proxy', { data: { 'config.conf': 'mode: nftables\n' } });
    assert.deepEqual(runtime.syncVolumes(proxy), ['kube-proxy']);
    assert.equal(readFileSync(join(vol, 'config.conf'), 'utf8'), 'mode: nftables\n');
    const missing: Pod = {
      ...proxy,
      spec: { containers: [], volumes: [{ name: 'v', configMap: { name: 'nope' } }] },
    };
    assert.throws(
      () => runtime.syncVolumes(missing),
      /pod kube-system\/kube-proxy-a: volume v: configmap kube-system\/nope not found/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
