// `svcnet lab up|down|status|exec|supervise`: the one-machine cluster (see src/lab/). `up`
// returns once the lab is ready and leaves the supervisor running in its sandbox; `supervise`
// is that supervisor's own entry point (internal, started by `up`). The lab's modules load
// inside each action, after the flags and manifests are checked, so bad input is refused
// without loading the lab and the API server.

import { join } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import pino from 'pino';
import { SvcnetError } from '../errors.js';
import { parseManifests } from '../kube/manifest.js';
import type { KubeObject } from '../kube/types.js';
import { waitForTermination } from '../os/process.js';
import {
  IP_FAMILIES,
  planLab,
  podNetworkOf,
  POD_NETWORKS,
  type LabIpFamily,
  type LabPodNetwork,
} from '../lab/topology.js';
import { DEFAULT_LB_POOL } from '../lab/lb-pool.js';
import { podsPerNodeObjects } from '../lab/pods-per-node.js';
import { action, collect, readSources } from './run.js';
import { daemonAction } from './daemon.js';
import { addUiFlags, runUi, type UiFlags } from './ui.js';

/** The lab's modules, loaded on demand. */
async function labModule(): Promise<typeof import('../lab/lab.js')> {
  return import('../lab/lab.js');
}

const CNI_CHOICES = ['svcnet', 'reference'] as const;
type CniChoice = (typeof CNI_CHOICES)[number];
/** The node proxies' modes (lab/components.ts LAB_PROXY_MODES, without loading the lab). */
const PROXY_MODE_CHOICES = ['iptables', 'nftables'] as const;
type ProxyModeChoice = (typeof PROXY_MODE_CHOICES)[number];

/** `--proxy-mode`, for `up` and the supervisor. */
function proxyModeOption(): Option {
  return new Option('--proxy-mode <mode>', "every node's kube-proxy mode")
    .choices(PROXY_MODE_CHOICES)
    .default('iptables');
}

/** `--lb-pool`, for `up` and the supervisor. */
function lbPoolOption(): Option {
  return new Option(
    '--lb-pool <pool>',
    'addresses for type LoadBalancer Services, CIDR or START-END (IPv4, at most 4096; routed to the nodes by the lab load balancer)',
  ).default(DEFAULT_LB_POOL);
}

/** `--ip-family`, for `up` and the supervisor. */
function ipFamilyOption(): Option {
  return new Option(
    '--ip-family <family>',
    'ipv4, or dual: IPv4 and IPv6 node, Pod and Service addresses (IPv4 first, as kind)',
  )
    .choices(IP_FAMILIES)
    .default('ipv4');
}

/** `--pod-network`, for `up`, the supervisor and the node agents. */
function podNetworkOption(): Option {
  return new Option(
    '--pod-network <network>',
    'how pods reach other nodes: kindnet (node routes on one segment), flannel (VXLAN overlay, nodes on separate segments), flannel-host-gw (flannel routes, one segment), kubenet (cbr0 bridges, the hub routes each podCIDR)',
  )
    .choices(POD_NETWORKS)
    .default('kindnet');
}

/** How this process was started, to start more svcnet processes the same way. */
function selfArgv(): string[] {
  return [process.execPath, ...process.execArgv, process.argv[1] ?? ''];
}

