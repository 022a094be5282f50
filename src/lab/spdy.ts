// SPDY/3.1 (draft-mbelshe-httpbis-spdy-00 and the 3.1 additions), the server side of what
// kubectl port-forward speaks through its spdystream client: the frame codec (control frames
// SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE; data
// frames), name/value header blocks compressed with zlib and SPDY/3's dictionary (§2.6.10.1),
// and a session that accepts the client's streams. Not a general SPDY server: no server push,
// no flow control of our own (WINDOW_UPDATE is parsed and ignored; kubectl's spdystream does
// not wait for windows), no priorities.
//
// Header compression is one zlib stream per direction for the whole connection. Inbound, the
// header bytes seen so far are re-inflated with a sync flush (inflateSync keeps this
// synchronous; a port-forward connection carries a few hundred header bytes per stream
// pair). Outbound blocks are zlib "stored" blocks, each ended by a sync-flush marker: valid
// deflate that every inflater reads, and no compressor state to keep.

import { inflateSync, constants as zc } from 'node:zlib';

export const SPDY_VERSION = 3;
export const SYN_STREAM = 1;
export const SYN_REPLY = 2;
export const RST_STREAM = 3;
export const SETTINGS = 4;
export const PING = 6;
export const GOAWAY = 7;
export const HEADERS = 8;
export const WINDOW_UPDATE = 9;
export const FLAG_FIN = 0x01;
/** RST_STREAM status codes (§2.4.2). */
export const RST_PROTOCOL_ERROR = 1;
export const RST_INVALID_STREAM = 2;
export const RST_REFUSED_STREAM = 3;
export const RST_CANCEL = 5;

const DICTIONARY_WORDS =
  'options head post put delete trace accept accept-charset accept-encoding accept-language ' +
  'accept-ranges age allow authorization cache-control connection content-base ' +
  'content-encoding content-language content-length content-location content-md5 ' +
  'content-range content-type date etag expect expires from host if-match if-modified-since ' +
  'if-none-match if-range if-unmodified-since last-modified location max-forwards pragma ' +
  'proxy-authenticate proxy-authorization range referer retry-after server te trailer ' +
  'transfer-encoding upgrade user-agent vary via warning www-authenticate method get status ' +
  '200_OK version HTTP/1.1 url public set-cookie keep-alive origin';
const DICTIONARY_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
  '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 ' +
  'Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 ' +
  'Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, ' +
  'Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,' +
  'application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=' +
  'gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

/**
 * SPDY/3's zlib dictionary (§2.6.10.1, 1423 bytes): each common header word with a 4-byte
 * big-endian length, then a run of status codes, reasons, dates and media types.
 */
export const SPDY3_DICTIONARY: Buffer = Buffer.concat([
  ...DICTIONARY_WORDS.split(' ').map((w) => {
    const word = Buffer.from(w.replace('_', ' '), 'latin1');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(word.length);
    return Buffer.concat([len, word]);
  }),
  Buffer.from(DICTIONARY_TAIL, 'latin1'),
]);

/** A parsed frame. Control frames keep their type-specific body in `data`. */
export type SpdyFrame =
  | { readonly control: true; readonly type: number; readonly flags: number; readonly data: Buffer }
  | {
      readonly control: false;
      readonly streamId: number;
      readonly flags: number;
      readonly data: Buffer;
    };

/** Largest frame body accepted (the length field allows 16 MiB). */
export const MAX_SPDY_FRAME = 1 << 24;

/** Splits the complete frames off the start of `buf`; `rest` is the incomplete tail. */
export function decodeSpdyFrames(buf: Buffer): { frames: SpdyFrame[]; rest: Buffer } {
  const frames: SpdyFrame[] = [];
  let off = 0;
  while (buf.length - off >= 8) {
    const word = buf.readUInt32BE(off);
    const flags = buf[off + 4] ?? 0;
    const len = buf.readUIntBE(off + 5, 3);
    if (buf.length - off - 8 < len) break;
    const data = Buffer.from(buf.subarray(off + 8, off + 8 + len));
    if ((word & 0x80000000) !== 0) {
      const version = (word >>> 16) & 0x7fff;
      if (version !== SPDY_VERSION) throw new Error(`SPDY version ${String(version)} is not 3`);
      frames.push({ control: true, type: word & 0xffff, flags, data });
    } else frames.push({ control: false, streamId: word & 0x7fffffff, flags, data });
    off += 8 + len;
  }
  return { frames, rest: buf.subarray(off) };
}

/** A control frame: version 3, `type`, `flags`, body `data`. */
export function encodeControl(type: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (SPDY_VERSION << 16) | type) >>> 0, 0);
  head[4] = flags;
  head.writeUIntBE(data.length, 5, 3);
  return Buffer.concat([head, data]);
}

