// Kubernetes' sig-network "Networking Granular Checks: Pods" [Conformance] tests
// (test/e2e/common/network/networking.go) and the Conntrack tests (test/e2e/network/
// conntrack.go) the other e2e files do not already cover, written from the behaviour each one
// checks: a Pod reaching a netexec server on every node over HTTP and UDP, a hostNetwork Pod
// doing the same, and a UDP client that never stops sending from one source port while the
// server Pods behind a NodePort, an internalTrafficPolicy Local ClusterIP, or a ClusterIP
// seen from a hostNetwork client are replaced, or start unready behind an init container.
// docs/conformance.md maps every upstream test to its test. One lab; a namespace per scenario.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf, type ServiceSpecOptions } from '../../src/kube/testing.js';
import type { KubeObject } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { execLong, podsReadyOrShow } from './lib/kubectl.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());

/** conntrack.go's fixed client source port: every datagram has the same conntrack tuple. */
const SRC_PORT = 12345;

function service(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return serviceOf(`${namespace}/${name}`, { ports: null, ...(spec as ServiceSpecOptions) });
}

function withSpec(obj: KubeObject, extra: Record<string, unknown>): KubeObject {
  const o = obj as KubeObject & { spec?: Record<string, unknown> };
  return { ...o, spec: { ...o.spec, ...extra } } as KubeObject;
}

/**
 * A UDP client as conntrack.go's (`echo hostname | nc -u -p 12345` in a loop, logging what
 * answers): one socket on SRC_PORT sends `hostname` every second to host:port and appends
 * every answer to a log file; it stops once `last` has answered, or after `ms`.
 */
const UDP_CLIENT = `
const [host, port, last, ms, src, log] = process.argv.slice(1);
const fs = require('node:fs');
const sock = require('node:dgram').createSocket('udp4');
fs.writeFileSync(log, '');
sock.on('error', () => undefined);
sock.on('message', (m) => { fs.appendFileSync(log, m.toString().trim() + '\\n'); if (m.toString().trim() === last) process.exit(0); });
sock.bind(Number(src), () => setInterval(() => sock.send('hostname', Number(port), host), 1000));
setTimeout(() => process.exit(0), Number(ms));`;

/** One UDP question and its answer (netexec's UDP commands), or '' after 2 s. */
const UDP_ASK = `
const [host, port, msg] = process.argv.slice(1);
const sock = require('node:dgram').createSocket('udp4');
const t = setTimeout(() => process.exit(0), 2000);
sock.on('message', (m) => { process.stdout.write(m.toString().trim()); clearTimeout(t); process.exit(0); });
sock.send(msg, Number(port), host);`;

