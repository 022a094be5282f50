// `kubectl port-forward` on a lab node: the kubelet's port-forward protocol
// (portforward.k8s.io) over SPDY/3.1, either on the upgraded connection itself (`Upgrade:
// SPDY/3.1`) or tunnelled in WebSocket binary messages (subprotocol
// SPDY/3.1+portforward.k8s.io, kubectl's default since 1.31). The client opens two streams
// per forwarded connection, sharing a `requestid` header: `streamtype: error` (which it
// half-closes at once and reads for a failure text) and `streamtype: data`, both naming the
// `port`. Each pair is connected, as the kubelet connects, to 127.0.0.1:PORT inside the Pod's
// network namespace: the agent lives in the node's namespace, so a small relay (this Node.js
// binary in `ip netns exec POD-NS`) holds the Pod-side socket; a hostNetwork Pod's loopback
// is the node's own, dialled directly.

import type { Duplex } from 'node:stream';
import type { SpdyStream } from './spdy.js';

/** Stream-pair header names (lowercase, as SPDY carries them). */
export const HEADER_STREAM_TYPE = 'streamtype';
export const HEADER_PORT = 'port';
export const HEADER_REQUEST_ID = 'requestid';
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';
export const PORT_FORWARD_WS_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

/** A connection to the Pod's port: bytes both ways, then an exit reason. */
export interface PodConnection {
  readonly socket: Duplex;
  /** Resolves with undefined on a clean end, or the failure text (e.g. connection refused). */
  readonly done: Promise<string | undefined>;
}

/** Opens a connection to 127.0.0.1:port in the Pod's network namespace. */
export type PodDialer = (port: number) => PodConnection;

/** The port a stream names, or an error text. */
export function streamPort(headers: ReadonlyMap<string, string>): number | string {
  const raw = headers.get(HEADER_PORT) ?? '';
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535)
    return `invalid port header ${JSON.stringify(raw)}: must be 1-65535`;
  return port;
}

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
}

/**
 * The stream acceptor of a port-forward session: pairs streams by requestid and forwards
 * each complete pair through `dial`; the failure text of a connection goes on its error
 * stream, as the kubelet writes "error forwarding port P to pod …".
 */
export function portForwardAcceptor(
  podLabel: string,
  dial: PodDialer,
): { accept(stream: SpdyStream): boolean; closeAll(): void } {
  const pairs = new Map<string, Pair>();
  const live = new Set<Duplex>();
  const forward = (data: SpdyStream, error: SpdyStream): void => {
    const port = streamPort(data.headers);
    if (typeof port === 'string') {
      error.write(Buffer.from(port));
      error.end();
      data.end();
      return;
    }
    const conn = dial(port);
    live.add(conn.socket);
    conn.socket.on('data', (d: Buffer) => {
      data.write(d);
    });
    conn.socket.on('end', () => {
      data.end();
    });
    conn.socket.on('error', () => undefined);
    data.onData = (d) => conn.socket.write(d);
    data.onEnd = () => conn.socket.end();
    void conn.done.then((failure) => {
      live.delete(conn.socket);
      if (failure !== undefined)
        error.write(
          Buffer.from(`error forwarding port ${String(port)} to pod ${podLabel}: ${failure}`),
        );
      error.end();
      data.end();
    });
  };
  return {
    accept(stream: SpdyStream): boolean {
      const type = stream.headers.get(HEADER_STREAM_TYPE);
      const id = stream.headers.get(HEADER_REQUEST_ID) ?? '';
      if (type !== 'data' && type !== 'error') return false;
      const pair = pairs.get(id) ?? {};
      if (pair[type] !== undefined) return false;
      pair[type] = stream;
      pairs.set(id, pair);
      if (pair.data !== undefined && pair.error !== undefined) {
        pairs.delete(id);
        forward(pair.data, pair.error);
      }
      return true;
    },
    closeAll(): void {
      for (const s of live) s.destroy();
      live.clear();
      pairs.clear();
    },
  };
}
