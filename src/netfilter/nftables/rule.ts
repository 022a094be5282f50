// One nftables rule body as typed statements (model.ts Statement), both ways. renderStatements
// writes exactly the text kube-proxy's test dumps use (`ip daddr . meta l4proto . th dport
// vmap @service-ips`, `mark and 0x4000 != 0 mark set mark xor 0x4000 masquerade
// fully-random`, `dnat ip addr . port to numgen random mod 2 map { 0 : a . 80 , 1 : b . 80 }`,
// `dnat to [fd00::1]:80`, `comment "…"` last). parseRuleBody reads that form AND what
// `nft list ruleset` prints for the same rule (nft 1.0.6: `meta mark & 0x00004000 !=
// 0x00000000`, `meta mark set meta mark | 0x00004000`, `dnat ip to … map { … }`, `# handle N`,
// `counter packets 0 bytes 0`, lists over several lines) into the SAME statements, so a dump
// read back from the kernel and our render trace alike. What nft erases — a single-item
// anonymous set `{ x }` prints as a bare `x`, set and list items come back sorted, `reject
// with icmp type port-unreachable` prints as `reject` — is folded by canonicalStatements.
// Words it does not know become one `unsupported` statement keeping them; it never throws.
// It does not evaluate rules (trace/ does). Pure.

import type {
  MapEntry,
  NftFamily,
  NftRule,
  Operand,
  Selector,
  Statement,
  Verdict,
} from './model.js';
import { Cursor, quote, tokenize, unquote } from './tokens.js';

type PayloadSelector = Extract<Selector, { kind: 'payload' }>;
type MetaSelector = Extract<Selector, { kind: 'meta' }>;
type FibSelector = Extract<Selector, { kind: 'fib' }>;
type MatchOp = Extract<Statement, { kind: 'match' }>['op'];
type NatStatement = Extract<Statement, { kind: 'nat' }>;
type MapValue = MapEntry['value'];

const PAYLOAD_BASES = new Set<string>(['ip', 'ip6', 'th', 'tcp', 'udp', 'sctp']);
const PAYLOAD_FIELDS = new Set<string>(['saddr', 'daddr', 'sport', 'dport', 'protocol', 'nexthdr']);
const META_KEYS = new Set<string>([
  'l4proto',
  'mark',
  'iifname',
  'oifname',
  'iif',
  'oif',
  'nfproto',
]);
/** Meta keys nft (and kube-proxy) write without `meta`. */
const BARE_META = new Set<string>(['mark', 'iifname', 'oifname', 'iif', 'oif']);
const CT_KEYS = new Set<string>(['state', 'status', 'mark']);
const FIB_FLAGS = new Set<string>(['saddr', 'daddr', 'iif', 'oif', 'mark']);
const FIB_RESULTS = new Set<string>(['type', 'oif', 'oifname']);
const BINOPS: Readonly<Record<string, 'and' | 'or' | 'xor'>> = {
  and: 'and',
  '&': 'and',
  or: 'or',
  '|': 'or',
  xor: 'xor',
  '^': 'xor',
};
const MATCH_OPS: Readonly<Record<string, MatchOp>> = {
  '==': '==',
  eq: '==',
  '!=': '!=',
  ne: '!=',
  '<': '<',
  lt: '<',
  '>': '>',
  gt: '>',
  '<=': '<=',
  le: '<=',
  '>=': '>=',
  ge: '>=',
};
const NAT_FLAGS = new Set<string>(['random', 'fully-random', 'persistent']);
const SIMPLE_VERDICTS = new Set<string>(['accept', 'drop', 'return', 'continue']);
const REJECT_KINDS = new Set<string>(['icmp', 'icmpv6', 'icmpx', 'tcp']);

// ---------------------------------------------------------------------------------------
// Rendering

/** `0x00004000` → `0x4000`, `0x00000000` → `0`; other words unchanged. */
export function canonicalNumber(word: string): string {
  if (!/^0x[0-9a-fA-F]+$/.test(word)) return word;
  const digits = word.slice(2).replace(/^0+/, '').toLowerCase();
  return digits === '' ? '0' : `0x${digits}`;
}

