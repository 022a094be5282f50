// The iptables rules kube-proxy's IPVS mode writes (writeIptablesRules and the chain
// preambles of syncProxyRules), as argument lists in kube-proxy's order: nat then filter,
// each chain's rules in the order written. Their number does not grow with Services (the
// ipsets carry the per-Service data), except one KUBE-IPVS-OUT-FILTER rule per firewalled LB
// port the node may not reach. Rendered as iptables-restore input by renderIpvsIptables. Pure.

import { quoteArg } from '../../netfilter/iptables/render.js';
import { ifNotLocal } from '../iptables/options.js';
import { sourceRangesAllowNode } from '../model/traffic-policy.js';
import { FILTER_CHAINS, IPSET_RULE_ROWS, NAT_CHAINS } from './names.js';
import { portOf } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import type { IpsetPlan, IpvsPlanInput } from './plan.js';

export interface IpvsIptablesRule {
  readonly table: 'nat' | 'filter';
  readonly chain: string;
  /** The arguments after `-A chain`, unquoted. */
  readonly args: readonly string[];
}

/** The `-j` target of a rule ('' when none). */
export function ruleJump(r: IpvsIptablesRule): string {
  const i = r.args.indexOf('-j');
  return i >= 0 ? (r.args[i + 1] ?? '') : '';
}

/** The set a rule's `--match-set` names ('' when none). */
export function ruleMatchSet(r: IpvsIptablesRule): string {
  const i = r.args.indexOf('--match-set');
  return i >= 0 ? (r.args[i + 1] ?? '') : '';
}

/** Writes rules into `out`, naming the plan's ipsets. */
interface RuleContext {
  readonly out: IpvsIptablesRule[];
  readonly set: (base: string) => IpsetPlan;
  readonly nonEmpty: (base: string) => boolean;
  readonly nat: (chain: string, ...args: string[]) => void;
  readonly filter: (chain: string, ...args: string[]) => void;
  /** `-m comment --comment C -m set --match-set SET match` for the set's rules. */
  readonly commentSet: (base: string, match: string) => string[];
}

