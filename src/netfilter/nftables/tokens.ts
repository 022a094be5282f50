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

/** Reads a quoted string starting at `i` (a `"`); returns its end index (exclusive). */
function quotedEnd(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && text.charAt(j) !== '"' && text.charAt(j) !== '\n') j++;
  return text.charAt(j) === '"' ? j + 1 : j;
}

/** The words of `text`. Never throws: an unterminated quote ends at the line end. */
export function tokenize(text: string, options: TokenizeOptions = {}): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text.charAt(i);
    if (ch === '\n') {
      if (options.newlines === true) out.push('\n');
      i++;
    } else if (ch === ' ' || ch === '\t' || ch === '\r') {
      i++;
    } else if (ch === '#') {
      let j = text.indexOf('\n', i);
      if (j < 0) j = text.length;
      out.push(text.slice(i, j).trimEnd());
      i = j;
    } else if (ch === '"') {
      const j = quotedEnd(text, i);
      out.push(text.slice(i, j));
      i = j;
    } else {
      let j = i;
      while (j < text.length && !/[\s"]/.test(text.charAt(j))) j++;
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
