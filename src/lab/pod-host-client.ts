// The node agent's side of the pod host (pod-host.ts): connects to the host's unix socket,
// starting the host first when nobody answers there (the first agent of a node, or after the
// host died), and turns its containers into ManagedProcess-like runs the PodRuntime can
// signal and wait on. A run's `exited` resolves on the host's `exited` event; when the
// connection drops, the client reconnects without starting a host and asks which runs still
// run, so an agent never restarts a container that is in fact serving; runs the host no
// longer has (it died) end as killed (137), and the next start brings up a new host.

import { connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { realClock, type Clock } from '../util/clock.js';
import { KILLED } from './netexec-container.js';
import {
  parseHostMessage,
  type ContainerState,
  type HostedContainer,
  type HostReply,
  type HostSignal,
} from './pod-host-protocol.js';

/** A container run on the host, as the PodRuntime holds a process. */
export interface HostedRun {
  readonly id: string;
  readonly run: number;
  /** The host's pid (the process the container lives in). */
  readonly pid: number;
  readonly exited: Promise<number>;
  readonly signal: (sig: NodeJS.Signals) => void;
}

export interface PodHostClientOptions {
  readonly socketPath: string;
  /** Starts a host listening on socketPath (it is awaited through the socket). */
  readonly spawn: () => void;
  /** How long a started host has to answer (default 15 s). */
  readonly startTimeoutMs?: number;
  readonly clock?: Clock;
  readonly log?: (fields: Record<string, unknown>, msg: string) => void;
}

interface Conn {
  readonly sock: Socket;
  readonly pid: number;
}

type Waiter = (r: HostReply) => void;

function tryConnect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', () => {
      s.destroy();
      resolve(undefined);
    });
  });
}

export class PodHostClient {
  private readonly opts: PodHostClientOptions;
  private conn: Promise<Conn> | undefined;
  private seq = 0;
  private closing = false;
  private readonly waiting = new Map<number, Waiter>();
  /** Runs waited on: `${id}#${run}` → resolve of `exited`. */
  private readonly runs = new Map<string, (code: number) => void>();

  constructor(opts: PodHostClientOptions) {
    this.opts = opts;
  }

  /** The connection, made (and the host started) on first use. */
  private connection(spawn: boolean): Promise<Conn> {
    if (this.conn === undefined) {
      const attempt = this.open(spawn);
      this.conn = attempt;
      attempt.catch(() => {
        if (this.conn === attempt) this.conn = undefined;
      });
    }
    return this.conn;
  }

  private async open(spawn: boolean): Promise<Conn> {
    const clock = this.opts.clock ?? realClock;
    let sock = await tryConnect(this.opts.socketPath);
    if (sock === undefined && spawn) {
      this.opts.spawn();
      const deadline = clock.now() + (this.opts.startTimeoutMs ?? 15_000);
      while (sock === undefined && clock.now() < deadline) {
        await clock.sleep(50);
        sock = await tryConnect(this.opts.socketPath);
      }
    }
    if (sock === undefined) throw new Error(`pod host ${this.opts.socketPath}: not answering`);
    const s = sock;
    createInterface({ input: s, crlfDelay: Infinity }).on('line', (line) => {
      this.receive(line);
    });
    s.on('error', () => undefined);
    s.once('close', () => {
      void this.lost();
    });
    const hello = await this.send(s, { op: 'hello' });
    return { sock: s, pid: hello.ok && hello.pid !== undefined ? hello.pid : 0 };
  }

  private receive(line: string): void {
    let m: ReturnType<typeof parseHostMessage>;
    try {
      m = parseHostMessage(line);
    } catch (e) {
      this.opts.log?.({ err: e instanceof Error ? e.message : String(e) }, 'Bad pod host message');
      return;
    }
    if ('event' in m) {
      const key = `${m.id}#${String(m.run)}`;
      this.runs.get(key)?.(m.exitCode);
      this.runs.delete(key);
      return;
    }
    const w = this.waiting.get(m.seq);
    this.waiting.delete(m.seq);
    w?.(m);
  }

  private send(sock: Socket, req: Record<string, unknown>): Promise<HostReply> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(seq, resolve);
      sock.write(`${JSON.stringify({ ...req, seq })}\n`);
    });
  }

  private async request(req: Record<string, unknown>): Promise<{ reply: HostReply; conn: Conn }> {
    const conn = await this.connection(true);
    const reply = await this.send(conn.sock, req);
    if (!reply.ok) throw new Error(`pod host: ${reply.error}`);
    return { reply, conn };
  }

  /** The connection dropped: fail what waits, then settle the runs with what the host says. */
  private async lost(): Promise<void> {
    this.conn = undefined;
    if (this.closing) return;
    for (const [seq, w] of this.waiting) {
      this.waiting.delete(seq);
      w({ seq, ok: false, error: 'connection to the pod host lost' });
    }
    if (this.runs.size === 0) return;
    let states: readonly ContainerState[] = [];
    try {
      const conn = await this.connection(false);
      const r = await this.send(conn.sock, { op: 'list' });
      states = r.ok ? (r.containers ?? []) : [];
    } catch {
      this.opts.log?.({ socket: this.opts.socketPath }, 'Pod host gone: its containers ended');
    }
    for (const [key, resolve] of [...this.runs]) {
      const st = states.find((s) => `${s.id}#${String(s.run)}` === key);
      if (st?.state === 'running') continue;
      this.runs.delete(key);
      resolve(st?.exitCode ?? KILLED);
    }
  }

  private hosted(id: string, run: number, pid: number, exitCode?: number): HostedRun {
    const key = `${id}#${String(run)}`;
    const exited =
      exitCode !== undefined
        ? Promise.resolve(exitCode)
        : new Promise<number>((resolve) => this.runs.set(key, resolve));
    return {
      id,
      run,
      pid,
      exited,
      signal: (sig) => {
        const signal: HostSignal = sig === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM';
        void this.request({ op: 'signal', id, run, signal }).catch(() => undefined);
      },
    };
  }

  /** Connects now, starting the host if none answers (so the first Pod does not wait for it). */
  async warmUp(): Promise<void> {
    await this.connection(true);
  }

  /** Starts a new run of the container; resolves once it listens. */
  async start(c: HostedContainer): Promise<HostedRun> {
    const { reply, conn } = await this.request({ op: 'start', container: c });
    const run = reply.ok ? (reply.run ?? 0) : 0;
    return this.hosted(c.id, run, conn.pid);
  }

  /** The run `run` of `id` while it runs on the host (an agent adopting it), else undefined. */
  async find(id: string, run: number): Promise<HostedRun | undefined> {
    let conn: Conn;
    try {
      conn = await this.connection(false);
    } catch {
      return undefined; // no host: nothing of it runs
    }
    const r = await this.send(conn.sock, { op: 'list' });
    const st = r.ok ? r.containers?.find((s) => s.id === id && s.run === run) : undefined;
    return st?.state === 'running' ? this.hosted(id, run, conn.pid) : undefined;
  }

  /** Kills the container if it runs and drops it (its Pod is gone). No host: nothing to do. */
  async forget(id: string): Promise<void> {
    const conn = await this.connection(false).catch(() => undefined);
    if (conn !== undefined) await this.send(conn.sock, { op: 'forget', id });
  }

  /** The agent stops: the host and its containers run on for the next agent. */
  close(): void {
    this.closing = true;
    void this.conn?.then((c) => c.sock.destroy()).catch(() => undefined);
  }
}
