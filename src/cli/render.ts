// `svcnet render`: prints what a full kube-proxy sync would apply for the Services and
// EndpointSlices (nftables mode: and ServiceCIDRs) in manifest files, one section per IP
// family (IPv6 only when some Service has an IPv6 ClusterIP). iptables mode: the
// iptables-restore input, followed (as comment lines) by the chains and jump rules
// kube-proxy ensures outside the restore. nftables mode: the `nft -f` transaction of the
// family's table, as a fresh proxy's first sync writes it. A thin edge: reads files, calls
// the pure model and plan, formats text. Bad input exits 2 with the object and field named.

import type { Command } from 'commander';
import { Option } from 'commander';
import { SvcnetError } from '../errors.js';
import { parseManifests } from '../kube/manifest.js';
import type { ManifestSet } from '../kube/manifest.js';
import {
  DEFAULT_NODE_IP,
  DEFAULT_NODE_NAME,
  describeNode,
  resolveNode,
} from '../kube/node-model.js';
import { quoteArg } from '../netfilter/iptables/render.js';
import {
  defaultKubeProxyConfig,
  defaultProxyConfig,
  parseKubeProxyConfiguration,
  requireBuiltProxyMode,
} from '../proxy/config.js';
import type { KubeProxyConfig } from '../proxy/config.js';
import { DEFAULT_OPTIONS } from '../proxy/iptables/options.js';
import type { IptablesProxierOptions } from '../proxy/iptables/options.js';
import type { IptablesPlan } from '../proxy/iptables/plan.js';
import { planFromObjects } from '../proxy/iptables/plan-objects.js';
import type { NftablesPlan } from '../proxy/nftables/plan.js';
import { planNftablesFromObjects } from '../proxy/nftables/plan-objects.js';
import { renderTransaction } from '../netfilter/nftables/render.js';
import {
  ipvsProxierOptionsFor,
  nftablesProxierOptionsFor,
  proxierOptionsFor,
} from '../proxy/proxier-options.js';
import { BUILT_PROXY_MODES } from '../proxy/config.js';
import { planIpvsFromObjects } from '../proxy/ipvs/plan-objects.js';
import type { IpvsPlan } from '../proxy/ipvs/plan.js';
import { renderIpvsIptables } from '../proxy/ipvs/rules.js';
import {
  renderList as renderIpvsList,
  renderSave as renderIpvsSave,
} from '../netfilter/ipvs/render.js';
import { renderSave as renderIpsetSave } from '../netfilter/ipset/render.js';
import { isServiceCIDR, serviceCIDRsOf } from '../kube/service-cidr.js';
import type { ProxierOptionsConfig, ProxyNode } from '../proxy/proxier-options.js';
import type { ProxyMode } from '../proxy/config.js';
import { parseCIDRSloppy, parseIPSloppy } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import { action, collect, readInput, readSources } from './run.js';

export { DEFAULT_NODE_IP, DEFAULT_NODE_NAME };
/** Pod CIDRs used when neither --cluster-cidr nor --config gives one (kind's and the lab's). */
export const DEFAULT_CLUSTER_CIDRS = ['10.244.0.0/16', 'fd00:10:244::/56'];

/** Output formats: the apply inputs (default), or ipvs mode's `ipvsadm -L -n` listing. */
export const RENDER_FORMATS = ['restore', 'ipvsadm-list'] as const;

export interface RenderOptions {
  readonly mode?: string;
  /** `restore` (default) or `ipvsadm-list` (ipvs mode only). */
  readonly format?: string;
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
  /** The resolved node line (the same one `svcnet trace -f` prints). */
  readonly line: string;
}

function bad(message: string): SvcnetError {
  return new SvcnetError('INVALID_INPUT', message);
}

