// The node agent's kubelet API, the part the API server proxies Pod subresources to: on a
// real node the kubelet serves `/containerLogs/NS/POD/CONTAINER`, `/exec/NS/POD/CONTAINER`,
// `/attach/NS/POD/CONTAINER` and `/portForward/NS/POD` on port 10250; a lab node serves the
// same paths on a Unix socket in the lab's state directory (kubeletSocketPath in apiserver/kubelet-proxy.ts), which the API
// server, in another network namespace, reaches through the file system. Plain requests
// (logs) go to `containerLogs`; upgrade requests (exec, attach and port-forward, over
// WebSocket or SPDY) hand their socket to `stream`. A path of neither shape is a 404, a
// missing handler a 501, as the kubelet answers for what it does not serve.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { dirname } from 'node:path';

/** The kubelet's streaming and log endpoints. */
export type KubeletEndpoint = 'containerLogs' | 'exec' | 'attach' | 'portForward';

/** A request the kubelet API understood: which endpoint, which Pod (and container). */
export interface KubeletTarget {
  readonly endpoint: KubeletEndpoint;
  readonly namespace: string;
  readonly pod: string;
  /** Absent for portForward, which addresses the Pod. */
  readonly container?: string;
  readonly query: URLSearchParams;
}

/** Parses a kubelet API path (with its query); undefined when it is not one of ours. */
export function parseKubeletPath(url: string): KubeletTarget | undefined {
  const u = new URL(url, 'http://kubelet');
  const parts = u.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const [endpoint, namespace, pod, container, ...rest] = parts;
  if (namespace === undefined || pod === undefined || rest.length > 0) return undefined;
  if (endpoint === 'portForward')
    return container === undefined
      ? { endpoint, namespace, pod, query: u.searchParams }
      : undefined;
  if (endpoint === 'containerLogs' || endpoint === 'exec' || endpoint === 'attach')
    return container === undefined
      ? undefined
      : { endpoint, namespace, pod, container, query: u.searchParams };
  return undefined;
}

/** What the node agent does for each endpoint; a missing one answers 501. */
export interface KubeletHandlers {
  /** GET /containerLogs/…: writes the log (and keeps the response open with follow=true). */
  containerLogs?(target: KubeletTarget, req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** An upgrade request on /exec, /attach or /portForward: owns `socket` from here on. */
  stream?(target: KubeletTarget, req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${text}\n`);
}

/** An HTTP error on a socket that asked for an upgrade (no ServerResponse exists for it). */
export function refuseUpgrade(socket: Duplex, status: number, reason: string, text: string): void {
  const body = `${text}\n`;
  socket.end(
    `HTTP/1.1 ${String(status)} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${String(Buffer.byteLength(body))}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The HTTP server of the kubelet API, not yet listening. */
export function kubeletServer(
  handlers: KubeletHandlers,
  onError: (e: unknown) => void = () => undefined,
): Server {
  const server = createServer((req, res) => {
    const target = parseKubeletPath(req.url ?? '/');
    if (target === undefined) {
      plain(res, 404, `404 page not found: ${req.url ?? ''}`);
      return;
    }
    if (target.endpoint !== 'containerLogs' || handlers.containerLogs === undefined) {
      plain(
        res,
        target.endpoint === 'containerLogs' ? 501 : 400,
        `${target.endpoint}: not served here`,
      );
      return;
    }
    if (req.method !== 'GET') {
      plain(res, 405, `${req.method ?? ''} not allowed on containerLogs`);
      return;
    }
    handlers.containerLogs(target, req, res).catch((e: unknown) => {
      onError(e);
      if (!res.headersSent) plain(res, 500, e instanceof Error ? e.message : String(e));
      else res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const target = parseKubeletPath(req.url ?? '/');
    if (target === undefined || target.endpoint === 'containerLogs') {
      refuseUpgrade(socket, 404, 'Not Found', `404 page not found: ${req.url ?? ''}`);
      return;
    }
    if (handlers.stream === undefined) {
      refuseUpgrade(socket, 501, 'Not Implemented', `${target.endpoint}: not served here`);
      return;
    }
    try {
      handlers.stream(target, req, socket, head);
    } catch (e) {
      onError(e);
      refuseUpgrade(
        socket,
        500,
        'Internal Server Error',
        e instanceof Error ? e.message : String(e),
      );
    }
  });
  return server;
}

/** Serves the kubelet API on the Unix socket `path` (a stale socket file is replaced). */
export async function listenKubelet(server: Server, path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  rmSync(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
