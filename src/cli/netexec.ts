// `svcnet netexec`: the agnhost-netexec-compatible server every lab Pod runs (see
// src/lab/netexec.ts). Flags follow agnhost's; the hostname defaults to $POD_NAME, then the
// machine's hostname, because lab Pods share the host's UTS namespace.

import { hostname } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { startNetexec } from '../lab/netexec.js';

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

/** A line on stderr as Go's log package prints it (`2006/01/02 15:04:05 msg`), as agnhost's are. */
function log(line: string): void {
  const d = new Date();
  const p = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${String(d.getFullYear())}/${p(d.getMonth() + 1)}/${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  try {
    process.stderr.write(`${stamp} ${line}\n`);
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
        const common = {
          log,
          hostname: o.hostname ?? process.env.POD_NAME ?? hostname(),
          enableShell: o.enableShell,
          ...(o.uploadDir !== undefined ? { uploadDir: o.uploadDir } : {}),
          ...(o.listenAddress !== undefined ? { host: o.listenAddress } : {}),
        };
        const servers = [
          await startNetexec({ ...common, httpPort: o.httpPort, udpPort: o.udpPort }),
        ];
        for (const extra of o.extraPort ?? []) {
          servers.push(
            await startNetexec({
              ...common,
              httpPort: extra.protocol === 'tcp' ? extra.port : -1,
              udpPort: extra.protocol === 'udp' ? extra.port : -1,
            }),
          );
        }
        const tcp = servers.flatMap((s) => (s.httpPort !== undefined ? [s.httpPort] : []));
        const udp = servers.flatMap((s) => (s.udpPort !== undefined ? [s.udpPort] : []));
        process.stderr.write(
          `netexec: serving HTTP on ${tcp.join(',') || '-'}, UDP on ${udp.join(',') || '-'}\n`,
        );
        for (const s of servers) {
          if (s.httpPort !== undefined) log(`Started HTTP server on port ${String(s.httpPort)}`);
          if (s.udpPort !== undefined) log(`Started UDP server on port ${String(s.udpPort)}`);
        }
        const stop = async (code: number): Promise<void> => {
          await Promise.all(servers.map((s) => s.close()));
          process.exit(code);
        };
        process.once('SIGTERM', () => {
          for (const s of servers) s.markTerminating();
          setTimeout(() => void stop(0), Math.max(0, o.delayShutdown) * 1000);
        });
        process.once('SIGINT', () => void stop(0));
        // /exit with timeout 0 and /shutdown exit at once, as agnhost's os.Exit; /exit with a
        // timeout stops accepting and gives open connections that long (Go's Shutdown).
        void Promise.race(servers.map((s) => s.exitRequested)).then(async (r) => {
          if (r.immediate) process.exit(r.code);
          await Promise.all(servers.map((s) => s.shutdown(r.graceMs)));
          process.exit(r.code);
        });
      },
    );
}
