// Splits nft text into words, the way both forms this folder reads write them: the `nft -f`
// lines kube-proxy's tests use (`{ 0 : a . 80 , 1 : b . 80 }`, everything spaced) and what
// `nft list ruleset` prints (`{ a, b,` with commas glued to the word before, `priority
// filter; policy accept;` with glued semicolons, `# handle 7` at the end of a line). Quoted
// strings stay one word with their quotes; `{`, `}`, `,` and `;` glued to a word's edges
// become their own words; a `:` or `.` is a word only when spaced (IPv6 addresses and
// `10.0.0.1:80` keep theirs). A `#` starting a word begins a comment: the rest of the line is
// one word starting with `#`. With `newlines`, each line end is a `\n` word. Pure.

export interface TokenizeOptions {
  /** Emit a `\n` word at each line end (structure parsers need them; rule bodies do not). */
  readonly newlines?: boolean;
}

const LEADING = new Set(['{']);
const TRAILING = new Set(['}', ',', ';']);

/** Splits one unquoted run of characters into words, peeling edge punctuation. */
function pushBare(word: string, out: string[]): void {
  let start = 0;
  let end = word.length;
  const tail: string[] = [];
  while (start < end && LEADING.has(word.charAt(start))) {
    out.push(word.charAt(start));
    start++;
  }
  while (end > start && TRAILING.has(word.charAt(end - 1))) {
    tail.unshift(word.charAt(end - 1));
    end--;
  }
  // A word that is only punctuation (`}` or `{}`) was fully peeled.
  if (end > start) out.push(word.slice(start, end));
  out.push(...tail);
}

const NL = 10;
const QUOTE = 34;
const HASH = 35;

/** Space, tab, carriage return (line ends are words of their own). */
function isBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 13;
}

/** The end of the run starting at `i` that stops at a line end (or `"` too, for bare words). */
function runEnd(text: string, i: number, bare: boolean): number {
  let j = i;
  for (; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === NL || (bare && (c === QUOTE || isBlank(c)))) break;
  }
  return j;
}

/** The words of `text`. Never throws: an unterminated quote ends at the line end. */
export function tokenize(text: string, options: TokenizeOptions = {}): string[] {
  const out: string[] = [];
  const newlines = options.newlines === true;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === NL) {
      if (newlines) out.push('\n');
      i++;
    } else if (isBlank(c)) {
      i++;
    } else if (c === HASH) {
      const j = runEnd(text, i, false);
      out.push(text.slice(i, j).trimEnd());
      i = j;
    } else if (c === QUOTE) {
      const close = text.indexOf('"', i + 1);
      const nl = runEnd(text, i + 1, false);
      const j = close >= 0 && close < nl ? close + 1 : nl;
      out.push(text.slice(i, j));
      i = j;
    } else {
      const j = runEnd(text, i, true);
      pushBare(text.slice(i, j), out);
      i = j;
    }
  }
  return out;
}

/** `"a b"` → `a b`; other words unchanged. nft strings have no escapes. */
export function unquote(word: string): string {
  if (word.length < 2 || !word.startsWith('"')) return word;
  return word.endsWith('"') ? word.slice(1, -1) : word.slice(1);
}

/** Quotes a comment or string the way knftables writes them: `"…"` (nft has no escapes). */
export function quote(s: string): string {
  return `"${s}"`;
}

/** A read position over words. */
export class Cursor {
  private pos = 0;
  private readonly words: readonly string[];

  constructor(words: readonly string[]) {
    this.words = words;
  }

  get index(): number {
    return this.pos;
  }

  set index(i: number) {
    this.pos = i;
  }

  get done(): boolean {
    return this.pos >= this.words.length;
  }

  peek(ahead = 0): string | undefined {
    return this.words[this.pos + ahead];
  }

  next(): string | undefined {
    const w = this.words[this.pos];
    if (w !== undefined) this.pos++;
    return w;
  }

  /** Consumes `word` if it is next. */
  eat(word: string): boolean {
    if (this.words[this.pos] !== word) return false;
    this.pos++;
    return true;
  }

  /** The words from `from` up to the current position. */
  slice(from: number): string[] {
    return this.words.slice(from, this.pos);
  }
}
