// Small HTTP plumbing shared by the proxy's servers (healthz, metrics, health-check node
// ports): parsing `ADDR:PORT` bind addresses (IPv6 in brackets) and starting/stopping a
// node:http server. Handlers are plain functions over node:http requests.

import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcnetError } from '../errors.js';

export interface BindAddress {
  readonly host: string;
  readonly port: number;
}

/** Parses `0.0.0.0:10256`, `[::]:10256`, `127.0.0.1:0`; an empty string means disabled. */
export function parseBindAddress(text: string, field: string): BindAddress {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(text) ?? /^([^:[\]]+):(\d+)$/.exec(text);
  const port = Number(m?.[2]);
  if (m?.[1] === undefined || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new SvcnetError(
      'INVALID_INPUT',
      `${field}: must be ADDR:PORT, got ${JSON.stringify(text)}`,
    );
  return { host: m[1], port };
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A listening HTTP server and the port it got. */
export interface Listening {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts an HTTP server on host:port (port 0 picks a free one). */
export function listenHttp(addr: BindAddress, handler: Handler): Promise<Listening> {
  const server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(addr.port, addr.host, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      resolve({
        server,
        port,
        close: () =>
          new Promise<void>((res) => {
            server.closeAllConnections();
            server.close(() => {
              res();
            });
          }),
      });
    });
  });
}

/** Writes a JSON body with kube-proxy's headers. */
export function writeJson(
  res: ServerResponse,
  status: number,
  body: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'X-Content-Type-Options': 'nosniff',
    ...extra,
  });
  res.end(body);
}
