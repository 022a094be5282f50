// The server side of RFC 6455 WebSocket, as much as the kubelet's streaming endpoints need
// (Node 20 has no WebSocket server): the opening handshake (Sec-WebSocket-Accept, §4.2.2,
// and the subprotocol choice), the frame codec (§5.2: client frames masked, server frames not;
// fragmented messages, §5.4) and a connection that answers pings and closes cleanly (§5.5).
// No extensions (permessage-deflate is never accepted). The codec functions are pure; the
// connection owns a socket.

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const OP_CONTINUATION = 0x0;
export const OP_TEXT = 0x1;
export const OP_BINARY = 0x2;
export const OP_CLOSE = 0x8;
export const OP_PING = 0x9;
export const OP_PONG = 0xa;

/** One frame on the wire. */
export interface WsFrame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
  /** Whether the sender masked it (clients must, RFC 6455 §5.1). */
  readonly masked: boolean;
}

/** The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key (§4.2.2). */
export function acceptKey(key: string): string {
  return createHash('sha1').update(`${key}${GUID}`).digest('base64');
}

/** Whether a request asks for a WebSocket upgrade. */
export function isWebSocketRequest(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** The subprotocols a client offered, in its order. */
export function offeredProtocols(req: IncomingMessage): string[] {
  return (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** Our first preference the client offered, or undefined. */
export function chooseProtocol(
  offered: readonly string[],
  preferred: readonly string[],
): string | undefined {
  return preferred.find((p) => offered.includes(p));
}

/** The 101 answer for a valid handshake, or an error text naming what is wrong. */
export function handshakeResponse(
  req: IncomingMessage,
  protocol: string,
): { ok: true; response: string } | { ok: false; error: string } {
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || key === '')
    return { ok: false, error: 'missing Sec-WebSocket-Key' };
  const version = req.headers['sec-websocket-version'];
  if (version !== '13')
    return { ok: false, error: `unsupported Sec-WebSocket-Version ${String(version)}` };
  const lines = [
    'HTTP/1.1 101 Switching Protocols',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Accept: ${acceptKey(key)}`,
    `Sec-WebSocket-Protocol: ${protocol}`,
  ];
  return { ok: true, response: `${lines.join('\r\n')}\r\n\r\n` };
}

/** Serializes a frame; `mask` (4 bytes) masks it as a client must. */
export function encodeFrame(opcode: number, payload: Buffer, fin = true, mask?: Buffer): Buffer {
  const len = payload.length;
  const ext = len < 126 ? 0 : len < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + ext + (mask === undefined ? 0 : 4));
  head[0] = (fin ? 0x80 : 0) | opcode;
  head[1] = (mask === undefined ? 0 : 0x80) | (ext === 0 ? len : ext === 2 ? 126 : 127);
  if (ext === 2) head.writeUInt16BE(len, 2);
  if (ext === 8) head.writeBigUInt64BE(BigInt(len), 2);
  if (mask === undefined) return Buffer.concat([head, payload]);
  mask.copy(head, 2 + ext);
  return Buffer.concat([head, applyMask(payload, mask)]);
}

function applyMask(data: Buffer, mask: Buffer): Buffer {
  const out = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i++) out[i] = (data[i] ?? 0) ^ (mask[i & 3] ?? 0);
  return out;
}

/** Largest frame payload accepted (a kubelet stream carries terminal bytes and TCP chunks). */
export const MAX_FRAME = 16 << 20;

/**
 * Parses the complete frames at the start of `buf` (unmasking them); `rest` is the
 * incomplete tail. Throws on a frame longer than MAX_FRAME.
 */
export function decodeFrames(buf: Buffer): { frames: WsFrame[]; rest: Buffer } {
  const frames: WsFrame[] = [];
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    const b0 = buf[off] ?? 0;
    const b1 = buf[off + 1] ?? 0;
    const masked = (b1 & 0x80) !== 0;
    let len = b1 & 0x7f;
    let p = off + 2;
    if (len === 126) {
      if (buf.length - p < 2) break;
      len = buf.readUInt16BE(p);
      p += 2;
    } else if (len === 127) {
      if (buf.length - p < 8) break;
      const big = buf.readBigUInt64BE(p);
      if (big > BigInt(MAX_FRAME))
        throw new Error(`WebSocket frame of ${String(big)} bytes is too large`);
      len = Number(big);
      p += 8;
    }
    if (len > MAX_FRAME) throw new Error(`WebSocket frame of ${String(len)} bytes is too large`);
    const maskKey = masked ? buf.subarray(p, p + 4) : undefined;
    if (masked) p += 4;
    if (buf.length - p < len) break;
    const raw = buf.subarray(p, p + len);
    frames.push({
      fin: (b0 & 0x80) !== 0,
      opcode: b0 & 0x0f,
      payload: maskKey === undefined ? Buffer.from(raw) : applyMask(raw, maskKey),
      masked,
    });
    off = p + len;
  }
  return { frames, rest: buf.subarray(off) };
}

/** What a connection reports. */
export interface WsHandlers {
  /** A complete (reassembled) data message. */
  onMessage(data: Buffer, binary: boolean): void;
  /** The connection ended (close handshake, error or socket gone); called once. */
  onClose(code: number, reason: string): void;
}

/**
 * A server-side WebSocket over an upgraded socket (after the 101 answer): reassembles
 * fragmented messages, answers pings, rejects unmasked client frames (§5.1, close 1002).
 */
export class WebSocketConnection {
  private buf: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentBinary = true;
  private closed = false;
  private closeSent = false;

  private readonly socket: Duplex;
  private readonly handlers: WsHandlers;

  constructor(socket: Duplex, handlers: WsHandlers, head: Buffer = Buffer.alloc(0)) {
    this.socket = socket;
    this.handlers = handlers;
    socket.on('data', (chunk: Buffer) => {
      this.feed(chunk);
    });
    socket.on('error', () => {
      this.finish(1006, 'socket error');
    });
    socket.on('close', () => {
      this.finish(1006, 'socket closed');
    });
    if (head.length > 0) this.feed(head);
  }

  /** Sends one unfragmented message. */
  send(data: Buffer, binary = true): void {
    if (this.closeSent || this.closed) return;
    this.socket.write(encodeFrame(binary ? OP_BINARY : OP_TEXT, data));
  }

  /** Starts the close handshake and ends the socket once it is written. */
  close(code = 1000, reason = ''): void {
    if (this.closeSent || this.closed) return;
    this.closeSent = true;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.socket.end(encodeFrame(OP_CLOSE, payload));
    this.finish(code, reason);
  }

  private finish(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.handlers.onClose(code, reason);
  }

  private feed(chunk: Buffer): void {
    if (this.closed) return;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let frames: WsFrame[];
    try {
      const d = decodeFrames(this.buf);
      frames = d.frames;
      this.buf = Buffer.from(d.rest);
    } catch (e) {
      this.close(1009, e instanceof Error ? e.message : String(e));
      return;
    }
    for (const f of frames) {
      this.frame(f);
      // frame() may have closed the connection (a close frame, a protocol error).
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
      if (this.closed) return;
    }
  }

  private frame(f: WsFrame): void {
    if (!f.masked) {
      this.close(1002, 'client frames must be masked');
      return;
    }
    switch (f.opcode) {
      case OP_PING:
        if (!this.closeSent) this.socket.write(encodeFrame(OP_PONG, f.payload));
        return;
      case OP_PONG:
        return;
      case OP_CLOSE: {
        const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005;
        this.close(code === 1005 ? 1000 : code);
        return;
      }
      case OP_TEXT:
      case OP_BINARY:
        if (this.fragments.length > 0) {
          this.close(1002, 'new message inside a fragmented one');
          return;
        }
        if (f.fin) {
          this.handlers.onMessage(f.payload, f.opcode === OP_BINARY);
          return;
        }
        this.fragmentBinary = f.opcode === OP_BINARY;
        this.fragments.push(f.payload);
        return;
      case OP_CONTINUATION:
        if (this.fragments.length === 0) {
          this.close(1002, 'continuation without a message');
          return;
        }
        this.fragments.push(f.payload);
        if (f.fin) {
          const data = Buffer.concat(this.fragments);
          this.fragments = [];
          this.handlers.onMessage(data, this.fragmentBinary);
        }
        return;
      default:
        this.close(1002, `unknown opcode ${String(f.opcode)}`);
    }
  }
}
