// A byte-stream forwarder between a TCP address and a unix socket, in either direction. The
// lab uses two of them to give the host's kubectl an endpoint without touching the host's
// network namespace: inside the control-plane node, unix socket → API server's TCP address;
// in the supervisor (host namespace), 127.0.0.1:PORT → that unix socket. A unix socket is a
// file, so it crosses network namespaces where TCP cannot.

import { createServer, connect, type Server, type Socket } from 'node:net';
import { rmSync } from 'node:fs';

export type Endpoint = { readonly host: string; readonly port: number } | { readonly path: string };

export interface Forwarder {
  /** The bound endpoint (with the real port when 0 was asked for). */
  readonly listening: Endpoint;
  close(): Promise<void>;
}

function dial(target: Endpoint): Socket {
  return 'path' in target
    ? connect({ path: target.path })
    : connect({ host: target.host, port: target.port });
}

export async function startForwarder(listen: Endpoint, target: Endpoint): Promise<Forwarder> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = dial(target);
    sockets.add(client);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  if ('path' in listen) rmSync(listen.path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = (): void => {
      resolve();
    };
    if ('path' in listen) server.listen(listen.path, done);
    else server.listen(listen.port, listen.host, done);
  });
  const addr = server.address();
  const listening: Endpoint =
    typeof addr === 'object' && addr !== null
      ? { host: addr.address, port: addr.port }
      : { path: String(addr) };
  return {
    listening,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}
