// The rules of one Service port, as kube-proxy's iptables mode writes them: the captures in
// nat KUBE-SERVICES / KUBE-NODEPORTS, the REJECT/DROP rules in filter for missing (local)
// endpoints, the health-check ACCEPT, and the port's own KUBE-SVC/SVL/EXT/FW/SEP chains.
// Each part is a small builder; planServicePort() strings them together. Output is rule
// text (see rule-writer.ts): the capture rules are described typed and rendered once by the
// rule model; the per-endpoint rules of big syncs are written as text directly. Pure.

import type { EndpointInfo } from '../model/endpoint.js';
import type { ServicePortInfo } from '../model/service-port.js';
import {
  decideTrafficPolicy,
  policyChains,
  sourceRangesAllowNode,
} from '../model/traffic-policy.js';
import type { TrafficPolicyDecision } from '../model/traffic-policy.js';
import type { IPFamily } from '../../util/ip.js';
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
import type { SimpleRuleSpec } from '../../netfilter/iptables/rule-build.js';
import { RuleWriter, chainLine, commentArgs } from './rule-writer.js';

/** What a plan needs besides the Service port itself. */
export interface ServicePlanContext {
  readonly family: IPFamily;
  readonly options: IptablesProxierOptions;
  /** Drop per-endpoint comments (kube-proxy's large-cluster mode). */
  readonly largeClusterMode: boolean;
  /** Memo of KUBE-SEP names per endpoint object (hashing is the hot path of a big sync). */
  readonly sepNames: WeakMap<EndpointInfo, SepName>;
}

/** A memoised KUBE-SEP name and the KUBE-SVC chain it was computed for. */
export interface SepName {
  readonly svc: string;
  readonly name: string;
}

/**
 * What the plan state keeps of one Service port: the rules written on every sync as text,
 * and only the names and rule count of its own chains (their text is 3/4 of a big restore
 * and is written only when the port changed, so it is not kept: see `PlannedPort`).
 */
export interface ServicePortFragment {
  readonly key: string;
  readonly serviceKey: string;
  /** filter rules (KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-PROXY-FIREWALL, KUBE-NODEPORTS). */
  readonly filterText: string;
  readonly filterRules: number;
  /** nat rules in KUBE-SERVICES / KUBE-NODEPORTS (written on every sync). */
  readonly natDispatchText: string;
  readonly natDispatchRules: number;
  /** The port's own nat chains, in declaration order (written only when it changed). */
  readonly natChains: readonly string[];
  readonly natChainRules: number;
  readonly numEndpoints: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
}

/** One planned Service port: what the state keeps, and its chains' text for this restore. */
export interface PlannedPort {
  readonly fragment: ServicePortFragment;
  /** `:CHAIN - [0:0]` lines of `fragment.natChains`. */
  readonly natChainDecls: string;
  /** Rules of `fragment.natChains`. */
  readonly natChainText: string;
}

/** Decisions shared by the builders below (the traffic-policy ones in ../model). */
interface PortPlan extends TrafficPolicyDecision {
  readonly sp: ServicePortInfo;
  readonly ctx: ServicePlanContext;
  readonly chains: ServicePortChains;
  readonly proto: Lowercase<ServicePortInfo['protocol']>;
  readonly internalChain: string;
  readonly externalPolicyChain: string;
  /** A KUBE-FW chain: the port has source ranges and endpoints. */
  readonly usesFWChain: boolean;
  /** Comment and target of filter rules for traffic without (local) endpoints. */
  readonly noEndpoints: { readonly comment: string; readonly target: string };
}

interface Writers {
  readonly filter: RuleWriter;
  readonly dispatch: RuleWriter;
  readonly chains: string[];
  readonly rules: RuleWriter;
}

