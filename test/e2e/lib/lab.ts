// The e2e suite's handle on a lab: bring one up (tied to this test process by a lifeline, so
// a crashed run leaves nothing behind), apply objects, wait for conditions, and run commands
// (curl, dig, the netexec /dial endpoint) inside its Pods and nodes. Scenarios follow
// Kubernetes' sig-network e2e tests (kubernetes/kubernetes test/e2e/network); each works in its
// own namespace so scenarios do not see each other's Services.
//
// SVCNET_E2E_CNI=reference runs the same suite over Debian's reference CNI plugins;
// SVCNET_E2E_PROXY_MODE=nftables runs it with every node's proxy in nftables mode;
// SVCNET_E2E_IP_FAMILY=dual runs it in dual-stack labs (IPv4 first, so the suites' IPv4
// checks hold; dual-stack.test.ts checks the IPv6 paths);
// SVCNET_E2E_POD_NETWORK=flannel|flannel-host-gw|kubenet runs it over that pod network
// (pod-network.test.ts checks the network itself).

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadKubeConfig } from '../../../src/kube/client.js';
import { HttpKubeClient, isNotFound } from '../../../src/kube/api-client.js';
import type { KubeObject, Pod, Service } from '../../../src/kube/types.js';
import {
  findLab,
  inLab,
  labDown,
  labRestart,
  labUp,
  readComponents,
  resolveTarget,
  type RunningLab,
  waitForCluster,
} from '../../../src/lab/lab.js';
import { natSaveCommand } from '../../../src/lab/iptables-variant.js';
import { applyObjects } from '../../../src/lab/apply.js';
import { missingToolsReason } from '../../integration/lib/prereq.js';
import { proxySettled } from '../../../src/lab/wait.js';
import type { ExecResult } from '../../../src/os/exec.js';
import type { ComponentStatus } from '../../../src/lab/keeper.js';
import { POD_NETWORKS, type LabIpFamily, type LabPodNetwork } from '../../../src/lab/topology.js';

export const E2E_CNI: 'svcnet' | 'reference' =
  process.env.SVCNET_E2E_CNI === 'reference' ? 'reference' : 'svcnet';

export const E2E_PROXY_MODE: 'iptables' | 'nftables' =
  process.env.SVCNET_E2E_PROXY_MODE === 'nftables' ? 'nftables' : 'iptables';

export const E2E_IP_FAMILY: LabIpFamily =
  process.env.SVCNET_E2E_IP_FAMILY === 'dual' ? 'dual' : 'ipv4';

function e2ePodNetwork(): LabPodNetwork {
  const v = process.env.SVCNET_E2E_POD_NETWORK ?? 'kindnet';
  if (!(POD_NETWORKS as readonly string[]).includes(v))
    throw new Error(`SVCNET_E2E_POD_NETWORK: must be one of ${POD_NETWORKS.join(', ')}, got ${v}`);
  return v as LabPodNetwork;
}

export const E2E_POD_NETWORK: LabPodNetwork = e2ePodNetwork();

