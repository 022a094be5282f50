// One netexec "container": the servers of every port a Pod's netexec serves (the first HTTP
// and UDP port, then each extra one), with agnhost's process lifecycle as one object, so the
// `svcnet netexec` process and the pod host (one process for all of a node's Pods) behave
// alike. SIGTERM (`terminate`) makes /readyz fail at once and closes everything after
// --delay-shutdown, exiting 0; a kill closes at once (137, as after SIGKILL); /exit with no
// timeout and /shutdown end at once with their code; /exit with a timeout stops accepting and
// gives open connections that long (Go's Shutdown). `exited` resolves once with the code.

import { startNetexec, type Netexec, type NetexecOptions } from './netexec.js';

export interface ExtraPort {
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
}

export interface NetexecContainerOptions extends Omit<NetexecOptions, 'log'> {
  readonly extraPorts?: readonly ExtraPort[];
  /** After SIGTERM, keep serving this long while /readyz fails. */
  readonly delayShutdownSeconds?: number;
  /** One line of the container's log (no newline): agnhost's lines, one per request. */
  readonly log: (line: string) => void;
}

export interface NetexecContainer {
  readonly tcpPorts: readonly number[];
  readonly udpPorts: readonly number[];
  /** SIGTERM: /readyz fails; after the shutdown delay everything closes and it exits 0. */
  terminate(): void;
  /** SIGKILL: everything closes now; it exits 137. */
  kill(): void;
  /** Resolves with the exit code once (an exit request, terminate or kill). */
  readonly exited: Promise<number>;
}

/** The code a process killed by SIGKILL reports (128 + 9). */
export const KILLED = 137;

/** Starts every server; a failure to listen closes the ones already started and rejects. */
export async function startNetexecContainer(
  opts: NetexecContainerOptions,
): Promise<NetexecContainer> {
  const { extraPorts = [], delayShutdownSeconds = 0, ...common } = opts;
  const servers: Netexec[] = [];
  try {
    servers.push(await startNetexec(common));
    for (const extra of extraPorts)
      servers.push(
        await startNetexec({
          ...common,
          httpPort: extra.protocol === 'tcp' ? extra.port : -1,
          udpPort: extra.protocol === 'udp' ? extra.port : -1,
        }),
      );
  } catch (e) {
    await Promise.all(servers.map((s) => s.close()));
    throw e;
  }
  const tcpPorts = servers.flatMap((s) => (s.httpPort !== undefined ? [s.httpPort] : []));
  const udpPorts = servers.flatMap((s) => (s.udpPort !== undefined ? [s.udpPort] : []));
  opts.log(
    `netexec: serving HTTP on ${tcpPorts.join(',') || '-'}, UDP on ${udpPorts.join(',') || '-'}`,
  );
  for (const s of servers) {
    if (s.httpPort !== undefined) opts.log(`Started HTTP server on port ${String(s.httpPort)}`);
    if (s.udpPort !== undefined) opts.log(`Started UDP server on port ${String(s.udpPort)}`);
  }

  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  let ending = false;
  let delayTimer: NodeJS.Timeout | undefined;
  const end = (code: number, graceMs: number): void => {
    if (ending) return;
    ending = true;
    clearTimeout(delayTimer);
    void Promise.all(servers.map((s) => s.shutdown(graceMs))).then(() => {
      resolveExit(code);
    });
  };
  void Promise.race(servers.map((s) => s.exitRequested)).then((r) => {
    end(r.code, r.immediate ? 0 : r.graceMs);
  });
  return {
    tcpPorts,
    udpPorts,
    exited,
    terminate: () => {
      if (ending || delayTimer !== undefined) return;
      for (const s of servers) s.markTerminating();
      delayTimer = setTimeout(
        () => {
          end(0, 0);
        },
        Math.max(0, delayShutdownSeconds) * 1000,
      );
    },
    kill: () => {
      end(KILLED, 0);
    },
  };
}
