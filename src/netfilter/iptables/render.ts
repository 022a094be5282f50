// Renders the iptables document model as iptables-restore input / iptables-save text.
// Arguments are quoted with double quotes only when they need it (whitespace, quotes,
// empty), as iptables-save and kube-proxy write them. Pure.

import type { ChainDecl, IptablesDocument, Rule, TableDoc } from './model.js';

const NEEDS_QUOTES = /[\s"'\\]/;
const NEEDS_ESCAPES = /["\\]/;

/** Quotes one argument the way iptables-save does. */
export function quoteArg(arg: string): string {
  if (arg !== '' && !NEEDS_QUOTES.test(arg)) return arg;
  // Most quoted words (comments with spaces) have nothing to escape.
  if (!NEEDS_ESCAPES.test(arg)) return `"${arg}"`;
  return `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export function renderChainDecl(c: ChainDecl): string {
  const counters = c.counters ? `[${c.counters.packets}:${c.counters.bytes}]` : '[0:0]';
  return `:${c.name} ${c.policy} ${counters}`;
}

/** One rule line, e.g. `-A KUBE-SERVICES -m comment --comment "a b" -j X`. */
export function renderRule(r: Rule): string {
  const counters = r.counters ? `[${r.counters.packets}:${r.counters.bytes}] ` : '';
  const op = r.insert
    ? `-I ${r.chain}${r.insert.position !== undefined ? ` ${r.insert.position}` : ''}`
    : `-A ${r.chain}`;
  const args = r.args.map(quoteArg).join(' ');
  return `${counters}${op}${args === '' ? '' : ` ${args}`}`;
}

export function renderTable(t: TableDoc): string {
  const lines = [`*${t.name}`];
  for (const c of t.chains) lines.push(renderChainDecl(c));
  for (const f of t.flushChains ?? []) lines.push(`-F ${f}`);
  for (const r of t.rules) lines.push(renderRule(r));
  for (const x of t.deleteChains) lines.push(`-X ${x}`);
  lines.push('COMMIT');
  return lines.join('\n') + '\n';
}

export function renderDocument(doc: IptablesDocument): string {
  return doc.tables.map(renderTable).join('');
}
