// `svcnet lab agent`: the node agent of one lab node, wired to the real edges. It registers
// the Node (podCIDR, InternalIP, labels, Ready), watches the Pods bound to it, and runs them
// with LabPodRuntime: network namespaces attached through the CNI runtime with our plugin
// (ptp, host-local IPAM over the node's podCIDR; called in-process, not executed) or with
// Debian's reference plugins (ptp + host-local, as kindnet configures them); with
// `--pod-network kubenet` a cbr0 bridge holding the podCIDR's gateway (kubenet's bridge +
// host-local), with flannel flannel's CNI network (type flannel: subnet.env from the node's
// flannel agent, delegating to the cni0 bridge). At start it makes the kubelet's iptables hint
// and canary chains (kubelet-chains.ts). It watches ConfigMaps too: a Pod's configMap volume is
// rewritten (the atomic `..data` swap) as soon as its ConfigMap changes, where the kubelet
// takes up to its sync period. Runs inside the node's network namespace.

import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { release } from 'node:os';
import type pino from 'pino';
import { HttpKubeClient, isConflict, isNotFound, type KubeClient } from '../kube/api-client.js';
import { CONFIG_MAPS, createInformer, loadKubeConfig, PODS } from '../kube/client.js';
import type { Informer } from '../kube/informer.js';
import type { ConfigMap, Node, Pod } from '../kube/types.js';
import { RealExecer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import {
  IpSandboxNamespaces,
  KernelSandboxNamespaces,
  type SandboxNamespaces,
} from '../os/netns-named.js';
import { FileResultCache } from '../cni/runtime/cache.js';
import { parseConflist, type NetworkConfigList } from '../cni/runtime/parse-conflist.js';
import { CniRuntime } from '../cni/runtime/runtime.js';
import { inProcessSvcnetCni } from '../cni/in-process.js';
import { inProcessPluginDeps } from '../cni/in-process-netlink.js';
import type { IptablesVariant } from '../netfilter/iptables/backend.js';
import { kubeletSocketPath } from '../apiserver/kubelet-proxy.js';
import { NodeAgent, type PodStatusWriter } from './agent.js';
import { kubeletServer, listenKubelet, type KubeletHandlers } from './kubelet-server.js';
import type { ContainerLogs } from './container-log-capture.js';
import { containerLogsHandler } from './container-logs.js';
import { kubeletStream } from './kubelet-stream.js';
import { startPiped } from '../os/piped-process.js';
import { ensureKubeletChains, kubeletIptables } from './kubelet-chains.js';
import { realClock, type Clock } from '../util/clock.js';
import { LabPodRuntime, type PodNetwork, type PodNetworkRequest } from './pod-runtime.js';
import { PodHostClient } from './pod-host-client.js';
import { startProcess } from '../os/process.js';
import { flannelSubnetFile } from './components.js';
import type { LabPodNetwork } from './topology.js';

export const REFERENCE_CNI_DIR = '/usr/lib/cni';

export interface LabAgentOptions {
  readonly kubeconfig: string;
  readonly node: string;
  /** The node's addresses and pod ranges, IPv4 first (two for dual-stack). */
  readonly nodeIPs: readonly string[];
  readonly podCIDRs: readonly string[];
  readonly role: 'control-plane' | 'worker';
  readonly cni: 'svcnet' | 'reference';
  readonly cniBinDir: string;
  /** How pods reach other nodes (topology.ts); decides the CNI network (default kindnet). */
  readonly podNetwork?: LabPodNetwork;
  readonly clusterDNS: string;
  readonly clusterDomain: string;
  /** Per-node state: IPAM reservations, CNI result cache, Pod logs. */
  readonly stateDir: string;
  /** Backend of the kubelet's iptables chains: the lab's proxies' (absent: plain iptables). */
  readonly iptablesVariant?: IptablesVariant;
  readonly self: readonly string[];
  readonly log: pino.Logger;
}

/**
 * The node's CNI network: kindnet's shape (ptp + host-local over the podCIDR); dual-stack
 * gives one range set per family and a default route of each.
 */
export function labConflist(
  cni: 'svcnet' | 'reference',
  podCIDRs: readonly string[],
  ipamDir: string,
): string {
  const ipam = {
    type: 'host-local',
    dataDir: ipamDir,
    ranges: podCIDRs.map((subnet) => [{ subnet }]),
    routes: podCIDRs.map((c) => ({ dst: c.includes(':') ? '::/0' : '0.0.0.0/0' })),
  };
  const plugins =
    cni === 'svcnet'
      ? [{ type: 'svcnet-cni', mode: 'ptp', mtu: 1500, ipam }]
      : [{ type: 'ptp', mtu: 1500, ipMasq: false, ipam }];
  return JSON.stringify({ cniVersion: '1.0.0', name: 'kindnet', plugins });
}

/** The files a node's CNI network keeps: IPAM, and for flannel subnet.env and its delegates. */
export interface NodeCniFiles {
  readonly ipamDir: string;
  readonly subnetFile: string;
  readonly flannelDataDir: string;
}

/**
 * The node's CNI network for its pod network: kindnet's (labConflist); kubenet's cbr0 (the
 * bridge plugin with the podCIDR's gateway on it, hairpin ports, host-local over the podCIDR,
 * no masquerade: the hub routes pods); flannel's (kube-flannel's cni-conf.json: type flannel,
 * delegate hairpinMode and isDefaultGateway, the IPAM store in the node's folder).
 */
export function nodeConflist(
  net: LabPodNetwork,
  cni: 'svcnet' | 'reference',
  podCIDRs: readonly string[],
  files: NodeCniFiles,
): string {
  if (net === 'kubenet') {
    const bridge = {
      ...(cni === 'svcnet' ? { type: 'svcnet-cni', mode: 'bridge' } : { type: 'bridge' }),
      bridge: 'cbr0',
      mtu: 1500,
      isGateway: true,
      ipMasq: false,
      hairpinMode: true,
      ipam: {
        type: 'host-local',
        dataDir: files.ipamDir,
        ranges: podCIDRs.map((subnet) => [{ subnet }]),
        routes: [{ dst: '0.0.0.0/0' }],
      },
    };
    return JSON.stringify({ cniVersion: '1.0.0', name: 'kubenet', plugins: [bridge] });
  }
  if (net === 'flannel' || net === 'flannel-host-gw') {
    const flannel = {
      type: 'flannel',
      subnetFile: files.subnetFile,
      dataDir: files.flannelDataDir,
      delegate: { hairpinMode: true, isDefaultGateway: true },
      ipam: { type: 'host-local', dataDir: files.ipamDir },
    };
    return JSON.stringify({ cniVersion: '1.0.0', name: 'cbr0', plugins: [flannel] });
  }
  return labConflist(cni, podCIDRs, files.ipamDir);
}

/**
 * The plugin directories of a node: flannel's network needs a `flannel` plugin, which Debian
 * does not ship, so svcnet-cni is linked under that name into the node's own folder (it runs
 * the cni0 bridge delegate in-process, with either --cni).
 */
function nodeCniPath(opts: LabAgentOptions, nodeDir: string): string[] {
  const dirs = opts.cni === 'svcnet' ? [opts.cniBinDir, REFERENCE_CNI_DIR] : [REFERENCE_CNI_DIR];
  if (opts.podNetwork !== 'flannel' && opts.podNetwork !== 'flannel-host-gw') return dirs;
  const own = join(nodeDir, 'cni-bin');
  mkdirSync(own, { recursive: true });
  rmSync(join(own, 'flannel'), { force: true });
  symlinkSync(join(opts.cniBinDir, 'svcnet-cni'), join(own, 'flannel'));
  return [own, ...dirs];
}

/**
 * Waits until the node's flannel agent has written subnet.env: until then flannel's CNI
 * network fails every ADD, so Pods on the pod network wait for it (the kubelet's NetworkReady
 * false) rather than start sandboxes into a back-off (our agent's would reach 30 s between
 * tries). hostNetwork Pods, the flannel agent's own among them, start meanwhile.
 */
async function waitForSubnetEnv(path: string, log: pino.Logger, clock: Clock): Promise<void> {
  const t0 = clock.now();
  let logged = 0;
  while (!existsSync(path)) {
    if (clock.now() - logged > 10_000) {
      log.info({ subnetFile: path }, 'Waiting for the flannel agent to write subnet.env');
      logged = clock.now();
    }
    await clock.sleep(100);
  }
  log.info({ subnetFile: path, waitedMs: clock.now() - t0 }, 'Pod network ready');
}

/** PodNetwork over the CNI runtime: one attachment (eth0) per Pod. */
export class CniPodNetwork implements PodNetwork {
  private readonly rt: CniRuntime;
  private readonly conflist: NetworkConfigList;
  private readonly ready: Promise<void>;

  /** `ready`: settles once the network can take an ADD (flannel: subnet.env written). */
  constructor(
    rt: CniRuntime,
    conflist: NetworkConfigList,
    ready: Promise<void> = Promise.resolve(),
  ) {
    this.rt = rt;
    this.conflist = conflist;
    this.ready = ready;
  }

  private attachment(req: PodNetworkRequest): Parameters<CniRuntime['add']>[0] {
    return {
      containerId: req.containerId,
      netns: req.netnsPath,
      ifName: req.ifName,
      conflist: this.conflist,
      args: {
        IgnoreUnknown: '1',
        K8S_POD_NAMESPACE: req.podNamespace,
        K8S_POD_NAME: req.podName,
        K8S_POD_INFRA_CONTAINER_ID: req.containerId,
        K8S_POD_UID: req.podUid,
      },
    };
  }

  async add(req: PodNetworkRequest): Promise<{ ip: string; ips: string[] }> {
    await this.ready;
    const result = await this.rt.add(this.attachment(req));
    // IPv4 first, as the kubelet orders a dual-stack Pod's podIPs.
    const ips = (result.ips ?? [])
      .map((i) => i.address.split('/')[0] ?? '')
      .filter((a) => a !== '')
      .sort((a, b) => Number(a.includes(':')) - Number(b.includes(':')));
    const ip = ips[0];
    if (ip === undefined)
      throw new Error(`CNI ADD for ${req.podNamespace}/${req.podName} returned no IP`);
    return { ip, ips };
  }

  async del(req: PodNetworkRequest): Promise<void> {
    await this.rt.del(this.attachment(req));
  }
}

/** The kubelet's Pod writes, retried on conflict against the latest copy of the Pod. */
export class KubePodStatusWriter implements PodStatusWriter {
  private readonly client: KubeClient;

  constructor(client: KubeClient) {
    this.client = client;
  }

  async updateStatus(pod: Pod, status: NonNullable<Pod['status']>): Promise<void> {
    const ns = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    for (let attempt = 0; ; attempt++) {
      const latest = await this.client.get('Pod', ns, name);
      if (!latest || latest.metadata?.uid !== pod.metadata?.uid) return;
      try {
        await this.client.updateStatus('Pod', { ...latest, status });
        return;
      } catch (e) {
        if (isNotFound(e)) return;
        if (!isConflict(e) || attempt >= 5) throw e;
      }
    }
  }

  async finalizeDelete(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid;
    try {
      await this.client.delete(
        'Pod',
        pod.metadata?.namespace ?? 'default',
        pod.metadata?.name ?? '',
        {
          gracePeriodSeconds: 0,
          ...(uid === undefined ? {} : { uid }),
        },
      );
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }
}

/** The Node object a lab node registers, as kind's kubelet would. */
export function labNode(opts: {
  node: string;
  nodeIPs: readonly string[];
  podCIDRs: readonly string[];
  role: 'control-plane' | 'worker';
  now: Date;
}): Node & { status: NonNullable<Node['status']> } {
  const labels: Record<string, string> = {
    'kubernetes.io/hostname': opts.node,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
    'beta.kubernetes.io/os': 'linux',
  };
  if (opts.role === 'control-plane') labels['node-role.kubernetes.io/control-plane'] = '';
  const t = opts.now.toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: opts.node, labels },
    spec: { podCIDR: opts.podCIDRs[0] ?? '', podCIDRs: [...opts.podCIDRs] },
    status: {
      addresses: [
        ...opts.nodeIPs.map((address) => ({ type: 'InternalIP' as const, address })),
        { type: 'Hostname', address: opts.node },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.33.0-svcnet',
        kubeProxyVersion: 'v1.33.0-svcnet',
        containerRuntimeVersion: 'svcnet-lab://0.1.0',
        osImage: 'svcnet lab (network namespaces)',
        kernelVersion: release(),
        operatingSystem: 'linux',
        architecture: process.arch === 'x64' ? 'amd64' : process.arch,
        machineID: '',
        systemUUID: '',
        bootID: '',
      },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'svcnet lab agent is posting ready status',
          lastHeartbeatTime: t,
          lastTransitionTime: t,
        },
      ],
    },
  };
}