/** The manifests' objects in input order, Namespaces first (they must exist before their contents). */
async function loadObjects(files: readonly string[]): Promise<KubeObject[]> {
  if (files.length === 0) return [];
  const all = parseManifests(await readSources(files)).all;
  return [
    ...all.filter((o) => o.kind === 'Namespace'),
    ...all.filter((o) => o.kind !== 'Namespace'),
  ];
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function describeNodes(plan: ReturnType<typeof planLab>): string {
  const rows = plan.nodes.map(
    (n) =>
      `  ${n.name.padEnd(28)} ${n.role.padEnd(14)} ${[n.ip, n.ip6]
        .filter((a) => a !== undefined)
        .join(',')
        .padEnd(12)} ${[n.podCIDR, n.podCIDR6].filter((a) => a !== undefined).join(',')}`,
  );
  return [`  ${'NODE'.padEnd(28)} ${'ROLE'.padEnd(14)} ${'IP'.padEnd(12)} POD CIDR`, ...rows].join(
    '\n',
  );
}

/** The outside host and the LB pool (absent from the plans of labs started before them). */
function describeOutside(plan: Partial<ReturnType<typeof planLab>>): string[] {
  return plan.outside === undefined || plan.lbPool === undefined
    ? []
    : [
        `outside host ${plan.outside.ip} (svcnet lab exec outside -- CMD); LoadBalancer pool ${plan.lbPool}`,
      ];
}

/** What carries pod traffic between the nodes, for `lab status`. */
function describePodNetwork(plan: ReturnType<typeof planLab>): string {
  switch (podNetworkOf(plan)) {
    case 'kindnet':
      return 'pod network kindnet: nodes share the hub bridge and route the other podCIDRs via their node IPs';
    case 'kubenet':
      return 'pod network kubenet: a cbr0 bridge per node; nodes on isolated hub ports, the hub routes each podCIDR to its node (cloud routes)';
    case 'flannel':
      return 'pod network flannel (vxlan): svcnet flannel on every node, flannel.1 (VNI 1, UDP 8472); nodes on isolated hub ports, pods on cni0';
    case 'flannel-host-gw':
      return "pod network flannel (host-gw): svcnet flannel on every node routes the podCIDRs via the node IPs (one segment, flannel's requirement); pods on cni0";
  }
}

/** `--name`, the option every user-facing subcommand takes. */
function labNameOption(cmd: Command): Command {
  return cmd.option('--name <name>', 'lab name', 'svcnet');
}

export function registerLabCommand(program: Command): void {
  const lab = program
    .command('lab')
    .description('a multi-node cluster in network namespaces on this machine (root)');
  for (const add of [
    addUp,
    addDown,
    addStatus,
    addExec,
    addForward,
    addRestart,
    addKubeconfig,
    addUi,
    addAgent,
    addPodHost,
    addLoadBalancer,
    addSupervise,
  ])
    add(lab);
}

/** `--pods-per-node`'s objects; a bad count is an INVALID_INPUT error (exit 2). */
function checkedPodsPerNode(perNode: number, nodes: number): KubeObject[] {
  try {
    return podsPerNodeObjects(perNode, nodes);
  } catch (e) {
    throw new SvcnetError('INVALID_INPUT', (e as Error).message, { cause: e });
  }
}

function addUp(lab: Command): void {
  labNameOption(lab.command('up'))
    .description('build the lab, apply the manifests, and return when every Pod serves')
    .option('--nodes <n>', 'nodes including the control plane', positiveInt, 3)
    .option(
      '-f, --filename <file>',
      'manifest file, directory or - (stdin) to apply once the cluster is up; checked before anything is built (repeatable)',
      collect,
      [],
    )
    .addOption(
      new Option('--cni <plugin>', 'CNI plugins of the node agents')
        .choices(CNI_CHOICES)
        .default('svcnet'),
    )
    .addOption(proxyModeOption())
    .addOption(lbPoolOption())
    .addOption(ipFamilyOption())
    .addOption(podNetworkOption())
    .option(
      '--pods-per-node <n>',
      'also run Deployment netexec with N agnhost netexec Pods per node, behind Service netexec',
      positiveInt,
    )
    .option('--timeout <seconds>', 'give up after this long', positiveInt, 180)
    .action(
      action(
        'lab up',
        async (o: {
          name: string;
          nodes: number;
          filename: string[];
          cni: CniChoice;
          proxyMode: ProxyModeChoice;
          lbPool: string;
          ipFamily: LabIpFamily;
          podNetwork: LabPodNetwork;
          podsPerNode?: number;
          timeout: number;
        }) => {
          // validate before starting anything
          const workload =
            o.podsPerNode === undefined ? [] : checkedPodsPerNode(o.podsPerNode, o.nodes);
          planLab({
            name: o.name,
            nodes: o.nodes,
            lbPool: o.lbPool,
            ipFamily: o.ipFamily,
            podNetwork: o.podNetwork,
          });
          const objects = [...(await loadObjects(o.filename)), ...workload];
          const up = await (
            await labModule()
          ).labUp({
            name: o.name,
            nodes: o.nodes,
            cni: o.cni,
            proxyMode: o.proxyMode,
            lbPool: o.lbPool,
            ipFamily: o.ipFamily,
            podNetwork: o.podNetwork,
            objects,
            timeoutMs: o.timeout * 1000,
            progress: (m) => process.stderr.write(`${m}\n`),
          });
          const applied = up.applied.map((a) => `${a.ref} ${a.action}`);
          const first = up.state.plan.nodes[0]?.name ?? '';
          return [
            `lab ${o.name} is up in ${(up.timings.ready / 1000).toFixed(1)} s (pod network ${o.podNetwork}, cni ${o.cni}, proxy mode ${o.proxyMode}, supervisor pid ${String(up.unsharePid)})`,
            describeNodes(up.state.plan),
            ...(applied.length > 0 ? ['', ...applied] : []),
            '',
            `export KUBECONFIG=${up.state.kubeconfig ?? ''}   # or: svcnet lab kubeconfig`,
            'kubectl get pods -A -o wide',
            `svcnet lab exec ${first} -- ip route   # a command on a node (or a pod: [namespace/]name)`,
            `svcnet lab exec outside -- curl ${up.state.plan.nodes[0]?.ip ?? ''}:NODEPORT   # a client that is not a node (LoadBalancer pool ${up.state.plan.lbPool})`,
            'svcnet lab down                  # remove everything',
          ].join('\n');
        },
      ),
    );
}

function addDown(lab: Command): void {
  labNameOption(
    lab.command('down').description('stop the lab and remove everything it created'),
  ).action(
    action('lab down', async (o: { name: string }) =>
      (await (await labModule()).labDown(o.name))
        ? `lab ${o.name} removed`
        : `lab ${o.name} is not running`,
    ),
  );
}

function addStatus(lab: Command): void {
  labNameOption(
    lab
      .command('status')
      .description('show the lab, its nodes and its components (exits 1 while one is not running)'),
  ).action(
    action('lab status', async (o: { name: string }) => {
      const mod = await labModule();
      const running = mod.findLab(o.name);
      if (!running) {
        process.exitCode = 1;
        return `lab ${o.name} is not running`;
      }
      const st = running.state;
      const components = mod.readComponents(running);
      const table = components ? mod.describeComponents(components, Date.now()) : undefined;
      // The proxies are kube-system/kube-proxy DaemonSet Pods: listed from the API.
      const proxies = st.status === 'ready' ? await mod.describeLabProxies(running) : undefined;
      const down = [...(table?.down ?? []), ...(proxies?.down ?? [])];
      // Like a failing readiness check: a component restarting or in its back-off is an outage.
      if (st.status !== 'ready' || !table || down.length > 0) process.exitCode = 1;
      return [
        `lab ${o.name}: ${st.status} since ${st.readyAt ?? st.startedAt} (pod network ${podNetworkOf(st.plan)}, cni ${st.cni}, proxy mode ${st.proxyMode ?? 'iptables'}, supervisor pid ${String(running.unsharePid)})`,
        describePodNetwork(st.plan),
        ...(st.apiServer ? [`API server ${st.apiServer}, kubeconfig ${st.kubeconfig ?? ''}`] : []),
        `logs ${join(running.stateDir, 'logs')}`,
        describeNodes(st.plan),
        ...describeOutside(st.plan),
        ...(table ? [table.text] : ['components: not recorded yet']),
        ...(proxies ? [proxies.text] : []),
        ...(down.length > 0 ? [`not running: ${down.join(', ')}`] : []),
      ].join('\n');
    }),
  );
}

function addExec(lab: Command): void {
  labNameOption(
    lab
      .command('exec')
      .description(
        'run a command inside a node, a pod, or the outside host of the lab: svcnet lab exec TARGET -- CMD...',
      )
      .argument(
        '<target>',
        'node name, pod ([namespace/]name), or outside (a client that is not a node)',
      )
      .argument('[cmd...]', 'command and arguments'),
  ).action(
    action('lab exec', async (target: string, cmd: string[], o: { name: string }) => {
      process.exitCode = await (await labModule()).labExec(o.name, target, cmd);
      return undefined;
    }),
  );
}

function addForward(lab: Command): void {
  lab
    .command('forward', { hidden: true })
    .description('internal: bridge a unix socket to a TCP address (the lab API endpoint)')
    .requiredOption('--listen-unix <path>')
    .requiredOption('--to <host:port>')
    .action(
      action('lab forward', async (o: { listenUnix: string; to: string }) => {
        const m = /^(.*):(\d+)$/.exec(o.to);
        if (!m)
          throw new InvalidArgumentError(`--to: must be HOST:PORT, got ${JSON.stringify(o.to)}`);
        const { startForwarder } = await import('../lab/forward.js');
        const fwd = await startForwarder(
          { path: o.listenUnix },
          { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]) },
        );
        await waitForTermination();
        await fwd.close();
        return undefined;
      }),
    );
}

