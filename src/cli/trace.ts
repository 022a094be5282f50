// `svcnet trace`: explains where one packet goes through a node's iptables or nftables rules
// — every possible outcome with its probability, the rules on each path and the Kubernetes
// objects behind them. Rules come from a file (`--rules`: our render output, any
// `iptables-save`, an `nft list ruleset` dump or `nft -f` input, `-` for stdin; the format is
// detected unless `--rules-format` says) or from manifests rendered by our iptables or
// nftables planner (`-f`, `--proxy-mode`). Each outcome that sends the packet on to an
// endpoint gets its hop: from the node's routing dumps (`--routes`: `ip route`, `ip neigh`,
// `bridge fdb show`, `ip -d link show`), else from the manifests' Nodes and EndpointSlices.
// Bad input exits 2 naming the file, line or option.

import type { Command } from 'commander';
import { Option } from 'commander';
import { ValidationError, SvcnetError, type FieldError } from '../errors.js';
import { parseManifests, type ManifestSet } from '../kube/manifest.js';
import type { IptablesDocument } from '../netfilter/iptables/model.js';
import { parseDocument } from '../netfilter/iptables/parse.js';
import { formatTraceText, traceToJSON } from '../trace/format.js';
import { objectHop, routesHop, withHops, type HopNode, type OutcomeHop } from '../trace/hop.js';
import {
  DUMP_COMMANDS,
  mergeRoutingStates,
  parseRoutingDump,
  type RoutingState,
} from '../trace/routes/dump.js';
import { rulesFromManifests } from '../trace/from-manifests.js';
import { selectFamily } from '../trace/hooks.js';
import {
  CT_STATES,
  defaultContext,
  inferOrigin,
  parseAddressList,
  parseCIDRList,
  parsePacketSpec,
  type CtState,
  type Origin,
  type RecentEntry,
} from '../trace/packet.js';
import { nameEndpoints, tracePacket } from '../trace/walk.js';
import type { Ruleset } from '../netfilter/nftables/model.js';
import { nftRulesFromManifests } from '../trace/nft/from-manifests.js';
import { detectRulesFormat, loadNftRules, type RulesFormat } from '../trace/nft/input.js';
import { traceNftPacket } from '../trace/nft/trace.js';
import { looksLikeIpvsBundle, parseIpvsBundle, serviceNamesOf } from '../trace/ipvs/bundle.js';
import { ipvsRulesFromManifests } from '../trace/ipvs/from-manifests.js';
import type { IpvsTraceState } from '../trace/ipvs/step.js';
import { parseCIDR } from '../util/ip.js';
import {
  DEFAULT_NODE_IP,
  DEFAULT_NODE_NAME,
  describeNode,
  nodeHostIPs,
  nodeIPOf,
  resolveNode,
  type ResolvedNode,
} from '../kube/node-model.js';
import { OUTSIDE_IP } from '../lab/topology.js';
import { DEFAULT_CLUSTER_CIDRS } from './render.js';
import { action, collect, readInput, readSources } from './run.js';

export interface TraceFlags {
  rules?: string;
  /** Routing dumps of the node whose rules are walked (`--routes`, repeatable). */
  routes?: string[];
  filename?: string[];
  /** Required unless `from` is outside (then the lab's outside host by default). */
  src?: string;
  /** `--from`: where the packet comes from (the --from-* flags in one, plus `outside`). */
  from?: FromChoice;
  dst: string;
  sport?: string;
  fromPod?: boolean;
  fromNode?: boolean;
  fromExternal?: boolean;
  nodeIp?: string[];
  podCidr?: string[];
  clusterCidr?: string;
  node?: string;
  inIface?: string;
  outIface?: string;
  ctState: string;
  mark?: string;
  affinity?: string[];
  mode: string;
  proxyMode?: string;
  rulesFormat?: string;
  assumeHooks: boolean;
  json?: boolean;
  verbose?: boolean;
  brief?: boolean;
}

/** `--from` values: the origins, and the lab's outside host (an external client). */
const FROM_CHOICES = ['pod', 'node', 'external', 'outside'] as const;
type FromChoice = (typeof FROM_CHOICES)[number];

/** The source address: --src, else the lab's outside host for `--from outside`. */
function sourceOf(flags: TraceFlags, errors: FieldError[]): string {
  if (flags.src !== undefined) return flags.src;
  if (flags.from === 'outside') return OUTSIDE_IP;
  errors.push({
    object: 'trace',
    field: '--src',
    message: 'required (only --from outside implies one: the lab outside host)',
  });
  return '';
}

