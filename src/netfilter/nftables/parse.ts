// Reads nftables text into the typed model: parseTransaction for `nft -f` input as knftables
// and kube-proxy's fixtures write it (`add table ip kube-proxy { comment "…" ; }`, `add chain
// … { type filter hook input priority 0 ; }`, `add set/map … { type … ; flags … ; timeout …
// ; comment "…" ; }`, `add element … { k . k comment "…" : goto c , … }`, `add rule … CHAIN
// [index N|handle N] BODY`, and the flush/delete/create/insert/replace forms), and
// parseRuleset for what `nft list ruleset` / `nft list table` print (nested `table { chain {
// … } set { … elements = { … } } map { … } }`, symbolic priorities, `# handle N`, counters).
// Rule bodies go through rule.ts. Errors name the line (`line 3: …`) with code
// INVALID_INPUT; a rule body never fails (unknown words become `unsupported`). detectFormat
// tells the two apart (and from iptables-save). Pure.

import type {
  NftChain,
  NftElement,
  NftFamily,
  NftRule,
  NftSet,
  NftTable,
  Operation,
  Ruleset,
  TableState,
  Verb,
} from './model.js';
import { elementKey, emptyRuleset, tableKey } from './model.js';
import type { ElementItem, Item } from './blocks.js';
import {
  blockItems,
  invalid,
  parseElementItems,
  plainWords,
  readChainBody,
  readSetBody,
  splitItems,
} from './blocks.js';
import { parseRuleWords } from './rule.js';
import { Cursor, tokenize, unquote } from './tokens.js';

const FAMILIES = new Set<string>(['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev']);
const VERBS = new Set<string>(['add', 'create', 'insert', 'replace', 'delete', 'flush']);
const KINDS = new Set<string>(['table', 'chain', 'set', 'map', 'element', 'rule']);

/** The items of a whole text, split at line ends and `;` outside braces. */
function topItems(text: string): Item[] {
  const words = tokenize(text, { newlines: true });
  const r = splitItems(words, 0, 1);
  // splitItems stops at a `}` that closes nothing: at top level that is an error.
  if (r.closed) throw invalid(r.line, "unexpected '}'");
  return r.items;
}

// ---------------------------------------------------------------------------------------
// nft -f commands

interface Head {
  readonly family: NftFamily;
  readonly table: string;
  /** Words after the table name (object name, block, rule body). */
  readonly rest: string[];
}

function readHead(words: readonly string[], line: number): Head {
  let k = 0;
  let family: NftFamily = 'ip';
  if (FAMILIES.has(words[0] ?? '')) {
    family = words[0] as NftFamily;
    k = 1;
  }
  const table = words[k];
  if (table === undefined || table === '{') throw invalid(line, 'missing table name');
  return { family, table, rest: words.slice(k + 1) };
}

function tableOp(verb: Verb, h: Head, item: Item): Operation {
  const { items } = blockItems({ words: h.rest, line: item.line });
  let comment: string | undefined;
  for (const it of items) {
    const [kw, value] = plainWords(it.words);
    if (kw === 'comment' && value !== undefined) comment = unquote(value);
  }
  const object: NftTable = {
    kind: 'table',
    family: h.family,
    table: h.table,
    ...(comment !== undefined ? { comment } : {}),
  };
  return { verb, object };
}

function chainObject(h: Head, name: string, item: Item): { chain: NftChain; rest: Item[] } {
  const { items } = blockItems({ words: h.rest.slice(1), line: item.line });
  const b = readChainBody(items);
  const chain: NftChain = {
    kind: 'chain',
    family: h.family,
    table: h.table,
    name,
    ...(b.type !== undefined ? { type: b.type, hook: b.hook, priority: b.priority } : {}),
    ...(b.policy !== undefined ? { policy: b.policy } : {}),
    ...(b.comment !== undefined ? { comment: b.comment } : {}),
  };
  return { chain, rest: b.rest };
}

