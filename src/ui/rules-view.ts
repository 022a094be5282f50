// The rules view's model: one node's ruleset text (iptables-save / our render output, or an
// `nft list ruleset` dump) as tables of chains of rules, each rule annotated with the Service
// port, endpoint and role its kube-proxy comment names (trace/explain.ts reads the comments,
// so the page and the tracer agree), and the chain it jumps to. iptables text goes through the
// shared parser (netfilter/iptables/parse.ts); nft text is split by its block structure only,
// since the page shows rule text and does not evaluate it. Pure: no I/O.

import { parseDocument } from '../netfilter/iptables/parse.js';
import { renderRule } from '../netfilter/iptables/render.js';
import { objectsFromComment } from '../trace/explain.js';
import { detectRulesFormat } from '../trace/nft/input.js';
import type { RuleInfo, RulesChain, RulesTable, RulesView } from './api-types.js';
import { NFT_CHAIN_NAME } from './chain-graph.js';

function annotate(index: number, text: string, comment: string | undefined, target?: string) {
  const o = objectsFromComment(comment);
  const info: RuleInfo = {
    index,
    text,
    ...(target !== undefined ? { target } : {}),
    ...(comment !== undefined ? { comment } : {}),
    ...(o.servicePort !== undefined ? { servicePort: o.servicePort } : {}),
    ...(o.endpoint !== undefined ? { endpoint: o.endpoint } : {}),
    ...(o.role !== undefined ? { role: o.role } : {}),
  };
  return info;
}

function argAfter(args: readonly string[], flags: readonly string[]): string | undefined {
  const i = args.findIndex((a) => flags.includes(a));
  return i >= 0 ? args[i + 1] : undefined;
}

function iptablesTables(text: string): RulesTable[] {
  return parseDocument(text).tables.map((t) => {
    const names = [...t.chains.map((c) => c.name)];
    for (const r of t.rules) if (!names.includes(r.chain)) names.push(r.chain);
    const chains: RulesChain[] = names.map((name) => {
      const rules = t.rules.filter((r) => r.chain === name);
      const policy = t.chains.find((c) => c.name === name)?.policy ?? '-';
      return {
        name,
        policy: policy === '-' ? '' : policy,
        rules: rules.map((r, i) =>
          annotate(
            i + 1,
            renderRule(r),
            argAfter(r.args, ['--comment']),
            argAfter(r.args, ['-j', '--jump', '-g', '--goto']),
          ),
        ),
      };
    });
    return { name: t.name, chains };
  });
}

const NFT_COMMENT = /\bcomment "((?:[^"\\]|\\.)*)"/;
const NFT_TARGET = new RegExp(String.raw`\b(?:jump|goto) (${NFT_CHAIN_NAME})`);
const NFT_BASE = /^type \w+ hook \w+/;

/** `table FAMILY NAME {` … `chain NAME {` … rules … `}`: chains and rule lines, in order. */
function nftTables(text: string): RulesTable[] {
  const tables: { name: string; chains: RulesChain[] }[] = [];
  let table: { name: string; chains: RulesChain[] } | undefined;
  let chain: { name: string; policy: string; rules: RuleInfo[] } | undefined;
  let skipDepth = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (skipDepth > 0) {
      if (line.endsWith('{')) skipDepth++;
      if (line === '}') skipDepth--;
      continue;
    }
    const t = /^table (\w+) ([\w.-]+) \{(?:\s*#.*)?$/.exec(line);
    if (t) {
      table = { name: `${t[1] ?? ''} ${t[2] ?? ''}`, chains: [] };
      tables.push(table);
      continue;
    }
    const c = new RegExp(String.raw`^chain (${NFT_CHAIN_NAME}) \{(?:\s*#.*)?$`).exec(line);
    if (c && table) {
      chain = { name: c[1] ?? '', policy: '', rules: [] };
      table.chains.push(chain);
      continue;
    }
    if (line === '}') {
      if (chain) chain = undefined;
      else table = undefined;
      continue;
    }
    // Sets, maps, flowtables: their elements are not rules.
    if (line.endsWith('{')) {
      skipDepth = 1;
      continue;
    }
    if (!chain) continue;
    if (NFT_BASE.test(line)) {
      chain.policy = line.replace(/;\s*$/, '');
      continue;
    }
    chain.rules.push(
      annotate(
        chain.rules.length + 1,
        line,
        NFT_COMMENT.exec(line)?.[1]?.replaceAll('\\"', '"'),
        NFT_TARGET.exec(line)?.[1],
      ),
    );
  }
  return tables;
}

/**
 * The view of `raw` for `node`. iptables input that does not parse throws the parser's
 * INVALID_INPUT error naming the line.
 */
export function buildRulesView(
  node: string,
  origin: RulesView['origin'],
  description: string,
  raw: string,
): RulesView {
  const format = detectRulesFormat(raw);
  return {
    node,
    origin,
    description,
    format,
    tables: format === 'nft' ? nftTables(raw) : iptablesTables(raw),
    raw,
  };
}