function ruleContext(ipsets: readonly IpsetPlan[]): RuleContext {
  const out: IpvsIptablesRule[] = [];
  const byBase = new Map(ipsets.map((s) => [s.base, s]));
  const set = (base: string): IpsetPlan => {
    const s = byBase.get(base);
    if (!s) throw new Error(`ipvs plan: no ipset ${base}`);
    return s;
  };
  return {
    out,
    set,
    nonEmpty: (base) => set(base).entries.length > 0,
    nat: (chain, ...args) => out.push({ table: 'nat', chain, args }),
    filter: (chain, ...args) => out.push({ table: 'filter', chain, args }),
    commentSet: (base, match) => [
      '-m',
      'comment',
      '--comment',
      set(base).comment,
      '-m',
      'set',
      '--match-set',
      set(base).name,
      match,
    ],
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

/** KUBE-SERVICES and the set-matching rules, up to the ACCEPTs that end KUBE-SERVICES. */
function writeServiceRules(ctx: RuleContext, input: IpvsPlanInput): void {
  const { options, family } = input;
  const { out, set, nonEmpty, nat, filter, commentSet } = ctx;
  nat('KUBE-SERVICES', '-s', family === 'IPv6' ? '::1/128' : '127.0.0.0/8', '-j', 'RETURN');
  for (const row of IPSET_RULE_ROWS) {
    if (!nonEmpty(row.set)) continue;
    const proto = row.protocol !== undefined ? ['-p', row.protocol] : [];
    out.push({
      table: row.table,
      chain: row.chain,
      args: [...proto, ...commentSet(row.set, row.match), '-j', row.jump],
    });
  }
  if (nonEmpty('KUBE-CLUSTER-IP')) {
    const base = commentSet('KUBE-CLUSTER-IP', 'dst,dst');
    if (options.masqueradeAll) nat('KUBE-SERVICES', ...base, '-j', 'KUBE-MARK-MASQ');
    else if (options.localDetector.mode !== 'None')
      nat('KUBE-SERVICES', ...base, ...ifNotLocal(options.localDetector), '-j', 'KUBE-MARK-MASQ');
    else nat('KUBE-SERVICES', ...commentSet('KUBE-CLUSTER-IP', 'src,dst'), '-j', 'KUBE-MARK-MASQ');
  }
  const externalAccept = (base: string): void => {
    const args = commentSet(base, 'dst,dst');
    nat(
      'KUBE-SERVICES',
      ...args,
      '-m',
      'physdev',
      '!',
      '--physdev-is-in',
      '-m',
      'addrtype',
      '!',
      '--src-type',
      'LOCAL',
      '-j',
      'ACCEPT',
    );
    nat('KUBE-SERVICES', ...args, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'ACCEPT');
  };
  if (nonEmpty('KUBE-EXTERNAL-IP')) {
    nat('KUBE-SERVICES', ...commentSet('KUBE-EXTERNAL-IP', 'dst,dst'), '-j', 'KUBE-MARK-MASQ');
    externalAccept('KUBE-EXTERNAL-IP');
  }
  if (nonEmpty('KUBE-EXTERNAL-IP-LOCAL')) externalAccept('KUBE-EXTERNAL-IP-LOCAL');
  nat('KUBE-SERVICES', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'KUBE-NODE-PORT');
  nat('KUBE-LOAD-BALANCER', '-j', 'KUBE-MARK-MASQ');
  if (nonEmpty('KUBE-LOAD-BALANCER-FW')) filter('KUBE-SOURCE-RANGES-FIREWALL', '-j', 'DROP');
  for (const key of [...input.services.keys()].sort()) {
    const sp = input.services.get(key);
    if (!sp || sp.loadBalancerSourceRanges.length === 0) continue;
    if (sourceRangesAllowNode(sp, options.nodeIP)) continue;
    for (const ip of sp.loadBalancerVIPs) {
      if (!set('KUBE-LOAD-BALANCER-FW').entries.length) continue;
      filter(
        'KUBE-IPVS-OUT-FILTER',
        '-s',
        ip,
        '-m',
        'ipvs',
        '--vaddr',
        ip,
        '--vproto',
        sp.protocol.toLowerCase(),
        '--vport',
        String(portOf(sp.port)),
        '-j',
        'DROP',
      );
    }
  }
  for (const base of ['KUBE-CLUSTER-IP', 'KUBE-LOAD-BALANCER']) {
    if (nonEmpty(base))
      nat('KUBE-SERVICES', '-m', 'set', '--match-set', set(base).name, 'dst,dst', '-j', 'ACCEPT');
  }
}

/** KUBE-FORWARD, filter KUBE-NODE-PORT, KUBE-IPVS-FILTER, KUBE-POSTROUTING and KUBE-MARK-MASQ. */
function writeFixedRules(ctx: RuleContext, options: IpvsProxierOptions): void {
  const { set, nat, filter, commentSet } = ctx;
  const mark = options.masqueradeMark;
  filter(
    'KUBE-FORWARD',
    '-m',
    'comment',
    '--comment',
    'kubernetes forwarding rules',
    '-m',
    'mark',
    '--mark',
    `${mark}/${mark}`,
    '-j',
    'ACCEPT',
  );
  filter(
    'KUBE-FORWARD',
    '-m',
    'comment',
    '--comment',
    'kubernetes forwarding conntrack rule',
    '-m',
    'conntrack',
    '--ctstate',
    'RELATED,ESTABLISHED',
    '-j',
    'ACCEPT',
  );
  filter('KUBE-NODE-PORT', ...commentSet('KUBE-HEALTH-CHECK-NODE-PORT', 'dst'), '-j', 'ACCEPT');
  for (const base of [
    'KUBE-LOAD-BALANCER',
    'KUBE-CLUSTER-IP',
    'KUBE-EXTERNAL-IP',
    'KUBE-EXTERNAL-IP-LOCAL',
  ])
    filter(
      'KUBE-IPVS-FILTER',
      '-m',
      'set',
      '--match-set',
      set(base).name,
      'dst,dst',
      '-j',
      'RETURN',
    );
  filter(
    'KUBE-IPVS-FILTER',
    '-m',
    'set',
    '--match-set',
    set('KUBE-HEALTH-CHECK-NODE-PORT').name,
    'dst',
    '-j',
    'RETURN',
  );
  filter(
    'KUBE-IPVS-FILTER',
    '-m',
    'conntrack',
    '--ctstate',
    'NEW',
    '-m',
    'set',
    '--match-set',
    set('KUBE-IPVS-IPS').name,
    'dst',
    '-j',
    'REJECT',
  );
  nat('KUBE-POSTROUTING', '-m', 'mark', '!', '--mark', `${mark}/${mark}`, '-j', 'RETURN');
  nat('KUBE-POSTROUTING', '-j', 'MARK', '--xor-mark', mark);
  nat(
    'KUBE-POSTROUTING',
    '-m',
    'comment',
    '--comment',
    'kubernetes service traffic requiring SNAT',
    '-j',
    'MASQUERADE',
    ...(options.hasRandomFully ? ['--random-fully'] : []),
  );
  nat('KUBE-MARK-MASQ', '-j', 'MARK', '--or-mark', mark);
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
      if (r.table === table) lines.push([`-A ${r.chain}`, ...r.args.map(quoteArg)].join(' '));
    }
    lines.push('COMMIT');
  }
  return `${lines.join('\n')}\n`;
}