function addRestart(lab: Command): void {
  labNameOption(
    lab
      .command('restart')
      .description(
        'restart one lab component: agent-NODE, controller, apiserver; proxy-NODE (or proxy) deletes the kube-proxy Pod for its DaemonSet to replace',
      )
      .argument('<component>', 'component name, as in the lab logs folder'),
  ).action(
    action('lab restart', async (component: string, o: { name: string }) =>
      (await labModule()).labRestart(o.name, component),
    ),
  );
}

function addKubeconfig(lab: Command): void {
  labNameOption(
    lab
      .command('kubeconfig')
      .description("print the kubeconfig of the lab's API server (for kubectl on this machine)"),
  ).action(
    action('lab kubeconfig', async (o: { name: string }) => {
      const running = (await labModule()).findLab(o.name);
      if (!running) throw new SvcnetError('NOT_FOUND', `lab ${o.name} is not running`);
      return (await labModule()).labKubeconfigText(running).trimEnd();
    }),
  );
}

function addUi(lab: Command): void {
  labNameOption(
    addUiFlags(
      lab
        .command('ui')
        .description(
          "serve the svcnet ui page for the lab: its objects, each node's live rules (iptables-save or nft list ruleset inside the node) and traces",
        ),
    ),
  ).action(
    daemonAction('lab ui', async (flags: UiFlags & { name: string }) => {
      const m = await labModule();
      const running = m.findLab(flags.name);
      if (!running) throw new SvcnetError('NOT_FOUND', `lab ${flags.name} is not running`);
      // Throws naming the lab when it has no API server (yet) or a stale kubeconfig.
      m.labKubeconfigText(running);
      const kubeconfig = running.state.kubeconfig ?? '';
      const { rulesSaveCommand } = await import('../lab/iptables-variant.js');
      // Each request reads the node's kernel state now, through the running lab.
      const live = async (node: string): Promise<string | undefined> => {
        const lab = m.findLab(flags.name);
        const n = lab?.state.plan.nodes.find((x) => x.name === node);
        if (lab === undefined || n === undefined) return undefined;
        const argv =
          lab.state.proxyMode === 'nftables'
            ? ['nft', 'list', 'ruleset']
            : rulesSaveCommand(lab.state.iptablesVariant);
        const r = await m.inLab(lab, n.netns, argv);
        if (r.code !== 0)
          throw new SvcnetError('EXEC_FAILED', `${argv.join(' ')} on ${node}: ${r.stderr.trim()}`);
        return r.stdout;
      };
      // And its routes, neighbours, FDB and links, for the route each trace hop takes.
      const { collectRoutingDump } = await import('../trace/routes/collect.js');
      const liveRoutes = async (node: string): Promise<string | undefined> => {
        const lab = m.findLab(flags.name);
        const n = lab?.state.plan.nodes.find((x) => x.name === node);
        if (lab === undefined || n === undefined) return undefined;
        return collectRoutingDump((argv) => m.inLab(lab, n.netns, argv), node);
      };
      await runUi({ ...flags, kubeconfig }, live, liveRoutes);
    }),
  );
}