function setObject(
  kind: 'set' | 'map',
  h: Head,
  name: string,
  item: Item,
): { set: NftSet; elements: ElementItem[] } {
  const { items } = blockItems({ words: h.rest.slice(1), line: item.line });
  const b = readSetBody(items);
  const set: NftSet = {
    kind,
    family: h.family,
    table: h.table,
    name,
    keyType: b.keyType ?? [],
    ...(b.valueType !== undefined ? { valueType: b.valueType } : {}),
    ...(b.flags !== undefined ? { flags: b.flags } : {}),
    ...(b.timeoutSeconds !== undefined ? { timeoutSeconds: b.timeoutSeconds } : {}),
    ...(b.comment !== undefined ? { comment: b.comment } : {}),
  };
  return { set, elements: b.elements };
}

function elementOf(h: Head, set: string, e: ElementItem): NftElement {
  return { kind: 'element', family: h.family, table: h.table, set, ...e };
}

function ruleOp(verb: Verb, h: Head, item: Item): Operation {
  const [chain, ...rest] = plainWords(h.rest);
  if (chain === undefined) throw invalid(item.line, 'missing chain name');
  let k = 0;
  let handle: number | undefined;
  let index: number | undefined;
  const pos = rest[0];
  const num = rest[1];
  if ((pos === 'handle' || pos === 'index' || pos === 'position') && num !== undefined) {
    if (!/^\d+$/.test(num)) throw invalid(item.line, `bad ${pos} ${num}`);
    if (pos === 'index') index = Number(num);
    else handle = Number(num);
    k = 2;
  }
  if ((verb === 'replace' || verb === 'delete') && handle === undefined) {
    throw invalid(item.line, `${verb} rule needs a handle`);
  }
  const body = parseRuleWords(rest.slice(k));
  const object: NftRule = {
    kind: 'rule',
    family: h.family,
    table: h.table,
    chain,
    statements: body.statements,
    ...(body.comment !== undefined ? { comment: body.comment } : {}),
    ...(handle !== undefined ? { handle } : {}),
    ...(index !== undefined ? { index } : {}),
  };
  return { verb, object };
}

function elementOps(verb: Verb, h: Head, item: Item): Operation[] {
  const [set, ...rest] = plainWords(h.rest);
  if (set === undefined || set === '{') throw invalid(item.line, 'missing set or map name');
  const items = parseElementItems(new Cursor(rest));
  if (items === undefined) throw invalid(item.line, 'malformed element list');
  return items.map((e) => ({ verb, object: elementOf(h, set, e) }));
}

/** One command (an item of an `nft -f` text) as operations (elements: one per item). */
function commandOps(item: Item): Operation[] {
  // Line ends survive only inside braces, where they separate a block's items.
  const words = item.words.filter((w) => !w.startsWith('#'));
  const [verb, kind] = words;
  if (verb === undefined || !VERBS.has(verb)) {
    throw invalid(item.line, `unknown command ${JSON.stringify(verb ?? '')}`);
  }
  if (kind === undefined || !KINDS.has(kind)) {
    throw invalid(item.line, `unknown object ${JSON.stringify(kind ?? '')} after ${verb}`);
  }
  const v = verb as Verb;
  const h = readHead(words.slice(2), item.line);
  if (kind === 'table') return [tableOp(v, h, item)];
  if (kind === 'rule') return [ruleOp(v, h, item)];
  if (kind === 'element') return elementOps(v, h, item);
  const name = h.rest[0];
  if (name === undefined || name === '{') throw invalid(item.line, `missing ${kind} name`);
  if (kind === 'chain') return [{ verb: v, object: chainObject(h, name, item).chain }];
  const { set, elements } = setObject(kind as 'set' | 'map', h, name, item);
  return [
    { verb: v, object: set },
    ...elements.map((e) => ({ verb: v, object: elementOf(h, name, e) })),
  ];
}

/**
 * Parses `nft -f` text into operations, in order. Blank and `#` lines are skipped; a
 * command may span lines inside braces. An `add element` with several items yields one
 * operation per element; a set defined with `elements = { … }` yields its elements after
 * it. Throws SvcnetError INVALID_INPUT naming the line (`line 3: unknown command "ad"`).
 */
export function parseTransaction(text: string): Operation[] {
  const ops: Operation[] = [];
  for (const item of topItems(text)) ops.push(...commandOps(item));
  return ops;
}

