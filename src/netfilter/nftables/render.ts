// Renders the typed model as `nft -f` text, line for line as knftables writes it and
// kube-proxy's fixtures spell it: `add table ip kube-proxy { comment "…" ; }`, `add chain ip
// kube-proxy filter-input { type filter hook input priority 0 ; }`, `add set … { type
// ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }`, `add map … { type a . b : verdict ;
// comment "…" ; }`, `add element … { k . k comment "…" : goto c }`, `add rule … CHAIN BODY`,
// and `flush`/`delete`/`create`/`insert`/`replace` forms. dump() prints a ruleset's state the
// way knftables' Fake dumps it (table, chains/sets/maps sorted by name, then rules per chain,
// then elements), which is also an order real `nft -f` accepts. sortTransactionText is the
// fixtures' comparison order (reference §4.2). Comments are written as given (the planner
// truncates element comments). Pure.

import type {
  NftChain,
  NftElement,
  NftObject,
  NftRule,
  NftSet,
  NftTable,
  Operation,
  Ruleset,
  TableState,
  Transaction,
} from './model.js';
import { renderMapValue, renderRule } from './rule.js';
import { quote } from './tokens.js';

/** Verbs that write an object's full definition (the others name it only). */
function defines(op: Operation): boolean {
  return op.verb === 'add' || op.verb === 'create';
}

function tableBody(t: NftTable): string {
  return t.comment === undefined ? '' : ` { comment ${quote(t.comment)} ; }`;
}

function chainBody(c: NftChain): string {
  const parts: string[] = [];
  if (c.type !== undefined && c.hook !== undefined) {
    parts.push(`type ${c.type} hook ${c.hook} priority ${String(c.priority ?? 0)} ;`);
    if (c.policy !== undefined) parts.push(`policy ${c.policy} ;`);
  }
  if (c.comment !== undefined) parts.push(`comment ${quote(c.comment)} ;`);
  return parts.length === 0 ? '' : ` { ${parts.join(' ')} }`;
}

function setBody(s: NftSet): string {
  let type = s.keyType.join(' . ');
  if (s.kind === 'map') type += ` : ${(s.valueType ?? []).join(' . ')}`;
  const parts = [`type ${type} ;`];
  if (s.flags !== undefined && s.flags.length > 0) parts.push(`flags ${s.flags.join(',')} ;`);
  if (s.timeoutSeconds !== undefined) parts.push(`timeout ${String(s.timeoutSeconds)}s ;`);
  if (s.comment !== undefined) parts.push(`comment ${quote(s.comment)} ;`);
  return ` { ${parts.join(' ')} }`;
}

/** `k . k [comment "…"] [: value]`, the inside of an element's braces. */
export function renderElementItem(e: Pick<NftElement, 'key' | 'value' | 'comment'>): string {
  let s = e.key.join(' . ');
  if (e.comment !== undefined) s += ` comment ${quote(e.comment)}`;
  if (e.value !== undefined) s += ` : ${renderMapValue(e.value)}`;
  return s;
}

function ruleLine(verb: Operation['verb'], r: NftRule): string {
  // delete/replace name the rule by handle; add/insert/create place it by index or handle.
  let where = '';
  if (r.index !== undefined && verb !== 'delete' && verb !== 'replace') {
    where = ` index ${String(r.index)}`;
  } else if (r.handle !== undefined) {
    where = ` handle ${String(r.handle)}`;
  }
  const head = `${verb} rule ${r.family} ${r.table} ${r.chain}${where}`;
  if (verb === 'delete') return head;
  const body = renderRule(r);
  return body === '' ? head : `${head} ${body}`;
}

function objectHead(verb: Operation['verb'], o: NftObject): string {
  return `${verb} ${o.kind} ${o.family} ${o.table}`;
}

