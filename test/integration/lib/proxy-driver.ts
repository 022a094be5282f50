// Runs the proxy daemon in-process against a node namespace: FakeInformers stand in for the
// API server, and every iptables / conntrack command runs inside the node namespace through
// an Execer that prefixes `ip netns exec NODE`. The healthz, metrics and health-check node
// port servers listen in the test's own namespace (on loopback), so tests query them there.

import { pino } from 'pino';
import { FakeInformer } from '../../../src/kube/informer.js';
import { endpoint, service as serviceOf, slice as sliceOf } from '../../../src/kube/testing.js';
import type { EndpointSlice, Node, Service } from '../../../src/kube/types.js';
import { objectKey } from '../../../src/kube/types.js';
import type { ExecRequest, ExecResult, Execer } from '../../../src/os/exec.js';
import { RealExecer } from '../../../src/os/exec.js';
import { FakeSysctl } from '../../../src/os/sysctl.js';
import { realClock } from '../../../src/util/clock.js';
import { startProxyDaemon } from '../../../src/proxy/daemon.js';
import type { ProxyDaemon } from '../../../src/proxy/daemon.js';
import { defaultProxyConfig } from '../../../src/proxy/config.js';
import type { ProxyDaemonConfig } from '../../../src/proxy/config.js';

/** An Execer that runs every command inside a network namespace. */
export class NetnsExecer implements Execer {
  private readonly inner: Execer;
  private readonly ns: string;
  constructor(ns: string, inner: Execer = new RealExecer()) {
    this.ns = ns;
    this.inner = inner;
  }
  run(req: ExecRequest): Promise<ExecResult> {
    return this.inner.run({
      ...req,
      cmd: 'ip',
      args: ['netns', 'exec', this.ns, req.cmd, ...req.args],
    });
  }
}

export interface InProcessProxy {
  readonly daemon: ProxyDaemon;
  readonly services: FakeInformer<Service>;
  readonly slices: FakeInformer<EndpointSlice>;
  readonly nodes: FakeInformer<Node>;
  /** Marks the three informers synced (empty until the test adds objects). */
  startInformers(): Promise<void>;
  /** Resolves after the next successful sync that starts after this call. */
  nextSync(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the daemon for `nodeNs` with the given config overrides. */
export async function startInProcessProxy(
  nodeNs: string,
  nodeName: string,
  overrides: Partial<ProxyDaemonConfig> = {},
): Promise<InProcessProxy> {
  const services = new FakeInformer<Service>();
  const slices = new FakeInformer<EndpointSlice>();
  const nodes = new FakeInformer<Node>();
  const cfg: ProxyDaemonConfig = {
    ...defaultProxyConfig(nodeName),
    healthzBindAddress: '127.0.0.1:0',
    metricsBindAddress: '127.0.0.1:0',
    minSyncPeriodMs: 0,
    clusterCIDRs: ['10.244.0.0/16'],
    ...overrides,
  };
  const log = pino({ level: process.env.SVCNET_TEST_LOG ?? 'silent' }, pino.destination(2));
  const daemon = await startProxyDaemon(cfg, {
    execer: new NetnsExecer(nodeNs),
    sysctl: new FakeSysctl(),
    clock: realClock,
    log,
    informers: { services, endpointSlices: slices, nodes },
    localAddresses: () => [],
  });
  const waiters: (() => void)[] = [];
  daemon.proxier.onSync(() => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    daemon,
    services,
    slices,
    nodes,
    startInformers: async () => {
      await services.start();
      await slices.start();
      await nodes.start();
    },
    nextSync: () => new Promise<void>((resolve) => waiters.push(resolve)),
    stop: () => daemon.stop(),
  };
}

/** A ClusterIP/NodePort Service. */
export function service(
  name: string,
  clusterIP: string,
  port: number,
  opts: {
    protocol?: 'TCP' | 'UDP';
    nodePort?: number;
    type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
    externalTrafficPolicy?: 'Cluster' | 'Local';
    healthCheckNodePort?: number;
  } = {},
): Service {
  return serviceOf(
    name,
    {
      ports: [
        {
          name: 'p',
          port,
          targetPort: port,
          protocol: opts.protocol ?? 'TCP',
          ...(opts.nodePort !== undefined ? { nodePort: opts.nodePort } : {}),
        },
      ],
      type: opts.type ?? (opts.nodePort !== undefined ? 'NodePort' : 'ClusterIP'),
      clusterIP,
      clusterIPs: [clusterIP],
      ...(opts.externalTrafficPolicy !== undefined
        ? { externalTrafficPolicy: opts.externalTrafficPolicy }
        : {}),
      ...(opts.healthCheckNodePort !== undefined
        ? { healthCheckNodePort: opts.healthCheckNodePort }
        : {}),
    },
    { metadata: { resourceVersion: String(Date.now()) } },
  );
}

/** An EndpointSlice for `svc` with ready endpoints on `nodeName`. */
export function slice(
  svcName: string,
  port: number,
  ips: readonly string[],
  nodeName: string,
  opts: { protocol?: 'TCP' | 'UDP'; name?: string } = {},
): EndpointSlice {
  return sliceOf(
    svcName,
    ips.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName })),
    {
      name: opts.name ?? `${svcName}-abc`,
      ports: [{ name: 'p', port, protocol: opts.protocol ?? 'TCP' }],
      metadata: {
        annotations: {
          'endpoints.kubernetes.io/last-change-trigger-time': new Date().toISOString(),
        },
        resourceVersion: String(Date.now()),
      },
    },
  );
}

export { objectKey };
