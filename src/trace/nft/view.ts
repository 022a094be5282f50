// A read-only view of an nftables ruleset for walking one address family: the tables that
// see the packet (`ip` or `ip6`, and `inet`), each hook's base chains in the order the kernel
// runs them (by priority, then as listed), chains by table, and set/map lookups indexed once
// (exact keys in a hash; prefixes and ranges compared one by one). Pure.

import type {
  ChainHook,
  ChainState,
  NftElement,
  Ruleset,
  SetState,
  TableState,
} from '../../netfilter/nftables/model.js';
import { tableKey } from '../../netfilter/nftables/model.js';
import type { IPFamily } from '../../util/ip.js';
import { canonicalPart, keyMatches, valueText, type Val } from './values.js';

/** One base chain at a hook. */
export interface BaseChain {
  readonly table: TableState;
  readonly chain: ChainState;
  readonly priority: number;
}

/** A set or map ready for lookups. */
export interface IndexedSet {
  readonly state: SetState;
  /** Elements whose key is exact values, by canonical key text. */
  readonly exact: ReadonlyMap<string, NftElement>;
  /** Elements with a prefix or range in their key. */
  readonly intervals: readonly NftElement[];
}

export interface NftView {
  readonly family: IPFamily;
  readonly tables: readonly TableState[];
  readonly hooks: ReadonlyMap<ChainHook, readonly BaseChain[]>;
  /** Sets by `family table` then name, indexed on first use. */
  lookupSet(table: TableState, name: string): IndexedSet | undefined;
}

const HOOKS: readonly ChainHook[] = ['prerouting', 'input', 'forward', 'output', 'postrouting'];

function indexSet(state: SetState): IndexedSet {
  const exact = new Map<string, NftElement>();
  const intervals: NftElement[] = [];
  for (const e of state.elements.values()) {
    const parts = e.key.map((k, i) => canonicalPart(k, state.set.keyType[i]));
    if (parts.every((p): p is string => p !== undefined)) exact.set(parts.join(' . '), e);
    else intervals.push(e);
  }
  return { state, exact, intervals };
}

/** The element of `set` whose key the values match, if any. */
export function findElement(set: IndexedSet, vals: readonly Val[]): NftElement | undefined {
  const hit = set.exact.get(vals.map(valueText).join(' . '));
  if (hit) return hit;
  return set.intervals.find((e) => keyMatches(vals, e.key) === true);
}

/** Builds the view of `ruleset` for packets of `family`. */
export function buildNftView(ruleset: Ruleset, family: IPFamily): NftView {
  const wanted = family === 'IPv4' ? 'ip' : 'ip6';
  const tables = [...ruleset.tables.values()].filter(
    (t) => t.table.family === wanted || t.table.family === 'inet',
  );
  const hooks = new Map<ChainHook, BaseChain[]>();
  for (const hook of HOOKS) {
    const list: BaseChain[] = [];
    for (const table of tables)
      for (const chain of table.chains.values())
        if (chain.chain.hook === hook)
          list.push({ table, chain, priority: chain.chain.priority ?? 0 });
    // Array.prototype.sort is stable: equal priorities keep the listing order.
    list.sort((a, b) => a.priority - b.priority);
    hooks.set(hook, list);
  }
  const indexed = new Map<string, IndexedSet | null>();
  return {
    family,
    tables,
    hooks,
    lookupSet(table, name) {
      const key = `${tableKey(table.table)} ${name}`;
      let s = indexed.get(key);
      if (s === undefined) {
        const state = table.sets.get(name);
        s = state ? indexSet(state) : null;
        indexed.set(key, s);
      }
      return s ?? undefined;
    },
  };
}