function decide(
  sp: ServicePortInfo,
  endpoints: readonly EndpointInfo[],
  ctx: ServicePlanContext,
): PortPlan {
  const chains = servicePortChains(sp.nameString, sp.protocol);
  const d = decideTrafficPolicy(sp, endpoints, ctx.options);
  return {
    ...d,
    ...policyChains(sp, chains.svc, chains.svl),
    sp,
    ctx,
    chains,
    proto: sp.protocol.toLowerCase() as Lowercase<ServicePortInfo['protocol']>,
    usesFWChain: d.hasEndpoints && d.hasSourceRanges,
    noEndpoints:
      d.noEndpointsAction === 'drop'
        ? { comment: `${sp.nameString} has no local endpoints`, target: 'DROP' }
        : { comment: `${sp.nameString} has no endpoints`, target: 'REJECT' },
  };
}

/** `-m tcp -p tcp -d IP --dport P`: the destination match of every capture rule. */
function dest(p: PortPlan, ip: string, port: number): string {
  return `-m ${p.proto} -p ${p.proto} -d ${ip} --dport ${port}`;
}

/** A capture rule: `comment`, then `-m P -p P -d IP --dport PORT -j jump`. */
function capture(p: PortPlan, comment: string, ip: string, jump: string): SimpleRuleSpec {
  return { comment, proto: p.proto, dst: ip, dport: p.sp.port, jump };
}

function clusterIPRules(p: PortPlan, w: Writers): void {
  const { sp } = p;
  if (p.hasInternalEndpoints)
    w.dispatch.rule(
      KUBE_SERVICES,
      capture(p, `${sp.nameString} cluster IP`, sp.clusterIP, p.internalChain),
    );
  else
    w.filter.rule(
      KUBE_SERVICES,
      capture(p, p.noEndpoints.comment, sp.clusterIP, p.noEndpoints.target),
    );
}

function externalIPRules(p: PortPlan, w: Writers): void {
  const { sp } = p;
  for (const ip of sp.externalIPs) {
    if (p.hasEndpoints)
      w.dispatch.rule(KUBE_SERVICES, capture(p, `${sp.nameString} external IP`, ip, p.chains.ext));
    if (!p.hasExternalEndpoints)
      w.filter.rule(
        KUBE_EXTERNAL_SERVICES,
        capture(p, p.noEndpoints.comment, ip, p.noEndpoints.target),
      );
  }
}

function loadBalancerRules(p: PortPlan, w: Writers): void {
  const { sp } = p;
  const lbChain = p.usesFWChain ? p.chains.fw : p.chains.ext;
  for (const ip of sp.loadBalancerVIPs) {
    if (p.hasEndpoints)
      w.dispatch.rule(KUBE_SERVICES, capture(p, `${sp.nameString} loadbalancer IP`, ip, lbChain));
    if (p.usesFWChain)
      w.filter.rule(
        KUBE_PROXY_FIREWALL,
        capture(p, `${sp.nameString} traffic not accepted by ${p.chains.fw}`, ip, 'DROP'),
      );
  }
  if (!p.hasExternalEndpoints)
    for (const ip of sp.loadBalancerVIPs)
      w.filter.rule(
        KUBE_EXTERNAL_SERVICES,
        capture(p, p.noEndpoints.comment, ip, p.noEndpoints.target),
      );
}

function nodePortRules(p: PortPlan, w: Writers): void {
  const { sp, ctx } = p;
  if (sp.nodePort === 0) return;
  const mp = `-m ${p.proto} -p ${p.proto}`;
  if (p.hasEndpoints) {
    const o = ctx.options;
    const c = commentArgs(sp.nameString);
    if (o.localhostNodePorts && ctx.family === 'IPv4' && o.nfacct.localhostNodePortsAccepted)
      w.dispatch.add(
        KUBE_NODEPORTS,
        `${c} ${mp} -d 127.0.0.0/8 --dport ${sp.nodePort} ` +
          `-m nfacct --nfacct-name ${NFACCT_LOCALHOST_NODEPORTS_ACCEPTED} -j ${p.chains.ext}`,
      );
    w.dispatch.rule(KUBE_NODEPORTS, {
      comment: sp.nameString,
      proto: p.proto,
      dport: sp.nodePort,
      jump: p.chains.ext,
    });
  }
  if (!p.hasExternalEndpoints)
    w.filter.add(
      KUBE_EXTERNAL_SERVICES,
      `${commentArgs(p.noEndpoints.comment)} -m addrtype --dst-type LOCAL ${mp} ` +
        `--dport ${sp.nodePort} -j ${p.noEndpoints.target}`,
    );
}