function addAgent(lab: Command): void {
  lab
    .command('agent', { hidden: true })
    .description("internal: a lab node's agent (its kubelet), run inside the node namespace")
    .requiredOption('--kubeconfig <file>')
    .requiredOption('--node <name>')
    .requiredOption('--node-ip <ips>', 'the node address, or IPv4,IPv6 for dual-stack')
    .requiredOption('--pod-cidr <cidrs>', "the node's pod range, or IPv4,IPv6 for dual-stack")
    .addOption(new Option('--role <role>').choices(['control-plane', 'worker']).default('worker'))
    .addOption(new Option('--cni <plugin>').choices(CNI_CHOICES).default('svcnet'))
    .requiredOption('--cni-bin-dir <dir>')
    .requiredOption('--cluster-dns <ip>')
    .option('--cluster-domain <domain>', 'cluster domain', 'cluster.local')
    .requiredOption('--state-dir <dir>')
    .addOption(podNetworkOption())
    .addOption(
      new Option(
        '--iptables-variant <variant>',
        "backend of the kubelet's hint and canary chains (default: plain iptables)",
      ).choices(['legacy', 'nft']),
    )
    .action(
      action(
        'lab agent',
        async (o: {
          kubeconfig: string;
          node: string;
          nodeIp: string;
          podCidr: string;
          role: 'control-plane' | 'worker';
          cni: CniChoice;
          cniBinDir: string;
          clusterDns: string;
          clusterDomain: string;
          stateDir: string;
          podNetwork: LabPodNetwork;
          iptablesVariant?: 'legacy' | 'nft';
        }) => {
          const { runLabAgent } = await import('../lab/node-agent-main.js');
          await runLabAgent(
            {
              kubeconfig: o.kubeconfig,
              node: o.node,
              nodeIPs: o.nodeIp.split(','),
              podCIDRs: o.podCidr.split(','),
              role: o.role,
              cni: o.cni,
              cniBinDir: o.cniBinDir,
              podNetwork: o.podNetwork,
              clusterDNS: o.clusterDns,
              clusterDomain: o.clusterDomain,
              stateDir: o.stateDir,
              ...(o.iptablesVariant === undefined ? {} : { iptablesVariant: o.iptablesVariant }),
              self: selfArgv(),
              log: pino({ base: { component: 'lab-agent', node: o.node } }, pino.destination(2)),
            },
            waitForTermination(),
          );
          // The Pods' server processes stay (like containers over a kubelet restart); their
          // handles must not keep the agent itself alive.
          process.exit(process.exitCode ?? 0);
        },
      ),
    );
}

