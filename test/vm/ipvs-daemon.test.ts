// `svcnet proxy --proxy-mode ipvs` as an operator runs it, in the VM's kernel (which has
// ip_vs): a child process in a node namespace, watching `svcnet apiserver` (a child process in
// an api namespace linked to the node). Services and EndpointSlices are written through the
// API with @kubernetes/client-node: a ClusterIP Service with three ready endpoints and a
// terminating one, a NodePort Service, a ClientIP-affinity Service and one whose endpoint
// terminates while a connection to it is open. Checks what a user sees: curl from a client
// namespace through each virtual server; the real `ipvsadm -L -n` against `svcnet render
// --format ipvsadm-list` of the same objects; `svcnet trace` of the node's dumps against the
// pods curl reached; graceful termination; an endpoint removal reaching the kernel.
// The apiserver and the proxy start once for the file (node starts in ~5 s under TCG).
// Runs inside the VM only (npm run test:vm).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { endpoint, service, slice } from '../../src/kube/testing.js';
import type { Endpoint, EndpointSlice, Service } from '../../src/kube/types.js';
import { missingToolsReason, skipOrFail } from '../integration/lib/prereq.js';
import { CLIENT_IP, NODE_IP, ProxyLab, nsExec, waitFor } from '../integration/lib/proxy-lab.js';
import { LiveApiServer, LiveProxy } from '../integration/lib/proxy-live.js';
import {
  HeldConnection,
  LoopbackBridge,
  realServersOf,
  svcnetCli,
  virtualServerBlocks,
} from './lib/ipvs-daemon.js';
import { notInVm } from './lib/vm-netns.js';

const NODE = 'node-vm';
const PORT = 8080;
const WEB = '10.96.0.10';
const NP = '10.96.0.20';
const NODE_PORT = 30080;
const STICKY = '10.96.0.30';
const DRAIN = '10.96.0.40';
const API_PORT = 6443;
/** The `kubernetes` Service's endpoint: an address outside the node, never connected to. */
const API_ADVERTISED = '172.30.0.200';
const TOOLS = ['ip', 'ipvsadm', 'ipset', 'iptables-save', 'iptables-restore', 'curl'];
const skip = notInVm !== false ? notInVm : skipOrFail(missingToolsReason(TOOLS));

const httpPort = [{ name: 'http', port: 80, targetPort: PORT, protocol: 'TCP' as const }];
const ready = { conditions: { ready: true }, nodeName: NODE };
const terminating = {
  conditions: { ready: false, serving: true, terminating: true },
  nodeName: NODE,
};

function sliceOf(svc: string, endpoints: Endpoint[]): EndpointSlice {
  return slice(svc, endpoints, {
    name: `${svc}-vm`,
    ports: [{ name: 'http', port: PORT, protocol: 'TCP' }],
  });
}