/** A data frame on `streamId`. */
export function encodeData(streamId: number, data: Buffer, fin = false): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head[4] = fin ? FLAG_FIN : 0;
  head.writeUIntBE(data.length, 5, 3);
  return Buffer.concat([head, data]);
}

/** The uncompressed name/value block (§2.6.10): names lowercased, values as given. */
export function encodeHeaderBlock(headers: ReadonlyMap<string, string>): Buffer {
  const parts: Buffer[] = [u32(headers.size)];
  for (const [k, v] of headers) {
    const name = Buffer.from(k.toLowerCase(), 'utf8');
    const value = Buffer.from(v, 'utf8');
    parts.push(u32(name.length), name, u32(value.length), value);
  }
  return Buffer.concat(parts);
}

/** Parses an uncompressed name/value block; throws on a truncated one. */
export function decodeHeaderBlock(block: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  const n = readU32(block, 0);
  let off = 4;
  for (let i = 0; i < n; i++) {
    const nl = readU32(block, off);
    const name = block.subarray(off + 4, off + 4 + nl).toString('utf8');
    off += 4 + nl;
    const vl = readU32(block, off);
    if (block.length < off + 4 + vl) throw new Error('SPDY header block is truncated');
    out.set(name.toLowerCase(), block.subarray(off + 4, off + 4 + vl).toString('utf8'));
    off += 4 + vl;
  }
  return out;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function readU32(b: Buffer, off: number): number {
  if (b.length < off + 4) throw new Error('SPDY header block is truncated');
  return b.readUInt32BE(off);
}

const SYNC_MARKER = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

/** The sending half of a connection's header compression (see the file header). */
export class HeaderDeflater {
  private started = false;
  /** `block` as the next piece of the connection's zlib stream. */
  compress(block: Buffer): Buffer {
    const parts: Buffer[] = [];
    if (!this.started) {
      parts.push(Buffer.from([0x78, 0x01])); // zlib header: deflate, 32K window, no preset dict
      this.started = true;
    }
    for (let off = 0; off < block.length; off += 0xffff) {
      const piece = block.subarray(off, off + 0xffff);
      const h = Buffer.alloc(5);
      h[0] = 0; // BFINAL=0, BTYPE=00 (stored), padded to the byte
      h.writeUInt16LE(piece.length, 1);
      h.writeUInt16LE(~piece.length & 0xffff, 3);
      parts.push(h, piece);
    }
    // The empty stored block a sync flush ends with: an inflater that reads on past the data
    // (Go's compress/flate does) stops here and hands the data over, instead of waiting for
    // the next block and failing at the end of this frame.
    parts.push(SYNC_MARKER);
    return Buffer.concat(parts);
  }
}

/** The receiving half: inflates each block as the continuation of the connection's stream. */
export class HeaderInflater {
  private input: Buffer = Buffer.alloc(0);
  private produced = 0;
  /** The uncompressed bytes `block` adds. Throws on corrupt input. */
  decompress(block: Buffer): Buffer {
    this.input = Buffer.concat([this.input, block]);
    const all = inflateSync(this.input, {
      dictionary: SPDY3_DICTIONARY,
      finishFlush: zc.Z_SYNC_FLUSH,
    });
    const out = all.subarray(this.produced);
    this.produced = all.length;
    return Buffer.from(out);
  }
}

/** One stream a client opened. */
export interface SpdyStream {
  readonly id: number;
  readonly headers: ReadonlyMap<string, string>;
  /** Bytes from the client. */
  onData: (data: Buffer) => void;
  /** The client half-closed (FIN) or reset the stream. */
  onEnd: () => void;
  write(data: Buffer): void;
  /** Half-closes our side (DATA with FIN). */
  end(): void;
  /** Aborts the stream (RST_STREAM CANCEL). */
  reset(): void;
}

interface StreamState extends SpdyStream {
  localClosed: boolean;
  remoteClosed: boolean;
}

/**
 * The server end of a SPDY/3.1 session over any byte transport: `feed` it what arrives,
 * it calls `send` with what to write. Each SYN_STREAM goes to `accept`, which sets the
 * stream's handlers and returns true, or false to refuse it (SYN_REPLY with FIN, as
 * spdystream's server answers a stream its handler rejects); pings are echoed.
 */
export class SpdySession {
  private buf: Buffer = Buffer.alloc(0);
  private readonly inflater = new HeaderInflater();
  private readonly deflater = new HeaderDeflater();
  private readonly streams = new Map<number, StreamState>();
  private closed = false;

  private readonly send: (bytes: Buffer) => void;
  private readonly accept: (stream: SpdyStream) => boolean;
  private readonly onClose: (why: string) => void;

  constructor(
    send: (bytes: Buffer) => void,
    accept: (stream: SpdyStream) => boolean,
    onClose: (why: string) => void,
  ) {
    this.send = send;
    this.accept = accept;
    this.onClose = onClose;
  }

  /** Open streams (for tests and cleanup). */
  get openStreams(): number {
    return this.streams.size;
  }

  feed(chunk: Buffer): void {
    if (this.closed) return;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    try {
      const { frames, rest } = decodeSpdyFrames(this.buf);
      this.buf = Buffer.from(rest);
      for (const f of frames) {
        this.frame(f);
        // frame() may have ended the session (GOAWAY).
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
        if (this.closed) return;
      }
    } catch (e) {
      this.goAway(1, e instanceof Error ? e.message : String(e));
    }
  }

  /** Ends the session: GOAWAY, every stream's handlers told, onClose called once. */
  goAway(status = 0, why = 'session closed'): void {
    if (this.closed) return;
    const body = Buffer.alloc(8);
    body.writeUInt32BE(0, 0);
    body.writeUInt32BE(status, 4);
    this.send(encodeControl(GOAWAY, 0, body));
    this.shutdown(why);
  }

  /** The transport is gone: tell every stream and the owner. */
  shutdown(why: string): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams.values()) if (!s.remoteClosed) s.onEnd();
    this.streams.clear();
    this.onClose(why);
  }

  private frame(f: SpdyFrame): void {
    if (!f.control) {
      const s = this.streams.get(f.streamId);
      if (s === undefined || s.remoteClosed) {
        this.rst(f.streamId, RST_INVALID_STREAM);
        return;
      }
      if (f.data.length > 0) s.onData(f.data);
      if ((f.flags & FLAG_FIN) !== 0) this.remoteEnd(s);
      return;
    }
    switch (f.type) {
      case SYN_STREAM:
        this.synStream(f.flags, f.data);
        return;
      case RST_STREAM: {
        const s = this.streams.get(f.data.readUInt32BE(0) & 0x7fffffff);
        if (s === undefined) return;
        s.localClosed = true;
        this.remoteEnd(s);
        return;
      }
      case PING:
        this.send(encodeControl(PING, 0, f.data));
        return;
      case GOAWAY:
        this.shutdown('client sent GOAWAY');
        return;
      case HEADERS:
        // Trailing headers are allowed and carry nothing port-forward uses; keep the
        // inflater in step with the client's compressor.
        this.inflater.decompress(f.data.subarray(4));
        return;
      default:
        return; // SETTINGS, WINDOW_UPDATE, NOOP: nothing to do
    }
  }

  private synStream(flags: number, data: Buffer): void {
    const id = data.readUInt32BE(0) & 0x7fffffff;
    const headers = decodeHeaderBlock(this.inflater.decompress(data.subarray(10)));
    if (id === 0 || id % 2 === 0 || this.streams.has(id)) {
      this.rst(id, RST_PROTOCOL_ERROR);
      return;
    }
    const stream: StreamState = {
      id,
      headers,
      localClosed: false,
      remoteClosed: false,
      onData: () => undefined,
      onEnd: () => undefined,
      write: (d) => {
        if (!stream.localClosed && !this.closed && d.length > 0) this.send(encodeData(id, d));
      },
      end: () => {
        if (stream.localClosed || this.closed) return;
        stream.localClosed = true;
        this.send(encodeData(id, Buffer.alloc(0), true));
        this.forgetIfDone(stream);
      },
      reset: () => {
        if (this.closed || !this.streams.has(id)) return;
        this.rst(id, RST_CANCEL);
        this.streams.delete(id);
      },
    };
    this.streams.set(id, stream);
    const accepted = this.accept(stream);
    const reply = Buffer.concat([u32(id), this.deflater.compress(encodeHeaderBlock(new Map()))]);
    this.send(encodeControl(SYN_REPLY, accepted ? 0 : FLAG_FIN, reply));
    if (!accepted) {
      stream.localClosed = true;
      this.streams.delete(id);
      return;
    }
    if ((flags & FLAG_FIN) !== 0) this.remoteEnd(stream);
  }

  private remoteEnd(s: StreamState): void {
    if (s.remoteClosed) return;
    s.remoteClosed = true;
    s.onEnd();
    this.forgetIfDone(s);
  }

  private forgetIfDone(s: StreamState): void {
    if (s.localClosed && s.remoteClosed) this.streams.delete(s.id);
  }

  private rst(id: number, status: number): void {
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(status, 4);
    this.send(encodeControl(RST_STREAM, 0, body));
  }
}
