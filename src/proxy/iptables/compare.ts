// Canonical ordering and consistency checks for iptables-restore text, as kube-proxy's own
// tests compare rule dumps: tables by name; chains KUBE-NODEPORTS, KUBE-SERVICES, the other
// KUBE-* chains alphabetically, then the rest; rules grouped by chain in that order, with
// KUBE-NODEPORTS and KUBE-SERVICES rules stable-sorted by the Service named in their comment
// (the "must be the last rule" rule stays last); `-X` lines last. Plus the jump-consistency
// check (every jump target declared, every declared service chain jumped to). Pure.

import { parseDocument } from '../../netfilter/iptables/parse.js';
import type { IptablesDocument, Rule, TableDoc } from '../../netfilter/iptables/model.js';
import { commentOf, jumpTargetOf } from '../../netfilter/iptables/rule.js';
import { renderChainDecl, renderRule } from '../../netfilter/iptables/render.js';
import {
  COMMENT_NODEPORTS_LAST,
  KUBE_NODEPORTS,
  KUBE_SERVICES,
  isServiceChainName,
} from './names.js';

function chainRank(name: string): [number, string] {
  if (name === KUBE_NODEPORTS) return [0, ''];
  if (name === KUBE_SERVICES) return [1, ''];
  if (name.startsWith('KUBE-')) return [2, name];
  return [3, name];
}

function compareChains(a: string, b: string): number {
  const [ra, na] = chainRank(a);
  const [rb, nb] = chainRank(b);
  if (ra !== rb) return ra - rb;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

function serviceOf(rule: Rule): string {
  return (commentOf(rule.args) ?? '').split(' ')[0] ?? '';
}

function sortDispatchRules(rules: Rule[]): Rule[] {
  const last = rules.filter((r) => commentOf(r.args) === COMMENT_NODEPORTS_LAST);
  const rest = rules.filter((r) => commentOf(r.args) !== COMMENT_NODEPORTS_LAST);
  const sorted = rest
    .map((r, i) => ({ r, i, s: serviceOf(r) }))
    .sort((a, b) => (a.s < b.s ? -1 : a.s > b.s ? 1 : a.i - b.i))
    .map((x) => x.r);
  return [...sorted, ...last];
}

function sortTable(t: TableDoc): string {
  const lines = [`*${t.name}`];
  const chains = [...t.chains].sort((a, b) => compareChains(a.name, b.name));
  for (const c of chains) lines.push(renderChainDecl({ name: c.name, policy: c.policy }));
  const byChain = new Map<string, Rule[]>();
  for (const r of t.rules) {
    const l = byChain.get(r.chain) ?? [];
    l.push({ chain: r.chain, args: r.args });
    byChain.set(r.chain, l);
  }
  for (const name of [...byChain.keys()].sort(compareChains)) {
    let rules = byChain.get(name) ?? [];
    if (name === KUBE_NODEPORTS || name === KUBE_SERVICES) rules = sortDispatchRules(rules);
    for (const r of rules) lines.push(renderRule(r));
  }
  for (const x of [...t.deleteChains].sort()) lines.push(`-X ${x}`);
  lines.push('COMMIT');
  return lines.join('\n') + '\n';
}

/** Canonical text of a restore document (see file header). */
export function sortIptablesDocument(doc: IptablesDocument): string {
  return [...doc.tables]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(sortTable)
    .join('');
}

/** Canonical text of restore input text; throws SvcnetError INVALID_INPUT if unparsable. */
export function sortIptablesText(text: string): string {
  return sortIptablesDocument(parseDocument(text));
}

const NON_CHAIN_TARGETS = new Set([
  'ACCEPT',
  'DROP',
  'REJECT',
  'RETURN',
  'MARK',
  'MASQUERADE',
  'DNAT',
  'SNAT',
  'LOG',
  'CONNMARK',
  'NOTRACK',
]);

/**
 * kube-proxy's jump-consistency invariants for one restore document: every `-j` target
 * that is a chain is declared in the same table; every declared KUBE-SVC/SVL/EXT/FW/SEP
 * chain is jumped to unless it is being deleted; nothing is appended to a deleted chain.
 * Returns the violations (empty when consistent).
 */
export function checkRuleJumps(doc: IptablesDocument): string[] {
  const problems: string[] = [];
  for (const t of doc.tables) {
    const declared = new Set(t.chains.map((c) => c.name));
    const deleted = new Set(t.deleteChains);
    const jumped = new Set<string>();
    for (const r of t.rules) {
      if (deleted.has(r.chain))
        problems.push(`${t.name}: rule appended to deleted chain ${r.chain}`);
      const target = jumpTargetOf(r.args);
      if (target === undefined || NON_CHAIN_TARGETS.has(target)) continue;
      jumped.add(target);
      if (!declared.has(target))
        problems.push(`${t.name}: ${r.chain} jumps to undeclared chain ${target}`);
    }
    for (const c of declared)
      if (isServiceChainName(c) && !jumped.has(c) && !deleted.has(c))
        problems.push(`${t.name}: chain ${c} is declared but never jumped to`);
  }
  return problems;
}

/** The `-A` lines of one chain, in order, each ending in a newline. */
export function chainText(doc: IptablesDocument, table: string, chain: string): string {
  const t = doc.tables.find((x) => x.name === table);
  return (t?.rules ?? [])
    .filter((r) => r.chain === chain)
    .map((r) => `${renderRule({ chain: r.chain, args: r.args })}\n`)
    .join('');
}
