// `svcnet netexec`: the agnhost-netexec-compatible server every lab Pod runs (see
// src/lab/netexec.ts). Flags follow agnhost's; the hostname defaults to $POD_NAME, then the
// machine's hostname, because lab Pods share the host's UTS namespace.

import { hostname } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { startNetexecContainer } from '../lab/netexec-container.js';
import { goLogLine } from '../lab/netexec-go.js';

function port(flag: string, allowDisabled: boolean): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < (allowDisabled ? -1 : 0) || n > 65535)
      throw new InvalidArgumentError(
        `${flag}: must be ${allowDisabled ? '-1 (off) or ' : ''}0-65535, got ${JSON.stringify(v)}`,
      );
    return n;
  };
}

function parseExtraPort(v: string): { port: number; protocol: 'tcp' | 'udp' } {
  const m = /^(\d{1,5})\/(tcp|udp)$/i.exec(v);
  const n = m ? Number(m[1]) : NaN;
  if (!m || n < 1 || n > 65535)
    throw new InvalidArgumentError(
      `--extra-port: must be PORT/tcp or PORT/udp, got ${JSON.stringify(v)}`,
    );
  return { port: n, protocol: (m[2] ?? 'tcp').toLowerCase() as 'tcp' | 'udp' };
}

/** A line on stderr as Go's log package prints it, as agnhost's are. */
function log(line: string): void {
  try {
    process.stderr.write(`${goLogLine(new Date(), line)}\n`);
  } catch {
    // a log nobody reads is no reason to stop serving
  }
}

export function registerNetexecCommand(program: Command): void {
  program
    .command('netexec')
    .description(
      'agnhost-netexec-compatible test server (/hostname, /clientip, /header, /echo, /dial, /healthz, /readyz, /redirect, /upload, /exit; UDP hostname|echo|clientip)',
    )
    .option('--http-port <port>', 'HTTP port', port('--http-port', false), 8080)
    .option('--udp-port <port>', 'UDP port (-1 disables)', port('--udp-port', true), 8081)
    .option('--hostname <name>', 'what /hostname answers (default: $POD_NAME, else the host name)')
    .option('--listen-address <ip>', 'address to listen on (default: all)')
    .option(
      '--delay-shutdown <seconds>',
      'after SIGTERM keep serving this long while /readyz fails',
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n))
          throw new InvalidArgumentError(
            `--delay-shutdown: must be a whole number of seconds, got ${JSON.stringify(v)}`,
          );
        return n;
      },
      0,
    )
    .option('--enable-shell', 'enable /shell (runs /bin/sh -c; lab only)', false)
    .option(
      '--upload-dir <dir>',
      'where /upload stores files (agnhost: /uploads; default: netexec-uploads in the temp directory)',
    )
    .option(
      '--extra-port <port/proto>',
      'also serve PORT/tcp (HTTP) or PORT/udp; repeatable (a Pod with several ports)',
      (v: string, prev: { port: number; protocol: 'tcp' | 'udp' }[] | undefined) => [
        ...(prev ?? []),
        parseExtraPort(v),
      ],
    )
    .action(
      async (o: {
        httpPort: number;
        udpPort: number;
        hostname?: string;
        listenAddress?: string;
        delayShutdown: number;
        enableShell: boolean;
        uploadDir?: string;
        extraPort?: { port: number; protocol: 'tcp' | 'udp' }[];
      }) => {
        // stderr is the Pod's log; a reader gone away is no reason to stop serving.
        process.stderr.on('error', () => undefined);
        let interrupted = false;
        const c = await startNetexecContainer({
          log,
          hostname: o.hostname ?? process.env.POD_NAME ?? hostname(),
          enableShell: o.enableShell,
          ...(o.uploadDir !== undefined ? { uploadDir: o.uploadDir } : {}),
          ...(o.listenAddress !== undefined ? { host: o.listenAddress } : {}),
          httpPort: o.httpPort,
          udpPort: o.udpPort,
          extraPorts: o.extraPort ?? [],
          delayShutdownSeconds: o.delayShutdown,
        });
        process.once('SIGTERM', () => {
          c.terminate();
        });
        process.once('SIGINT', () => {
          interrupted = true;
          c.kill();
        });
        void c.exited.then((code) => process.exit(interrupted ? 0 : code));
      },
    );
}