/** Why the e2e suite cannot run here, or false. */
export function e2eSkipReason(): string | false {
  if (process.getuid?.() !== 0) return 'needs root (the lab creates network namespaces)';
  const tools = ['unshare', 'nsenter', 'ip', 'iptables-restore', 'curl', 'dig', 'conntrack'];
  if (E2E_CNI === 'reference') tools.push('/usr/lib/cni/ptp', '/usr/lib/cni/host-local');
  if (E2E_PROXY_MODE === 'nftables') tools.push('nft');
  if (E2E_POD_NETWORK !== 'kindnet') tools.push('bridge');
  return missingToolsReason(tools) ?? false;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns a value other than undefined/false; throws with `what` on timeout. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${String(timeoutMs)} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`,
      );
    await sleep(everyMs);
  }
}

export interface CurlResult {
  /** curl's exit code: 0 ok, 7 refused, 28 timed out. */
  readonly code: number;
  readonly body: string;
}

export class E2eLab {
  readonly name: string;
  readonly lab: RunningLab;
  readonly client: HttpKubeClient;
  readonly kc: ReturnType<typeof loadKubeConfig>;
  /** `lab up`'s timings (ms from the call: components up, cluster ready). */
  readonly timings: { readonly components: number; readonly ready: number } | undefined;

  private constructor(name: string, lab: RunningLab, timings?: E2eLab['timings']) {
    this.name = name;
    this.lab = lab;
    this.timings = timings;
    this.kc = loadKubeConfig(lab.state.kubeconfig);
    this.client = new HttpKubeClient(this.kc);
  }

  /**
   * A 3-node lab (1 control plane + 2 workers) over E2E_CNI with its proxies in
   * E2E_PROXY_MODE, torn down with this process.
   */
  static async up(
    tag: string,
    nodes = 3,
    timeoutMs = 180_000,
    opts: {
      ipFamily?: LabIpFamily;
      podNetwork?: LabPodNetwork;
      objects?: readonly KubeObject[];
    } = {},
  ): Promise<E2eLab> {
    const name = `e2e${tag}${String(process.pid)}`.slice(0, 20);
    // A lab of this very name still up is a leftover of an earlier run whose pid was the same:
    // clear it. Labs of other names (other suites, a user's) are never touched. If labUp fails,
    // it kills the supervisor it started, so a failed start leaves no lab either.
    if (findLab(name)) await labDown(name);
    const podNetwork = opts.podNetwork ?? (opts.ipFamily === 'dual' ? 'kindnet' : E2E_POD_NETWORK);
    const up = await labUp({
      name,
      nodes,
      cni: E2E_CNI,
      proxyMode: E2E_PROXY_MODE,
      lifeline: true,
      // A flannel lab starts three more processes (the agents) and its Pods only once they
      // have written subnet.env: on a loaded machine that is a minute more.
      timeoutMs: timeoutMs + (podNetwork.startsWith('flannel') ? 60_000 : 0),
      ipFamily: opts.ipFamily ?? E2E_IP_FAMILY,
      ...(opts.objects === undefined ? {} : { objects: opts.objects }),
      // A lab asked for dual-stack (dual-stack.test.ts) runs on kindnet, the one pod network
      // the lab has with IPv6.
      podNetwork,
    });
    return new E2eLab(name, up, up.timings);
  }

  async down(): Promise<void> {
    await labDown(this.name);
  }

  get nodes(): readonly { name: string; ip: string; netns: string }[] {
    return this.lab.state.plan.nodes;
  }

  /** Creates (or replaces) objects; YAML text or objects. */
  async apply(objects: string | readonly KubeObject[]): Promise<void> {
    const list =
      typeof objects === 'string'
        ? parseAllDocuments(objects)
            .map((d) => d.toJS() as KubeObject | null)
            .filter((o): o is KubeObject => o !== null)
        : objects;
    await applyObjects(this.kc, list);
  }

  async createNamespace(name: string): Promise<void> {
    await this.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }]);
  }

  async deleteObject(
    kind: 'Pod' | 'Service' | 'Deployment' | 'StatefulSet',
    namespace: string,
    name: string,
    gracePeriodSeconds?: number,
  ): Promise<void> {
    try {
      await this.client.delete(kind, namespace, name, {
        ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }),
      });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  async pod(namespace: string, name: string): Promise<Pod | undefined> {
    return this.client.get('Pod', namespace, name);
  }

  /**
   * The node and container pid of the Pod of a DaemonSet (by label selector) on a node, from
   * that node agent's sandbox record (a pid in the lab's PID namespace, for `exec ... kill`).
   */
  async daemonPodPid(namespace: string, selector: string, node: string): Promise<number> {
    const pods = await this.client.list('Pod', { namespace, labelSelector: selector });
    const pod = pods.find((p) => p.spec?.nodeName === node);
    if (pod === undefined) throw new Error(`no Pod ${selector} on ${node}`);
    const key = `${namespace}/${pod.metadata?.name ?? ''}`;
    const dir = join(this.lab.stateDir, 'nodes', node, 'sandboxes');
    for (const f of readdirSync(dir)) {
      const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { key?: string; pid?: number };
      if (r.key === key && r.pid !== undefined) return r.pid;
    }
    throw new Error(`Pod ${key}: no sandbox record with a pid in ${dir}`);
  }

  async service(namespace: string, name: string): Promise<Service | undefined> {
    return this.client.get('Service', namespace, name);
  }

  /** Waits until the Pods are Running and Ready; returns them. */
  async podsReady(namespace: string, names: readonly string[], timeoutMs = 60_000): Promise<Pod[]> {
    return eventually(
      `pods ${names.join(', ')} in ${namespace} to be Ready`,
      async () => {
        const pods = await Promise.all(names.map((n) => this.pod(namespace, n)));
        const ok = pods.every(
          (p) =>
            p?.status?.phase === 'Running' &&
            p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return ok ? (pods as Pod[]) : undefined;
      },
      timeoutMs,
    );
  }

  /** A Pod's IP, asserted to be in the lab's pod network. */
  async podIP(namespace: string, name: string): Promise<string> {
    const ip = (await this.pod(namespace, name))?.status?.podIP ?? '';
    assert.match(ip, /^10\.244\./, `${namespace}/${name} podIP`);
    return ip;
  }

  /** A Service that must exist. */
  async mustService(namespace: string, name: string): Promise<Service> {
    const s = await this.service(namespace, name);
    assert.ok(s, `${namespace}/${name} exists`);
    return s;
  }

  /** Waits until a Service has exactly `n` ready endpoints. */
  async waitEndpoints(namespace: string, name: string, n: number): Promise<void> {
    await eventually(`${namespace}/${name} to have ${String(n)} ready endpoints`, async () =>
      (await this.endpoints(namespace, name)).length === n ? true : undefined,
    );
  }

  /** Ready endpoint addresses of a Service, from its EndpointSlices. */
  async endpoints(namespace: string, service: string): Promise<string[]> {
    const slices = await this.client.list('EndpointSlice', {
      namespace,
      labelSelector: `kubernetes.io/service-name=${service}`,
    });
    return slices
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready !== false)
      .flatMap((e) => e.addresses)
      .sort();
  }

  /** Runs argv in a node or Pod (`namespace/name`) namespace. */
  async exec(target: string, argv: readonly string[]): Promise<ExecResult> {
    const netns = await resolveTarget(this.lab, target);
    return inLab(this.lab, netns, argv);
  }

  /**
   * A node's proxy rules in E2E_PROXY_MODE: the nat table of the iptables backend the lab's
   * proxies program (`iptables-legacy-save -t nat` …), or `nft list table ip kube-proxy`.
   */
  async proxyRules(node: string): Promise<string> {
    const argv =
      E2E_PROXY_MODE === 'nftables'
        ? ['nft', 'list', 'table', 'ip', 'kube-proxy']
        : natSaveCommand(this.lab.state.iptablesVariant);
    return (await this.exec(node, argv)).stdout;
  }

  /** HTTP GET from a node or Pod; connection failures are in `code`, not thrown. */
  async curl(from: string, url: string, timeoutSeconds = 3): Promise<CurlResult> {
    const r = await this.exec(from, ['curl', '-sS', '-m', String(timeoutSeconds), url]);
    return { code: r.code, body: r.stdout.trim() };
  }

  /** `dig +short` from a node or Pod (with the Pod's search path when `search`). */
  async dig(from: string, args: readonly string[], search = false): Promise<string[]> {
    const r = await this.exec(from, [
      'dig',
      '+short',
      '+time=3',
      '+tries=2',
      ...(search ? ['+search'] : []),
      ...args,
    ]);
    return r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith(';'));
  }

  /**
   * agnhost's /dial from a Pod's netexec server: asks `fromPod` (its IP) to reach host:port
   * over http or udp `tries` times; returns the answers (hostnames) it collected.
   */
  async dial(
    fromPod: { ip: string; port: number },
    protocol: 'http' | 'udp',
    host: string,
    port: number,
    tries = 1,
    request = 'hostname',
  ): Promise<string[]> {
    const url = `http://${fromPod.ip}:${String(fromPod.port)}/dial?request=${request}&protocol=${protocol}&host=${host}&port=${String(port)}&tries=${String(tries)}`;
    const r = await this.exec(this.nodes[0]?.name ?? '', ['curl', '-sS', '-m', '20', url]);
    const parsed = JSON.parse(r.stdout || '{}') as { responses?: string[]; errors?: string[] };
    return parsed.responses ?? [];
  }

  /**
   * Waits until every node's proxy has queued a sync at or after `sinceMs` (epoch ms, e.g. taken
   * just before an API write every proxy watches) and programmed it, so the next check sees
   * the proxies' reaction to that write, not the rules from before it. A write the caller has
   * just seen through the API reaches the proxies' informers a moment later, hence the pause
   * (as in `lab up`): a write may come in several steps, and the proxies must have the last.
   */
  async proxiesSynced(sinceMs: number, timeoutMs = 30_000): Promise<void> {
    await sleep(200);
    for (const n of this.nodes)
      await eventually(
        `the proxy on ${n.name} to program changes since ${new Date(sinceMs).toISOString()}`,
        async () => {
          const r = await this.exec(n.name, [
            'curl',
            '-sf',
            '-m',
            '2',
            'http://127.0.0.1:10249/metrics',
          ]);
          const m =
            /^kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds(?:\{[^}]*\})? (\S+)$/m.exec(
              r.stdout,
            );
          return proxySettled(r.stdout) && Number(m?.[1] ?? 0) * 1000 >= sinceMs - 1;
        },
        timeoutMs,
      );
  }

  /**
   * Waits as `lab up -f` does: nodes Ready, Pods Ready, workloads at their replica counts,
   * every Service's EndpointSlices listing exactly its ready Pods, and every proxy synced.
   */
  async settled(timeoutMs = 120_000): Promise<void> {
    await waitForCluster(this.lab, this.kc, Date.now() + timeoutMs);
  }

  /** The components' states as the supervisor last recorded them (components.json). */
  components(): readonly ComponentStatus[] {
    const list = readComponents(this.lab);
    if (!list) throw new Error(`lab ${this.name}: no components recorded`);
    return list;
  }

  /** One component's recorded state; throws for an unknown name. */
  component(name: string): ComponentStatus {
    const c = this.components().find((x) => x.name === name);
    if (!c) throw new Error(`lab ${this.name}: no component ${name}`);
    return c;
  }

  /**
   * Sends a signal (default SIGKILL) to a running component by the pid the lab recorded for it
   * (in the lab sandbox's PID namespace, so `kill` runs in there); returns that pid.
   */
  async kill(component: string, signal = 'KILL'): Promise<number> {
    const { pid, state } = this.component(component);
    if (state !== 'running' || pid === undefined)
      throw new Error(`lab ${this.name}: ${component} is ${state}, no pid to signal`);
    const r = await inLab(this.lab, this.lab.state.plan.hubNetns, [
      'kill',
      `-${signal}`,
      String(pid),
    ]);
    if (r.code !== 0) throw new Error(`kill -${signal} ${String(pid)}: ${r.stderr.trim()}`);
    return pid;
  }

  /** Restarts a component of the lab (`proxy-NODE`, `agent-NODE`, `controller`, ...). */
  async restart(component: string): Promise<void> {
    await labRestart(this.name, component);
  }
}

