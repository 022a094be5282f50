// What one Service port contributes to kube-proxy's nftables table (reference §1.2 nft
// column): its chains (service-/local-/external-/firewall-, and endpoint- chains with
// affinity sets under ClientIP affinity) with their rules, and its elements in the shared
// sets and maps (cluster-ips, service-ips, service-nodeports, firewall-ips, no-endpoint-*,
// hairpin-connections). The plan adds chains only for changed ports and diffs elements
// (plan-store.ts). A port the kernel would refuse (bad port, name nft cannot parse, bad
// affinity timeout) yields nothing but a warning, so it never breaks the transaction. Pure.

import type {
  NftChain,
  NftElement,
  NftRule,
  NftSet,
  Statement,
} from '../../netfilter/nftables/model.js';
import type { IPFamily } from '../../util/ip.js';
import type { EndpointInfo } from '../model/endpoint.js';
import type { ServicePortInfo } from '../model/service-port.js';
import {
  decideTrafficPolicy,
  policyChains,
  sourceRangesAllowNode,
} from '../model/traffic-policy.js';
import type { TrafficPolicyDecision } from '../model/traffic-policy.js';
import {
  CLUSTER_IPS_SET,
  COMMENT_MASQUERADE,
  COMMENT_MASQ_LOCAL,
  COMMENT_SHORT_CIRCUIT_LOCAL,
  COMMENT_SHORT_CIRCUIT_POD,
  FIREWALL_IPS_MAP,
  HAIRPIN_CONNECTIONS_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  endpointNames,
  servicePortChainNames,
  servicePortName,
  truncateComment,
} from './names.js';
import type { ServicePortChainNames } from './names.js';
import type { NftablesProxierOptions } from './options.js';
import {
  TableObjects,
  addrType,
  anonset,
  dnatTo,
  dnatToNumgenMap,
  fibLocal,
  goto,
  ifLocal,
  ipX,
  markOr,
  match,
  numgenVmap,
  saddr,
  setref,
  verdict,
} from './statements.js';
import type { IpX } from './statements.js';

/** What planning a port needs besides the port itself. */
export interface NftServiceContext {
  readonly family: IPFamily;
  readonly options: NftablesProxierOptions;
  readonly table: TableObjects;
}

export interface NftChainPlan {
  readonly chain: NftChain;
  readonly rules: readonly NftRule[];
}

/** Everything one Service port contributes (see the file header). */
export interface NftPortFragment {
  readonly key: string;
  readonly serviceKey: string;
  /** The inputs it was planned from (a later plan reuses it when they are the same objects). */
  readonly source: { readonly sp: ServicePortInfo; readonly endpoints: readonly EndpointInfo[] };
  /** Chains in creation order (jump targets before their users do not matter: all are added first). */
  readonly chains: readonly NftChainPlan[];
  readonly affinitySets: readonly NftSet[];
  readonly elements: readonly NftElement[];
  readonly numEndpoints: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
  /** Why the port (or some of its endpoints) was left out; `skipped` when nothing was written. */
  readonly warnings: readonly string[];
  readonly skipped: boolean;
}

const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
/** What nft accepts unquoted in a chain name part (and kube-proxy's API objects allow). */
const NAME_PART = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*)$/;
/** nft keeps timeouts in milliseconds in 32 bits on old kernels: stay well inside. */
const MAX_AFFINITY_SECONDS = 2_000_000;

function isPort(n: number, allowZero: boolean): boolean {
  return Number.isInteger(n) && n <= 65535 && (n >= 1 || (allowZero && n === 0));
}

/** Why the kernel would refuse this port's objects, or undefined. */
function refusal(sp: ServicePortInfo): string | undefined {
  const n = sp.name;
  if (!NAME_PART.test(n.namespace))
    return `namespace ${JSON.stringify(n.namespace)} is not a valid name`;
  if (!NAME_PART.test(n.name)) return `name ${JSON.stringify(n.name)} is not a valid name`;
  if (n.port !== '' && !NAME_PART.test(n.port))
    return `port name ${JSON.stringify(n.port)} is not a valid name`;
  if (!PROTOCOLS.has(sp.protocol))
    return `protocol ${JSON.stringify(sp.protocol)} is not TCP, UDP or SCTP`;
  if (!isPort(sp.port, false)) return `port must be 1-65535, got ${String(sp.port)}`;
  if (!isPort(sp.nodePort, true)) return `nodePort must be 0-65535, got ${String(sp.nodePort)}`;
  if (sp.sessionAffinity.type === 'ClientIP') {
    const t = sp.sessionAffinity.timeoutSeconds;
    if (!Number.isInteger(t) || t < 1 || t > MAX_AFFINITY_SECONDS)
      return `sessionAffinityConfig.clientIP.timeoutSeconds must be 1-${MAX_AFFINITY_SECONDS}, got ${String(t)}`;
  }
  return undefined;
}

