// The iptables rules kube-proxy's IPVS mode writes (writeIptablesRules and the chain
// preambles of syncProxyRules), typed (netfilter/iptables/rule.ts, built with rule-build.ts)
// in kube-proxy's order: nat then filter, each chain's rules in the order written. Their
// number does not grow with Services (the ipsets carry the per-Service data), except one
// KUBE-IPVS-OUT-FILTER rule per firewalled LB port the node may not reach. Rendered as
// iptables-restore input by renderIpvsIptables. Pure.

import {
  addressPart,
  buildRule,
  commentPart,
  jumpPart,
  matchPart,
  protocolPart,
  renderRuleText,
  ruleOption,
  setPart,
} from '../../netfilter/iptables/rule-build.js';
import { parseRule, targetPartOf } from '../../netfilter/iptables/rule.js';
import type { ModuleMatch, RulePart, TypedRule } from '../../netfilter/iptables/rule.js';
import { setOf } from '../../netfilter/iptables/rule-views.js';
import { COMMENT_FORWARD, COMMENT_FORWARD_CONNTRACK, COMMENT_SNAT } from '../iptables/names.js';
import { ifNotLocal } from '../iptables/options.js';
import { sourceRangesAllowNode } from '../model/traffic-policy.js';
import { FILTER_CHAINS, IPSET_RULE_ROWS, NAT_CHAINS } from './names.js';
import { portOf } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import type { IpsetPlan, IpvsPlanInput } from './plan.js';

export interface IpvsIptablesRule {
  readonly table: 'nat' | 'filter';
  readonly chain: string;
  /** What follows `-A chain`, typed. */
  readonly rule: TypedRule;
}

/** The `-j` target of a rule ('' when none). */
export function ruleJump(r: IpvsIptablesRule): string {
  return targetPartOf(r.rule)?.name ?? '';
}

/** The set the rule's first `-m set --match-set` names ('' when none). */
export function ruleMatchSet(r: IpvsIptablesRule): string {
  for (const p of r.rule.parts) {
    const s = p.kind === 'match' && p.module === 'set' ? setOf(p.options).sets[0] : undefined;
    if (s) return s.name;
  }
  return '';
}

type Parts = readonly (RulePart | readonly RulePart[])[];

/** Writes rules into `out`, naming the plan's ipsets. */
interface RuleContext {
  readonly out: IpvsIptablesRule[];
  readonly set: (base: string) => IpsetPlan;
  readonly nonEmpty: (base: string) => boolean;
  readonly nat: (chain: string, ...parts: Parts) => void;
  readonly filter: (chain: string, ...parts: Parts) => void;
  /** `-m set --match-set SET FLAGS` of the plan's set `base`. */
  readonly matchSet: (base: string, flags: string) => ModuleMatch;
  /** `-m comment --comment C -m set --match-set SET FLAGS`, C the set's rule comment. */
  readonly commentSet: (base: string, flags: string) => RulePart[];
}

function ruleContext(ipsets: readonly IpsetPlan[]): RuleContext {
  const out: IpvsIptablesRule[] = [];
  const byBase = new Map(ipsets.map((s) => [s.base, s]));
  const set = (base: string): IpsetPlan => {
    const s = byBase.get(base);
    if (!s) throw new Error(`ipvs plan: no ipset ${base}`);
    return s;
  };
  const matchSet = (base: string, flags: string): ModuleMatch => setPart(set(base).name, flags);
  return {
    out,
    set,
    nonEmpty: (base) => set(base).entries.length > 0,
    nat: (chain, ...parts) => out.push({ table: 'nat', chain, rule: buildRule(...parts) }),
    filter: (chain, ...parts) => out.push({ table: 'filter', chain, rule: buildRule(...parts) }),
    matchSet,
    commentSet: (base, flags) => [commentPart(set(base).comment), matchSet(base, flags)],
  };
}