async function registerNode(
  client: KubeClient,
  want: ReturnType<typeof labNode>,
  clock: Clock = realClock,
): Promise<void> {
  const name = want.metadata?.name ?? '';
  for (let attempt = 0; ; attempt++) {
    try {
      const existing = await client.get('Node', '', name);
      const current = existing
        ? await client.update('Node', {
            ...existing,
            metadata: {
              ...existing.metadata,
              labels: { ...existing.metadata?.labels, ...want.metadata?.labels },
            },
            spec: { ...existing.spec, ...want.spec },
          })
        : await client.create('Node', { ...want, status: {} });
      await client.updateStatus('Node', { ...current, status: want.status });
      return;
    } catch (e) {
      if (attempt >= 30) throw e;
      // The API server may still be starting, or another writer raced us: try again shortly.
      await clock.sleep(200);
    }
  }
}

/** What this node's kubelet API serves (logs, exec, attach, port-forward). */
function kubeletHandlers(
  logs: ContainerLogs,
  pods: Informer<Pod>,
  opts: LabAgentOptions,
): KubeletHandlers {
  return {
    containerLogs: containerLogsHandler(logs),
    stream: kubeletStream({
      nodeName: opts.node,
      podOf: (ns, name) => pods.get(`${ns}/${name}`),
      start: startPiped,
    }),
  };
}