export function renderSelector(s: Selector): string {
  switch (s.kind) {
    case 'payload':
      return `${s.base} ${s.field}`;
    case 'meta':
      return BARE_META.has(s.key) ? s.key : `meta ${s.key}`;
    case 'ct':
      return `ct ${s.key}`;
    case 'fib':
      return `fib ${s.flags.join(' . ')} ${s.result}`;
    case 'numgen':
      return `numgen ${s.mode} mod ${String(s.modulus)}`;
    case 'binop':
      return `${renderSelector(s.left)} ${s.op} ${s.value}`;
    case 'concat':
      return s.parts.map(renderSelector).join(' . ');
  }
}

export function renderOperand(o: Operand): string {
  switch (o.kind) {
    case 'value':
      return o.value;
    case 'list':
      return o.values.join(',');
    case 'setref':
      return `@${o.name}`;
    case 'anonset':
      return `{ ${o.items.map((i) => i.join(' . ')).join(' , ')} }`;
  }
}

export function renderVerdict(v: Verdict): string {
  switch (v.kind) {
    case 'jump':
    case 'goto':
      return `${v.kind} ${v.chain}`;
    case 'reject':
      return v.with === undefined ? 'reject' : `reject with ${v.with}`;
    default:
      return v.kind;
  }
}

/** A map or element value: a verdict, or data parts joined with ` . `. */
export function renderMapValue(v: MapValue): string {
  return v.kind === 'data' ? v.parts.join(' . ') : renderVerdict(v);
}

/** `{ 0 : a . 80 , 1 : goto b }` as kube-proxy writes anonymous maps. */
export function renderMapEntries(entries: readonly MapEntry[]): string {
  const items = entries.map((e) => `${e.key.join(' . ')} : ${renderMapValue(e.value)}`);
  return `{ ${items.join(' , ')} }`;
}

function renderNatTarget(s: NatStatement, family: NftFamily | undefined): string {
  const to = s.to;
  if (to.kind === 'map') return `${renderSelector(to.key)} map ${renderMapEntries(to.entries)}`;
  if (to.port === undefined) return to.addr;
  const v6 = to.addr.includes(':') || (family === 'ip6' && s.family === undefined);
  return v6 ? `[${to.addr}]:${String(to.port)}` : `${to.addr}:${String(to.port)}`;
}

export function renderStatement(s: Statement, family?: NftFamily): string {
  switch (s.kind) {
    case 'match': {
      const op = s.op === '==' ? '' : ` ${s.op}`;
      return `${renderSelector(s.left)}${op} ${renderOperand(s.right)}`;
    }
    case 'vmap': {
      const map = s.map.kind === 'setref' ? `@${s.map.name}` : renderMapEntries(s.map.entries);
      return `${renderSelector(s.key)} vmap ${map}`;
    }
    case 'set': {
      const v = isSelector(s.value) ? renderSelector(s.value) : renderOperand(s.value);
      return `${renderSelector(s.target)} set ${v}`;
    }
    case 'nat': {
      const fam = s.family === undefined ? '' : ` ${s.family}`;
      const ap = s.addrPort ? ' addr . port' : '';
      const flags = s.flags !== undefined && s.flags.length > 0 ? ` ${s.flags.join(',')}` : '';
      return `${s.type}${fam}${ap} to ${renderNatTarget(s, family)}${flags}`;
    }
    case 'masquerade':
      return s.flags.length > 0 ? `masquerade ${s.flags.join(',')}` : 'masquerade';
    case 'setupdate':
      return `${s.op} @${s.set} { ${renderSelector(s.key)} }`;
    case 'counter':
      return s.name === undefined ? 'counter' : `counter name ${s.name}`;
    case 'log':
      return s.prefix === undefined ? 'log' : `log prefix ${quote(s.prefix)}`;
    case 'verdict':
      return renderVerdict(s.verdict);
    case 'unsupported':
      return s.text;
  }
}

/** The statements of a rule body, space-separated (no comment). */
export function renderStatements(stmts: readonly Statement[], family?: NftFamily): string {
  return stmts.map((s) => renderStatement(s, family)).join(' ');
}