/** The iptables rules for `input`, given the plan's ipsets (rules exist only for non-empty sets). */
export function planIptablesRules(
  input: IpvsPlanInput,
  ipsets: readonly IpsetPlan[],
): IpvsIptablesRule[] {
  const ctx = ruleContext(ipsets);
  writeServiceRules(ctx, input);
  writeFixedRules(ctx, input.options);
  return ctx.out;
}

/** `-m addrtype [!] --TYPE-type LOCAL`. */
function addrtypeLocal(dir: 'src' | 'dst', negate = false): ModuleMatch {
  return matchPart('addrtype', ruleOption(`--${dir}-type`, ['LOCAL'], negate));
}

/** KUBE-SERVICES and the set-matching rules, up to the ACCEPTs that end KUBE-SERVICES. */
function writeServiceRules(ctx: RuleContext, input: IpvsPlanInput): void {
  const { options, family } = input;
  const { out, nonEmpty, nat, matchSet, commentSet } = ctx;
  const loopback = family === 'IPv6' ? '::1/128' : '127.0.0.0/8';
  nat('KUBE-SERVICES', addressPart('source', loopback), jumpPart('RETURN'));
  for (const row of IPSET_RULE_ROWS) {
    if (!nonEmpty(row.set)) continue;
    const proto = row.protocol !== undefined ? [protocolPart(row.protocol)] : [];
    const rule = buildRule(proto, commentSet(row.set, row.match), jumpPart(row.jump));
    out.push({ table: row.table, chain: row.chain, rule });
  }
  if (nonEmpty('KUBE-CLUSTER-IP')) {
    const masq = jumpPart('KUBE-MARK-MASQ');
    const base = commentSet('KUBE-CLUSTER-IP', 'dst,dst');
    if (options.masqueradeAll) nat('KUBE-SERVICES', base, masq);
    else if (options.localDetector.mode !== 'None')
      nat('KUBE-SERVICES', base, parseRule(ifNotLocal(options.localDetector)).parts, masq);
    else nat('KUBE-SERVICES', commentSet('KUBE-CLUSTER-IP', 'src,dst'), masq);
  }
  const externalAccept = (base: string): void => {
    const match = commentSet(base, 'dst,dst');
    const notBridged = matchPart('physdev', ruleOption('--physdev-is-in', [], true));
    nat('KUBE-SERVICES', match, notBridged, addrtypeLocal('src', true), jumpPart('ACCEPT'));
    nat('KUBE-SERVICES', match, addrtypeLocal('dst'), jumpPart('ACCEPT'));
  };
  if (nonEmpty('KUBE-EXTERNAL-IP')) {
    nat('KUBE-SERVICES', commentSet('KUBE-EXTERNAL-IP', 'dst,dst'), jumpPart('KUBE-MARK-MASQ'));
    externalAccept('KUBE-EXTERNAL-IP');
  }
  if (nonEmpty('KUBE-EXTERNAL-IP-LOCAL')) externalAccept('KUBE-EXTERNAL-IP-LOCAL');
  nat('KUBE-SERVICES', addrtypeLocal('dst'), jumpPart('KUBE-NODE-PORT'));
  nat('KUBE-LOAD-BALANCER', jumpPart('KUBE-MARK-MASQ'));
  if (nonEmpty('KUBE-LOAD-BALANCER-FW'))
    ctx.filter('KUBE-SOURCE-RANGES-FIREWALL', jumpPart('DROP'));
  writeOutFilterRules(ctx, input);
  for (const base of ['KUBE-CLUSTER-IP', 'KUBE-LOAD-BALANCER']) {
    if (nonEmpty(base)) nat('KUBE-SERVICES', matchSet(base, 'dst,dst'), jumpPart('ACCEPT'));
  }
}

/**
 * KUBE-IPVS-OUT-FILTER: the node's own packets to a firewalled LB VIP whose source ranges
 * do not let the node in (`-m ipvs`: after IPVS picked that virtual server).
 */