function healthCheckRule(p: PortPlan, w: Writers): void {
  const hc = p.sp.healthCheckNodePort;
  if (hc === 0) return;
  w.filter.rule(KUBE_NODEPORTS, {
    comment: `${p.sp.nameString} health check node port`,
    proto: 'tcp',
    dport: hc,
    jump: 'ACCEPT',
  });
}

/** First rule of the SVC/SVL chain: masquerade ClusterIP traffic from outside the cluster. */
function internalMasqueradeRule(p: PortPlan, w: Writers): void {
  if (!p.hasInternalEndpoints) return;
  const o = p.ctx.options;
  if (!o.masqueradeAll && !isDetectorImplemented(o.localDetector)) return;
  const notLocal = o.masqueradeAll ? '' : ` ${ifNotLocal(o.localDetector).join(' ')}`;
  w.rules.add(
    p.internalChain,
    `${commentArgs(`${p.sp.nameString} cluster IP`)} ${dest(p, p.sp.clusterIP, p.sp.port)}${notLocal} -j ${KUBE_MARK_MASQ}`,
  );
}

function externalChainRules(p: PortPlan, w: Writers): void {
  if (!p.usesExternalChain) return;
  const { sp, chains: c } = p;
  w.chains.push(c.ext);
  const detector = p.ctx.options.localDetector;
  if (!sp.externalPolicyLocal) {
    w.rules.add(
      c.ext,
      `${commentArgs(`masquerade traffic for ${sp.nameString} external destinations`)} -j ${KUBE_MARK_MASQ}`,
    );
  } else {
    if (isDetectorImplemented(detector))
      w.rules.add(
        c.ext,
        `${commentArgs(`pod traffic for ${sp.nameString} external destinations`)} ${ifLocal(detector).join(' ')} -j ${c.svc}`,
      );
    w.rules.add(
      c.ext,
      `${commentArgs(`masquerade LOCAL traffic for ${sp.nameString} external destinations`)} -m addrtype --src-type LOCAL -j ${KUBE_MARK_MASQ}`,
    );
    w.rules.add(
      c.ext,
      `${commentArgs(`route LOCAL traffic for ${sp.nameString} external destinations`)} -m addrtype --src-type LOCAL -j ${c.svc}`,
    );
  }
  if (p.hasExternalEndpoints) w.rules.add(c.ext, `-j ${p.externalPolicyChain}`);
}

function firewallChainRules(p: PortPlan, w: Writers): void {
  if (!p.usesFWChain) return;
  const { sp, chains: c } = p;
  w.chains.push(c.fw);
  const lbComment = `${sp.nameString} loadbalancer IP`;
  for (const cidr of sp.loadBalancerSourceRanges)
    w.rules.rule(c.fw, { comment: lbComment, src: cidr, jump: c.ext });
  if (sourceRangesAllowNode(sp, p.ctx.options.nodeIP))
    for (const ip of sp.loadBalancerVIPs)
      w.rules.rule(c.fw, { comment: lbComment, src: ip, jump: c.ext });
  w.rules.add(
    c.fw,
    commentArgs(`other traffic to ${sp.nameString} will be dropped by ${KUBE_PROXY_FIREWALL}`),
  );
}