/** A rule's body as `add rule … CHAIN` is followed by: statements, then `comment "…"`. */
export function renderRule(rule: Pick<NftRule, 'statements' | 'comment' | 'family'>): string {
  const body = renderStatements(rule.statements, rule.family);
  if (rule.comment === undefined) return body;
  const c = `comment ${quote(rule.comment)}`;
  return body === '' ? c : `${body} ${c}`;
}

function isSelector(v: Selector | Operand): v is Selector {
  return v.kind !== 'value' && v.kind !== 'list' && v.kind !== 'setref' && v.kind !== 'anonset';
}

// ---------------------------------------------------------------------------------------
// Parsing

function parsePayload(c: Cursor): PayloadSelector | undefined {
  const base = c.peek();
  const field = c.peek(1);
  if (base === undefined || field === undefined) return undefined;
  if (!PAYLOAD_BASES.has(base) || !PAYLOAD_FIELDS.has(field)) return undefined;
  c.index += 2;
  return { kind: 'payload', base, field } as PayloadSelector;
}

/** `PREFIX KEY` with KEY in `keys` (`meta mark`, `ct state`): consumes it, returns KEY. */
function keyword(c: Cursor, prefix: string, keys: ReadonlySet<string>): string | undefined {
  const key = c.peek(1);
  if (c.peek() !== prefix || key === undefined || !keys.has(key)) return undefined;
  c.index += 2;
  return key;
}

function parseMeta(c: Cursor): MetaSelector | undefined {
  const key = keyword(c, 'meta', META_KEYS);
  if (key !== undefined) return { kind: 'meta', key } as MetaSelector;
  const w = c.peek();
  if (w === undefined || !BARE_META.has(w)) return undefined;
  c.index++;
  return { kind: 'meta', key: w } as MetaSelector;
}

function parseFib(c: Cursor): FibSelector | undefined {
  const start = c.index;
  c.next();
  const flags: string[] = [];
  for (;;) {
    const w = c.next();
    if (w === undefined || !FIB_FLAGS.has(w)) break;
    flags.push(w);
    if (c.eat('.')) continue;
    const result = c.next();
    if (result !== undefined && FIB_RESULTS.has(result))
      return { kind: 'fib', flags, result } as FibSelector;
    break;
  }
  c.index = start;
  return undefined;
}

function parseNumgen(c: Cursor): Selector | undefined {
  const mode = c.peek(1);
  const mod = c.peek(3);
  if ((mode !== 'random' && mode !== 'inc') || c.peek(2) !== 'mod' || mod === undefined) {
    return undefined;
  }
  if (!/^\d+$/.test(mod)) return undefined;
  c.index += 4;
  return { kind: 'numgen', mode, modulus: Number(mod) };
}

/** One selector without binop or concatenation. */
function parsePrimary(c: Cursor): Selector | undefined {
  const w = c.peek();
  if (w === 'ct') {
    const key = keyword(c, 'ct', CT_KEYS);
    return key === undefined ? undefined : { kind: 'ct', key: key as 'state' | 'status' | 'mark' };
  }
  if (w === 'fib') return parseFib(c);
  if (w === 'numgen') return parseNumgen(c);
  return parsePayload(c) ?? parseMeta(c);
}

/** A primary selector, then `and|&|or|||xor|^ VALUE`s, then ` . `-joined more of them. */
export function parseSelector(c: Cursor): Selector | undefined {
  const parts: Selector[] = [];
  for (;;) {
    const start = c.index;
    let s = parsePrimary(c);
    if (s === undefined) {
      c.index = start;
      break;
    }
    for (;;) {
      const op = BINOPS[c.peek() ?? ''];
      const value = c.peek(1);
      if (op === undefined || value === undefined) break;
      c.index += 2;
      s = { kind: 'binop', left: s, op, value: canonicalNumber(value) };
    }
    parts.push(s);
    if (c.peek() !== '.' || !startsSelector(c.peek(1), c.peek(2))) break;
    c.next();
  }
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : { kind: 'concat', parts };
}

function startsSelector(w: string | undefined, w2: string | undefined): boolean {
  if (w === undefined) return false;
  if (w === 'meta' || w === 'ct' || w === 'fib' || w === 'numgen' || BARE_META.has(w)) return true;
  return PAYLOAD_BASES.has(w) && w2 !== undefined && PAYLOAD_FIELDS.has(w2);
}