/** A Deployment-less Pod running the netexec server (agnhost's `netexec`). */
export function netexecPod(
  namespace: string,
  name: string,
  opts: {
    labels?: Record<string, string>;
    node?: string;
    httpPort?: number;
    udpPort?: number;
    ports?: { name?: string; containerPort: number; protocol?: 'TCP' | 'UDP' }[];
    delayShutdown?: number;
    terminationGracePeriodSeconds?: number;
    readinessPath?: string;
  } = {},
): KubeObject {
  const http = opts.httpPort ?? 8080;
  const args = [
    'netexec',
    `--http-port=${String(http)}`,
    `--udp-port=${String(opts.udpPort ?? 8081)}`,
    ...(opts.delayShutdown === undefined ? [] : [`--delay-shutdown=${String(opts.delayShutdown)}`]),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: opts.labels ?? {} },
    spec: {
      ...(opts.node === undefined ? {} : { nodeName: opts.node }),
      ...(opts.terminationGracePeriodSeconds === undefined
        ? {}
        : { terminationGracePeriodSeconds: opts.terminationGracePeriodSeconds }),
      containers: [
        {
          name: 'agnhost',
          image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
          args,
          ...(opts.ports ? { ports: opts.ports } : {}),
          ...(opts.readinessPath === undefined
            ? {}
            : {
                readinessProbe: {
                  httpGet: { path: opts.readinessPath, port: http },
                  periodSeconds: 1,
                  failureThreshold: 1,
                },
              }),
        },
      ],
    },
  } as KubeObject;
}
