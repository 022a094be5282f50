// The pod host: one long-lived process per lab node that serves the netexec container of
// every Pod the node's agent gives it, in place of one Node.js process per Pod (≈ 57 MiB
// each). Each Pod's listeners and /dial sockets are opened inside the Pod's own network
// namespace (netexec-sockets.ts over os/netns-enter.ts), so a request reaches "the Pod" at
// the Pod's IP and is answered as that Pod: its hostname, the client address it sees, its
// readiness and shutdown delay, its /exit. Each container's log lines go to the FIFOs of
// its log run (container-log-capture.ts), which the host holds open (with a read end too,
// as a process does) until the container ends, so they survive an agent restart. The host
// outlives agents as containerd outlives the kubelet: a new agent connects to the same
// socket and adopts the running containers. Requests and events: pod-host-protocol.ts.
// Not here: shell-command or svcnet containers (still processes of their own) and /shell
// (off, as for every lab Pod).

import { closeSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import type pino from 'pino';
import { openFifoNonblockingWriter, openFifoReader } from '../os/fifo.js';
import type { NetnsEnterer } from '../os/netns-enter.js';
import { KILLED, startNetexecContainer, type NetexecContainer } from './netexec-container.js';
import { goLogLine } from './netexec-go.js';
import { netnsSockets, processSockets } from './netexec-sockets.js';
import {
  parseHostRequest,
  type ContainerState,
  type HostedContainer,
  type HostEvent,
  type HostReply,
  type HostRequest,
} from './pod-host-protocol.js';
import { podLookup } from './pod-lookup.js';

/** Output a container may have waiting for a slow log reader before its lines are dropped. */
const MAX_PENDING_LOG_BYTES = 1024 * 1024;

interface Hosted {
  readonly run: number;
  exitCode?: number;
  container?: NetexecContainer;
  /** Closes the log FIFOs (once the container ended). */
  closeLog(): void;
}

/** The container's log: Go-style lines to its stderr FIFO, stdout held open and unused. */
function openLog(c: HostedContainer): { write(line: string): void; close(): void } {
  const keep = [openFifoReader(c.stdout), openFifoReader(c.stderr)];
  const streams = [c.stdout, c.stderr].map((path) => {
    const s = new Socket({ fd: openFifoNonblockingWriter(path), readable: false, writable: true });
    s.on('error', () => undefined); // a reader gone is no reason to stop serving
    return s;
  });
  const stderr = streams[1];
  return {
    write(line) {
      if (stderr !== undefined && stderr.writableLength < MAX_PENDING_LOG_BYTES)
        stderr.write(`${goLogLine(new Date(), line)}\n`);
    },
    close() {
      for (const s of streams) s.end();
      for (const fd of keep) closeSync(fd);
    },
  };
}

export interface PodHostOptions {
  readonly enter: NetnsEnterer;
  readonly log: pino.Logger;
}

export class PodHost {
  private readonly containers = new Map<string, Hosted>();
  private readonly clients = new Set<Socket>();
  private readonly opts: PodHostOptions;

  constructor(opts: PodHostOptions) {
    this.opts = opts;
  }

  /** Starts the container (a new run of its id); resolves with the run once every port listens. */
  async start(c: HostedContainer): Promise<number> {
    const prev = this.containers.get(c.id);
    if (prev?.container !== undefined && prev.exitCode === undefined)
      throw new Error(`container ${c.id}: already running (run ${String(prev.run)})`);
    const run = (prev?.run ?? 0) + 1;
    const log = openLog(c);
    const entry: Hosted = {
      run,
      closeLog: () => {
        log.close();
      },
    };
    this.containers.set(c.id, entry);
    const lookup = podLookup(c.resolvConf ?? '/etc/resolv.conf', c.hosts ?? '/etc/hosts');
    try {
      entry.container = await startNetexecContainer({
        hostname: c.hostname,
        httpPort: c.httpPort,
        udpPort: c.udpPort,
        extraPorts: c.extraPorts,
        delayShutdownSeconds: c.delayShutdownSeconds,
        log: (line) => {
          log.write(line);
        },
        sockets:
          c.netns === undefined ? processSockets : netnsSockets(this.opts.enter, c.netns, lookup),
      });
    } catch (e) {
      log.write(`netexec: ${e instanceof Error ? e.message : String(e)}`);
      this.ended(c.id, entry, 1);
      throw e;
    }
    void entry.container.exited.then((code) => {
      this.ended(c.id, entry, code);
    });
    this.opts.log.info({ container: c.id, run, netns: c.netns }, 'Started container');
    return run;
  }

  private ended(id: string, entry: Hosted, code: number): void {
    if (entry.exitCode !== undefined) return;
    entry.exitCode = code;
    entry.closeLog();
    this.opts.log.info({ container: id, run: entry.run, exitCode: code }, 'Container exited');
    this.broadcast({ event: 'exited', id, run: entry.run, exitCode: code });
  }

  /** SIGTERM or SIGKILL to a run; one that already ended is left alone. */
  signal(id: string, run: number, sig: 'SIGTERM' | 'SIGKILL'): void {
    const e = this.containers.get(id);
    if (e === undefined || e.run !== run || e.exitCode !== undefined) return;
    if (sig === 'SIGKILL') e.container?.kill();
    else e.container?.terminate();
  }

  list(): ContainerState[] {
    return [...this.containers].map(([id, e]) => ({
      id,
      run: e.run,
      state: e.exitCode === undefined ? 'running' : 'exited',
      ...(e.exitCode === undefined ? {} : { exitCode: e.exitCode }),
    }));
  }

  /** Drops an id (its Pod is gone); a running one is killed first. */
  forget(id: string): void {
    const e = this.containers.get(id);
    if (e === undefined) return;
    e.container?.kill();
    this.containers.delete(id);
  }

  /** Kills every container (the host stops). */
  killAll(): Promise<number[]> {
    const running = [...this.containers.values()].filter((e) => e.exitCode === undefined);
    for (const e of running) e.container?.kill();
    return Promise.all(running.map((e) => e.container?.exited ?? Promise.resolve(KILLED)));
  }

  private broadcast(ev: HostEvent): void {
    const line = `${JSON.stringify(ev)}\n`;
    for (const c of this.clients) c.write(line);
  }

  async handle(req: HostRequest): Promise<HostReply> {
    switch (req.op) {
      case 'hello':
        return { seq: req.seq, ok: true, pid: process.pid };
      case 'start':
        return { seq: req.seq, ok: true, run: await this.start(req.container) };
      case 'signal':
        this.signal(req.id, req.run, req.signal);
        return { seq: req.seq, ok: true };
      case 'list':
        return { seq: req.seq, ok: true, containers: this.list() };
      case 'forget':
        this.forget(req.id);
        return { seq: req.seq, ok: true };
    }
  }

  /** Serves agents on the unix socket at `path` (a stale file there is replaced). */
  listen(path: string): Promise<Server> {
    rmSync(path, { force: true });
    const server = createServer((sock) => {
      this.clients.add(sock);
      sock.on('error', () => undefined);
      sock.on('close', () => this.clients.delete(sock));
      const lines = createInterface({ input: sock, crlfDelay: Infinity });
      lines.on('line', (line) => {
        void this.answer(line).then((reply) => {
          if (!sock.destroyed) sock.write(`${JSON.stringify(reply)}\n`);
        });
      });
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve(server);
      });
    });
  }

  private async answer(line: string): Promise<HostReply> {
    let req: HostRequest;
    try {
      req = parseHostRequest(line);
    } catch (e) {
      const seq = /"seq"\s*:\s*(\d+)/.exec(line)?.[1];
      return {
        seq: Number(seq ?? -1),
        ok: false,
        error: e instanceof Error ? e.message : String(e),
      };
    }
    try {
      return await this.handle(req);
    } catch (e) {
      return { seq: req.seq, ok: false, error: e instanceof Error ? e.message : String(e) };
    }
  }
}