function sepName(p: PortPlan, ep: EndpointInfo): string {
  const memo = p.ctx.sepNames.get(ep);
  if (memo?.svc === p.chains.svc) return memo.name;
  const name = endpointChainName(p.sp.nameString, p.proto, ep.endpoint);
  p.ctx.sepNames.set(ep, { svc: p.chains.svc, name });
  return name;
}

/** `-m comment --comment X ` (with the trailing space), or '' in large-cluster mode. */
function endpointComment(p: PortPlan, text: string): string {
  return p.ctx.largeClusterMode ? '' : `${commentArgs(text)} `;
}

/** The load-balancing rules of a KUBE-SVC/KUBE-SVL chain. */
function policyChainRules(
  p: PortPlan,
  chain: string,
  endpoints: readonly EndpointInfo[],
  w: Writers,
): void {
  const { sp } = p;
  if (sp.sessionAffinity.type === 'ClientIP') {
    const seconds = sp.sessionAffinity.timeoutSeconds;
    for (const ep of endpoints) {
      const sep = sepName(p, ep);
      w.rules.add(
        chain,
        `${endpointComment(p, `${sp.nameString} -> ${ep.endpoint}`)}-m recent --name ${sep} --rcheck --seconds ${seconds} --reap -j ${sep}`,
      );
    }
  }
  const n = endpoints.length;
  endpoints.forEach((ep, i) => {
    const stat =
      i < n - 1 ? `-m statistic --mode random --probability ${computeProbability(n - i)} ` : '';
    w.rules.add(
      chain,
      `${endpointComment(p, `${sp.nameString} -> ${ep.endpoint}`)}${stat}-j ${sepName(p, ep)}`,
    );
  });
}

function endpointChainRules(p: PortPlan, w: Writers): void {
  const { sp } = p;
  const c = endpointComment(p, sp.nameString);
  const affinity = sp.sessionAffinity.type === 'ClientIP';
  for (const ep of p.cat.allReachableEndpoints) {
    const sep = sepName(p, ep);
    w.chains.push(sep);
    w.rules.add(sep, `${c}-s ${ep.ip} -j ${KUBE_MARK_MASQ}`);
    const recent = affinity ? `-m recent --name ${sep} --set ` : '';
    w.rules.add(
      sep,
      `${c}${recent}-m ${p.proto} -p ${p.proto} -j DNAT --to-destination ${ep.endpoint}`,
    );
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
): PlannedPort {
  const p = decide(sp, endpoints, ctx);
  const w: Writers = {
    filter: new RuleWriter(),
    dispatch: new RuleWriter(),
    chains: [],
    rules: new RuleWriter(),
  };
  clusterIPRules(p, w);
  externalIPRules(p, w);
  loadBalancerRules(p, w);
  nodePortRules(p, w);
  healthCheckRule(p, w);
  internalMasqueradeRule(p, w);
  externalChainRules(p, w);
  firewallChainRules(p, w);
  if (p.usesClusterChain) {
    w.chains.push(p.chains.svc);
    policyChainRules(p, p.chains.svc, p.cat.clusterEndpoints, w);
  }
  if (p.usesLocalChain) {
    w.chains.push(p.chains.svl);
    policyChainRules(p, p.chains.svl, p.cat.localEndpoints, w);
  }
  endpointChainRules(p, w);
  const fragment: ServicePortFragment = {
    key: sp.key,
    serviceKey: sp.serviceKey,
    filterText: w.filter.text,
    filterRules: w.filter.count,
    natDispatchText: w.dispatch.text,
    natDispatchRules: w.dispatch.count,
    natChains: w.chains,
    natChainRules: w.rules.count,
    numEndpoints: endpoints.length,
    noLocalEndpointsInternal: p.noLocalEndpointsInternal,
    noLocalEndpointsExternal: p.noLocalEndpointsExternal,
  };
  return {
    fragment,
    natChainDecls: w.chains.map(chainLine).join(''),
    natChainText: w.rules.text,
  };
}
