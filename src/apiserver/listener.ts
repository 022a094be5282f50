// The API server's listening socket, below the hono app: the Node HTTP(S) server that
// @hono/node-server drives, with what kube-apiserver's Go server does before a handler runs.
// A body whose Content-Length passes --max-request-bytes is answered 413 before it is read
// (`Expect: 100-continue` included), and the connection lingers briefly so the client reads
// the answer instead of a reset. Connections get a TLS handshake timeout and a header
// timeout (10 s each), an idle keep-alive timeout, and a cap that sheds idle and
// unauthenticated connections first (connections.ts).

import {
  createServer as createHttpServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { realClock, type Clock } from '../util/clock.js';
import type { ConnectionTracker } from './connections.js';
import { requestEntityTooLarge } from './limits.js';

/** How long a refused upload may keep sending (discarded) before its connection is closed. */
const LINGER_MS = 1000;

function announcedLength(req: IncomingMessage): number | undefined {
  const v = req.headers['content-length'];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

/**
 * Answers 413 for a body announced larger than the limit, without reading it. What the
 * client still sends is discarded (Node drains the request) for at most LINGER_MS, then the
 * connection is closed: closing at once would reset it under the client, which then loses
 * the answer it has not read yet (Go's server waits the same way, rstAvoidanceDelay).
 */
function refuse(req: IncomingMessage, res: ServerResponse, limit: number, clock: Clock): void {
  const body = JSON.stringify(requestEntityTooLarge(`limit is ${limit}`).toStatus());
  res.writeHead(413, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
  if (req.complete) return;
  const timer = clock.setTimeout(() => {
    req.socket.destroy();
  }, LINGER_MS);
  req.once('end', () => {
    clock.clearTimeout(timer);
  });
  req.once('close', () => {
    clock.clearTimeout(timer);
  });
}

/** TLS handshake and request-header deadline (Go's http.Server ReadHeaderTimeout-like). */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
export const HEADERS_TIMEOUT_MS = 10_000;
/** A keep-alive connection idle this long after a response is closed (Node's default). */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Receiving a whole request (headers and body) may take at most this long. */
export const REQUEST_TIMEOUT_MS = 60_000;

export interface ListenerOptions {
  /** TLS key and certificate; plain HTTP when absent. */
  readonly tls?: { readonly key: string; readonly cert: string };
  readonly maxRequestBytes: number;
  /** Connection cap and first-request deadline; none when absent. */
  readonly connections?: ConnectionTracker;
  /** Whether an Authorization header carries the server's token (for shedding order). */
  readonly authenticate?: (authorization: string | undefined) => boolean;
  /** Timers of the upload linger and the connection sweep; default the wall clock. */
  readonly clock?: Clock;
}

function keyOf(sock: Socket): string {
  return `${sock.remoteAddress ?? ''}:${sock.remotePort ?? 0}`;
}

/**
 * A `createServer` for @hono/node-server's `serve()`: the HTTP(S) server with the body-size
 * door in front of the app's request listener.
 */
export function serverFactory(opts: ListenerOptions): typeof createHttpServer {
  const tracker = opts.connections;
  const clock = opts.clock ?? realClock;
  const factory = (options: ServerOptions, listener: RequestListener): Server => {
    const guarded: RequestListener = (req, res) => {
      if (tracker) {
        const key = keyOf(req.socket);
        tracker.begin(key, opts.authenticate?.(req.headers.authorization) ?? false);
        res.once('close', () => {
          tracker.end(key);
        });
      }
      const length = announcedLength(req);
      if (length !== undefined && length > opts.maxRequestBytes) {
        refuse(req, res, opts.maxRequestBytes, clock);
        return;
      }
      listener(req, res);
    };
    const timeouts = {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Node checks header and request deadlines this often (default 30 s).
      connectionsCheckingInterval: 1000,
    };
    const server: Server = opts.tls
      ? createHttpsServer(
          {
            ...options,
            ...timeouts,
            key: opts.tls.key,
            cert: opts.tls.cert,
            handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
          },
          guarded,
        )
      : createHttpServer({ ...options, ...timeouts }, guarded);
    if (tracker) {
      // 'connection' carries the raw TCP socket, before any TLS handshake.
      server.on('connection', (sock: Socket) => {
        const key = keyOf(sock);
        if (tracker.accept(key, sock))
          sock.once('close', () => {
            tracker.forget(key, sock);
          });
      });
      // An upgraded connection (exec, attach, port-forward) is a request in flight for as long
      // as it streams; untracked, it stayed "fresh" and the first-request deadline closed it.
      server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
        const key = keyOf(req.socket);
        tracker.begin(key, opts.authenticate?.(req.headers.authorization) ?? false);
        socket.once('close', () => {
          tracker.end(key);
        });
      });
      const sweeper = clock.setInterval(() => tracker.sweep(), 1000);
      server.once('close', () => {
        clock.clearInterval(sweeper);
      });
    }
    // `Expect: 100-continue` (curl sends it for bodies over 1 MiB): refuse before the body
    // is sent; otherwise continue as Node does without a listener.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      const length = announcedLength(req);
      if (length !== undefined && length > opts.maxRequestBytes) {
        refuse(req, res, opts.maxRequestBytes, clock);
        return;
      }
      res.writeContinue();
      guarded(req, res);
    });
    return server;
  };
  // serve() always passes (options, listener); the cast only drops http's other overloads.
  return factory as unknown as typeof createHttpServer;
}