function parseAffinity(values: readonly string[], errors: FieldError[]): RecentEntry[] {
  const out: RecentEntry[] = [];
  values.forEach((v, i) => {
    const [name = '', age] = v.split(':');
    const ageSeconds = age === undefined ? 0 : Number(age);
    if (name === '' || !Number.isFinite(ageSeconds) || ageSeconds < 0)
      errors.push({
        object: 'trace',
        field: `--affinity[${i}]`,
        message: `expected RECENT-LIST-NAME[:SECONDS-AGO], got ${JSON.stringify(v)}`,
      });
    else out.push({ name, ageSeconds });
  });
  return out;
}

/** Endpoint address → `Kind ns/name` from the EndpointSlices' targetRefs. */
function endpointNames(set: ManifestSet): Map<string, string> {
  const names = new Map<string, string>();
  for (const slice of set.endpointSlices)
    for (const ep of slice.endpoints ?? []) {
      const ref = ep.targetRef;
      if (ref?.name === undefined) continue;
      const ns = ref.namespace ?? slice.metadata?.namespace;
      for (const a of ep.addresses)
        names.set(a, `${ref.kind ?? 'Pod'} ${ns !== undefined ? `${ns}/` : ''}${ref.name}`);
    }
  return names;
}

type LoadedRules =
  | {
      readonly format: 'iptables';
      readonly doc: IptablesDocument;
      readonly names: Map<string, string>;
      /** IPVS mode: the ipsets and virtual servers besides the iptables rules. */
      readonly ipvs?: IpvsTraceState;
    }
  | { readonly format: 'nft'; readonly ruleset: Ruleset; readonly names: Map<string, string> };

/** The dataplane the rules are for: `--proxy-mode`, or `--mode iptables|nftables|ipvs`. */
function proxyModeOf(flags: TraceFlags): 'iptables' | 'nftables' | 'ipvs' | undefined {
  const m = flags.proxyMode ?? flags.mode;
  return m === 'iptables' || m === 'nftables' || m === 'ipvs' ? m : undefined;
}

/**
 * `--rules-format`, else what `--proxy-mode` implies, else detected from the text: ipvsadm or
 * ipset lines make an IPVS bundle.
 */
function rulesFormatOf(flags: TraceFlags, text: string): RulesFormat | 'ipvs' {
  const f = flags.rulesFormat;
  if (f === 'iptables' || f === 'nft' || f === 'ipvs') return f;
  const mode = proxyModeOf(flags);
  if (mode !== undefined) return mode === 'nftables' ? 'nft' : mode;
  const detected = detectRulesFormat(text);
  return detected === 'iptables' && looksLikeIpvsBundle(text) ? 'ipvs' : detected;
}

/** `--rules` text in the format `format`. */
function rulesOfText(
  format: RulesFormat | 'ipvs',
  text: string,
  family: 'IPv4' | 'IPv6',
): LoadedRules {
  if (format === 'nft') return { format: 'nft', ruleset: loadNftRules(text), names: new Map() };
  if (format === 'iptables')
    return { format: 'iptables', doc: selectFamily(parseDocument(text), family), names: new Map() };
  const b = parseIpvsBundle(text);
  return {
    format: 'iptables',
    doc: selectFamily(b.iptables, family),
    names: new Map(),
    ipvs: { ipsets: b.ipsets, ipvs: b.ipvs, serviceNames: serviceNamesOf(b.ipsets) },
  };
}

/** The routing state of the `--routes` files; INVALID_INPUT names the file and line. */
async function loadRoutes(paths: readonly string[]): Promise<RoutingState> {
  const states: RoutingState[] = [];
  for (const path of paths) {
    const text = await readInput(path);
    try {
      states.push(parseRoutingDump(text));
    } catch (e) {
      if (e instanceof SvcnetError)
        throw new SvcnetError(e.code, `--routes ${path}: ${e.message}`, { cause: e });
      throw e;
    }
  }
  return mergeRoutingStates(states);
}

/**
 * Each endpoint's hop: from the routing dumps when given, else from the manifests (the
 * EndpointSlice endpoint's nodeName and that Node), else none.
 */
