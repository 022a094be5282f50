// Reading a kube-proxy-style table back without `nft list table`: at 10k Services that
// listing takes seconds (the kernel's set dump restarts its walk of the table's set list for
// every message, and nft prints every anonymous map), while a full sync's diff needs only
// the chain names, the named sets' definitions and the Service sets' elements. This module
// holds the pure parts: what to ask nft for, and assembling the answers into a TableState.

import type { ChainState, Ruleset, SetState, TableRef, TableState } from './model.js';
import { tableKey } from './model.js';

/** The table with every chain's rules dropped (anonymous sets are never listed as sets). */
export function withoutRules(t: TableState): TableState {
  const chains = new Map<string, ChainState>();
  for (const [k, c] of t.chains) chains.set(k, { chain: c.chain, rules: [] });
  return { table: t.table, chains, sets: t.sets };
}

/**
 * Assembles a table from separately listed pieces: `chains` from `nft list chains FAMILY`
 * (every table of the family), `sets` from the listings of the table's named sets and maps
 * (terse or with elements). Undefined when the table is in neither.
 */
export function assembleTable(
  ref: TableRef,
  chains: Ruleset,
  sets: readonly Ruleset[],
): TableState | undefined {
  const key = tableKey(ref);
  const base = chains.tables.get(key);
  const setMap = new Map<string, SetState>();
  let table = base?.table;
  for (const rs of sets) {
    const t = rs.tables.get(key);
    if (t === undefined) continue;
    table ??= t.table;
    for (const [name, s] of t.sets) {
      const have = setMap.get(name);
      // A listing with elements wins over a terse one.
      if (have === undefined || s.elements.size >= have.elements.size) setMap.set(name, s);
    }
  }
  if (table === undefined) return undefined;
  const chainMap = new Map<string, ChainState>();
  for (const [k, c] of base?.chains ?? []) chainMap.set(k, { chain: c.chain, rules: [] });
  return { table, chains: chainMap, sets: setMap };
}
