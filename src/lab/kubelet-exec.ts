// `kubectl exec` on a lab node: the kubelet's remote-command stream over WebSocket with the
// channel protocols v5.channel.k8s.io and v4.channel.k8s.io (k8s.io/apimachinery's
// remotecommand constants): every binary message starts with its channel — 0 stdin, 1
// stdout, 2 stderr, 3 error (one metav1.Status as JSON when the command ended), 4 resize
// ({"Width","Height"}), and in v5 255 "close channel N" (the client's stdin EOF). The command
// runs as pod-exec.ts runs a container's commands: in the Pod's network namespace through
// `ip netns exec` (its resolv.conf and hosts shown as /etc/...), or the node's for a
// hostNetwork Pod, with HOSTNAME and the container's env. With tty=true it runs under a
// pseudo-terminal from util-linux `script`; the first resize sets the terminal size (`stty`
// inside the pty before the command starts), later resizes are ignored (the pty belongs to
// `script`, which this process cannot ioctl). SPDY exec (kubectl's fallback for API servers
// without WebSocket exec) is not served: kubectl 1.30+ uses WebSocket first.

import type { StartPiped, PipedProcess } from '../os/piped-process.js';
import type { WebSocketConnection } from './websocket.js';

/** The subprotocols served, best first. */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

export const CH_STDIN = 0;
export const CH_STDOUT = 1;
export const CH_STDERR = 2;
export const CH_ERROR = 3;
export const CH_RESIZE = 4;
export const CH_CLOSE = 255;

/** What an exec request asks for (the kubelet's query parameters). */
export interface ExecRequest {
  readonly command: readonly string[];
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
}

function flag(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === 'true' || v === '1';
}

/** Parses the exec query; throws naming the problem (no command, nothing to stream). */
export function parseExecQuery(q: URLSearchParams): ExecRequest {
  const command = q.getAll('command');
  if (command.length === 0) throw new Error('exec: you must specify at least one command');
  const req = {
    command,
    stdin: flag(q, 'stdin'),
    stdout: flag(q, 'stdout'),
    stderr: flag(q, 'stderr'),
    tty: flag(q, 'tty'),
  };
  if (!req.stdin && !req.stdout && !req.stderr)
    throw new Error('exec: you must specify at least 1 of stdin, stdout, stderr');
  // A terminal has one output: stderr goes to it (the kubelet refuses tty with stderr).
  return req.tty ? { ...req, stderr: false } : req;
}

/**
 * The Status the error channel carries when the command ended (what the kubelet sends):
 * Success for 0, else Failure/NonZeroExitCode with the code as cause ExitCode, which
 * kubectl turns into its own exit code.
 */
export function execStatus(command: readonly string[], exitCode: number): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message:
      `command terminated with non-zero exit code: error executing command ` +
      `[${command.join(' ')}], exit code ${String(exitCode)}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** The Status for a command that could not run at all. */
export function execFailure(message: string): Record<string, unknown> {
  return { metadata: {}, status: 'Failure', message, reason: 'InternalError', code: 500 };
}

/** argv quoted for `sh -c`. */
export function shellQuote(argv: readonly string[]): string {
  return argv
    .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}

/** A terminal size from a resize message, or undefined when malformed. */
export function parseResize(data: Buffer): { width: number; height: number } | undefined {
  try {
    const v = JSON.parse(data.toString('utf8')) as { Width?: unknown; Height?: unknown };
    if (typeof v.Width !== 'number' || typeof v.Height !== 'number') return undefined;
    return { width: Math.trunc(v.Width), height: Math.trunc(v.Height) };
  } catch {
    return undefined;
  }
}

/**
 * The argv that runs `command` (with tty, under a pseudo-terminal of `script`, sized first
 * when a size is known). `wrap` puts it in the Pod's namespace.
 */
export function execArgv(
  command: readonly string[],
  tty: boolean,
  size: { width: number; height: number } | undefined,
): [string, ...string[]] {
  const [cmd, ...args] = command;
  if (cmd === undefined) throw new Error('exec: you must specify at least one command');
  if (!tty) return [cmd, ...args];
  const stty =
    size === undefined || size.width <= 0 || size.height <= 0
      ? ''
      : `stty cols ${String(size.width)} rows ${String(size.height)} 2>/dev/null; `;
  return ['script', '-qfec', `${stty}exec ${shellQuote(command)}`, '/dev/null'];
}

/** How long a tty session waits for kubectl's first resize before starting unsized. */
export const FIRST_RESIZE_WAIT_MS = 250;

/** Where and how the command runs. */
export interface ExecRunner {
  /** Puts an argv in the Pod's namespace (identity for hostNetwork). */
  wrap(argv: [string, ...string[]]): [string, ...string[]];
  readonly env: Readonly<Record<string, string>>;
  readonly start: StartPiped;
}

function message(channel: number, data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([Buffer.from([channel]), body]);
}

/**
 * Serves one exec session on an open WebSocket (handshake done, `protocol` chosen): starts
 * the command, streams its channels, sends the Status and closes. Returns the handlers the
 * connection must call; killing the command when the client goes away.
 */
export function execSession(
  ws: Pick<WebSocketConnection, 'send' | 'close'>,
  protocol: string,
  req: ExecRequest,
  runner: ExecRunner,
): { onMessage(data: Buffer): void; onClose(): void } {
  let proc: PipedProcess | undefined;
  let gone = false;
  let stdinEnded = false;
  const pending: Buffer[] = [];
  let timer: NodeJS.Timeout | undefined;
  const env = { SHELL: '/bin/sh', ...(req.tty ? { TERM: 'xterm' } : {}), ...runner.env };

  const start = (size: { width: number; height: number } | undefined): void => {
    if (proc !== undefined || gone) return;
    if (timer !== undefined) clearTimeout(timer);
    const p = runner.start(runner.wrap(execArgv(req.command, req.tty, size)), env, req.stdin);
    proc = p;
    p.stdin?.on('error', () => undefined);
    for (const b of pending) p.stdin?.write(b);
    pending.length = 0;
    if (stdinEnded) p.stdin?.end();
    p.stdout.on('data', (d: Buffer) => {
      if (req.stdout || req.tty) ws.send(message(CH_STDOUT, d));
    });
    p.stderr.on('data', (d: Buffer) => {
      if (req.stderr) ws.send(message(CH_STDERR, d));
      else if (req.tty) ws.send(message(CH_STDOUT, d));
    });
    void p.exited.then((code) => {
      if (gone) return;
      ws.send(message(CH_ERROR, JSON.stringify(execStatus(req.command, code))));
      ws.close(1000);
    });
  };

  if (req.tty)
    timer = setTimeout(() => {
      start(undefined);
    }, FIRST_RESIZE_WAIT_MS);
  else start(undefined);

  return {
    onMessage(data: Buffer): void {
      const ch = data[0];
      const body = data.subarray(1);
      if (ch === CH_STDIN && req.stdin) {
        if (proc === undefined) pending.push(Buffer.from(body));
        else proc.stdin?.write(body);
      } else if (ch === CH_RESIZE) {
        if (proc === undefined) start(parseResize(body));
      } else if (ch === CH_CLOSE && protocol.startsWith('v5.') && body[0] === CH_STDIN) {
        stdinEnded = true;
        proc?.stdin?.end();
      }
    },
    onClose(): void {
      gone = true;
      if (timer !== undefined) clearTimeout(timer);
      proc?.kill();
    },
  };
}