/**
 * The node's pod host (pod-host.ts), started on first use as `svcnet lab pod-host` in this
 * namespace. It is not the agent's child in spirit: it outlives the agent, like the Pods'
 * own processes, and the next agent connects to the same socket.
 */
/**
 * The Pods' namespaces made in this process (no `ip netns add` and lo-up processes per Pod);
 * through `ip` when libc cannot be bound (koffi missing).
 */
function sandboxNamespaces(ip: RealIp, log: pino.Logger): SandboxNamespaces {
  try {
    return new KernelSandboxNamespaces();
  } catch (err) {
    log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'Cannot bind libc: Pod namespaces through ip netns',
    );
    return new IpSandboxNamespaces(ip);
  }
}

function nodePodHost(opts: LabAgentOptions, nodeDir: string): PodHostClient {
  const socketPath = join(nodeDir, 'pod-host.sock');
  const logs = join(opts.stateDir, 'logs');
  const logFile = existsSync(logs)
    ? join(logs, `pod-host-${opts.node}.log`)
    : join(nodeDir, 'pod-host.log');
  const [cmd, ...args] = opts.self;
  return new PodHostClient({
    socketPath,
    spawn: () => {
      if (cmd === undefined) throw new Error('lab agent: no svcnet command to start the pod host');
      const proc = startProcess(
        cmd,
        [...args, 'lab', 'pod-host', '--socket', socketPath, '--node', opts.node],
        logFile,
      );
      opts.log.info({ pid: proc.pid, socket: socketPath }, 'Started the pod host');
    },
    log: (fields, msg) => {
      opts.log.warn(fields, msg);
    },
  });
}