function writeOutFilterRules(ctx: RuleContext, input: IpvsPlanInput): void {
  if (!ctx.nonEmpty('KUBE-LOAD-BALANCER-FW')) return;
  for (const key of [...input.services.keys()].sort()) {
    const sp = input.services.get(key);
    if (!sp || sp.loadBalancerSourceRanges.length === 0) continue;
    if (sourceRangesAllowNode(sp, input.options.nodeIP)) continue;
    for (const ip of sp.loadBalancerVIPs) {
      const vs = matchPart(
        'ipvs',
        ruleOption('--vaddr', [ip]),
        ruleOption('--vproto', [sp.protocol.toLowerCase()]),
        ruleOption('--vport', [String(portOf(sp.port))]),
      );
      ctx.filter('KUBE-IPVS-OUT-FILTER', addressPart('source', ip), vs, jumpPart('DROP'));
    }
  }
}

/** KUBE-FORWARD, filter KUBE-NODE-PORT, KUBE-IPVS-FILTER, KUBE-POSTROUTING and KUBE-MARK-MASQ. */
function writeFixedRules(ctx: RuleContext, options: IpvsProxierOptions): void {
  const { nat, filter, matchSet, commentSet } = ctx;
  const mark = options.masqueradeMark;
  const marked = (negate: boolean): ModuleMatch =>
    matchPart('mark', ruleOption('--mark', [`${mark}/${mark}`], negate));
  const ctstate = (states: string): ModuleMatch =>
    matchPart('conntrack', ruleOption('--ctstate', [states]));
  filter('KUBE-FORWARD', commentPart(COMMENT_FORWARD), marked(false), jumpPart('ACCEPT'));
  filter(
    'KUBE-FORWARD',
    commentPart(COMMENT_FORWARD_CONNTRACK),
    ctstate('RELATED,ESTABLISHED'),
    jumpPart('ACCEPT'),
  );
  filter('KUBE-NODE-PORT', commentSet('KUBE-HEALTH-CHECK-NODE-PORT', 'dst'), jumpPart('ACCEPT'));
  for (const base of [
    'KUBE-LOAD-BALANCER',
    'KUBE-CLUSTER-IP',
    'KUBE-EXTERNAL-IP',
    'KUBE-EXTERNAL-IP-LOCAL',
  ])
    filter('KUBE-IPVS-FILTER', matchSet(base, 'dst,dst'), jumpPart('RETURN'));
  filter('KUBE-IPVS-FILTER', matchSet('KUBE-HEALTH-CHECK-NODE-PORT', 'dst'), jumpPart('RETURN'));
  filter('KUBE-IPVS-FILTER', ctstate('NEW'), matchSet('KUBE-IPVS-IPS', 'dst'), jumpPart('REJECT'));
  nat('KUBE-POSTROUTING', marked(true), jumpPart('RETURN'));
  nat('KUBE-POSTROUTING', jumpPart('MARK', ruleOption('--xor-mark', [mark])));
  const randomFully = options.hasRandomFully ? [ruleOption('--random-fully')] : [];
  nat('KUBE-POSTROUTING', commentPart(COMMENT_SNAT), jumpPart('MASQUERADE', ...randomFully));
  nat('KUBE-MARK-MASQ', jumpPart('MARK', ruleOption('--or-mark', [mark])));
}

/** iptables-restore input: nat then filter, each with its chain declarations. */
export function renderIpvsIptables(rules: readonly IpvsIptablesRule[]): string {
  const lines: string[] = [];
  for (const [table, chains] of [
    ['nat', NAT_CHAINS],
    ['filter', FILTER_CHAINS],
  ] as const) {
    lines.push(`*${table}`);
    for (const c of chains) lines.push(`:${c} - [0:0]`);
    for (const r of rules) {
      if (r.table === table) lines.push(`-A ${r.chain} ${renderRuleText(r.rule)}`);
    }
    lines.push('COMMIT');
  }
  return `${lines.join('\n')}\n`;
}