describe('svcnet proxy --proxy-mode ipvs against svcnet apiserver (VM)', { skip }, () => {
  let lab: ProxyLab;
  let api: LiveApiServer;
  const proxy = new LiveProxy();
  /** What `before` got to start, for `after` to stop even when `before` failed halfway. */
  const started: { lab?: ProxyLab; api?: LiveApiServer } = {};
  let bridge: LoopbackBridge | undefined;
  const ipOf = new Map<string, string>();
  /** Pods curl reached through each virtual server (address:port), for the tracer test. */
  const reached = new Map<string, Set<string>>();
  let webSlice: (eps: Endpoint[]) => EndpointSlice;

  const pod = (i: number) => lab.pods[i]!;
  const ipvsList = () => nsExec(lab.node, 'ipvsadm', ['-L', '-n']);
  /** The pod names of `n` fresh connections from the client to target (address:port). */
  const curlMany = (target: string, n: number): string[] => {
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      const body = lab.tryHttp(lab.client, target, 5);
      names.push(body === undefined ? 'FAILED' : (body.split(' ')[0] ?? ''));
    }
    return names;
  };
  const client = () => api.client();

  before(async () => {
    const t0 = Date.now();
    lab = ProxyLab.create('vmipvs');
    started.lab = lab;
    for (const name of ['pod-a', 'pod-b', 'pod-c', 'pod-d'])
      ipOf.set(lab.addPod(name, PORT).ip, name);
    // The apiserver listens on the loopback of the test's namespace (the VM's root namespace,
    // left as booted); the node namespace reaches it through a Unix-socket bridge.
    api = new LiveApiServer(API_PORT, {
      host: '127.0.0.1',
      args: ['--advertise-address', API_ADVERTISED],
    });
    started.api = api;
    bridge = new LoopbackBridge(lab.node, API_PORT, join(api.dir, 'api.sock'));
    await Promise.all([api.start(240_000), lab.waitForPods(PORT, 120_000), bridge.ready]);

    const { core, discovery } = client();
    const put = async (svc: Service, s: EndpointSlice) => {
      await core.createNamespacedService({
        namespace: 'default',
        body: svc as unknown as V1Service,
      });
      await discovery.createNamespacedEndpointSlice({
        namespace: 'default',
        body: s as unknown as V1EndpointSlice,
      });
    };
    webSlice = (eps) => sliceOf('web', eps);
    await put(
      service('web', { clusterIP: WEB, ports: httpPort }),
      webSlice([
        endpoint(pod(0).ip, ready),
        endpoint(pod(1).ip, ready),
        endpoint(pod(2).ip, ready),
        endpoint(pod(3).ip, terminating),
      ]),
    );
    await put(
      service('np', {
        type: 'NodePort',
        clusterIP: NP,
        ports: [{ ...httpPort[0]!, nodePort: NODE_PORT }],
      }),
      sliceOf('np', [endpoint(pod(0).ip, ready), endpoint(pod(1).ip, ready)]),
    );
    await put(
      service('sticky', {
        clusterIP: STICKY,
        ports: httpPort,
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
      }),
      sliceOf(
        'sticky',
        [0, 1, 2].map((i) => endpoint(pod(i).ip, ready)),
      ),
    );
    await put(
      service('drain', { clusterIP: DRAIN, ports: httpPort }),
      sliceOf('drain', [endpoint(pod(0).ip, ready)]),
    );
    console.log(`apiserver, pods and bridge up after ${Date.now() - t0} ms`);
    proxy.start(lab, api.kubeconfig, NODE, ['--proxy-mode', 'ipvs', '--log-level', 'info']);
    const progress = setInterval(() => {
      console.log(`${Date.now() - t0} ms: proxy log so far:\n${proxy.log.slice(-600)}`);
    }, 60_000);
    try {
      await waitFor(
        () => proxy.syncs() > 0 && realServersOf(ipvsList(), `${DRAIN}:80`).size === 1,
        240_000,
        'the first ipvs sync',
      );
    } catch (err) {
      console.log(`proxy log:\n${proxy.log}\nipvsadm -L -n:\n${ipvsList()}`);
      throw err;
    } finally {
      clearInterval(progress);
    }
    console.log(`first sync programmed after ${Date.now() - t0} ms`);
  });

  after(async () => {
    await proxy.stop();
    bridge?.close();
    await started.api?.stop();
    started.api?.remove();
    started.lab?.destroy();
  });

  test('ipvsadm -L -n in the node equals svcnet render --format ipvsadm-list of the same objects', async () => {
    // The manifest is what the API holds, read back: the four Services and the apiserver's
    // own `kubernetes` Service with their EndpointSlices (server-filled fields included).
    const { core, discovery } = client();
    const services = (await core.listNamespacedService({ namespace: 'default' })).items;
    const slices = (await discovery.listNamespacedEndpointSlice({ namespace: 'default' })).items;
    const docs = [
      ...services.map((s) => ({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: s.metadata,
        spec: s.spec,
      })),
      ...slices.map((s) => ({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: s.metadata,
        addressType: s.addressType,
        endpoints: s.endpoints,
        ports: s.ports,
      })),
    ];
    const manifest = join(api.dir, 'objects.yaml');
    writeFileSync(manifest, docs.map((d) => JSON.stringify(d)).join('\n---\n') + '\n');
    // NodePort virtual servers are one per node address: give the render the node
    // namespace's IPv4 addresses (kube-ipvs0's service addresses are not node addresses).
    const nodeIPs = nsExec(lab.node, 'ip', ['-4', '-o', 'addr', 'show'])
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f.length > 3 && f[1] !== 'lo' && f[1] !== 'kube-ipvs0')
      .map((f) => f[3]!.split('/')[0]!);
    const rendered = await svcnetCli([
      ...['render', '--mode', 'ipvs', '--format', 'ipvsadm-list', '-f', manifest],
      ...['--node', NODE, '--cluster-cidr', '10.244.0.0/16'],
      ...[...new Set(nodeIPs)].flatMap((ip) => ['--node-ip', ip]),
    ]);
    const listing = ipvsList();
    console.log(`ipvsadm -L -n in the node namespace:\n${listing}`);
    assert.deepEqual(virtualServerBlocks(listing), virtualServerBlocks(rendered));
    for (const addr of new Set(nodeIPs))
      assert.ok(realServersOf(listing, `${addr}:${NODE_PORT}`).size === 2, `NodePort on ${addr}`);
  });

  test('curl through the ClusterIP reaches every ready endpoint, never the terminating one', () => {
    const names = curlMany(`${WEB}:80`, 6);
    console.log(`${WEB}:80 answers: ${names.join(' ')}`);
    reached.set(`${WEB}:80`, new Set(names));
    assert.deepEqual([...new Set(names)].sort(), ['pod-a', 'pod-b', 'pod-c']);
    const rs = realServersOf(ipvsList(), `${WEB}:80`);
    assert.ok((rs.get(`${pod(3).ip}:${PORT}`) ?? 0) === 0, 'terminating endpoint has no weight');
  });

  test('curl through the NodePort (node IP:nodePort) reaches every endpoint', () => {
    const names = curlMany(`${NODE_IP}:${NODE_PORT}`, 4);
    console.log(`${NODE_IP}:${NODE_PORT} answers: ${names.join(' ')}`);
    reached.set(`${NODE_IP}:${NODE_PORT}`, new Set(names));
    assert.deepEqual([...new Set(names)].sort(), ['pod-a', 'pod-b']);
  });

  test('ClientIP affinity keeps the client on one pod: a persistent 10800 virtual server', () => {
    const names = curlMany(`${STICKY}:80`, 5);
    assert.equal(new Set(names).size, 1, names.join(' '));
    assert.match(names[0] ?? '', /^pod-[abc]$/);
    assert.match(
      ipvsList(),
      new RegExp(`^TCP  ${STICKY.replaceAll('.', '\\.')}:80 rr persistent 10800\\s*$`, 'm'),
    );
  });

  test('svcnet trace of the node dumps predicts exactly the pods curl reached', async () => {
    const bundle = join(api.dir, 'bundle.txt');
    writeFileSync(
      bundle,
      [
        nsExec(lab.node, 'ipvsadm', ['-S', '-n']),
        nsExec(lab.node, 'ipset', ['save']),
        nsExec(lab.node, 'iptables-save', []),
      ].join(''),
    );
    const targets = [...reached.keys()];
    assert.equal(targets.length, 2, 'the curl tests ran first');
    const traces = await Promise.all(
      targets.map((dst) =>
        svcnetCli([
          ...['trace', '--rules', bundle, '--src', CLIENT_IP, '--dst', `${dst}/tcp`],
          ...['--from-external', '--node-ip', NODE_IP, '--json'],
        ]),
      ),
    );
    targets.forEach((dst, i) => {
      const out = JSON.parse(traces[i] ?? '') as {
        outcomes: { probability: number; endpoint?: string }[];
      };
      const predicted = out.outcomes
        .filter((o) => o.probability > 0)
        .map((o) => ipOf.get(o.endpoint?.split(':')[0] ?? '') ?? `?${o.endpoint}`);
      console.log(`trace ${CLIENT_IP} -> ${dst}: ${predicted.join(' ')}`);
      assert.deepEqual(predicted.sort(), [...(reached.get(dst) ?? [])].sort(), dst);
    });
  });

  test('an endpoint turning terminating keeps its open connection (weight 0) and gets no new ones', async () => {
    const held = new HeldConnection(lab.client, DRAIN, 80);
    try {
      await held.opened;
      const { discovery } = client();
      await discovery.replaceNamespacedEndpointSlice({
        name: 'drain-vm',
        namespace: 'default',
        body: sliceOf('drain', [
          endpoint(pod(0).ip, terminating),
          endpoint(pod(1).ip, ready),
        ]) as unknown as V1EndpointSlice,
      });
      const a = `${pod(0).ip}:${PORT}`;
      const b = `${pod(1).ip}:${PORT}`;
      await waitFor(
        () => {
          const rs = realServersOf(ipvsList(), `${DRAIN}:80`);
          return rs.get(a) === 0 && rs.get(b) === 1;
        },
        20_000,
        `${a} at weight 0 beside ${b}`,
      );
      console.log(
        ipvsList()
          .split('\n')
          .filter((l) => l.includes(DRAIN) || l.includes('->'))
          .join('\n'),
      );
      assert.deepEqual(curlMany(`${DRAIN}:80`, 3), ['pod-b', 'pod-b', 'pod-b']);
      assert.match(await held.request(), /^pod-a /, 'the open connection still reaches pod-a');
    } finally {
      held.close();
    }
  });

  test('an endpoint removed through the API leaves the kernel within seconds', async () => {
    const c = `${pod(2).ip}:${PORT}`;
    const { discovery } = client();
    const start = Date.now();
    await discovery.replaceNamespacedEndpointSlice({
      name: 'web-vm',
      namespace: 'default',
      body: webSlice([
        endpoint(pod(0).ip, ready),
        endpoint(pod(1).ip, ready),
        endpoint(pod(3).ip, terminating),
      ]) as unknown as V1EndpointSlice,
    });
    // Its earlier connections linger in TIME_WAIT (InActConn), so kube-proxy keeps it at
    // weight 0 until they expire, then deletes it: either way no new connection goes there.
    await waitFor(
      () => (realServersOf(ipvsList(), `${WEB}:80`).get(c) ?? 0) === 0,
      5_000,
      `${c} gone or at weight 0`,
    );
    console.log(`endpoint removal reached the kernel in ${Date.now() - start} ms`);
    const names = curlMany(`${WEB}:80`, 4);
    assert.deepEqual([...new Set(names)].sort(), ['pod-a', 'pod-b'], names.join(' '));
    console.log(`ipvsadm -L -n after the removal:\n${ipvsList()}`);
  });
});
