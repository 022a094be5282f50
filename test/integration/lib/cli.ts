// Runs the `svcnet` CLI as a user does (a child process under tsx) and measures it: exit
// code, stdout, stderr, wall time and peak RSS (from /usr/bin/time when installed, else
// unmeasured). For the CLI's error-message and bad-input tests; the figures are printed,
// never asserted, as the machine may be shared.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REPO = join(import.meta.dirname, '..', '..', '..');
const MAIN = join(REPO, 'src', 'cli', 'main.ts');
const TIME = '/usr/bin/time';

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly seconds: number;
  /** Peak resident set size in MiB, when /usr/bin/time is installed. */
  readonly maxRssMiB: number | undefined;
}

export interface CliOptions {
  readonly stdin?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Kill the process after this long (ms); the run then has code null. */
  readonly timeoutMs?: number;
  /** Stop as soon as stderr matches (the process is killed with SIGTERM). */
  readonly until?: RegExp;
}

/** Runs `svcnet ARGS...` from the repository root. */
export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-cli-'));
  const timeOut = join(dir, 'time');
  // GNU time does not pass signals on: only runs that end by themselves are measured.
  const measured = existsSync(TIME) && opts.until === undefined && opts.timeoutMs === undefined;
  const argv = [process.execPath, '--import', 'tsx', MAIN, ...args];
  const [cmd, ...rest] = measured ? [TIME, '-f', '%M', '-o', timeOut, ...argv] : argv;
  const t0 = process.hrtime.bigint();
  const child = spawn(cmd ?? process.execPath, rest, {
    cwd: REPO,
    env: { ...process.env, ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (opts.until?.test(stderr)) child.kill('SIGTERM');
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(opts.stdin ?? '');
  const timer =
    opts.timeoutMs !== undefined
      ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs)
      : undefined;
  return new Promise((resolve) => {
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      let maxRssMiB: number | undefined;
      try {
        const kb = Number(readFileSync(timeOut, 'utf8').trim().split('\n').pop());
        if (Number.isFinite(kb) && kb > 0) maxRssMiB = Math.round(kb / 1024);
      } catch {
        maxRssMiB = undefined;
      }
      rmSync(dir, { recursive: true, force: true });
      // /usr/bin/time reports a child killed by a signal as exit 128+N with a note on stderr.
      const note = /^Command (exited with non-zero status \d+|terminated by signal \d+)\n/m;
      resolve({ code, stdout, stderr: stderr.replace(note, ''), seconds, maxRssMiB });
    });
  });
}

/** The lines of stderr, without blank ones. */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}
