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

export function registerNetexecCommand(program: Command): void {
  program
    .command('netexec')
    .description(
      'agnhost-netexec-compatible test server (/hostname, /clientip, /echo, /dial, /healthz, /readyz; UDP hostname|echo|clientip)',
    )
    .option('--http-port <port>', 'HTTP port', port('--http-port', false), 8080)
    .option('--udp-port <port>', 'UDP port (-1 disables)', port('--udp-port', true), 8081)
    .option('--hostname <name>', 'what /hostname answers (default: $POD_NAME, else the host name)')
    .option('--listen-address <ip>', 'address to listen on (default: all)')
    .option(
      '--delay-shutdown <seconds>',
      'after SIGTERM keep serving this long while /readyz fails',
      (v) => Number(v),
      0,
    )
    .option('--enable-shell', 'enable /shell (runs /bin/sh -c; lab only)', false)
    .action(
      async (o: {
        httpPort: number;
        udpPort: number;
        hostname?: string;
        listenAddress?: string;
        delayShutdown: number;
        enableShell: boolean;
      }) => {
        const server = await startNetexec({
          httpPort: o.httpPort,
          udpPort: o.udpPort,
          hostname: o.hostname ?? process.env.POD_NAME ?? hostname(),
          enableShell: o.enableShell,
          ...(o.listenAddress !== undefined ? { host: o.listenAddress } : {}),
        });
        process.stderr.write(
          `netexec: serving HTTP on ${server.httpPort}${server.udpPort !== undefined ? `, UDP on ${server.udpPort}` : ''}\n`,
        );
        const stop = async (code: number): Promise<void> => {
          await server.close();
          process.exit(code);
        };
        process.once('SIGTERM', () => {
          server.markTerminating();
          setTimeout(() => void stop(0), Math.max(0, o.delayShutdown) * 1000);
        });
        process.once('SIGINT', () => void stop(0));
        void server.exitRequested.then((code) => stop(code));
      },
    );
}