async function hopSource(
  flags: TraceFlags,
  manifests: ManifestInput | undefined,
): Promise<((address: string) => OutcomeHop | undefined) | undefined> {
  const node = manifests?.node.name ?? flags.node ?? 'the node';
  if (flags.routes !== undefined && flags.routes.length > 0) {
    const state = await loadRoutes(flags.routes);
    return (address) => routesHop(state, node, address);
  }
  if (manifests === undefined) return undefined;
  const nodeOf = new Map<string, string>();
  for (const slice of manifests.set.endpointSlices)
    for (const ep of slice.endpoints ?? [])
      if (ep.nodeName !== undefined) for (const a of ep.addresses) nodeOf.set(a, ep.nodeName);
  const nodes: HopNode[] = manifests.set.nodes.map((n) => ({
    name: n.metadata?.name ?? '',
    addresses: nodeHostIPs(n),
    podCIDRs: n.spec?.podCIDRs ?? (n.spec?.podCIDR !== undefined ? [n.spec.podCIDR] : []),
  }));
  return (address) => {
    const to = nodeOf.get(address);
    return to === undefined
      ? undefined
      : { source: 'objects', ...objectHop(nodes, node, address, to) };
  };
}

/** The manifests given with -f and the node their rules are rendered for. */
interface ManifestInput {
  readonly set: ManifestSet;
  readonly node: ResolvedNode;
}

async function loadManifests(flags: TraceFlags, files: readonly string[]): Promise<ManifestInput> {
  const set = parseManifests(await readSources(files));
  // The same node model as `svcnet render`, so both commands show the same rules.
  return { set, node: resolveNode(set.nodes, { name: flags.node, nodeIPs: flags.nodeIp }) };
}

async function loadRules(
  flags: TraceFlags,
  family: 'IPv4' | 'IPv6',
  manifests: ManifestInput | undefined,
): Promise<LoadedRules> {
  if (manifests === undefined) {
    const path = flags.rules ?? '-';
    const text = await readInput(path);
    try {
      return rulesOfText(rulesFormatOf(flags, text), text, family);
    } catch (e) {
      if (e instanceof SvcnetError)
        throw new SvcnetError(e.code, `${path}: ${e.message}`, { cause: e });
      throw e;
    }
  }
  const { set, node } = manifests;
  const cidrs = (flags.clusterCidr ?? flags.podCidr?.join(',') ?? DEFAULT_CLUSTER_CIDRS.join(','))
    .split(',')
    .map((c) => c.trim());
  const settings = {
    family,
    nodeName: node.name,
    nodeIP: nodeIPOf(node, family),
    localAddresses: node.nodeIPs,
    clusterCIDR: cidrs.find((c) => parseCIDR(c)?.family === family) ?? '',
  };
  if (proxyModeOf(flags) === 'ipvs') {
    const r = ipvsRulesFromManifests(set, { ...settings, zone: node.zone });
    return { format: 'iptables', doc: r.document, names: endpointNames(set), ipvs: r.ipvs };
  }
  if (proxyModeOf(flags) === 'nftables') {
    const rendered = nftRulesFromManifests(set, { ...settings, zone: node.zone });
    return { format: 'nft', ruleset: rendered.ruleset, names: endpointNames(set) };
  }
  const rendered = rulesFromManifests(set, { ...settings, options: { nodeZone: node.zone } });
  return { format: 'iptables', doc: rendered.document, names: endpointNames(set) };
}

