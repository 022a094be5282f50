// The rules of one Service port, as kube-proxy's iptables mode writes them: the captures in
// nat KUBE-SERVICES / KUBE-NODEPORTS, the REJECT/DROP rules in filter for missing (local)
// endpoints, the health-check ACCEPT, and the port's own KUBE-SVC/SVL/EXT/FW/SEP chains.
// Each part is a small builder; planServicePort() strings them together. Pure.

import type { Rule } from '../../netfilter/iptables/model.js';
import type { EndpointInfo } from '../../proxy/model/endpoint.js';
import { categorizeEndpoints } from '../model/categorize.js';
import type { CategorizedEndpoints } from '../model/categorize.js';
import {
  isExternallyAccessible,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from '../model/service-port.js';
import type { ServicePortInfo } from '../model/service-port.js';
import type { IPFamily } from '../../util/ip.js';
import { cidrContains, parseCIDRSloppy, parseIPSloppy } from '../../util/ip.js';
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  NFACCT_LOCALHOST_NODEPORTS_ACCEPTED,
  endpointChainName,
  servicePortChains,
} from './names.js';
import type { ServicePortChains } from './names.js';
import { ifLocal, ifNotLocal, isDetectorImplemented } from './options.js';
import type { IptablesProxierOptions } from './options.js';
import { computeProbability } from './probability.js';

/** What a plan needs besides the Service port itself. */
export interface ServicePlanContext {
  readonly family: IPFamily;
  readonly options: IptablesProxierOptions;
  /** Drop per-endpoint comments (kube-proxy's large-cluster mode). */
  readonly largeClusterMode: boolean;
  /** Memo of KUBE-SEP names (hashing is the hot path of a big sync). */
  readonly sepNames: Map<string, string>;
}

/** Everything one Service port contributes to a restore. */
export interface ServicePortFragment {
  readonly key: string;
  readonly serviceKey: string;
  /** filter rules (KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-PROXY-FIREWALL, KUBE-NODEPORTS). */
  readonly filterRules: readonly Rule[];
  /** nat rules in KUBE-SERVICES / KUBE-NODEPORTS (written on every sync). */
  readonly natDispatchRules: readonly Rule[];
  /** The port's own nat chains, in declaration order (written only when it changed). */
  readonly natChains: readonly string[];
  /** Rules of natChains. */
  readonly natChainRules: readonly Rule[];
  readonly numEndpoints: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** Decisions shared by the builders below. */
interface PortPlan {
  readonly sp: ServicePortInfo;
  readonly ctx: ServicePlanContext;
  readonly chains: ServicePortChains;
  readonly proto: string;
  readonly cat: CategorizedEndpoints;
  readonly hasEndpoints: boolean;
  readonly hasInternalEndpoints: boolean;
  readonly hasExternalEndpoints: boolean;
  readonly internalChain: string;
  readonly externalPolicyChain: string;
  readonly usesExternalChain: boolean;
  readonly usesFWChain: boolean;
  readonly usesClusterChain: boolean;
  readonly usesLocalChain: boolean;
  readonly internalFilter: { target: string; comment: string };
  readonly externalFilter: { target: string; comment: string };
}

function decide(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  ctx: ServicePlanContext,
): PortPlan {
  const chains = servicePortChains(sp.nameString, sp.protocol);
  const cat = categorizeEndpoints(endpoints, sp, {
    nodeName: ctx.options.nodeName,
    zone: ctx.options.nodeZone,
  });
  const hasEndpoints = cat.hasAnyEndpoints;
  const noLocal = cat.localEndpoints.length === 0;
  const hasInternalEndpoints = hasEndpoints && !(sp.internalPolicyLocal && noLocal);
  const hasExternalEndpoints = hasEndpoints && !(sp.externalPolicyLocal && noLocal);
  const reject = { target: 'REJECT', comment: `${sp.nameString} has no endpoints` };
  const drop = { target: 'DROP', comment: `${sp.nameString} has no local endpoints` };
  return {
    sp,
    ctx,
    chains,
    proto: sp.protocol.toLowerCase(),
    cat,
    hasEndpoints,
    hasInternalEndpoints,
    hasExternalEndpoints,
    internalChain: sp.internalPolicyLocal ? chains.svl : chains.svc,
    externalPolicyChain: sp.externalPolicyLocal ? chains.svl : chains.svc,
    usesExternalChain: hasEndpoints && isExternallyAccessible(sp),
    usesFWChain:
      hasEndpoints && sp.loadBalancerVIPs.length > 0 && sp.loadBalancerSourceRanges.length > 0,
    usesClusterChain: cat.clusterEndpoints.length > 0 && usesClusterEndpoints(sp),
    usesLocalChain: cat.localEndpoints.length > 0 && usesLocalEndpoints(sp),
    internalFilter: hasEndpoints ? drop : reject,
    externalFilter: hasEndpoints ? drop : reject,
  };
}

function comment(text: string): string[] {
  return ['-m', 'comment', '--comment', text];
}

/** `-m tcp -p tcp -d IP --dport P`: the destination match of every capture rule. */
function dest(p: PortPlan, ip: string, port: number): string[] {
  return ['-m', p.proto, '-p', p.proto, '-d', ip, '--dport', String(port)];
}

function clusterIPRules(p: PortPlan, nat: Rule[], filter: Rule[]): void {
  const { sp } = p;
  if (p.hasInternalEndpoints)
    nat.push({
      chain: KUBE_SERVICES,
      args: [
        ...comment(`${sp.nameString} cluster IP`),
        ...dest(p, sp.clusterIP, sp.port),
        '-j',
        p.internalChain,
      ],
    });
  else
    filter.push({
      chain: KUBE_SERVICES,
      args: [
        ...comment(p.internalFilter.comment),
        ...dest(p, sp.clusterIP, sp.port),
        '-j',
        p.internalFilter.target,
      ],
    });
}

function externalIPRules(p: PortPlan, nat: Rule[], filter: Rule[]): void {
  const { sp } = p;
  for (const ip of sp.externalIPs) {
    if (p.hasEndpoints)
      nat.push({
        chain: KUBE_SERVICES,
        args: [
          ...comment(`${sp.nameString} external IP`),
          ...dest(p, ip, sp.port),
          '-j',
          p.chains.ext,
        ],
      });
    if (!p.hasExternalEndpoints)
      filter.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [
          ...comment(p.externalFilter.comment),
          ...dest(p, ip, sp.port),
          '-j',
          p.externalFilter.target,
        ],
      });
  }
}