/** Decisions shared by the builders below (the traffic-policy ones in ../model). */
interface PortPlan extends TrafficPolicyDecision {
  readonly sp: ServicePortInfo;
  readonly ctx: NftServiceContext;
  readonly x: IpX;
  readonly proto: string;
  readonly spn: string;
  /** servicePortName(): `ns/svc/proto/port`, the hashed part of the port's object names. */
  readonly nftName: string;
  readonly names: ServicePortChainNames;
  readonly internalChain: string;
  readonly externalPolicyChain: string;
  /** Verdict for traffic with no (local) endpoints: `goto reject-chain` or `drop`. */
  readonly noEndpoints: NftElement['value'];
  readonly affinity: boolean;
}

function decide(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  ctx: NftServiceContext,
): PortPlan {
  const nftName = servicePortName(sp.name.namespace, sp.name.name, sp.protocol, sp.name.port);
  const names = servicePortChainNames(nftName);
  const d = decideTrafficPolicy(sp, endpoints, ctx.options);
  return {
    ...d,
    ...policyChains(sp, names.service, names.local),
    sp,
    ctx,
    x: ipX(ctx.family),
    proto: sp.protocol.toLowerCase(),
    spn: sp.nameString,
    nftName,
    names,
    noEndpoints: d.noEndpointsAction === 'drop' ? { kind: 'drop' } : goto(REJECT_CHAIN),
    affinity: sp.sessionAffinity.type === 'ClientIP',
  };
}

/** The port's elements in the shared sets and maps. */
function portElements(p: PortPlan): NftElement[] {
  const { sp, ctx } = p;
  const t = ctx.table;
  const port = String(sp.port);
  const comment = truncateComment(p.spn);
  const out: NftElement[] = [t.element(CLUSTER_IPS_SET, [sp.clusterIP])];
  if (p.hasInternalEndpoints)
    out.push(t.element(SERVICE_IPS_MAP, [sp.clusterIP, p.proto, port], goto(p.internalChain)));
  else
    out.push(
      t.element(NO_ENDPOINT_SERVICES_MAP, [sp.clusterIP, p.proto, port], p.noEndpoints, comment),
    );
  const external = [...sp.externalIPs, ...sp.loadBalancerVIPs];
  for (const ip of external) {
    if (p.hasEndpoints)
      out.push(t.element(SERVICE_IPS_MAP, [ip, p.proto, port], goto(p.names.external)));
    if (!p.hasExternalEndpoints)
      out.push(t.element(NO_ENDPOINT_SERVICES_MAP, [ip, p.proto, port], p.noEndpoints, comment));
  }
  if (p.hasSourceRanges)
    for (const ip of sp.loadBalancerVIPs)
      out.push(t.element(FIREWALL_IPS_MAP, [ip, p.proto, port], goto(p.names.firewall)));
  if (sp.nodePort !== 0) {
    const np = String(sp.nodePort);
    if (p.hasEndpoints)
      out.push(t.element(SERVICE_NODEPORTS_MAP, [p.proto, np], goto(p.names.external)));
    if (!p.hasExternalEndpoints)
      out.push(t.element(NO_ENDPOINT_NODEPORTS_MAP, [p.proto, np], p.noEndpoints, comment));
  }
  for (const ep of p.cat.allReachableEndpoints)
    if (ep.isLocal)
      out.push(t.element(HAIRPIN_CONNECTIONS_SET, [ep.ip, ep.ip, p.proto, String(ep.port)]));
  return out;
}

type Chains = NftChainPlan[];

function addChain(
  p: PortPlan,
  chains: Chains,
  name: string,
  rules: Statement[][],
  comments: (string | undefined)[] = [],
) {
  const t = p.ctx.table;
  chains.push({ chain: t.chain(name), rules: rules.map((r, i) => t.rule(name, r, comments[i])) });
}

function externalChain(p: PortPlan, chains: Chains): void {
  if (!p.usesExternalChain) return;
  const mark = p.ctx.options.masqueradeMark;
  const rules: Statement[][] = [];
  const comments: (string | undefined)[] = [];
  if (!p.sp.externalPolicyLocal) {
    rules.push([markOr(mark)]);
    comments.push(COMMENT_MASQUERADE);
  } else {
    const local = ifLocal(p.ctx.options.localDetector, p.x);
    if (local.length > 0) {
      rules.push([...local, verdict(goto(p.names.service))]);
      comments.push(COMMENT_SHORT_CIRCUIT_POD);
    }
    rules.push(
      [fibLocal('saddr'), markOr(mark)],
      [fibLocal('saddr'), verdict(goto(p.names.service))],
    );
    comments.push(COMMENT_MASQ_LOCAL, COMMENT_SHORT_CIRCUIT_LOCAL);
  }
  if (p.hasExternalEndpoints) {
    rules.push([verdict(goto(p.externalPolicyChain))]);
    comments.push(undefined);
  }
  addChain(p, chains, p.names.external, rules, comments);
}

