// Shared plumbing for `svcnet` subcommands: reading input files, and turning errors into
// the CLI contract's exit codes (0 ok, 1 runtime failure, 2 bad usage or bad input) with
// the message on stderr. Output to stdout is written only after the command succeeded,
// so a failing command never leaves half a ruleset on stdout. Errors are printed as their
// message (one line per problem), never with a stack trace unless `--v=5` or more is given.

import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import type { ManifestSource } from '../kube/manifest.js';
import { STACK_VERBOSITY } from '../util/log.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/**
 * The largest input file read (manifests, configs, rule dumps): larger ones are refused
 * before they are read, so a wrong file costs neither memory nor time. kube-apiserver refuses
 * request bodies over 3 MiB; a manifest file several times that size is a mistake.
 */
export const MAX_INPUT_BYTES = 16 * 1024 * 1024;

function mib(n: number): string {
  return n < 1024 * 1024 ? `${n} bytes` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function unreadable(path: string, e: unknown): SvcnetError {
  const code = e instanceof Error && 'code' in e ? String(e.code) : '';
  const reason =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : code === 'EISDIR'
          ? 'is a directory'
          : code !== ''
            ? code
            : e instanceof Error
              ? e.message
              : String(e);
  return new SvcnetError('INVALID_INPUT', `${path}: cannot read file (${reason})`, { cause: e });
}

/** Reads one file (`-` is stdin) of at most `limit` bytes; a bigger one is refused unread. */
export async function readInput(path: string, limit = MAX_INPUT_BYTES): Promise<string> {
  const tooBig = (size: number): SvcnetError =>
    new SvcnetError(
      'INVALID_INPUT',
      `${path}: file too large (${size > limit ? mib(size) : `over ${mib(limit)}`}; the limit is ${mib(limit)})`,
    );
  if (path === '-') return readStdin(limit, tooBig);
  let fh;
  try {
    fh = await open(path, 'r');
    const st = await fh.stat();
    if (st.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    if (st.isFile() && st.size > limit) throw tooBig(st.size);
    // Read through a bounded buffer: a FIFO or /dev file has no size to check up front.
    const buf = Buffer.alloc(Math.min(limit + 1, st.isFile() ? st.size + 1 : limit + 1));
    let len = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, len, buf.length - len, null);
      if (bytesRead === 0) break;
      len += bytesRead;
      if (len > limit) throw tooBig(len);
      if (len === buf.length) break;
    }
    return buf.subarray(0, len).toString('utf8');
  } catch (e) {
    if (e instanceof SvcnetError) throw e;
    throw unreadable(path, e);
  } finally {
    await fh?.close();
  }
}

/**
 * Expands `-f` arguments as `kubectl apply -f` does: a directory stands for its .yaml, .yml
 * and .json files in name order (not recursive); `-` is stdin; a file is itself.
 */
export async function expandPaths(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      out.push(p);
      continue;
    }
    let isDir: boolean;
    try {
      isDir = (await stat(p)).isDirectory();
    } catch (e) {
      throw unreadable(p, e);
    }
    if (!isDir) {
      out.push(p);
      continue;
    }
    const files = (await readdir(p)).filter((f) => /\.(ya?ml|json)$/.test(f)).sort();
    if (files.length === 0)
      throw new SvcnetError('INVALID_INPUT', `${p}: directory has no .yaml, .yml or .json files`);
    out.push(...files.map((f) => join(p, f)));
  }
  return out;
}

/** Reads files and directories (`-` is stdin); a missing or unreadable one is bad input (exit 2). */
export async function readSources(paths: readonly string[]): Promise<ManifestSource[]> {
  const files = await expandPaths(paths);
  return Promise.all(files.map(async (path) => ({ path, text: await readInput(path) })));
}

async function readStdin(limit: number, tooBig: (n: number) => SvcnetError): Promise<string> {
  const chunks: Buffer[] = [];
  let len = 0;
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer);
    len += (chunk as Buffer).length;
    if (len > limit) throw tooBig(len);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Exit code for an error thrown by a command. */
export function exitCodeFor(e: unknown): number {
  return e instanceof SvcnetError && e.code === 'INVALID_INPUT' ? EXIT_USAGE : EXIT_FAILURE;
}

/**
 * `--v` as given anywhere on the command line (`--v=N` or `--v N`), read before commander
 * parses so that even a parse error can decide whether to print a stack; 0 when absent or bad.
 */
export function verbosityFromArgv(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const text = a.startsWith('--v=') ? a.slice(4) : a === '--v' ? argv[i + 1] : undefined;
    const n = Number(text);
    if (text !== undefined && text !== '' && Number.isInteger(n) && n >= 0) return n;
  }
  return 0;
}

/**
 * The text printed for a failed command: `svcnet <cmd>: message` (a ValidationError's message
 * has one line per problem); the stack of the error and its causes only at `--v=5` or more.
 */
export function formatCommandError(name: string, e: unknown, verbosity: number): string {
  const msg = e instanceof Error ? e.message : String(e);
  const lines = [`svcnet ${name}: ${msg}`];
  if (verbosity >= STACK_VERBOSITY) {
    for (let c: unknown = e; c instanceof Error; c = c.cause)
      lines.push(c.stack ?? `${c.name}: ${c.message}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Wraps a command action: runs it, prints an error as `svcnet <cmd>: message` on stderr and
 * sets the exit code. The action returns the text to print on stdout (or nothing).
 */
export function action<A extends unknown[]>(
  name: string,
  fn: (...args: A) => Promise<string | undefined>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const out = await fn(...args);
      if (out !== undefined && out !== '')
        process.stdout.write(out.endsWith('\n') ? out : `${out}\n`);
    } catch (e) {
      process.stderr.write(formatCommandError(name, e, verbosityFromArgv(process.argv)));
      process.exitCode = exitCodeFor(e);
    }
  };
}

/** Collects a repeatable option into an array (commander helper). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Commander's error text (`error: unknown option '--source'\n(Did you mean --src?)`) as one
 * line naming the command: `svcnet trace: unknown option '--source' (did you mean --src?)`.
 */
export function formatUsageError(command: string, text: string): string {
  const lines = text
    .replace(/^error: /, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const joined = lines
    .join(' ')
    .replace(/\(Did you mean (.+?)\?\)/, '(did you mean $1?)')
    .replace(/\.$/, '');
  const hint = /did you mean/.test(joined) ? '' : ` (see ${command} --help)`;
  return `${command}: ${joined}${hint}\n`;
}