function pickNode(set: ManifestSet, opts: RenderOptions): NodeContext {
  const n = resolveNode(set.nodes, { name: opts.node, nodeIPs: opts.nodeIp });
  return {
    name: n.name,
    ips: n.nodeIPs,
    zone: n.zone,
    podCIDRs: n.podCIDRs,
    line: describeNode(n),
  };
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

/** The config fields the options read, for `mode`'s section of the file. */
function optionsConfig(
  cfg: KubeProxyConfig,
  mode: ProxyMode,
  node: NodeContext,
  cidrs: readonly string[],
): ProxierOptionsConfig {
  // IPVS mode masquerades as iptables.* configures it, as kube-proxy does.
  const section = mode === 'nftables' ? cfg.nftables : cfg.iptables;
  return {
    ...defaultProxyConfig(node.name),
    clusterCIDRs: cidrs,
    detectLocalMode: cfg.detectLocalMode,
    bridgeInterface: cfg.detectLocal.bridgeInterface,
    interfaceNamePrefix: cfg.detectLocal.interfaceNamePrefix,
    masqueradeBit: section.masqueradeBit,
    masqueradeAll: section.masqueradeAll,
    nodePortAddresses: cfg.nodePortAddresses,
    localhostNodePorts: cfg.iptables.localhostNodePorts,
    syncPeriodMs: cfg.syncPeriodMs,
  };
}

function proxyNodeOfContext(node: NodeContext): ProxyNode {
  return { name: node.name, ips: node.ips, zone: node.zone, podCIDRs: node.podCIDRs };
}

function localAddresses(family: IPFamily, node: NodeContext): string[] {
  return [family === 'IPv4' ? '127.0.0.1' : '::1', ...node.ips];
}

function noteNoDetector(
  cfg: KubeProxyConfig,
  family: IPFamily,
  node: NodeContext,
  detector: { mode: string },
  notes: string[],
): void {
  if (cfg.detectLocalMode === 'NodeCIDR' && detector.mode === 'None')
    notes.push(
      `${family}: detectLocalMode NodeCIDR but Node ${node.name} has no ${family} podCIDR: no local-traffic detection`,
    );
}

/** The proxier options of one family, as the daemon would compute them on this node. */
function optionsFor(
  family: IPFamily,
  cfg: KubeProxyConfig,
  node: NodeContext,
  cidrs: readonly string[],
  notes: string[],
): IptablesProxierOptions {
  const options = proxierOptionsFor(
    optionsConfig(cfg, 'iptables', node, cidrs),
    proxyNodeOfContext(node),
    {
      localAddresses: localAddresses(family, node),
      conntrackTCPLiberal: cfg.conntrack.tcpBeLiberal,
      nfacct: DEFAULT_OPTIONS.nfacct,
    },
    family,
  );
  noteNoDetector(cfg, family, node, options.localDetector, notes);
  return options;
}

function binary(family: IPFamily): string {
  return family === 'IPv4' ? 'iptables' : 'ip6tables';
}

/** The nfacct objects the rules count packets in (`-m nfacct --nfacct-name X`), sorted. */
export function nfacctObjects(ruleText: string): string[] {
  return [...new Set([...ruleText.matchAll(/--nfacct-name (\S+)/g)].map((m) => m[1] ?? ''))]
    .filter((n) => n !== '')
    .sort();
}

function formatSection(family: IPFamily, plan: IptablesPlan): string {
  const bin = binary(family);
  const nfacct = nfacctObjects(plan.text);
  const lines = [
    `# ===== ${family}: input for \`${bin}-restore --noflush --counters\` =====`,
    `# ${plan.numServices} service ports, ${plan.numEndpoints} endpoints; filter ${plan.counts.filterRules} rules, nat ${plan.counts.natRulesTotal} rules`,
    ...(nfacct.length > 0
      ? [
          '# must exist before the restore (the rules count packets in these nfacct objects):',
          ...nfacct.map((n) => `#   nfacct add ${n}`),
        ]
      : []),
    plan.text.trimEnd(),
    `# ===== ${family}: also ensured by kube-proxy outside the restore (full syncs) =====`,
    ...nfacct.map((n) => `#   nfacct add ${n}`),
    ...plan.canaryChains.map((c) => `#   ${bin} -t ${c.table} -N ${c.chain}`),
    ...plan.jumps.map(
      (j) => `#   ${bin} -t ${j.table} -I ${j.sourceChain} ${j.args.map(quoteArg).join(' ')}`,
    ),
  ];
  return lines.join('\n') + '\n';
}

function formatNftSection(plan: NftablesPlan): string {
  const t = `${plan.table.family} ${plan.table.table}`;
  const lines = [
    `# ===== ${plan.family}: transaction for \`nft -f -\` (table ${t}) =====`,
    `# ${plan.numServices} service ports, ${plan.numEndpoints} endpoints; ${plan.counts.operations} operations`,
    ...(plan.skippedServicePorts > 0
      ? [`# ${plan.skippedServicePorts} service ports skipped (see the warnings)`]
      : []),
    renderTransaction(plan.transaction).trimEnd(),
  ];
  return lines.join('\n') + '\n';
}

/** One family's nftables section. */
function nftSection(
  family: IPFamily,
  cfg: KubeProxyConfig,
  node: NodeContext,
  cidrs: readonly string[],
  set: ManifestSet,
  warnings: string[],
): string {
  const options = nftablesProxierOptionsFor(
    optionsConfig(cfg, 'nftables', node, cidrs),
    proxyNodeOfContext(node),
    { localAddresses: localAddresses(family, node) },
    family,
    serviceCIDRsOf(set.others.filter(isServiceCIDR)),
  );
  noteNoDetector(cfg, family, node, options.localDetector, warnings);
  const { plan, warnings: tracked } = planNftablesFromObjects(
    set.services,
    set.endpointSlices,
    options,
    family,
  );
  warnings.push(...tracked.map((w) => `${family}: ${w}`));
  warnings.push(...plan.warnings.map((w) => `${family}: ${w}`));
  return formatNftSection(plan);
}

/** One family's IPVS plan, with the options the daemon would use on this node. */
function ipvsPlanFor(
  family: IPFamily,
  cfg: KubeProxyConfig,
  node: NodeContext,
  cidrs: readonly string[],
  set: ManifestSet,
  warnings: string[],
): IpvsPlan {
  const options = ipvsProxierOptionsFor(
    optionsConfig(cfg, 'ipvs', node, cidrs),
    proxyNodeOfContext(node),
    { localAddresses: localAddresses(family, node) },
    family,
    cfg.ipvs.scheduler,
  );
  noteNoDetector(cfg, family, node, options.localDetector, warnings);
  const { plan, warnings: tracked } = planIpvsFromObjects(
    set.services,
    set.endpointSlices,
    options,
    family,
  );
  warnings.push(...tracked.map((w) => `${family}: ${w}`));
  return plan;
}

/** One family's three IPVS sections, each in the form its tool reads back. */
function formatIpvsSection(plan: IpvsPlan): string {
  const f = plan.family;
  const sets = new Map(plan.ipsets.map((s) => [s.name, s]));
  return [
    `# ===== ${f}: ipvsadm -S -n (for \`ipvsadm -R\`): ${plan.virtualServers.length} virtual server(s) =====`,
    renderIpvsSave(plan.virtualServers).trimEnd(),
    `# ===== ${f}: ipset save (for \`ipset restore\`) =====`,
    renderIpsetSave(sets).trimEnd(),
    `# ===== ${f}: iptables-restore input (for \`${binary(f)}-restore --noflush\`) =====`,
    `# kube-ipvs0 addresses: ${plan.boundAddresses.join(' ') || '(none)'}`,
    renderIpvsIptables(plan.iptables).trimEnd(),
  ]
    .filter((l) => l !== '')
    .join('\n')
    .concat('\n');
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
  if (opts.file.length === 0) throw bad('-f/--filename: at least one manifest file is required');
  let cfg = defaultKubeProxyConfig();
  if (opts.config !== undefined) {
    cfg = parseKubeProxyConfiguration(await readInput(opts.config), opts.config);
  }
  // --mode wins over the file's mode, as kube-proxy's flags do; a mode not built is an error.
  const mode = requireBuiltProxyMode(
    opts.mode ?? cfg.mode,
    opts.mode !== undefined ? '--mode' : `${opts.config ?? ''}: mode`,
    [...BUILT_PROXY_MODES, 'ipvs'],
  );
  const format = opts.format ?? 'restore';
  if (!(RENDER_FORMATS as readonly string[]).includes(format))
    throw bad(
      `--format: must be one of ${RENDER_FORMATS.join(', ')}, got ${JSON.stringify(format)}`,
    );
  if (format === 'ipvsadm-list' && mode !== 'ipvs')
    throw bad(`--format ipvsadm-list: needs --mode ipvs (mode is ${mode})`);
  const set = parseManifests(await readSources(opts.file));
  warnings.push(...set.duplicates);
  const node = pickNode(set, opts);
  const cidrs = clusterCIDRs(opts, cfg, notes);
  const families: IPFamily[] = hasFamily(set, 'IPv6') ? ['IPv4', 'IPv6'] : ['IPv4'];
  if (mode === 'ipvs' && format === 'ipvsadm-list') {
    // What `ipvsadm -L -n` shows once applied: one listing, both families.
    const plans = families.map((f) => ipvsPlanFor(f, cfg, node, cidrs, set, warnings));
    // Destination lines end in spaces (ipvsadm's layout): only the final newline goes.
    return renderIpvsList(plans.flatMap((p) => p.virtualServers)).replace(/\n$/, '');
  }
  const header = [
    `# svcnet render --mode ${mode}: what a full kube-proxy sync would apply on ${node.name}`,
    `# ${node.line}`,
    `# ${notes.join('; ')}`,
  ];
  const sections = families.map((family) => {
    if (mode === 'nftables') return nftSection(family, cfg, node, cidrs, set, warnings);
    if (mode === 'ipvs')
      return formatIpvsSection(ipvsPlanFor(family, cfg, node, cidrs, set, warnings));
    const options = optionsFor(family, cfg, node, cidrs, warnings);
    const { plan } = planFromObjects(set.services, set.endpointSlices, options, family);
    warnings.push(...plan.warnings.map((w) => `${family}: ${w}`));
    return formatSection(family, plan);
  });
  return [...header, ...sections].join('\n');
}

interface RenderFlags {
  readonly mode?: string;
  readonly format?: string;
  readonly proxyMode?: string;
  readonly filename?: readonly string[];
  readonly file?: readonly string[];
  readonly node?: string;
  readonly nodeIp?: readonly string[];
  readonly clusterCidr?: string;
  readonly config?: string;
}

/** Registers `svcnet render` on the program. */
export function registerRenderCommand(program: Command): void {
  program
    .command('render')
    .description(
      'print the iptables-restore input, nft transaction or ipvsadm/ipset/iptables state a full kube-proxy sync would apply for the given manifests',
    )
    .addOption(
      new Option(
        '--mode <mode>',
        "proxy mode: iptables, nftables or ipvs (default: --config's mode, else iptables)",
      ),
    )
    .addOption(
      new Option(
        '--format <format>',
        'restore: the input of each apply tool (ipvs: ipvsadm -S -n, ipset save, iptables-restore); ipvsadm-list: what `ipvsadm -L -n` would show',
      ).default('restore'),
    )
    .addOption(new Option('--proxy-mode <mode>', 'the same as --mode (kube-proxy spelling)'))
    .option(
      '-f, --filename <file>',
      'manifest file or directory (YAML/JSON, multi-document; - for stdin); repeatable',
      collect,
    )
    .addOption(new Option('--file <file>').hideHelp().argParser(collect))
    .option(
      '--node <name>',
      `node to render for: its Node in the manifests gives IPs, podCIDRs and zone (default: the only Node in the manifests, else ${DEFAULT_NODE_NAME})`,
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
      action('render', async (flags: RenderFlags) => {
        const warnings: string[] = [];
        const files = [...(flags.filename ?? []), ...(flags.file ?? [])];
        if (files.length === 0)
          throw bad('-f/--filename: at least one manifest file or directory is required');
        const out = await runRender(
          {
            file: files,
            ...(flags.mode !== undefined || flags.proxyMode !== undefined
              ? { mode: flags.proxyMode ?? flags.mode }
              : {}),
            ...(flags.format !== undefined ? { format: flags.format } : {}),
            ...(flags.node !== undefined ? { node: flags.node } : {}),
            ...(flags.nodeIp !== undefined ? { nodeIp: flags.nodeIp } : {}),
            ...(flags.clusterCidr !== undefined ? { clusterCidr: flags.clusterCidr } : {}),
            ...(flags.config !== undefined ? { config: flags.config } : {}),
          },
          warnings,
        );
        for (const w of warnings) process.stderr.write(`svcnet render: warning: ${w}\n`);
        return out;
      }),
    );
}
