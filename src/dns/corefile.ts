// The Corefile's syntax (CoreDNS's Caddyfile dialect), tokenized and parsed into server blocks
// of directives, each with the line it starts on; what the directives mean is
// corefile-config.ts's business. Covered: server blocks (`.:53 {`, several keys separated by
// spaces or commas), directives with arguments on their line and an optional `{ }` block
// (nested blocks too, and one-liners such as `health { lameduck 5s }`), `#` comments from a
// token's start to the end of the line, double-quoted tokens (may span lines, `\"` escapes),
// and environment placeholders `{$NAME}` (also `{$NAME:default}`) replaced inside tokens.
// Not covered: `import` and snippets, `(name)` definitions, backtick quotes. Pure: the caller
// reads the file and hands in the environment.

import { SvcnetError } from '../errors.js';

export interface CorefileToken {
  readonly text: string;
  /** 1-based line of the token's first character. */
  readonly line: number;
  /** Line of its last character (differs only for a quoted token spanning lines). */
  readonly endLine: number;
  readonly quoted: boolean;
}

/** One directive: its name and the arguments on its line, with its block's lines, if any. */
export interface Directive {
  readonly name: string;
  readonly args: readonly string[];
  readonly line: number;
  /** The lines of its `{ }` block; undefined without one. */
  readonly block: readonly Directive[] | undefined;
}

export interface ServerBlock {
  /** The keys before `{` (`.:53`, `dns://.:53`), commas removed. */
  readonly keys: readonly string[];
  readonly line: number;
  readonly directives: readonly Directive[];
}

/** `Corefile FILE:LINE: message`, the prefix of every Corefile error. */
export function corefileAt(file: string, line: number, message: string): string {
  return `Corefile ${file}:${line}: ${message}`;
}

function fail(file: string, line: number, message: string): never {
  throw new SvcnetError('INVALID_INPUT', corefileAt(file, line, message));
}

/** Replaces `{$NAME}` and `{$NAME:default}` from `env` (an unset name gives '' or the default). */
export function expandEnv(text: string, env: Readonly<Record<string, string | undefined>>): string {
  return text.replace(
    /\{\$([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/g,
    (_m, name: string, d?: string) => {
      const v = env[name];
      return v !== undefined && v !== '' ? v : (d ?? '');
    },
  );
}

/** Splits the text into tokens (see the file header); an unterminated quote is an error. */
export function tokenizeCorefile(
  text: string,
  file: string,
  env: Readonly<Record<string, string | undefined>> = {},
): CorefileToken[] {
  const tokens: CorefileToken[] = [];
  let line = 1;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] ?? '';
    if (c === '\n') {
      line++;
      i++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < n && text[i] !== '\n') i++;
      continue;
    }
    const start = line;
    let word = '';
    if (c === '"') {
      i++;
      let closed = false;
      while (i < n) {
        const d = text[i] ?? '';
        if (d === '\\' && text[i + 1] === '"') {
          word += '"';
          i += 2;
          continue;
        }
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === '\n') line++;
        word += d;
        i++;
      }
      if (!closed) fail(file, start, 'unterminated quoted string');
      tokens.push({ text: expandEnv(word, env), line: start, endLine: line, quoted: true });
      continue;
    }
    while (i < n && !/\s/.test(text[i] ?? '')) word += text[i++] ?? '';
    tokens.push({ text: expandEnv(word, env), line: start, endLine: line, quoted: false });
  }
  return tokens;
}

const isOpen = (t: CorefileToken | undefined): boolean => t?.quoted === false && t.text === '{';
const isClose = (t: CorefileToken | undefined): boolean => t?.quoted === false && t.text === '}';

/** Parses the Corefile into its server blocks. Throws INVALID_INPUT `Corefile FILE:LINE: …`. */
export function parseCorefile(
  text: string,
  file: string,
  env: Readonly<Record<string, string | undefined>> = {},
): ServerBlock[] {
  const tokens = tokenizeCorefile(text, file, env);
  let at = 0;

  /** Directives until the `}` that closes the block (consumed); `opened` is the `{` line. */
  const body = (opened: number): Directive[] => {
    const out: Directive[] = [];
    for (;;) {
      const first = tokens[at];
      if (first === undefined) fail(file, opened, 'block opened here is not closed with }');
      if (isClose(first)) {
        at++;
        return out;
      }
      if (isOpen(first)) fail(file, first.line, 'unexpected {');
      at++;
      const args: string[] = [];
      let block: Directive[] | undefined;
      let lineEnd = first.endLine;
      for (;;) {
        const t = tokens[at];
        if (t === undefined || t.line !== lineEnd || isClose(t)) break;
        at++;
        if (isOpen(t)) {
          block = body(t.line);
          const after = tokens[at];
          if (after !== undefined && after.line === tokens[at - 1]?.line && !isClose(after))
            fail(file, after.line, `unexpected ${JSON.stringify(after.text)} after }`);
          break;
        }
        args.push(t.text);
        lineEnd = t.endLine;
      }
      out.push({ name: first.text, args, line: first.line, block });
    }
  };

  const blocks: ServerBlock[] = [];
  while (at < tokens.length) {
    const first = tokens[at];
    if (first === undefined) break;
    const keys: string[] = [];
    for (;;) {
      const t = tokens[at];
      if (t === undefined)
        fail(file, first.line, 'server block has no { } (write e.g. ".:53 {" … "}")');
      at++;
      if (isOpen(t)) {
        blocks.push({ keys, line: first.line, directives: body(t.line) });
        break;
      }
      if (isClose(t)) fail(file, t.line, 'unexpected }');
      keys.push(...t.text.split(',').filter((k) => k !== ''));
    }
  }
  return blocks;
}
