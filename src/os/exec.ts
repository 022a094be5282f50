// The Execer seam: the only place svcnet starts child processes. Everything that runs
// iptables-restore, nft, ip, conntrack, sysctl or a CNI plugin goes through an Execer, so
// tests substitute FakeExecer (scripted, fails the test when an expected call never came)
// and the lab or a dry run can record what would have run.

import { spawn } from 'node:child_process';
import { SvcnetError } from '../errors.js';

export interface ExecRequest {
  readonly cmd: string;
  readonly args: readonly string[];
  /** Bytes or text written to stdin (then closed). */
  readonly stdin?: string | Uint8Array;
  readonly env?: Readonly<Record<string, string>>;
  /** Kill the process (SIGKILL) after this long; default 60 s. */
  readonly timeoutMs?: number;
}

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Execer {
  /** Runs a command to completion. Rejects only if it could not be started or timed out. */
  run(req: ExecRequest): Promise<ExecResult>;
}

export class ExecError extends SvcnetError {
  readonly result: ExecResult | undefined;
  constructor(message: string, result?: ExecResult, cause?: unknown) {
    super('EXEC_FAILED', message, { cause });
    this.name = 'ExecError';
    this.result = result;
  }
}

/**
 * The Debian package that installs a command svcnet runs, for the "not found" error: the
 * proxy, the lab and the CNI plugin fail on a fresh machine with only `spawn iptables ENOENT`
 * otherwise.
 */
export const DEBIAN_PACKAGES: Readonly<Record<string, string>> = {
  iptables: 'iptables',
  'iptables-save': 'iptables',
  'iptables-restore': 'iptables',
  'iptables-legacy': 'iptables',
  'iptables-legacy-save': 'iptables',
  'iptables-legacy-restore': 'iptables',
  'iptables-nft': 'iptables',
  'iptables-nft-save': 'iptables',
  'iptables-nft-restore': 'iptables',
  ip6tables: 'iptables',
  'ip6tables-save': 'iptables',
  'ip6tables-restore': 'iptables',
  'ip6tables-legacy-save': 'iptables',
  'ip6tables-legacy-restore': 'iptables',
  'ip6tables-nft-save': 'iptables',
  'ip6tables-nft-restore': 'iptables',
  nft: 'nftables',
  conntrack: 'conntrack',
  ip: 'iproute2',
  bridge: 'iproute2',
  nfacct: 'nfacct',
  ipset: 'ipset',
  ipvsadm: 'ipvsadm',
  sysctl: 'procps',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  dig: 'dnsutils',
  ping: 'iputils-ping',
  curl: 'curl',
};

/** The message for a command that could not be started. */
export function cannotStart(cmd: string, e: Error & { code?: unknown }): string {
  const base = cmd.split('/').pop() ?? cmd;
  if (e.code === 'ENOENT') {
    const pkg = DEBIAN_PACKAGES[base];
    return `${cmd}: command not found${pkg !== undefined ? ` (install it: apt-get install ${pkg})` : ''}`;
  }
  return `${cmd}: cannot start: ${e.message}`;
}

/** Runs `req` and throws ExecError (with stderr in the message) unless it exits 0. */
export async function runChecked(execer: Execer, req: ExecRequest): Promise<ExecResult> {
  const res = await execer.run(req);
  if (res.code !== 0) {
    const detail = res.stderr.trim() || res.stdout.trim();
    throw new ExecError(
      `${req.cmd} ${req.args.join(' ')}: exit ${res.code}${detail ? `: ${detail}` : ''}`,
      res,
    );
  }
  return res;
}

/**
 * The base of the Real* edges that wrap one command-line tool (conntrack, nfacct): the Execer
 * and the binary (overridable for tests and distribution variants), and `run`, which resolves
 * with the result whatever the exit code so each tool reads its own failure modes.
 */
export class ExecTool {
  protected readonly execer: Execer;
  protected readonly binary: string;

  constructor(execer: Execer, binary: string) {
    this.execer = execer;
    this.binary = binary;
  }

  protected run(args: readonly string[], timeoutMs: number): Promise<ExecResult> {
    return this.execer.run({ cmd: this.binary, args, timeoutMs });
  }
}

/** The real Execer, on node:child_process spawn (no shell). */
export class RealExecer implements Execer {
  run(req: ExecRequest): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(req.cmd, [...req.args], {
        env: req.env ? { ...process.env, ...req.env } : process.env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => err.push(d));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new ExecError(`${req.cmd}: timed out after ${req.timeoutMs ?? 60_000} ms`));
      }, req.timeoutMs ?? 60_000);
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new ExecError(cannotStart(req.cmd, e), undefined, e));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          code: code ?? (signal ? 128 : 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        });
      });
      child.stdin.on('error', () => {
        // The command may exit before reading stdin (EPIPE); its exit code tells the story.
      });
      if (req.stdin !== undefined) child.stdin.end(req.stdin);
      else child.stdin.end();
    });
  }
}

export interface ExpectedCall {
  readonly cmd: string;
  /** Exact args, or a predicate over them. */
  readonly args?: readonly string[] | ((args: readonly string[]) => boolean);
  readonly result?: Partial<ExecResult>;
  /** Inspect the request (e.g. its stdin) when it arrives. */
  readonly check?: (req: ExecRequest) => void;
}

/**
 * Scripted Execer for tests: calls must arrive in the order expected; an unexpected call
 * throws; `verify()` fails when an expected call never came. Every request is recorded.
 */
export class FakeExecer implements Execer {
  readonly calls: ExecRequest[] = [];
  private readonly expected: ExpectedCall[] = [];

  expect(...calls: ExpectedCall[]): this {
    this.expected.push(...calls);
    return this;
  }

  run(req: ExecRequest): Promise<ExecResult> {
    this.calls.push(req);
    const next = this.expected.shift();
    const shown = `${req.cmd} ${req.args.join(' ')}`;
    if (!next) return Promise.reject(new ExecError(`FakeExecer: unexpected call: ${shown}`));
    const argsOk =
      next.args === undefined ||
      (typeof next.args === 'function'
        ? next.args(req.args)
        : next.args.join('\0') === req.args.join('\0'));
    if (next.cmd !== req.cmd || !argsOk)
      return Promise.reject(
        new ExecError(
          `FakeExecer: expected ${next.cmd} ${Array.isArray(next.args) ? next.args.join(' ') : '…'}, got ${shown}`,
        ),
      );
    next.check?.(req);
    return Promise.resolve({ code: 0, stdout: '', stderr: '', ...next.result });
  }

  /** Throws if expected calls remain unused. */
  verify(): void {
    if (this.expected.length > 0)
      throw new Error(
        `FakeExecer: ${this.expected.length} expected call(s) never came; first: ${this.expected[0]?.cmd ?? ''}`,
      );
  }
}
