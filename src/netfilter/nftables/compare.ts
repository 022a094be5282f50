// Puts two nftables states in the form in which they can be compared: what survives a trip
// through the kernel. A ruleset read back from `nft list ruleset` and the Fake's state after
// loading the same text differ only in what nft does not keep — rule handles, the default
// `policy accept`, and a single-item anonymous set `{ x }` that nft stores as the bare `x` —
// so canonicalRuleset drops or folds exactly those. Pure.

import type { ChainState, NftChain, NftRule, Ruleset, SetState, TableState } from './model.js';
import { canonicalStatements } from './rule.js';

function canonicalRule(r: NftRule): NftRule {
  const copy: { -readonly [K in keyof NftRule]: NftRule[K] } = {
    ...r,
    statements: canonicalStatements(r.statements),
  };
  delete copy.handle;
  delete copy.index;
  return copy;
}

function canonicalChain(c: NftChain): NftChain {
  if (c.policy !== 'accept') return c;
  const copy: { -readonly [K in keyof NftChain]: NftChain[K] } = { ...c };
  delete copy.policy;
  return copy;
}

function canonicalTable(t: TableState): TableState {
  const chains = new Map<string, ChainState>();
  for (const [k, c] of t.chains) {
    chains.set(k, { chain: canonicalChain(c.chain), rules: c.rules.map(canonicalRule) });
  }
  const sets = new Map<string, SetState>();
  for (const [k, s] of t.sets) sets.set(k, { set: s.set, elements: new Map(s.elements) });
  return { table: t.table, chains, sets };
}

/**
 * A copy of `rs` without rule handles or indexes, with `policy accept` left implicit and
 * rule statements canonical (rule.ts canonicalStatements). Two rulesets that nft would
 * print the same are deep-equal after this (Maps compare regardless of order).
 */
export function canonicalRuleset(rs: Ruleset): Ruleset {
  const tables = new Map<string, TableState>();
  for (const [k, t] of rs.tables) tables.set(k, canonicalTable(t));
  return { tables };
}