/** Runs the agent until `stop` resolves; Pods keep running, like containers over a kubelet restart. */
export async function runLabAgent(opts: LabAgentOptions, stop: Promise<unknown>): Promise<void> {
  const kc = loadKubeConfig(opts.kubeconfig);
  const client = new HttpKubeClient(kc);
  const execer = new RealExecer();
  const nodeDir = join(opts.stateDir, 'nodes', opts.node);
  const logDir = join(nodeDir, 'pods');
  const sandboxes = join(nodeDir, 'sandboxes');
  mkdirSync(logDir, { recursive: true });
  mkdirSync(sandboxes, { recursive: true });
  // Started while the node registers: its Node.js start-up is then off the first Pod's path.
  const podHost = nodePodHost(opts, nodeDir);
  podHost.warmUp().catch((e: unknown) => {
    opts.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'Pod host not answering');
  });
  const conflist = parseConflist(
    nodeConflist(opts.podNetwork ?? 'kindnet', opts.cni, opts.podCIDRs, {
      ipamDir: join(nodeDir, 'ipam'),
      subnetFile: flannelSubnetFile(opts.stateDir, opts.node),
      flannelDataDir: join(nodeDir, 'flannel-cni'),
    }),
    `${opts.node} CNI network`,
  );
  const rt = new CniRuntime({
    execer,
    cniPath: nodeCniPath(opts, nodeDir),
    cache: new FileResultCache(join(nodeDir, 'cni-cache')),
    // Our plugin runs as a function in this agent (it is in the node's namespace already):
    // no Node start-up per Pod. The reference plugins are still executed.
    ...(opts.cni === 'svcnet'
      ? { inProcess: new Map([['svcnet-cni', inProcessSvcnetCni(inProcessPluginDeps(execer))]]) }
      : {}),
  });
  await registerNode(
    client,
    labNode({
      node: opts.node,
      nodeIPs: opts.nodeIPs,
      podCIDRs: opts.podCIDRs,
      role: opts.role,
      now: new Date(),
    }),
  );
  opts.log.info(
    { node: opts.node, podCIDRs: opts.podCIDRs, cni: opts.cni, podNetwork: opts.podNetwork },
    'Node registered',
  );
  const families = await ensureKubeletChains(
    kubeletIptables(execer, opts.iptablesVariant),
    (fields, msg) => {
      opts.log.warn(fields, msg);
    },
  );
  opts.log.info(
    { families, variant: opts.iptablesVariant ?? 'iptables' },
    'Created the kubelet iptables hint and canary chains',
  );
  // Written by this node's kube-flannel Pod, which this agent starts (hostNetwork) meanwhile.
  const networkReady =
    opts.podNetwork === 'flannel' || opts.podNetwork === 'flannel-host-gw'
      ? waitForSubnetEnv(flannelSubnetFile(opts.stateDir, opts.node), opts.log, realClock)
      : Promise.resolve();
  const pods = createInformer<Pod>(kc, PODS, { fieldSelector: `spec.nodeName=${opts.node}` });
  const configMaps = createInformer<ConfigMap>(kc, CONFIG_MAPS);

  const ip = new RealIp(execer);
  const runtime = new LabPodRuntime({
    podHost,
    ip,
    namespaces: sandboxNamespaces(ip, opts.log),
    network: new CniPodNetwork(rt, conflist, networkReady),
    self: opts.self,
    logDir,
    clusterDNS: opts.clusterDNS,
    clusterDomain: opts.clusterDomain,
    kubeconfig: opts.kubeconfig,
    recordDir: sandboxes,
    execer,
    nodeIP: opts.nodeIPs[0] ?? '',
    nodeIPs: opts.nodeIPs,
    nodeName: opts.node,
    configMap: (ns, name) => configMaps.get(`${ns}/${name}`),
    volumeRoot: join(nodeDir, 'volumes'),
  });
  const refresh = (cm: ConfigMap): void => {
    const ns = cm.metadata?.namespace ?? 'default';
    const name = cm.metadata?.name ?? '';
    try {
      const updated = runtime.refreshConfigMap(ns, name);
      if (updated.length > 0)
        opts.log.info(
          { configMap: `${ns}/${name}`, volumes: updated },
          'Updated configMap volumes',
        );
    } catch (e) {
      opts.log.warn(
        { configMap: `${ns}/${name}`, err: e instanceof Error ? e.message : String(e) },
        'Cannot update configMap volumes',
      );
    }
  };
  configMaps.addHandlers({
    onUpdate: (_old, cm) => {
      refresh(cm);
    },
    onAdd: refresh,
  });
  // Volumes are written from this cache: it is filled before any Pod starts.
  await configMaps.start();
  const agent = new NodeAgent({
    nodeName: opts.node,
    hostIP: opts.nodeIPs[0] ?? '',
    pods,
    runtime,
    status: new KubePodStatusWriter(client),
    log: (fields, msg) => {
      opts.log.info(fields, msg);
    },
  });
  await pods.start();
  const uids = new Set(pods.list().map((p) => p.metadata?.uid ?? ''));
  const swept = await runtime.sweep(uids);
  if (swept.length > 0)
    opts.log.info({ pods: swept }, 'Removed sandboxes of Pods deleted meanwhile');
  opts.log.info({ node: opts.node }, 'Watching Pods');
  // The kubelet API the API server proxies Pod logs, exec and port-forward to.
  const kubelet = kubeletServer(kubeletHandlers(runtime.logs, pods, opts), (e) => {
    opts.log.warn(
      { err: e instanceof Error ? e.message : String(e) },
      'Kubelet API request failed',
    );
  });
  const socket = kubeletSocketPath(opts.stateDir, opts.node);
  await listenKubelet(kubelet, socket);
  opts.log.info({ socket }, 'Serving the kubelet API');
  await stop;
  // An open `kubectl logs -f` must not hold the stop up.
  kubelet.closeAllConnections();
  await new Promise((r) => kubelet.close(r));
  // Pods keep running and writing; the next agent reads their output on (reattach).
  runtime.logs.detachAll();
  podHost.close();
  await pods.stop();
  await configMaps.stop();
  opts.log.info({ node: opts.node, errors: agent.errors }, 'Agent stopped');
}