function firewallChain(p: PortPlan, chains: Chains): void {
  const { sp } = p;
  if (!p.hasSourceRanges) return;
  const sources = [...sp.loadBalancerSourceRanges];
  if (sourceRangesAllowNode(sp, p.ctx.options.nodeIP)) sources.push(...sp.loadBalancerVIPs);
  addChain(p, chains, p.names.firewall, [
    [match(saddr(p.x), anonset(sources), '!='), verdict({ kind: 'drop' })],
  ]);
}

/** The load-balancing rules of a service-/local- chain. */
function policyChain(
  p: PortPlan,
  chains: Chains,
  name: string,
  endpoints: readonly EndpointInfo[],
): void {
  if (!p.affinity) {
    addChain(p, chains, name, [dnatToNumgenMap(p.x, p.proto, endpoints)]);
    return;
  }
  const rules: Statement[][] = [];
  const targets: string[] = [];
  for (const ep of endpoints) {
    const n = endpointNames(p.nftName, ep.ip, ep.port);
    rules.push([match(saddr(p.x), setref(n.affinitySet)), verdict(goto(n.chain))]);
    targets.push(n.chain);
  }
  rules.push([numgenVmap(targets)]);
  addChain(p, chains, name, rules);
}

function endpointChains(p: PortPlan, chains: Chains, sets: NftSet[]): void {
  if (!p.affinity || p.sp.sessionAffinity.type !== 'ClientIP') return;
  const t = p.ctx.table;
  const timeout = p.sp.sessionAffinity.timeoutSeconds;
  for (const ep of p.cat.allReachableEndpoints) {
    const n = endpointNames(p.nftName, ep.ip, ep.port);
    sets.push(
      t.set('set', n.affinitySet, [addrType(p.ctx.family)], {
        flags: ['dynamic', 'timeout'],
        timeoutSeconds: timeout,
      }),
    );
    addChain(p, chains, n.chain, [
      [{ kind: 'setupdate', op: 'update', set: n.affinitySet, key: saddr(p.x) }],
      dnatTo(p.proto, ep.ip, ep.port),
    ]);
  }
}

function validEndpoints(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  warnings: string[],
) {
  if (endpoints.every((ep) => isPort(ep.port, false))) return endpoints;
  return endpoints.filter((ep) => {
    if (isPort(ep.port, false)) return true;
    warnings.push(
      `Service port ${sp.nameString}: endpoint ${ep.endpoint}: port must be 1-65535: skipped`,
    );
    return false;
  });
}

/**
 * Plans one Service port; `endpoints` are its merged endpoints (possibly empty). Never
 * throws: a port the kernel would refuse comes back `skipped` with a warning and no objects.
 */
export function planServicePort(
  sp: ServicePortInfo,
  endpointsIn: readonly EndpointInfo[],
  ctx: NftServiceContext,
): NftPortFragment {
  const base = { key: sp.key, serviceKey: sp.serviceKey, source: { sp, endpoints: endpointsIn } };
  const why = refusal(sp);
  if (why !== undefined)
    return {
      ...base,
      chains: [],
      affinitySets: [],
      elements: [],
      numEndpoints: 0,
      noLocalEndpointsInternal: false,
      noLocalEndpointsExternal: false,
      warnings: [`Service port ${sp.nameString}: ${why}: skipped`],
      skipped: true,
    };
  const warnings: string[] = [];
  const endpoints = validEndpoints(sp, endpointsIn, warnings);
  const p = decide(sp, endpoints, ctx);
  const chains: Chains = [];
  const sets: NftSet[] = [];
  endpointChains(p, chains, sets);
  if (p.usesClusterChain) policyChain(p, chains, p.names.service, p.cat.clusterEndpoints);
  if (p.usesLocalChain) policyChain(p, chains, p.names.local, p.cat.localEndpoints);
  externalChain(p, chains);
  firewallChain(p, chains);
  return {
    ...base,
    chains,
    affinitySets: sets,
    elements: portElements(p),
    numEndpoints: endpoints.length,
    noLocalEndpointsInternal: p.noLocalEndpointsInternal,
    noLocalEndpointsExternal: p.noLocalEndpointsExternal,
    warnings,
    skipped: false,
  };
}