// ---------------------------------------------------------------------------------------
// nft list ruleset

function newTableState(table: NftTable): TableState {
  return { table, chains: new Map(), sets: new Map() };
}

function readListChain(t: TableState, h: Head, name: string, item: Item): void {
  const { chain, rest } = chainObject(h, name, item);
  // The kernel prints `policy accept` for every base chain: it is the default.
  const c: NftChain = chain.policy === 'accept' ? withoutPolicy(chain) : chain;
  const rules: NftRule[] = rest.map((r) => {
    // Keep `# handle N` (parseRuleWords reads it); a rule may span lines inside braces.
    const body = parseRuleWords(r.words.filter((w) => w !== '\n'));
    return {
      kind: 'rule',
      family: h.family,
      table: h.table,
      chain: name,
      statements: body.statements,
      ...(body.comment !== undefined ? { comment: body.comment } : {}),
      ...(body.handle !== undefined ? { handle: body.handle } : {}),
    };
  });
  t.chains.set(name, { chain: c, rules });
}

function withoutPolicy(c: NftChain): NftChain {
  const copy: { -readonly [K in keyof NftChain]: NftChain[K] } = { ...c };
  delete copy.policy;
  return copy;
}

function readListTable(rs: Ruleset, item: Item): void {
  const { head, items } = blockItems(item);
  const h = readHead(plainWords(head).slice(1), item.line);
  let comment: string | undefined;
  const objects: { kind: string; name: string; item: Item }[] = [];
  for (const it of items) {
    const words = plainWords(it.words);
    const [kw, name] = words;
    if (kw === 'comment' && name?.startsWith('"') === true) comment = unquote(name);
    else if ((kw === 'chain' || kw === 'set' || kw === 'map') && name !== undefined) {
      objects.push({ kind: kw, name, item: it });
    }
  }
  const table: NftTable = {
    kind: 'table',
    family: h.family,
    table: h.table,
    ...(comment !== undefined ? { comment } : {}),
  };
  const t = newTableState(table);
  for (const o of objects) {
    const oh: Head = { ...h, rest: o.item.words.slice(1) };
    if (o.kind === 'chain') {
      readListChain(t, oh, o.name, o.item);
      continue;
    }
    const { set, elements } = setObject(o.kind as 'set' | 'map', oh, o.name, o.item);
    const map = new Map<string, NftElement>();
    for (const e of elements) map.set(elementKey(e.key), elementOf(h, o.name, e));
    t.sets.set(o.name, { set, elements: map });
  }
  rs.tables.set(tableKey(table), t);
}

/**
 * Parses `nft list ruleset` (or `nft list table …`) output into a Ruleset. Handles are kept
 * on rules; counters' values, set sizes and element expiry are dropped; the default
 * `policy accept` is left implicit. Unknown table-level objects (counters, flowtables) are
 * skipped; a rule body never fails. Throws INVALID_INPUT on text that is not tables.
 */
export function parseRuleset(text: string): Ruleset {
  const rs = emptyRuleset();
  for (const item of topItems(text)) {
    const [kw] = plainWords(item.words);
    if (kw !== 'table')
      throw invalid(item.line, `expected "table", got ${JSON.stringify(kw ?? '')}`);
    readListTable(rs, item);
  }
  return rs;
}

// ---------------------------------------------------------------------------------------
// Format detection

export type RulesFormat = 'nft-ruleset' | 'nft-transaction' | 'iptables-save' | 'unknown';

/**
 * Which text this is, from its first meaningful line: `table …` is an `nft list` dump, a
 * verb (`add`, `flush`, …) is `nft -f` input, `*nat`/`:CHAIN`/`-A` is iptables-save.
 */
export function detectFormat(text: string): RulesFormat {
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (/iptables-save|ip6tables-save/.test(line)) return 'iptables-save';
      continue;
    }
    const word = line.split(/\s+/)[0] ?? '';
    if (word === 'table') return 'nft-ruleset';
    if (VERBS.has(word)) return 'nft-transaction';
    if (/^[*:]/.test(word) || word === '-A' || word === 'COMMIT') return 'iptables-save';
    return 'unknown';
  }
  return 'unknown';
}
