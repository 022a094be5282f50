// Which svcnet processes make up the lab and where they run, as data: the API server, its
// socket bridge and the controllers in the control-plane node; the load balancer in the hub;
// on every node the node agent
// (the lab's kubelet). The proxies are no supervisor processes: they are the Pods of the
// kube-system/kube-proxy DaemonSet (kube-proxy-addon.ts), which the node agents run. The
// options below still carry the proxies' mode and iptables backend, for that DaemonSet's
// config and the agents' kubelet chains. The supervisor starts them in this order, each inside
// its node's network namespace, and waits for each one's readiness signal. The API server keeps
// its objects, bearer token and serving certificate (its own CA) in a data dir under the lab's
// state directory, so one restarted by the supervisor serves the same objects to clients that
// still trust it. A flannel pod network's agents (`svcnet flannel`) are no supervisor processes
// either: they are the Pods of the kube-system/kube-flannel DaemonSet (flannel-addon.ts). Pure.

import { join } from 'node:path';
import type { IptablesVariant } from '../netfilter/iptables/backend.js';
import { nodeIPs, nodePodCIDRs, podNetworkOf, serviceCIDRs, type LabPlan } from './topology.js';

export type Readiness =
  { readonly kind: 'file'; readonly path: string } | { readonly kind: 'none' };

export interface ComponentSpec {
  /** Unique, used for the log file name: `<name>.log`. */
  readonly name: string;
  readonly netns: string;
  /** Arguments after the svcnet CLI. */
  readonly args: readonly string[];
  readonly ready: Readiness;
}

/** Where a node's flannel agent writes subnet.env and its flannel CNI network reads it. */
export function flannelSubnetFile(stateDir: string, node: string): string {
  return join(stateDir, 'nodes', node, 'flannel', 'subnet.env');
}

export interface LabPaths {
  readonly stateDir: string;
  /** kubeconfig the components use (server: the API server's node address). */
  readonly clusterKubeconfig: string;
  /** Unix socket bridged to the API server, for the host-side forwarder. */
  readonly apiSocket: string;
  /**
   * The API server's `--data-dir`: storage.db, token, tls.crt/tls.key (daemon.ts), made by
   * its first start at `lab up` and reused by every restart.
   */
  readonly apiDataDir: string;
}

export function labPaths(stateDir: string): LabPaths {
  return {
    stateDir,
    clusterKubeconfig: join(stateDir, 'cluster.kubeconfig'),
    apiSocket: join(stateDir, 'api.sock'),
    apiDataDir: join(stateDir, 'apiserver'),
  };
}

/** The proxy modes a lab runs its node proxies in (`svcnet lab up --proxy-mode`). */
export const LAB_PROXY_MODES = ['iptables', 'nftables'] as const;
export type LabProxyMode = (typeof LAB_PROXY_MODES)[number];

export interface ComponentOptions {
  /** CNI used by the node agents: our plugin, or Debian's reference plugins. */
  readonly cni: 'svcnet' | 'reference';
  /** Every node's proxy mode (the kube-proxy ConfigMap's `mode`; default iptables). */
  readonly proxyMode?: LabProxyMode;
  /** The proxies' iptables backend in iptables mode (iptables-variant.ts); absent: auto. */
  readonly iptablesVariant?: IptablesVariant;
  /** Directory holding the svcnet-cni plugin binary. */
  readonly cniBinDir: string;
}

export function planComponents(
  plan: LabPlan,
  paths: LabPaths,
  opts: ComponentOptions,
): ComponentSpec[] {
  const cp = plan.nodes[0];
  if (!cp) return [];
  const api = `${cp.ip}:${plan.apiServerPort}`;
  const kc = paths.clusterKubeconfig;
  const specs: ComponentSpec[] = [
    {
      name: 'apiserver',
      netns: cp.netns,
      args: [
        'apiserver',
        '--listen',
        api,
        '--advertise-address',
        cp.ip,
        '--service-cluster-ip-range',
        serviceCIDRs(plan).join(','),
        '--write-kubeconfig',
        kc,
        '--data-dir',
        paths.apiDataDir,
        // Pod logs, exec and port-forward: each node agent's kubelet socket (kubelet-server.ts).
        '--kubelet-socket-dir',
        paths.stateDir,
      ],
      ready: { kind: 'file', path: kc },
    },
    {
      name: 'apiserver-socket',
      netns: cp.netns,
      args: ['lab', 'forward', '--listen-unix', paths.apiSocket, '--to', api],
      ready: { kind: 'file', path: paths.apiSocket },
    },
    {
      name: 'controller',
      netns: cp.netns,
      args: ['controller', '--kubeconfig', kc],
      ready: { kind: 'none' },
    },
    {
      // The lab's load balancer routes LB IPs in the hub, so it runs there (lb-controller.ts).
      name: 'lb-controller',
      netns: plan.hubNetns,
      args: ['lab', 'lb', '--kubeconfig', kc, '--lb-pool', plan.lbPool],
      ready: { kind: 'none' },
    },
  ];
  for (const n of plan.nodes) {
    specs.push({
      name: `agent-${n.name}`,
      netns: n.netns,
      args: [
        'lab',
        'agent',
        '--kubeconfig',
        kc,
        '--node',
        n.name,
        '--node-ip',
        nodeIPs(n).join(','),
        '--pod-cidr',
        nodePodCIDRs(n).join(','),
        '--role',
        n.role,
        '--cni',
        opts.cni,
        '--cni-bin-dir',
        opts.cniBinDir,
        '--cluster-dns',
        plan.dnsServiceIP,
        '--state-dir',
        paths.stateDir,
        ...(podNetworkOf(plan) === 'kindnet' ? [] : ['--pod-network', podNetworkOf(plan)]),
        // The kubelet's hint chains go where the node's proxy programs (kubelet-chains.ts).
        ...((opts.proxyMode ?? 'iptables') === 'iptables' && opts.iptablesVariant !== undefined
          ? ['--iptables-variant', opts.iptablesVariant]
          : []),
      ],
      ready: { kind: 'none' },
    });
  }
  return specs;
}