function loadBalancerRules(p: PortPlan, nat: Rule[], filter: Rule[]): void {
  const { sp } = p;
  const lbChain = p.usesFWChain ? p.chains.fw : p.chains.ext;
  for (const ip of sp.loadBalancerVIPs) {
    if (p.hasEndpoints)
      nat.push({
        chain: KUBE_SERVICES,
        args: [
          ...comment(`${sp.nameString} loadbalancer IP`),
          ...dest(p, ip, sp.port),
          '-j',
          lbChain,
        ],
      });
    if (p.usesFWChain)
      filter.push({
        chain: KUBE_PROXY_FIREWALL,
        args: [
          ...comment(`${sp.nameString} traffic not accepted by ${p.chains.fw}`),
          ...dest(p, ip, sp.port),
          '-j',
          'DROP',
        ],
      });
  }
  if (!p.hasExternalEndpoints)
    for (const ip of sp.loadBalancerVIPs)
      filter.push({
        chain: KUBE_EXTERNAL_SERVICES,
        args: [
          ...comment(p.externalFilter.comment),
          ...dest(p, ip, sp.port),
          '-j',
          p.externalFilter.target,
        ],
      });
}

function nodePortRules(p: PortPlan, nat: Rule[], filter: Rule[]): void {
  const { sp, ctx } = p;
  if (sp.nodePort === 0) return;
  const np = String(sp.nodePort);
  if (p.hasEndpoints) {
    const o = ctx.options;
    if (o.localhostNodePorts && ctx.family === 'IPv4' && o.nfacct.localhostNodePortsAccepted)
      nat.push({
        chain: KUBE_NODEPORTS,
        args: [
          ...comment(sp.nameString),
          ...['-m', p.proto, '-p', p.proto, '-d', '127.0.0.0/8', '--dport', np],
          ...['-m', 'nfacct', '--nfacct-name', NFACCT_LOCALHOST_NODEPORTS_ACCEPTED],
          ...['-j', p.chains.ext],
        ],
      });
    nat.push({
      chain: KUBE_NODEPORTS,
      args: [
        ...comment(sp.nameString),
        ...['-m', p.proto, '-p', p.proto, '--dport', np, '-j', p.chains.ext],
      ],
    });
  }
  if (!p.hasExternalEndpoints)
    filter.push({
      chain: KUBE_EXTERNAL_SERVICES,
      args: [
        ...comment(p.externalFilter.comment),
        ...['-m', 'addrtype', '--dst-type', 'LOCAL'],
        ...['-m', p.proto, '-p', p.proto, '--dport', np, '-j', p.externalFilter.target],
      ],
    });
}