/** `a . b . c` parts (one item of a set, or a map key or value); numbers canonical. */
export function parseParts(c: Cursor): string[] | undefined {
  const parts: string[] = [];
  for (;;) {
    const w = c.next();
    if (w === undefined || w === '{' || w === '}' || w === ',' || w === ':') return undefined;
    parts.push(canonicalNumber(w));
    if (!c.eat('.')) return parts;
  }
}

/** `{ a , b . c }` after the `{`… through the `}`; undefined if malformed. */
function parseAnonItems(c: Cursor): string[][] | undefined {
  if (!c.eat('{')) return undefined;
  const items: string[][] = [];
  while (!c.eat('}')) {
    if (c.eat(',')) continue;
    const parts = parseParts(c);
    if (parts === undefined) return undefined;
    items.push(parts);
  }
  return items;
}

function parseOperand(c: Cursor): Operand | undefined {
  const w = c.peek();
  if (w === undefined) return undefined;
  if (w === '{') {
    const items = parseAnonItems(c);
    return items === undefined ? undefined : { kind: 'anonset', items };
  }
  if (w === '}' || w === ',' || w === ':' || w === '.') return undefined;
  if (w.startsWith('@')) {
    c.next();
    return { kind: 'setref', name: w.slice(1) };
  }
  if (!w.startsWith('"') && w.includes(',')) {
    c.next();
    return { kind: 'list', values: w.split(',').filter((v) => v !== '') };
  }
  const parts = parseParts(c);
  return parts === undefined ? undefined : { kind: 'value', value: parts.join(' . ') };
}

/** `accept`, `drop`, `return`, `continue`, `reject [with …]`, `jump X`, `goto X`. */
export function parseVerdict(c: Cursor): Verdict | undefined {
  const w = c.peek();
  if (w === undefined) return undefined;
  if (SIMPLE_VERDICTS.has(w)) {
    c.next();
    return { kind: w as 'accept' | 'drop' | 'return' | 'continue' };
  }
  if (w === 'jump' || w === 'goto') {
    const chain = c.peek(1);
    if (chain === undefined || chain === '}' || chain === ',') return undefined;
    c.index += 2;
    return { kind: w, chain: unquote(chain) };
  }
  if (w !== 'reject') return undefined;
  c.next();
  if (c.peek() !== 'with' || !REJECT_KINDS.has(c.peek(1) ?? '')) return { kind: 'reject' };
  const words = [c.peek(1) ?? ''];
  c.index += 2;
  if (c.peek() === 'type') words.push(c.next() ?? '');
  const code = c.next();
  if (code !== undefined) words.push(code);
  return { kind: 'reject', with: words.join(' ') };
}

/** `k : v , k : v }` after `{`: the entries of an anonymous map or vmap. */
function parseMapEntries(c: Cursor): MapEntry[] | undefined {
  if (!c.eat('{')) return undefined;
  const entries: MapEntry[] = [];
  while (!c.eat('}')) {
    if (c.eat(',')) continue;
    const key = parseParts(c);
    if (key === undefined || !c.eat(':')) return undefined;
    const verdict = parseVerdict(c);
    if (verdict !== undefined) {
      entries.push({ key, value: verdict });
      continue;
    }
    const parts = parseParts(c);
    if (parts === undefined) return undefined;
    entries.push({ key, value: { kind: 'data', parts } });
  }
  return entries;
}

/** `192.0.2.1`, `192.0.2.1:80`, `[fd00::1]:80`, `fd00::1`. */
function parseNatAddress(w: string): NatStatement['to'] {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(w);
  if (v6 !== null) {
    const addr = v6[1] ?? '';
    return v6[2] === undefined
      ? { kind: 'address', addr }
      : { kind: 'address', addr, port: Number(v6[2]) };
  }
  const v4 = /^([^:]+):(\d+)$/.exec(w);
  if (v4 !== null) return { kind: 'address', addr: v4[1] ?? '', port: Number(v4[2]) };
  return { kind: 'address', addr: w };
}

