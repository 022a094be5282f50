// Starts the `svcnet ui` HTTP server (the hono app of server.ts on @hono/node-server) where it
// is told, and says where the page is: loopback unless asked otherwise, and then only with a
// bearer token. Used by `svcnet ui`, `svcnet lab ui` and tests.

import { createAdaptorServer } from '@hono/node-server';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SvcnetError } from '../errors.js';
import { createUiApp, type UiServerOptions } from './server.js';

/** dist/ui of this package: the same folder from src/ui (tsx) and dist/ui (the build). */
export const DEFAULT_ASSETS_DIR = fileURLToPath(new URL('../../dist/ui/', import.meta.url));

export interface RunningUi {
  readonly url: string;
  close(): Promise<void>;
}

/** `HOST:PORT` (`[v6]:PORT`) → parts; INVALID_INPUT naming --listen. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(listen);
  const port = Number(m?.[2]);
  if (!m || isIP(m[1] ?? '') === 0 || !Number.isInteger(port) || port > 65535)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--listen: want IP:PORT (e.g. 127.0.0.1:8080), got ${JSON.stringify(listen)}`,
    );
  return { host: m[1] ?? '', port };
}

/** Whether `host` is a loopback address (127.0.0.0/8 or ::1). */
export function isLoopback(host: string): boolean {
  return host === '::1' || /^127\./.test(host);
}

/** Listens on `listen`; resolves once bound (port 0 picks a free one). */
export async function startUi(listen: string, opts: UiServerOptions): Promise<RunningUi> {
  const { host, port } = parseListen(listen);
  if (!isLoopback(host) && opts.token === undefined)
    throw new SvcnetError(
      'INVALID_INPUT',
      `--listen ${listen}: a non-loopback address needs a bearer token`,
    );
  const app = createUiApp(opts);
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const bound = typeof addr === 'object' && addr !== null ? addr.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}/`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
