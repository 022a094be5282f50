// Shared plumbing for `svcnet` subcommands: reading input files, and turning errors into
// the CLI contract's exit codes (0 ok, 1 runtime failure, 2 bad usage or bad input) with
// the message on stderr. Output to stdout is written only after the command succeeded,
// so a failing command never leaves half a ruleset on stdout.

import { readFile } from 'node:fs/promises';
import { SvcnetError } from '../errors.js';
import type { ManifestSource } from '../kube/manifest.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Reads files (`-` is stdin); a missing or unreadable file is bad input (exit 2). */
export async function readSources(paths: readonly string[]): Promise<ManifestSource[]> {
  return Promise.all(
    paths.map(async (path) => {
      try {
        const text = path === '-' ? await readStdin() : await readFile(path, 'utf8');
        return { path, text };
      } catch (e) {
        const reason = e instanceof Error && 'code' in e ? String(e.code) : String(e);
        throw new SvcnetError('INVALID_INPUT', `${path}: cannot read file (${reason})`, {
          cause: e,
        });
      }
    }),
  );
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Exit code for an error thrown by a command. */
export function exitCodeFor(e: unknown): number {
  return e instanceof SvcnetError && e.code === 'INVALID_INPUT' ? EXIT_USAGE : EXIT_FAILURE;
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
      const msg = e instanceof Error ? e.message : String(e);
      process.stderr.write(`svcnet ${name}: ${msg}\n`);
      process.exitCode = exitCodeFor(e);
    }
  };
}

/** Collects a repeatable option into an array (commander helper). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
