// The shared reading of nft's two text forms at the level of items and braces, below
// parse.ts: a text (or a `{ … }` block) splits into items at line ends and `;` outside
// braces, each item keeping its nested blocks whole; and the bodies both forms share — a
// chain's `type … hook … priority …; policy …; comment "…"`, a set's or map's `type/typeof,
// flags, timeout, comment, elements = { … }`, and element items `k . k [comment "…"]
// [: value]`. Priorities may be numbers or nft's names (`dstnat - 10`, `filter`, `srcnat`);
// timeouts `10800s` or `3h`. Pure.

import { SvcnetError } from '../../errors.js';
import type { ChainHook, ChainType, NftElement } from './model.js';
import { parseParts, parseVerdict } from './rule.js';
import { Cursor, unquote } from './tokens.js';

/** One item of a block: its words (nested blocks included) and its first line (1-based). */
export interface Item {
  readonly words: readonly string[];
  readonly line: number;
}

/**
 * Splits `words[start…]` into items until the `}` closing the block (or the end when
 * `start` is at top level). Returns the items and the index after the closing `}`.
 * Items that hold only `#` comments are dropped. `closed` tells whether a `}` ended it (at
 * top level, one closing nothing); an unterminated block ends at the end of the text.
 */
export function splitItems(
  words: readonly string[],
  start: number,
  firstLine: number,
): { items: Item[]; end: number; line: number; closed: boolean } {
  const items: Item[] = [];
  let cur: string[] = [];
  let curLine = firstLine;
  let line = firstLine;
  let depth = 0;
  let i = start;
  const finish = (): void => {
    if (cur.some((w) => !w.startsWith('#'))) items.push({ words: cur, line: curLine });
    cur = [];
  };
  for (; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === '\n') line++;
    if (depth === 0 && (w === '\n' || w === ';')) {
      finish();
      curLine = line;
      continue;
    }
    if (w === '}' && depth === 0) {
      finish();
      return { items, end: i + 1, line, closed: true };
    }
    if (cur.length === 0) curLine = line;
    if (w === '{') depth++;
    if (w === '}') depth--;
    cur.push(w);
  }
  finish();
  return { items, end: i, line, closed: false };
}

/** The items of the block that starts at the first `{` of `words` (none if no block). */
export function blockItems(item: Item): { head: string[]; items: Item[] } {
  const open = item.words.indexOf('{');
  if (open < 0) return { head: [...item.words], items: [] };
  let line = item.line;
  for (let k = 0; k < open; k++) if (item.words[k] === '\n') line++;
  const { items } = splitItems(item.words, open + 1, line);
  return { head: item.words.slice(0, open), items };
}

/** Words without line ends and `#` comments. */
export function plainWords(words: readonly string[]): string[] {
  return words.filter((w) => w !== '\n' && !w.startsWith('#'));
}

export function invalid(line: number, message: string): SvcnetError {
  return new SvcnetError('INVALID_INPUT', `line ${String(line)}: ${message}`);
}

// ---------------------------------------------------------------------------------------
// Values

/** nft's standard priority names for the ip, ip6 and inet families. */
const PRIORITY_NAMES: Readonly<Record<string, number>> = {
  raw: -300,
  mangle: -150,
  dstnat: -100,
  filter: 0,
  security: 50,
  srcnat: 100,
};

/** `0`, `-110`, `filter`, `dstnat - 10`, `srcnat + 5`; undefined if not a priority. */
export function parsePriority(words: readonly string[]): number | undefined {
  const [first, sign, offset] = words;
  if (first === undefined) return undefined;
  const base = /^[-+]?\d+$/.test(first) ? Number(first) : PRIORITY_NAMES[first];
  if (base === undefined) return undefined;
  if (sign === undefined) return base;
  if ((sign !== '-' && sign !== '+') || offset === undefined || !/^\d+$/.test(offset)) {
    return undefined;
  }
  return sign === '-' ? base - Number(offset) : base + Number(offset);
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  d: 86400,
  h: 3600,
  m: 60,
  s: 1,
  ms: 0.001,
};

/** `10800s`, `3h`, `1d2h3m4s`, `500ms`, or a bare number of seconds. */
export function parseDuration(word: string): number | undefined {
  if (/^\d+$/.test(word)) return Number(word);
  if (!/^(\d+(d|h|ms|m|s))+$/.test(word)) return undefined;
  let total = 0;
  for (const m of word.matchAll(/(\d+)(d|h|ms|m|s)/g)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? 0);
  }
  return total;
}

// ---------------------------------------------------------------------------------------
// Chain and set bodies

export interface ChainBody {
  type?: ChainType;
  hook?: ChainHook;
  priority?: number;
  policy?: 'accept' | 'drop';
  comment?: string;
  /** Items that are none of the above (in `nft list`, the rules). */
  rest: Item[];
}

const CHAIN_TYPES = new Set<string>(['filter', 'nat', 'route']);
const HOOKS = new Set<string>([
  'prerouting',
  'input',
  'forward',
  'output',
  'postrouting',
  'ingress',
]);

function readChainType(words: readonly string[], body: ChainBody): boolean {
  const [kw, type, hookKw, hook] = words;
  if (kw !== 'type' || hookKw !== 'hook' || type === undefined || hook === undefined) return false;
  if (!CHAIN_TYPES.has(type) || !HOOKS.has(hook)) return false;
  let k = 4;
  if (words[k] === 'device') k += 2;
  if (words[k] !== 'priority') return false;
  const priority = parsePriority(words.slice(k + 1));
  if (priority === undefined) return false;
  body.type = type as ChainType;
  body.hook = hook as ChainHook;
  body.priority = priority;
  return true;
}

