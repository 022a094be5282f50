// `svcnet render`: prints the iptables-restore input a full kube-proxy sync would apply for
// the Services and EndpointSlices in manifest files, one section per IP family (IPv6 only
// when some Service has an IPv6 ClusterIP), followed (as comment lines) by the chains and
// jump rules kube-proxy ensures outside the restore. A thin edge: reads files, calls the
// pure model and plan, formats text. Bad input exits 2 with the object and field named.

import type { Command } from 'commander';
import { Option } from 'commander';
import { SvcnetError } from '../errors.js';
import { parseManifests } from '../kube/manifest.js';
import type { ManifestSet } from '../kube/manifest.js';
import { LABEL_TOPOLOGY_ZONE } from '../kube/names.js';
import type { Node } from '../kube/types.js';
import { quoteArg } from '../netfilter/iptables/render.js';
import { defaultKubeProxyConfig, parseKubeProxyConfiguration } from '../proxy/config.js';
import type { KubeProxyConfig } from '../proxy/config.js';
import { DEFAULT_OPTIONS, masqueradeMarkFromBit } from '../proxy/iptables/options.js';
import type { IptablesProxierOptions, LocalDetector } from '../proxy/iptables/options.js';
import { planIptables } from '../proxy/iptables/plan.js';
import type { IptablesPlan } from '../proxy/iptables/plan.js';
import { EndpointsChangeTracker } from '../proxy/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../proxy/model/service-change-tracker.js';
import { takeSnapshot } from '../proxy/model/snapshot.js';
import { parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import { action, collect, readSources } from './run.js';

/** Node name used when neither --node nor a single Node manifest names one. */
export const DEFAULT_NODE_NAME = 'node-1';
/** Node IP used when neither --node-ip nor the Node manifest gives one (the lab's first node). */
export const DEFAULT_NODE_IP = '172.18.0.2';
/** Pod CIDRs used when neither --cluster-cidr nor --config gives one (kind's and the lab's). */
export const DEFAULT_CLUSTER_CIDRS = ['10.244.0.0/16', 'fd00:10:244::/56'];

export interface RenderOptions {
  readonly mode?: string;
  readonly file: readonly string[];
  readonly node?: string;
  readonly nodeIp?: readonly string[];
  readonly clusterCidr?: string;
  readonly config?: string;
}

interface NodeContext {
  readonly name: string;
  readonly ips: readonly string[];
  readonly zone: string;
  readonly podCIDRs: readonly string[];
  readonly notes: string[];
}

function bad(message: string): SvcnetError {
  return new SvcnetError('INVALID_INPUT', message);
}

function pickNode(set: ManifestSet, opts: RenderOptions): NodeContext {
  const notes: string[] = [];
  let name = opts.node;
  if (name === undefined) {
    const only = set.nodes.length === 1 ? set.nodes[0]?.metadata?.name : undefined;
    name = only ?? DEFAULT_NODE_NAME;
    notes.push(
      `node ${name}${only === undefined ? ' (default; set with --node)' : ' (the only Node in the manifests)'}`,
    );
  } else notes.push(`node ${name}`);
  const node: Node | undefined = set.nodes.find((n) => n.metadata?.name === name);
  const nodeIPs = (opts.nodeIp ?? []).map((ip, i) => {
    const p = parseIPSloppy(ip);
    if (!p) throw bad(`--node-ip[${i}]: must be an IP address, got ${JSON.stringify(ip)}`);
    return ip;
  });
  let ips = nodeIPs;
  if (ips.length === 0) {
    ips = (node?.status?.addresses ?? [])
      .filter((a) => a.type === 'InternalIP')
      .map((a) => a.address);
    if (ips.length > 0) notes.push(`node IPs ${ips.join(', ')} (from Node ${name})`);
    else {
      ips = [DEFAULT_NODE_IP];
      notes.push(`node IP ${DEFAULT_NODE_IP} (default; set with --node-ip)`);
    }
  } else notes.push(`node IPs ${ips.join(', ')}`);
  const podCIDRs =
    node?.spec?.podCIDRs ?? (node?.spec?.podCIDR !== undefined ? [node.spec.podCIDR] : []);
  return { name, ips, zone: node?.metadata?.labels?.[LABEL_TOPOLOGY_ZONE] ?? '', podCIDRs, notes };
}

function clusterCIDRs(opts: RenderOptions, cfg: KubeProxyConfig, notes: string[]): string[] {
  if (opts.clusterCidr !== undefined) {
    const parts = opts.clusterCidr.split(',').map((s) => s.trim());
    for (const p of parts)
      if (!parseCIDRSloppy(p))
        throw bad(
          `--cluster-cidr: must be a CIDR (or a comma-separated pair), got ${JSON.stringify(opts.clusterCidr)}`,
        );
    notes.push(`cluster CIDR ${parts.join(', ')}`);
    return parts;
  }
  if (cfg.clusterCIDRs.length > 0) {
    notes.push(`cluster CIDR ${cfg.clusterCIDRs.join(', ')} (from --config)`);
    return [...cfg.clusterCIDRs];
  }
  notes.push(`cluster CIDR ${DEFAULT_CLUSTER_CIDRS.join(', ')} (default; set with --cluster-cidr)`);
  return DEFAULT_CLUSTER_CIDRS;
}

function ofFamily(cidrs: readonly string[], family: IPFamily): string | undefined {
  return cidrs.find((c) => parseCIDRSloppy(c)?.family === family);
}

function detectorFor(
  cfg: KubeProxyConfig,
  cidrs: readonly string[],
  node: NodeContext,
  family: IPFamily,
  notes: string[],
): LocalDetector {
  switch (cfg.detectLocalMode) {
    case 'BridgeInterface':
      return { mode: 'BridgeInterface', interfaceName: cfg.detectLocal.bridgeInterface };
    case 'InterfaceNamePrefix':
      return { mode: 'InterfaceNamePrefix', prefix: cfg.detectLocal.interfaceNamePrefix };
    case 'NodeCIDR': {
      const cidr = ofFamily(node.podCIDRs, family);
      if (cidr === undefined) {
        notes.push(
          `${family}: detectLocalMode NodeCIDR but Node ${node.name} has no ${family} podCIDR: no local-traffic detection`,
        );
        return { mode: 'None' };
      }
      return { mode: 'NodeCIDR', cidr };
    }
    case 'ClusterCIDR': {
      const cidr = ofFamily(cidrs, family);
      return cidr === undefined ? { mode: 'None' } : { mode: 'ClusterCIDR', cidr };
    }
  }
}

function proxierOptions(
  family: IPFamily,
  cfg: KubeProxyConfig,
  node: NodeContext,
  cidrs: readonly string[],
  notes: string[],
): IptablesProxierOptions {
  const nodeIP = node.ips.find((ip) => parseIPSloppy(ip)?.family === family) ?? '';
  return {
    ...DEFAULT_OPTIONS,
    nodeName: node.name,
    nodeIP,
    nodeZone: node.zone,
    localDetector: detectorFor(cfg, cidrs, node, family, notes),
    masqueradeMark: masqueradeMarkFromBit(cfg.iptables.masqueradeBit),
    masqueradeAll: cfg.iptables.masqueradeAll,
    nodePortAddresses: cfg.nodePortAddresses,
    localAddresses: [family === 'IPv4' ? '127.0.0.1' : '::1', ...node.ips],
    localhostNodePorts: cfg.iptables.localhostNodePorts,
    conntrackTCPLiberal: cfg.conntrack.tcpBeLiberal,
    syncPeriodMs: cfg.syncPeriodMs,
  };
}

function planFamily(
  set: ManifestSet,
  family: IPFamily,
  options: IptablesProxierOptions,
): IptablesPlan {
  const services = new ServiceChangeTracker(family);
  const endpoints = new EndpointsChangeTracker(family, options.nodeName);
  for (const s of set.services) services.update(undefined, s);
  for (const s of set.endpointSlices) endpoints.update(undefined, s);
  const snap = takeSnapshot(services, endpoints);
  return planIptables({
    family,
    services: snap.services,
    endpoints: snap.endpoints,
    options,
    changedServices: 'all',
  });
}

function binary(family: IPFamily): string {
  return family === 'IPv4' ? 'iptables' : 'ip6tables';
}

function formatSection(family: IPFamily, plan: IptablesPlan): string {
  const bin = binary(family);
  const lines = [
    `# ===== ${family}: input for \`${bin}-restore --noflush --counters\` =====`,
    `# ${plan.numServices} service ports, ${plan.numEndpoints} endpoints; filter ${plan.counts.filterRules} rules, nat ${plan.counts.natRulesTotal} rules`,
    plan.text.trimEnd(),
    `# ===== ${family}: also ensured by kube-proxy outside the restore (full syncs) =====`,
    ...plan.canaryChains.map((c) => `#   ${bin} -t ${c.table} -N ${c.chain}`),
    ...plan.jumps.map(
      (j) => `#   ${bin} -t ${j.table} -I ${j.sourceChain} ${j.args.map(quoteArg).join(' ')}`,
    ),
  ];
  return lines.join('\n') + '\n';
}

function hasFamily(set: ManifestSet, family: IPFamily): boolean {
  return set.services.some((s) =>
    [s.spec?.clusterIP ?? '', ...(s.spec?.clusterIPs ?? [])].some(
      (ip) => parseIPSloppy(ip)?.family === family,
    ),
  );
}

/** Everything `svcnet render` prints; stderr notes go to `notes`. Throws INVALID_INPUT on bad input. */
export async function runRender(opts: RenderOptions, warnings: string[]): Promise<string> {
  const notes: string[] = [];
  const mode = opts.mode ?? 'iptables';
  if (mode === 'nftables') throw bad('--mode nftables: not implemented yet (use --mode iptables)');
  if (mode !== 'iptables')
    throw bad(`--mode: must be iptables or nftables, got ${JSON.stringify(mode)}`);
  if (opts.file.length === 0) throw bad('-f/--file: at least one manifest file is required');
  let cfg = defaultKubeProxyConfig();
  if (opts.config !== undefined) {
    const [src] = await readSources([opts.config]);
    cfg = parseKubeProxyConfiguration(src?.text ?? '', opts.config);
  }
  const set = parseManifests(await readSources(opts.file));
  warnings.push(...set.duplicates);
  const node = pickNode(set, opts);
  notes.push(...node.notes);
  const cidrs = clusterCIDRs(opts, cfg, notes);
  const families: IPFamily[] = hasFamily(set, 'IPv6') ? ['IPv4', 'IPv6'] : ['IPv4'];
  const header = [
    `# svcnet render --mode iptables: what a full kube-proxy sync would apply on ${node.name}`,
    `# ${notes.join('; ')}`,
  ];
  const sections = families.map((family) => {
    const plan = planFamily(set, family, proxierOptions(family, cfg, node, cidrs, warnings));
    warnings.push(...plan.warnings.map((w) => `${family}: ${w}`));
    return formatSection(family, plan);
  });
  return [...header, ...sections].join('\n');
}

/** Registers `svcnet render` on the program. */
export function registerRenderCommand(program: Command): void {
  program
    .command('render')
    .description(
      'print the iptables-restore input a full kube-proxy sync would apply for the given manifests',
    )
    .addOption(
      new Option('--mode <mode>', 'proxy mode: iptables (nftables: not implemented yet)').default(
        'iptables',
      ),
    )
    .requiredOption(
      '-f, --file <file>',
      'manifest file (YAML/JSON, multi-document; - for stdin); repeatable',
      collect,
    )
    .option(
      '--node <name>',
      `node to render for (default: the only Node in the manifests, else ${DEFAULT_NODE_NAME})`,
    )
    .option(
      '--node-ip <ip>',
      `node IP, repeatable for dual-stack (default: the Node's InternalIPs, else ${DEFAULT_NODE_IP})`,
      collect,
    )
    .option(
      '--cluster-cidr <cidr>',
      `pod CIDR(s), comma-separated (default: --config's clusterCIDR, else ${DEFAULT_CLUSTER_CIDRS.join(',')})`,
    )
    .option('--config <file>', 'KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) file')
    .action(
      action('render', async (opts: RenderOptions) => {
        const warnings: string[] = [];
        const out = await runRender(opts, warnings);
        for (const w of warnings) process.stderr.write(`svcnet render: warning: ${w}\n`);
        return out;
      }),
    );
}