/**
 * `dnat|snat [ip|ip6] [addr . port] to TARGET [flags]`. nft 1.0.6 prints kube-proxy's
 * `dnat ip addr . port to numgen … map { 0 : a . 80 }` as `dnat ip to numgen … map { … }`:
 * a map whose values are address-and-port pairs means `addr . port` either way.
 */
function parseNat(c: Cursor): NatStatement | undefined {
  const type = c.next() as 'dnat' | 'snat';
  let family: 'ip' | 'ip6' | undefined;
  if (c.peek() === 'ip' || c.peek() === 'ip6') family = c.next() as 'ip' | 'ip6';
  let addrPort = false;
  if (c.peek() === 'addr' && c.peek(1) === '.' && c.peek(2) === 'port') {
    c.index += 3;
    addrPort = true;
  }
  if (!c.eat('to')) return undefined;
  let to: NatStatement['to'];
  const key = parseSelector(c);
  if (key !== undefined) {
    if (!c.eat('map')) return undefined;
    const entries = parseMapEntries(c);
    if (entries === undefined) return undefined;
    to = { kind: 'map', key, entries };
    const pairs = entries.every((e) => e.value.kind === 'data' && e.value.parts.length === 2);
    if (pairs && entries.length > 0) addrPort = true;
  } else {
    const w = c.next();
    if (w === undefined || w.startsWith('{')) return undefined;
    to = parseNatAddress(w);
  }
  const flags = parseFlags(c);
  return {
    kind: 'nat',
    type,
    ...(family !== undefined ? { family } : {}),
    addrPort,
    to,
    ...(flags.length > 0 ? { flags } : {}),
  };
}

/** NAT flags, space- or comma-separated: `fully-random`, `random,persistent`. */
function parseFlags(c: Cursor): string[] {
  const flags: string[] = [];
  for (;;) {
    const w = c.peek();
    if (w === undefined) return flags;
    const words = w.split(',');
    if (!words.every((f) => NAT_FLAGS.has(f))) return flags;
    c.next();
    flags.push(...words);
  }
}

function parseSetUpdate(c: Cursor): Statement | undefined {
  const op = c.next() as 'update' | 'add';
  const set = c.next();
  if (set === undefined || !set.startsWith('@') || !c.eat('{')) return undefined;
  const key = parseSelector(c);
  if (key === undefined || !c.eat('}')) return undefined;
  return { kind: 'setupdate', op, set: set.slice(1), key };
}

function parseCounter(c: Cursor): Statement {
  c.next();
  if (c.peek() === 'name' && c.peek(1) !== undefined) {
    c.next();
    return { kind: 'counter', name: unquote(c.next() ?? '') };
  }
  // Kernel dumps carry the values; they are state, not part of the rule.
  if (c.peek() === 'packets' && c.peek(2) === 'bytes') c.index += 4;
  return { kind: 'counter' };
}

function parseLog(c: Cursor): Statement {
  c.next();
  if (c.peek() === 'prefix' && c.peek(1) !== undefined) {
    c.next();
    return { kind: 'log', prefix: unquote(c.next() ?? '') };
  }
  return { kind: 'log' };
}

/** What follows a selector: `vmap …`, `set …`, or a match `[op] OPERAND`. */
function parseAfterSelector(c: Cursor, left: Selector): Statement | undefined {
  if (c.eat('vmap')) {
    const w = c.peek();
    if (w?.startsWith('@') === true) {
      c.next();
      return { kind: 'vmap', key: left, map: { kind: 'setref', name: w.slice(1) } };
    }
    const entries = parseMapEntries(c);
    return entries === undefined
      ? undefined
      : { kind: 'vmap', key: left, map: { kind: 'anonmap', entries } };
  }
  if (c.eat('set')) {
    const value = parseSelector(c) ?? parseOperand(c);
    return value === undefined ? undefined : { kind: 'set', target: left, value };
  }
  const op = MATCH_OPS[c.peek() ?? ''];
  if (op !== undefined) c.next();
  const right = parseOperand(c);
  return right === undefined ? undefined : { kind: 'match', left, op: op ?? '==', right };
}