function addPodHost(lab: Command): void {
  lab
    .command('pod-host', { hidden: true })
    .description(
      "internal: serves the netexec containers of a lab node's Pods from one process, each inside its Pod's namespace",
    )
    .requiredOption('--socket <path>', 'the unix socket the node agent talks to')
    .option('--node <name>', 'the node (for the log)')
    .action(
      action('lab pod-host', async (o: { socket: string; node?: string }) => {
        const { runPodHost } = await import('../lab/pod-host-main.js');
        await runPodHost(
          o.socket,
          pino({ base: { component: 'pod-host', node: o.node } }, pino.destination(2)),
          waitForTermination(),
        );
        process.exit(0);
      }),
    );
}

function addLoadBalancer(lab: Command): void {
  lab
    .command('lb', { hidden: true })
    .description(
      "internal: the lab's load balancer (LB IPs from the pool, routed to the nodes), run in the hub",
    )
    .requiredOption('--kubeconfig <file>')
    .addOption(lbPoolOption())
    .option('--dev <name>', 'the lab bridge', 'br0')
    .action(
      action('lab lb', async (o: { kubeconfig: string; lbPool: string; dev: string }) => {
        const { runLabLoadBalancer } = await import('../lab/lb-main.js');
        await runLabLoadBalancer({
          kubeconfig: o.kubeconfig,
          pool: o.lbPool,
          dev: o.dev,
          log: pino({ base: { component: 'lab-lb' } }, pino.destination(2)),
        });
        return undefined;
      }),
    );
}

function addSupervise(lab: Command): void {
  lab
    .command('supervise', { hidden: true })
    .description('internal: the lab supervisor (PID 1 of the lab sandbox)')
    .requiredOption('--name <name>')
    .requiredOption('--run-id <id>', 'the run id `lab up` wrote to run.json in --state-dir')
    .requiredOption('--nodes <n>', 'nodes', positiveInt)
    .addOption(new Option('--cni <plugin>').choices(CNI_CHOICES).default('svcnet'))
    .addOption(proxyModeOption())
    .addOption(lbPoolOption())
    .addOption(ipFamilyOption())
    .addOption(podNetworkOption())
    .requiredOption('--cni-bin-dir <dir>')
    .requiredOption('--state-dir <dir>')
    .option('--lifeline', 'tear down when stdin closes')
    .action(
      action(
        'lab supervise',
        async (o: {
          name: string;
          runId: string;
          nodes: number;
          cni: CniChoice;
          proxyMode: ProxyModeChoice;
          lbPool: string;
          ipFamily: LabIpFamily;
          podNetwork: LabPodNetwork;
          cniBinDir: string;
          stateDir: string;
          lifeline?: boolean;
        }) => {
          const { superviseLab } = await import('../lab/supervisor.js');
          const { RealExecer } = await import('../os/exec.js');
          const { RealIp } = await import('../os/ip.js');
          const { throwawayNetnsExecer, withLabIptablesVariant } =
            await import('../lab/iptables-variant.js');
          const execer = new RealExecer();
          const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
          await superviseLab({
            runId: o.runId,
            lifeline: o.lifeline === true,
            plan: planLab({
              name: o.name,
              nodes: o.nodes,
              lbPool: o.lbPool,
              ipFamily: o.ipFamily,
              podNetwork: o.podNetwork,
            }),
            stateDir: o.stateDir,
            execer,
            ip: new RealIp(execer),
            components: await withLabIptablesVariant(
              { cni: o.cni, cniBinDir: o.cniBinDir, proxyMode: o.proxyMode },
              throwawayNetnsExecer(execer),
              log,
            ),
            self: selfArgv(),
            log,
          });
          return undefined;
        },
      ),
    );
}