describe('sig-network conformance: pod networking and conntrack', { skip }, () => {
  let lab: E2eLab;
  let n1 = '';
  let n2 = '';
  let n2IP = '';

  const podIP = async (ns: string, name: string): Promise<string> => {
    const ip = (await lab.pod(ns, name))?.status?.podIP ?? '';
    assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/, `${ns}/${name} has no IP`);
    return ip;
  };
  const udpAsk = async (
    from: string,
    host: string,
    port: number,
    msg = 'hostname',
  ): Promise<string> =>
    (await lab.exec(from, ['node', '-e', UDP_ASK, host, String(port), msg])).stdout;
  const endpointsAre = async (ns: string, svc: string, pods: readonly string[]): Promise<void> => {
    const want = (await Promise.all(pods.map((p) => podIP(ns, p)))).sort().join();
    await eventually(
      `${ns}/${svc} endpoints to be ${pods.join(', ')}`,
      async () => ((await lab.endpoints(ns, svc)).join() === want ? true : undefined),
      60_000,
    );
  };
  const gone = async (ns: string, name: string): Promise<void> => {
    await lab.deleteObject('Pod', ns, name);
    await eventually(
      `${ns}/${name} to be gone`,
      async () => (await lab.pod(ns, name)) === undefined,
      120_000,
    );
  };
  /** A UDP server Pod as conntrack.go's: netexec with --udp-port=80. */
  const udpServer = (
    ns: string,
    name: string,
    node: string,
    extra: Record<string, unknown> = {},
  ): KubeObject =>
    withSpec(netexecPod(ns, name, { labels: { app: 'udp' }, node, udpPort: 80 }), extra);
  const udpService = (ns: string, extra: Record<string, unknown> = {}): KubeObject =>
    service(ns, 'svc-udp', {
      selector: { app: 'udp' },
      ports: [{ name: 'udp', port: 80, targetPort: 80, protocol: 'UDP' }],
      ...extra,
    });
  /** Starts the UDP client in `from`, logging to a file named after its namespace. */
  const startClient = (
    from: string,
    host: string,
    port: number,
    last: string,
  ): Promise<unknown> => {
    const log = `/tmp/conformance-${from.split('/')[0] ?? ''}.log`;
    const argv = [
      'node',
      '-e',
      UDP_CLIENT,
      host,
      String(port),
      last,
      '200000',
      String(SRC_PORT),
      log,
    ];
    const run = execLong(lab, from, argv, 240_000);
    // Failures show in the checks of its log; never leave the promise unhandled.
    run.catch(() => undefined);
    return run;
  };
  /** The client's log shows `name` answering within a minute (conntrack.go's poll). */
  const answered = async (from: string, name: string): Promise<void> => {
    const log = `/tmp/conformance-${from.split('/')[0] ?? ''}.log`;
    await eventually(
      `${name} to answer the UDP client in ${from}`,
      async () => (await lab.exec(from, ['cat', log])).stdout.split('\n').includes(name),
      60_000,
      1000,
    );
  };

  before(async () => {
    lab = await E2eLab.up('cn');
    const names = lab.nodes.map((n) => n.name);
    [, n1, n2] = names as [string, string, string];
    n2IP = lab.nodes[2]?.ip ?? '';
    for (const ns of ['g-pods', 'ct-np', 'ct-itp', 'ct-host', 'ct-init'])
      await lab.createNamespace(ns);
    await lab.apply([
      // networking.go's netservers: one per node, a test Pod, and a hostNetwork Pod whose own
      // server keeps off the netservers' ports.
      ...names.map((node, i) => netexecPod('g-pods', `netserver-${String(i)}`, { node })),
      netexecPod('g-pods', 'test-container-pod', { node: n1 }),
      withSpec(
        netexecPod('g-pods', 'host-test-container-pod', {
          node: n2,
          httpPort: 18080,
          udpPort: 18081,
        }),
        {
          hostNetwork: true,
        },
      ),
      udpService('ct-np', { type: 'NodePort' }),
      udpService('ct-itp', { internalTrafficPolicy: 'Local' }),
      udpService('ct-host'),
      withSpec(netexecPod('ct-host', 'pod-client', { node: n1, httpPort: 18082, udpPort: 18083 }), {
        hostNetwork: true,
      }),
      udpService('ct-init'),
      ...['ct-np', 'ct-itp', 'ct-init'].map((ns) => netexecPod(ns, 'pod-client', { node: n1 })),
    ]);
    await Promise.all([
      podsReadyOrShow(
        lab,
        'g-pods',
        [
          'netserver-0',
          'netserver-1',
          'netserver-2',
          'test-container-pod',
          'host-test-container-pod',
        ],
        300_000,
      ),
      ...['ct-np', 'ct-itp', 'ct-host', 'ct-init'].map((ns) =>
        podsReadyOrShow(lab, ns, ['pod-client'], 300_000),
      ),
    ]);
  });
  after(async () => {
    await lab.down();
  });

  // networking.go "should function for intra-pod communication: http" and ": udp".
  for (const protocol of ['http', 'udp'] as const)
    test(`intra-pod ${protocol}: the test Pod's /dial reaches the netserver on every node`, async () => {
      const from = { ip: await podIP('g-pods', 'test-container-pod'), port: 8080 };
      for (const i of [0, 1, 2]) {
        const name = `netserver-${String(i)}`;
        const ip = await podIP('g-pods', name);
        await eventually(`${name} to answer a ${protocol} dial`, async () =>
          (await lab.dial(from, protocol, ip, protocol === 'http' ? 8080 : 8081)).includes(name),
        );
      }
    });

  // networking.go "should function for node-pod communication: http" and ": udp".
  test('node-pod http and udp: a hostNetwork Pod reaches the netserver on every node', async () => {
    const from = 'g-pods/host-test-container-pod';
    for (const i of [0, 1, 2]) {
      const name = `netserver-${String(i)}`;
      const ip = await podIP('g-pods', name);
      await eventually(
        `${name} over http from the host network`,
        async () => (await lab.curl(from, `http://${ip}:8080/hostname`)).body === name,
      );
      await eventually(
        `${name} over udp from the host network`,
        async () => (await udpAsk(from, ip, 8081)) === name,
      );
    }
  });

  // conntrack.go "should be able to preserve UDP traffic when server pod cycles for a NodePort
  // service".
  test('UDP to a NodePort from one source port follows the server Pod when it is replaced', async () => {
    const np = (await lab.service('ct-np', 'svc-udp'))?.spec?.ports?.[0]?.nodePort ?? 0;
    assert.ok(np > 0, 'svc-udp has a nodePort');
    const from = 'ct-np/pod-client';
    const client = startClient(from, n2IP, np, 'pod-server-2');
    await lab.apply([udpServer('ct-np', 'pod-server-1', n2)]);
    await podsReadyOrShow(lab, 'ct-np', ['pod-server-1'], 120_000);
    await endpointsAre('ct-np', 'svc-udp', ['pod-server-1']);
    await answered(from, 'pod-server-1');
    await lab.apply([udpServer('ct-np', 'pod-server-2', n2)]);
    await podsReadyOrShow(lab, 'ct-np', ['pod-server-2'], 120_000);
    await gone('ct-np', 'pod-server-1');
    await endpointsAre('ct-np', 'svc-udp', ['pod-server-2']);
    await answered(from, 'pod-server-2');
    await client;
  });

  // conntrack.go "... when server pod cycles for a ClusterIP service with InternalTrafficPolicy
  // set to Local".
  test('UDP to an iTP=Local ClusterIP follows the node-local server Pod when it is recreated', async () => {
    const ip = (await lab.service('ct-itp', 'svc-udp'))?.spec?.clusterIP ?? '';
    const from = 'ct-itp/pod-client';
    const client = startClient(from, ip, 80, 'pod-server-3');
    await lab.apply([udpServer('ct-itp', 'pod-server-1', n1)]);
    await podsReadyOrShow(lab, 'ct-itp', ['pod-server-1'], 120_000);
    await endpointsAre('ct-itp', 'svc-udp', ['pod-server-1']);
    await answered(from, 'pod-server-1');
    // A second endpoint on another node, which this client must never reach (iTP Local).
    await lab.apply([udpServer('ct-itp', 'pod-server-2', n2)]);
    await podsReadyOrShow(lab, 'ct-itp', ['pod-server-2'], 120_000);
    await endpointsAre('ct-itp', 'svc-udp', ['pod-server-1', 'pod-server-2']);
    await gone('ct-itp', 'pod-server-1');
    await endpointsAre('ct-itp', 'svc-udp', ['pod-server-2']);
    // As upstream: the client keeps sending while the node has no local endpoint.
    await new Promise((r) => setTimeout(r, 5000));
    await lab.apply([udpServer('ct-itp', 'pod-server-3', n1)]);
    await podsReadyOrShow(lab, 'ct-itp', ['pod-server-3'], 120_000);
    await endpointsAre('ct-itp', 'svc-udp', ['pod-server-2', 'pod-server-3']);
    await answered(from, 'pod-server-3');
    await client;
    const log = (await lab.exec(from, ['cat', '/tmp/conformance-ct-itp.log'])).stdout;
    assert.ok(
      !log.split('\n').includes('pod-server-2'),
      `the other node's endpoint answered:\n${log}`,
    );
  });

  // conntrack.go "... when server pod cycles for a ClusterIP service and client is hostNetwork".
  test('UDP from a hostNetwork client to a ClusterIP follows the server Pod when it is replaced', async () => {
    const ip = (await lab.service('ct-host', 'svc-udp'))?.spec?.clusterIP ?? '';
    const from = 'ct-host/pod-client';
    const client = startClient(from, ip, 80, 'pod-server-2');
    await lab.apply([udpServer('ct-host', 'pod-server-1', n2)]);
    await podsReadyOrShow(lab, 'ct-host', ['pod-server-1'], 120_000);
    await endpointsAre('ct-host', 'svc-udp', ['pod-server-1']);
    await answered(from, 'pod-server-1');
    await lab.apply([udpServer('ct-host', 'pod-server-2', n2)]);
    await podsReadyOrShow(lab, 'ct-host', ['pod-server-2'], 120_000);
    await gone('ct-host', 'pod-server-1');
    await endpointsAre('ct-host', 'svc-udp', ['pod-server-2']);
    await answered(from, 'pod-server-2');
    await client;
  });

  // conntrack.go "should be able to preserve UDP traffic when initial unready endpoints get
  // ready".
  test('UDP to a ClusterIP reaches a server Pod that was unready for 15 s behind an init container', async () => {
    const ip = (await lab.service('ct-init', 'svc-udp'))?.spec?.clusterIP ?? '';
    const from = 'ct-init/pod-client';
    const client = startClient(from, ip, 80, 'pod-server-1');
    await lab.apply([
      udpServer('ct-init', 'pod-server-1', n2, {
        initContainers: [
          {
            name: 'init',
            image: 'registry.k8s.io/e2e-test-images/busybox:1.36.1-1',
            command: ['/bin/sh', '-c', 'echo Pausing start. && sleep 15'],
          },
        ],
      }),
    ]);
    const created = Date.now();
    await podsReadyOrShow(lab, 'ct-init', ['pod-server-1'], 300_000);
    assert.ok(Date.now() - created >= 14_000, 'the init container did not hold the Pod back 15 s');
    await endpointsAre('ct-init', 'svc-udp', ['pod-server-1']);
    await answered(from, 'pod-server-1');
    await client;
  });
});