/** Reads a chain block's items; what is not chain metadata stays in `rest`. */
export function readChainBody(items: readonly Item[]): ChainBody {
  const body: ChainBody = { rest: [] };
  for (const item of items) {
    const words = plainWords(item.words);
    const [kw, value] = words;
    if (kw === 'type' && readChainType(words, body)) continue;
    if (kw === 'policy' && (value === 'accept' || value === 'drop') && words.length === 2) {
      body.policy = value;
      continue;
    }
    if (kw === 'comment' && value?.startsWith('"') === true && words.length === 2) {
      body.comment = unquote(value);
      continue;
    }
    body.rest.push(item);
  }
  return body;
}

export interface SetBody {
  keyType?: string[];
  valueType?: string[];
  flags?: string[];
  timeoutSeconds?: number;
  comment?: string;
  /** `elements = { … }` written inside the definition. */
  elements: ElementItem[];
}

/** `typeof` expressions kube-proxy-like rulesets use, as datatypes. */
const TYPEOF_TYPES: Readonly<Record<string, string>> = {
  'ip saddr': 'ipv4_addr',
  'ip daddr': 'ipv4_addr',
  'ip6 saddr': 'ipv6_addr',
  'ip6 daddr': 'ipv6_addr',
  'meta l4proto': 'inet_proto',
  'ip protocol': 'inet_proto',
  'th dport': 'inet_service',
  'th sport': 'inet_service',
  'tcp dport': 'inet_service',
  'udp dport': 'inet_service',
  'meta mark': 'mark',
  'numgen random mod': 'integer',
};

/** Splits `a . b . c` words into the parts' text (`typeof` parts map to datatypes). */
function typeParts(words: readonly string[], typeofExpr: boolean): string[] {
  const parts: string[][] = [[]];
  for (const w of words) {
    if (w === '.') parts.push([]);
    else parts[parts.length - 1]?.push(w);
  }
  return parts.map((p) => {
    const text = p.join(' ');
    return typeofExpr ? (TYPEOF_TYPES[text] ?? text) : text;
  });
}

function readSetType(words: readonly string[], body: SetBody): void {
  const typeofExpr = words[0] === 'typeof';
  const rest = words.slice(1);
  const colon = rest.indexOf(':');
  body.keyType = typeParts(colon < 0 ? rest : rest.slice(0, colon), typeofExpr);
  if (colon >= 0) body.valueType = typeParts(rest.slice(colon + 1), typeofExpr);
}

/** Reads a set or map block (either form). Unknown items (`size`, `policy`, …) are skipped. */
export function readSetBody(items: readonly Item[]): SetBody {
  const body: SetBody = { elements: [] };
  for (const item of items) {
    const words = plainWords(item.words);
    const [kw, value] = words;
    if (kw === 'type' || kw === 'typeof') readSetType(words, body);
    else if (kw === 'flags' && value !== undefined) {
      body.flags = words
        .slice(1)
        .filter((w) => w !== ',')
        .join(',')
        .split(',');
    } else if (kw === 'timeout' && value !== undefined) {
      const t = parseDuration(value);
      if (t !== undefined) body.timeoutSeconds = t;
    } else if (kw === 'comment' && value?.startsWith('"') === true) body.comment = unquote(value);
    else if (kw === 'elements' && value === '=') {
      const items2 = parseElementItems(new Cursor(words.slice(2)));
      if (items2 === undefined) throw invalid(item.line, 'malformed elements');
      body.elements.push(...items2);
    }
  }
  return body;
}

// ---------------------------------------------------------------------------------------
// Elements

export type ElementItem = Pick<NftElement, 'key' | 'value' | 'comment'>;

/** Element attributes nft prints that are state, not identity: skipped with their value. */
const ELEMENT_STATE = new Set<string>(['timeout', 'expires']);

function readElementItem(c: Cursor): ElementItem | undefined {
  const key = parseParts(c);
  if (key === undefined) return undefined;
  let comment: string | undefined;
  for (;;) {
    const w = c.peek();
    if (w === 'comment' && c.peek(1)?.startsWith('"') === true) {
      c.next();
      comment = unquote(c.next() ?? '');
    } else if (w !== undefined && ELEMENT_STATE.has(w)) c.index += 2;
    else if (w === 'counter' && c.peek(1) === 'packets') c.index += 5;
    else break;
  }
  const base = { key, ...(comment !== undefined ? { comment } : {}) };
  if (!c.eat(':')) return base;
  const verdict = parseVerdict(c);
  if (verdict !== undefined) return { ...base, value: verdict };
  const parts = parseParts(c);
  return parts === undefined ? undefined : { ...base, value: { kind: 'data', parts } };
}

/** `{ item , item … }` at the cursor (through the `}`); undefined if malformed. */
export function parseElementItems(c: Cursor): ElementItem[] | undefined {
  if (!c.eat('{')) return undefined;
  const out: ElementItem[] = [];
  while (!c.eat('}')) {
    if (c.done) return undefined;
    if (c.eat(',')) continue;
    const item = readElementItem(c);
    if (item === undefined) return undefined;
    out.push(item);
  }
  return out;
}
