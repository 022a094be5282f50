// The API server's listening socket, below the hono app: the Node HTTP(S) server that
// @hono/node-server drives, with what kube-apiserver's Go server does before a handler runs.
// A body whose Content-Length passes --max-request-bytes is answered 413 before it is read
// (`Expect: 100-continue` included), and the connection lingers briefly so the client reads
// the answer instead of a reset. Connection limits and timeouts live here too.

import {
  createServer as createHttpServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
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
function refuse(req: IncomingMessage, res: ServerResponse, limit: number): void {
  const body = JSON.stringify(requestEntityTooLarge(`limit is ${limit}`).toStatus());
  res.writeHead(413, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
  if (req.complete) return;
  const timer = setTimeout(() => {
    req.socket.destroy();
  }, LINGER_MS);
  timer.unref();
  req.once('end', () => {
    clearTimeout(timer);
  });
  req.once('close', () => {
    clearTimeout(timer);
  });
}

export interface ListenerOptions {
  /** TLS key and certificate; plain HTTP when absent. */
  readonly tls?: { readonly key: string; readonly cert: string };
  readonly maxRequestBytes: number;
}

/**
 * A `createServer` for @hono/node-server's `serve()`: the HTTP(S) server with the body-size
 * door in front of the app's request listener.
 */
export function serverFactory(opts: ListenerOptions): typeof createHttpServer {
  const factory = (options: ServerOptions, listener: RequestListener): Server => {
    const guarded: RequestListener = (req, res) => {
      const length = announcedLength(req);
      if (length !== undefined && length > opts.maxRequestBytes) {
        refuse(req, res, opts.maxRequestBytes);
        return;
      }
      listener(req, res);
    };
    const server: Server = opts.tls
      ? createHttpsServer({ ...options, key: opts.tls.key, cert: opts.tls.cert }, guarded)
      : createHttpServer(options, guarded);
    // `Expect: 100-continue` (curl sends it for bodies over 1 MiB): refuse before the body
    // is sent; otherwise continue as Node does without a listener.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      const length = announcedLength(req);
      if (length !== undefined && length > opts.maxRequestBytes) {
        refuse(req, res, opts.maxRequestBytes);
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