/** Everything `svcnet trace` prints (exported for tests); throws INVALID_INPUT on bad input. */
export async function runTrace(flags: TraceFlags): Promise<string> {
  const errors: FieldError[] = [];
  const collectErrors = <T>(f: () => T, fallback: T): T => {
    try {
      return f();
    } catch (e) {
      if (e instanceof ValidationError) errors.push(...e.errors);
      else throw e;
      return fallback;
    }
  };
  const src = sourceOf(flags, errors);
  const packet = collectErrors(
    () =>
      parsePacketSpec({
        src,
        dst: flags.dst,
        ...(flags.sport !== undefined ? { srcPort: flags.sport } : {}),
      }),
    undefined,
  );
  const files = flags.filename ?? [];
  const fromManifests = files.length > 0;
  if ((flags.rules === undefined) === !fromManifests)
    errors.push({
      object: 'trace',
      field: '--rules/-f',
      message: 'give exactly one of --rules FILE or -f FILE...',
    });
  const manifests =
    fromManifests && flags.rules === undefined
      ? await loadManifests(flags, files).catch((e: unknown) => {
          if (e instanceof ValidationError) errors.push(...e.errors);
          else throw e;
          return undefined;
        })
      : undefined;
  const nodeIPs = collectErrors(
    () =>
      parseAddressList(
        '--node-ip',
        manifests?.node.nodeIPs ?? (fromManifests ? [] : (flags.nodeIp ?? [])),
      ),
    [],
  );
  const podCIDRs = collectErrors(
    () =>
      parseCIDRList('--pod-cidr', [
        ...(flags.podCidr ?? []),
        ...(flags.clusterCidr?.split(',').map((c) => c.trim()) ?? []),
        ...(fromManifests && flags.podCidr === undefined && flags.clusterCidr === undefined
          ? DEFAULT_CLUSTER_CIDRS
          : []),
      ]),
    [],
  );
  const recent = parseAffinity(flags.affinity ?? [], errors);
  const ctState = flags.ctState.toUpperCase();
  if (!(CT_STATES as readonly string[]).includes(ctState))
    errors.push({
      object: 'trace',
      field: '--ct-state',
      message: `must be one of ${CT_STATES.join(', ')}, got ${JSON.stringify(flags.ctState)}`,
    });
  let mark = 0n;
  if (flags.mark !== undefined) {
    try {
      mark = BigInt(flags.mark);
      if (mark < 0n || mark > 0xffffffffn) throw new RangeError('out of range');
    } catch {
      errors.push({
        object: 'trace',
        field: '--mark',
        message: `expected a 32-bit number (e.g. 0x4000), got ${JSON.stringify(flags.mark)}`,
      });
    }
  }
  const origins = [
    ...new Set(
      [
        flags.fromPod && 'pod',
        flags.fromNode && 'node',
        flags.fromExternal && 'external',
        flags.from === 'outside' ? 'external' : flags.from,
      ].filter((o): o is Origin => typeof o === 'string'),
    ),
  ];
  if (origins.length > 1)
    errors.push({
      object: 'trace',
      field: '--from-*',
      message: 'give at most one origin: --from, --from-pod, --from-node, --from-external',
    });
  if (errors.length > 0 || !packet) throw new ValidationError(errors);

  const rules = await loadRules(flags, packet.src.family, manifests);
  const origin = origins[0] ?? inferOrigin(packet.src, nodeIPs, podCIDRs);
  const ctx = defaultContext(origin, nodeIPs, {
    ctState: ctState as CtState,
    mark,
    recent,
    mode: flags.mode === 'fixture-compatible' ? 'fixture-compatible' : 'kernel',
    ...(flags.inIface !== undefined ? { inInterface: flags.inIface } : {}),
    ...(flags.outIface !== undefined ? { outInterface: flags.outIface } : {}),
  });
  const hopFor = await hopSource(flags, manifests);
  const walked = nameEndpoints(
    rules.format === 'nft'
      ? traceNftPacket(rules.ruleset, packet, ctx)
      : tracePacket(rules.doc, packet, ctx, {
          assumeKubeProxyHooks: flags.assumeHooks,
          ...(rules.ipvs ? { ipvs: rules.ipvs } : {}),
        }),
    rules.names,
  );
  const result = hopFor === undefined ? walked : withHops(walked, hopFor);
  const notes = [...(manifests ? [describeNode(manifests.node)] : []), ...result.notes];
  if (flags.from === 'outside')
    notes.push(
      `from the lab's outside host (${OUTSIDE_IP}, \`svcnet lab exec outside\`): a client that is not a node, arriving from the lab network (loadBalancerSourceRanges and externalTrafficPolicy Local see its own address)`,
    );
  if (nodeIPs.length === 0)
    notes.push(
      'no --node-ip given: only 127.0.0.0/8 counts as a node address (addrtype LOCAL, NodePorts)',
    );
  if (origins.length === 0)
    notes.push(
      `origin inferred from the source address: ${origin} (override with --from or --from-pod/--from-node/--from-external)`,
    );
  const full = { ...result, notes };
  return flags.json
    ? JSON.stringify(traceToJSON(full), null, 2)
    : formatTraceText(full, flags.brief ? 'brief' : flags.verbose ? 'verbose' : 'normal');
}