/** One `nft -f` line. */
export function renderOperation(op: Operation): string {
  const o = op.object;
  switch (o.kind) {
    case 'table':
      return objectHead(op.verb, o) + (defines(op) ? tableBody(o) : '');
    case 'chain':
      return `${objectHead(op.verb, o)} ${o.name}${defines(op) ? chainBody(o) : ''}`;
    case 'set':
    case 'map':
      return `${objectHead(op.verb, o)} ${o.name}${defines(op) ? setBody(o) : ''}`;
    case 'element': {
      const item = op.verb === 'delete' ? o.key.join(' . ') : renderElementItem(o);
      return `${objectHead(op.verb, o)} ${o.set} { ${item} }`;
    }
    case 'rule':
      return ruleLine(op.verb, o);
  }
}

/** The transaction as `nft -f` input: one line per operation, newline-terminated. */
export function renderTransaction(tx: Transaction): string {
  return tx.map((op) => `${renderOperation(op)}\n`).join('');
}

// ---------------------------------------------------------------------------------------
// State dump

const byName = <T extends { name: string }>(a: T, b: T): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

function withoutPosition(r: NftRule): NftRule {
  if (r.handle === undefined && r.index === undefined) return r;
  const copy: { -readonly [K in keyof NftRule]: NftRule[K] } = { ...r };
  delete copy.handle;
  delete copy.index;
  return copy;
}

function dumpTable(t: TableState, out: string[]): void {
  const add = (object: NftObject): void => {
    out.push(renderOperation({ verb: 'add', object }));
  };
  add(t.table);
  const chains = [...t.chains.values()].map((c) => c.chain).sort(byName);
  const sets = [...t.sets.values()].map((s) => s.set).sort(byName);
  for (const c of chains) add(c);
  for (const s of sets) if (s.kind === 'set') add(s);
  for (const s of sets) if (s.kind === 'map') add(s);
  for (const c of chains) {
    // Handles and positions are kernel state, not part of the dumped definition.
    for (const r of t.chains.get(c.name)?.rules ?? []) add(withoutPosition(r));
  }
  for (const kind of ['set', 'map'] as const) {
    for (const s of sets) {
      if (s.kind !== kind) continue;
      for (const e of t.sets.get(s.name)?.elements.values() ?? []) add(e);
    }
  }
}

/**
 * The state as `add …` lines, as knftables' Fake Dump() prints it: per table, the table,
 * chains, sets and maps sorted by name, the rules of each chain in order (chains by name),
 * then the elements of each set and map. Real `nft -f` accepts it as is.
 */
export function dump(ruleset: Ruleset): string {
  const out: string[] = [];
  const tables = [...ruleset.tables.keys()].sort();
  for (const key of tables) {
    const t = ruleset.tables.get(key);
    if (t !== undefined) dumpTable(t, out);
  }
  return out.map((l) => `${l}\n`).join('');
}

// ---------------------------------------------------------------------------------------
// Comparison order

const TYPE_ORDER: Readonly<Record<string, number>> = {
  table: 0,
  chain: 1,
  rule: 2,
  set: 3,
  map: 4,
  element: 5,
};

/**
 * The fixtures' `nft-sorted` order (reference §4.2 "Text comparison"): blank and `#` lines
 * dropped; lines ordered by object type (table, chain, rule, set, map, element), then by
 * object name (the 5th word); rules keep their relative order within a chain; other ties
 * by the full text. Returns the lines newline-terminated.
 */
export function sortTransactionText(text: string): string {
  const lines = text
    .split('\n')
    .map((l, i) => ({ l: l.trimEnd(), i }))
    .filter(({ l }) => l.trim() !== '' && !l.trimStart().startsWith('#'));
  const keyed = lines.map(({ l, i }) => {
    const words = l.trim().split(/\s+/);
    return { l, i, type: TYPE_ORDER[words[1] ?? ''] ?? 6, name: words[4] ?? '' };
  });
  keyed.sort((a, b) => {
    if (a.type !== b.type) return a.type - b.type;
    if (a.name !== b.name) return a.name < b.name ? -1 : 1;
    if (a.type === TYPE_ORDER.rule) return a.i - b.i;
    return a.l < b.l ? -1 : a.l > b.l ? 1 : a.i - b.i;
  });
  return keyed.map(({ l }) => `${l}\n`).join('');
}
