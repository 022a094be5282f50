// What the routing-dump parsers (parse-route.ts, parse-neigh.ts, parse-fdb.ts, parse-link.ts)
// share: a line with its number in the whole input, its words as `ip`/`bridge` print them,
// and the INVALID_INPUT error that names the line, the dump and the word at fault. Pure.

import { SvcnetError } from '../../errors.js';
import { canonicalIP, parseIP, type ParsedIP } from '../../util/ip.js';

/** One line of a dump and its 1-based number in the input it came from. */
export interface DumpLine {
  readonly no: number;
  readonly text: string;
}

/** The lines of `text`, numbered from `first`. */
export function numberLines(text: string, first = 1): DumpLine[] {
  return text.split('\n').map((t, i) => ({ no: first + i, text: t.replace(/\r$/, '') }));
}

/** The error for a bad line: `line 3: ip route: …`. */
export function badLine(line: DumpLine, dump: string, message: string): SvcnetError {
  return new SvcnetError(
    'INVALID_INPUT',
    `line ${line.no}: ${dump}: ${message} in ${JSON.stringify(line.text.trim())}`,
  );
}

/** Reads the words of a line one at a time, failing with the line named. */
export class Words {
  readonly line: DumpLine;
  readonly dump: string;
  private readonly words: readonly string[];
  private at = 0;

  constructor(line: DumpLine, dump: string) {
    this.line = line;
    this.dump = dump;
    this.words = line.text.trim().split(/\s+/);
  }

  get done(): boolean {
    return this.at >= this.words.length;
  }

  peek(): string | undefined {
    return this.words[this.at];
  }

  next(): string {
    const w = this.words[this.at];
    this.at++;
    if (w === undefined) throw this.fail('unexpected end of line');
    return w;
  }

  /** The value after keyword `key`. */
  valueOf(key: string): string {
    const w = this.words[this.at];
    this.at++;
    if (w === undefined) throw this.fail(`"${key}" needs a value`);
    return w;
  }

  /** The address after keyword `key`, in canonical text. */
  addressOf(key: string): string {
    const v = this.valueOf(key);
    const c = canonicalIP(v);
    if (c === undefined) throw this.fail(`${key}: not an IP address: ${JSON.stringify(v)}`);
    return c;
  }

  /** The non-negative integer after keyword `key`. */
  numberOf(key: string): number {
    const v = this.valueOf(key);
    if (!/^\d+$/.test(v)) throw this.fail(`${key}: not a number: ${JSON.stringify(v)}`);
    return Number(v);
  }

  fail(message: string): SvcnetError {
    return badLine(this.line, this.dump, message);
  }
}

/** A parsed address, or the line's error. */
export function addressOrFail(w: Words, text: string, what: string): ParsedIP {
  const ip = parseIP(text);
  if (ip === undefined) throw w.fail(`${what}: not an IP address: ${JSON.stringify(text)}`);
  return ip;
}

/** `aa:bb:cc:dd:ee:ff`, lower case. */
export const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;