/** One statement at the cursor, or undefined (cursor position then unspecified). */
function parseStatement(c: Cursor): Statement | undefined {
  const w = c.peek();
  switch (w) {
    case 'dnat':
    case 'snat':
      return parseNat(c);
    case 'masquerade':
      c.next();
      return { kind: 'masquerade', flags: parseFlags(c) };
    case 'update':
    case 'add':
      return parseSetUpdate(c);
    case 'counter':
      return parseCounter(c);
    case 'log':
      return parseLog(c);
    default: {
      const verdict = parseVerdict(c);
      if (verdict !== undefined) return { kind: 'verdict', verdict };
      const sel = parseSelector(c);
      return sel === undefined ? undefined : parseAfterSelector(c, sel);
    }
  }
}

/** A parsed rule body: statements, and the comment and handle when written. */
export interface RuleBody {
  readonly statements: Statement[];
  readonly comment?: string;
  readonly handle?: number;
}

/** Parses the words of a rule body. Never throws. */
export function parseRuleWords(words: readonly string[]): RuleBody {
  const c = new Cursor(words);
  const statements: Statement[] = [];
  let comment: string | undefined;
  let handle: number | undefined;
  const unknown: string[] = [];
  const flush = (): void => {
    if (unknown.length > 0) statements.push({ kind: 'unsupported', text: unknown.join(' ') });
    unknown.length = 0;
  };
  while (!c.done) {
    const w = c.peek() ?? '';
    if (w === 'comment' && c.peek(1)?.startsWith('"') === true) {
      c.next();
      comment = unquote(c.next() ?? '');
      continue;
    }
    if (w.startsWith('#')) {
      c.next();
      const m = /^#\s*handle\s+(\d+)/.exec(w);
      if (m !== null) handle = Number(m[1]);
      continue;
    }
    const start = c.index;
    const s = parseStatement(c);
    if (s !== undefined && c.index > start) {
      flush();
      statements.push(s);
    } else {
      c.index = start;
      unknown.push(c.next() ?? '');
    }
  }
  flush();
  return {
    statements,
    ...(comment !== undefined ? { comment } : {}),
    ...(handle !== undefined ? { handle } : {}),
  };
}

/** Parses a rule body in either form (`nft -f` or `nft list`). Never throws. */
export function parseRuleBody(text: string): RuleBody {
  return parseRuleWords(tokenize(text));
}

/** The statements of a rule body (its comment and handle dropped). Never throws. */
export function parseStatements(text: string): Statement[] {
  return parseRuleBody(text).statements;
}

// ---------------------------------------------------------------------------------------
// Canonical form (what survives a round trip through the kernel)

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function canonicalOperand(o: Operand): Operand {
  if (o.kind === 'anonset') {
    const [first] = o.items;
    if (o.items.length === 1 && first?.length === 1)
      return { kind: 'value', value: first[0] ?? '' };
    const items = [...o.items].sort((a, b) => byText(a.join(' . '), b.join(' . ')));
    return { kind: 'anonset', items };
  }
  if (o.kind === 'list') {
    if (o.values.length === 1) return { kind: 'value', value: o.values[0] ?? '' };
    return { kind: 'list', values: [...o.values].sort(byText) };
  }
  return o;
}

/** `reject with icmp type port-unreachable` and the like: what plain `reject` sends. */
const DEFAULT_REJECT = /^(icmp|icmpv6|icmpx)( type)? port-unreachable$/;

function canonicalStatement(s: Statement): Statement {
  if (s.kind === 'match') return { ...s, right: canonicalOperand(s.right) };
  if (s.kind === 'verdict' && s.verdict.kind === 'reject' && s.verdict.with !== undefined) {
    if (DEFAULT_REJECT.test(s.verdict.with))
      return { kind: 'verdict', verdict: { kind: 'reject' } };
  }
  return s;
}

/**
 * The statements as nft keeps them, so that a rule read back from the kernel equals the
 * rule that was written: a single-item anonymous set `{ x }` (and a one-word list) becomes
 * the bare value `x`; the items of anonymous sets and comma lists are sorted (nft prints
 * `ct state new,established` as `established,new` and sorts interval sets); `reject with
 * icmp type port-unreachable` is plain `reject` (nft prints the default so). Compare (and
 * trace) canonical statements when one side may come from a kernel dump.
 */
export function canonicalStatements(stmts: readonly Statement[]): Statement[] {
  return stmts.map(canonicalStatement);
}