function healthCheckRule(p: PortPlan, filter: Rule[]): void {
  const hc = p.sp.healthCheckNodePort;
  if (hc === 0) return;
  filter.push({
    chain: KUBE_NODEPORTS,
    args: [
      ...comment(`${p.sp.nameString} health check node port`),
      ...['-m', 'tcp', '-p', 'tcp', '--dport', String(hc), '-j', 'ACCEPT'],
    ],
  });
}

/** First rule of the SVC/SVL chain: masquerade ClusterIP traffic from outside the cluster. */
function internalMasqueradeRule(p: PortPlan, rules: Rule[]): void {
  if (!p.hasInternalEndpoints) return;
  const o = p.ctx.options;
  if (!o.masqueradeAll && !isDetectorImplemented(o.localDetector)) return;
  rules.push({
    chain: p.internalChain,
    args: [
      ...comment(`${p.sp.nameString} cluster IP`),
      ...dest(p, p.sp.clusterIP, p.sp.port),
      ...(o.masqueradeAll ? [] : ifNotLocal(o.localDetector)),
      '-j',
      KUBE_MARK_MASQ,
    ],
  });
}

function externalChainRules(p: PortPlan, chains: string[], rules: Rule[]): void {
  if (!p.usesExternalChain) return;
  const { sp, chains: c } = p;
  const ext = c.ext;
  chains.push(ext);
  const detector = p.ctx.options.localDetector;
  if (!sp.externalPolicyLocal)
    rules.push({
      chain: ext,
      args: [
        ...comment(`masquerade traffic for ${sp.nameString} external destinations`),
        '-j',
        KUBE_MARK_MASQ,
      ],
    });
  else {
    if (isDetectorImplemented(detector))
      rules.push({
        chain: ext,
        args: [
          ...comment(`pod traffic for ${sp.nameString} external destinations`),
          ...ifLocal(detector),
          ...['-j', c.svc],
        ],
      });
    rules.push({
      chain: ext,
      args: [
        ...comment(`masquerade LOCAL traffic for ${sp.nameString} external destinations`),
        ...['-m', 'addrtype', '--src-type', 'LOCAL', '-j', KUBE_MARK_MASQ],
      ],
    });
    rules.push({
      chain: ext,
      args: [
        ...comment(`route LOCAL traffic for ${sp.nameString} external destinations`),
        ...['-m', 'addrtype', '--src-type', 'LOCAL', '-j', c.svc],
      ],
    });
  }
  if (p.hasExternalEndpoints) rules.push({ chain: ext, args: ['-j', p.externalPolicyChain] });
}

function firewallChainRules(p: PortPlan, chains: string[], rules: Rule[]): void {
  if (!p.usesFWChain) return;
  const { sp, chains: c } = p;
  chains.push(c.fw);
  const lb = comment(`${sp.nameString} loadbalancer IP`);
  const nodeIP = parseIPSloppy(p.ctx.options.nodeIP);
  let allowFromNode = false;
  for (const cidr of sp.loadBalancerSourceRanges) {
    rules.push({ chain: c.fw, args: [...lb, '-s', cidr, '-j', c.ext] });
    const parsed = parseCIDRSloppy(cidr);
    if (nodeIP && parsed && cidrContains(parsed, nodeIP)) allowFromNode = true;
  }
  if (allowFromNode)
    for (const ip of sp.loadBalancerVIPs)
      rules.push({ chain: c.fw, args: [...lb, '-s', ip, '-j', c.ext] });
  rules.push({
    chain: c.fw,
    args: comment(`other traffic to ${sp.nameString} will be dropped by KUBE-PROXY-FIREWALL`),
  });
}