/** Registers `svcnet trace`. */
export function registerTraceCommand(program: Command): void {
  program
    .command('trace')
    .description(
      "explain a packet's path through a node's iptables, nftables or IPVS rules: every outcome, its probability, the rules and the Service/endpoint behind them",
    )
    .option(
      '--rules <file>',
      'iptables-save output, iptables-restore input, `nft list ruleset` output, `nft -f` input, or an IPVS bundle (`ipvsadm -S -n`, `ipset save` and `iptables-save` text in one file) (- for stdin)',
    )
    .option(
      '--routes <file>',
      `the node's routing state, for the hop to each endpoint (via flannel.1 and VXLAN to the peer, via a node IP, a local bridge, or dropped): the output of ${DUMP_COMMANDS}, in one file with a line \`# COMMAND\` before each dump, or one dump per file (repeatable; - for stdin; see docs/config.md). Without it the hop comes from the manifests' Nodes and EndpointSlices`,
      collect,
    )
    .addOption(
      new Option('--rules-format <format>', 'how to read --rules (auto: detected from the text)')
        .choices(['auto', 'iptables', 'nft', 'ipvs'])
        .default('auto'),
    )
    .option(
      '-f, --filename <file>',
      'Kubernetes manifests (Services, EndpointSlices, Nodes; file, directory or - for stdin) rendered by the iptables, nftables or IPVS planner (repeatable)',
      collect,
    )
    .addOption(
      new Option(
        '--proxy-mode <mode>',
        'the dataplane: with -f, which planner renders the manifests; with --rules, the format (default: iptables, or detected)',
      ).choices(['iptables', 'nftables', 'ipvs']),
    )
    .addOption(new Option('--file <file>').hideHelp().argParser(collect))
    .option('--src <ip>', 'source address of the packet (required unless --from outside)')
    .requiredOption(
      '--dst <ip:port[/proto]>',
      'destination, e.g. 172.30.0.41:80/tcp or [fd00::1]:53/udp',
    )
    .option('--sport <port>', 'source port (default 40000)')
    .addOption(
      new Option(
        '--from <origin>',
        "where the packet comes from: pod, node, external (as the --from-* flags), or outside: the lab's outside host (an external client; --src defaults to its address)",
      ).choices(FROM_CHOICES),
    )
    .option('--from-pod', 'the packet comes from a pod on this node (enters PREROUTING)')
    .option('--from-node', 'the packet comes from a process on the node (enters OUTPUT)')
    .option('--from-external', 'the packet comes from outside the node (enters PREROUTING)')
    .option(
      '--node-ip <ip>',
      `one of the node's own addresses (repeatable); with -f it overrides the Node's InternalIPs (default ${DEFAULT_NODE_IP} when the manifests have no such Node)`,
      collect,
    )
    .option(
      '--pod-cidr <cidr>',
      'pod CIDR, to infer the origin (repeatable); with -f also the cluster CIDR unless --cluster-cidr is given',
      collect,
    )
    .option(
      '--cluster-cidr <cidr>',
      `with -f: kube-proxy's cluster CIDR, a CIDR or comma-separated dual-stack pair (default: --pod-cidr, else ${DEFAULT_CLUSTER_CIDRS.join(',')})`,
    )
    .option(
      '--node <name>',
      `with -f: the node whose rules to render; its Node in the manifests gives IPs, podCIDRs and zone (default: the only Node in the manifests, else ${DEFAULT_NODE_NAME})`,
    )
    .option('--in-iface <name>', 'interface the packet arrives on (for -i matches)')
    .option('--out-iface <name>', 'interface the packet leaves by (for -o matches)')
    .option('--ct-state <state>', `conntrack state of the packet: ${CT_STATES.join(', ')}`, 'NEW')
    .option('--mark <value>', 'initial packet mark, e.g. 0x0')
    .option(
      '--affinity <name[:seconds]>',
      'existing ClientIP affinity: the source is in this xt_recent list (iptables: KUBE-SEP-…) or affinity set (nftables: affinity-…), last seen SECONDS ago (repeatable)',
      collect,
    )
    .addOption(
      new Option(
        '--mode <mode>',
        'kernel: what netfilter does; fixture-compatible: kube-proxy unit-test tracer semantics; iptables/nftables/ipvs: --proxy-mode with kernel semantics',
      )
        .choices(['kernel', 'fixture-compatible', 'iptables', 'nftables', 'ipvs'])
        .default('kernel'),
    )
    .option(
      '--no-assume-hooks',
      "iptables: do not add kube-proxy's built-in-chain jumps when the input has none",
    )
    .option('--json', 'print JSON instead of the readable tree')
    .option('--brief', 'print only the outcomes, not the rules on their paths')
    .option('--verbose', 'print the rule text of every step, also of jumps where nothing matched')
    .action(
      action('trace', (flags: TraceFlags & { file?: string[] }) =>
        runTrace({ ...flags, filename: [...(flags.filename ?? []), ...(flags.file ?? [])] }),
      ),
    );
}