function sepName(p: PortPlan, ep: EndpointInfo): string {
  const memoKey = `${p.sp.nameString}${p.proto}${ep.endpoint}`;
  let name = p.ctx.sepNames.get(memoKey);
  if (name === undefined) {
    name = endpointChainName(p.sp.nameString, p.proto, ep.endpoint);
    p.ctx.sepNames.set(memoKey, name);
  }
  return name;
}

function endpointComment(p: PortPlan, text: string): string[] {
  return p.ctx.largeClusterMode ? [] : comment(text);
}

/** The load-balancing rules of a KUBE-SVC/KUBE-SVL chain. */
function policyChainRules(
  p: PortPlan,
  chain: string,
  endpoints: readonly EndpointInfo[],
  rules: Rule[],
): void {
  const { sp } = p;
  if (sp.sessionAffinity.type === 'ClientIP') {
    const seconds = String(sp.sessionAffinity.timeoutSeconds);
    for (const ep of endpoints) {
      const sep = sepName(p, ep);
      rules.push({
        chain,
        args: [
          ...endpointComment(p, `${sp.nameString} -> ${ep.endpoint}`),
          ...['-m', 'recent', '--name', sep, '--rcheck', '--seconds', seconds, '--reap'],
          ...['-j', sep],
        ],
      });
    }
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const stat =
      i < n - 1
        ? ['-m', 'statistic', '--mode', 'random', '--probability', computeProbability(n - i)]
        : [];
    rules.push({
      chain,
      args: [
        ...endpointComment(p, `${sp.nameString} -> ${ep.endpoint}`),
        ...stat,
        '-j',
        sepName(p, ep),
      ],
    });
  });
}

function endpointChainRules(p: PortPlan, chains: string[], rules: Rule[]): void {
  const { sp } = p;
  for (const ep of p.cat.allReachableEndpoints) {
    const sep = sepName(p, ep);
    chains.push(sep);
    const c = endpointComment(p, sp.nameString);
    rules.push({ chain: sep, args: [...c, '-s', ep.ip, '-j', KUBE_MARK_MASQ] });
    const affinity =
      sp.sessionAffinity.type === 'ClientIP' ? ['-m', 'recent', '--name', sep, '--set'] : [];
    rules.push({
      chain: sep,
      args: [
        ...c,
        ...affinity,
        ...['-m', p.proto, '-p', p.proto, '-j', 'DNAT', '--to-destination', ep.endpoint],
      ],
    });
  }
}

/**
 * Plans one Service port. `endpoints` are the port's merged endpoints (possibly empty).
 * Never fails: a Service without endpoints yields only filter REJECT rules.
 */
export function planServicePort(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  ctx: ServicePlanContext,
): ServicePortFragment {
  const p = decide(sp, endpoints, ctx);
  const filter: Rule[] = [];
  const dispatch: Rule[] = [];
  const chains: string[] = [];
  const chainRules: Rule[] = [];
  clusterIPRules(p, dispatch, filter);
  externalIPRules(p, dispatch, filter);
  loadBalancerRules(p, dispatch, filter);
  nodePortRules(p, dispatch, filter);
  healthCheckRule(p, filter);
  internalMasqueradeRule(p, chainRules);
  externalChainRules(p, chains, chainRules);
  firewallChainRules(p, chains, chainRules);
  if (p.usesClusterChain) {
    chains.push(p.chains.svc);
    policyChainRules(p, p.chains.svc, p.cat.clusterEndpoints, chainRules);
  }
  if (p.usesLocalChain) {
    chains.push(p.chains.svl);
    policyChainRules(p, p.chains.svl, p.cat.localEndpoints, chainRules);
  }
  endpointChainRules(p, chains, chainRules);
  return {
    key: sp.key,
    serviceKey: sp.serviceKey,
    filterRules: filter,
    natDispatchRules: dispatch,
    natChains: chains,
    natChainRules: chainRules,
    numEndpoints: endpoints.length,
    noLocalEndpointsInternal: p.hasEndpoints && !p.hasInternalEndpoints,
    noLocalEndpointsExternal: p.hasEndpoints && !p.hasExternalEndpoints,
  };
}
