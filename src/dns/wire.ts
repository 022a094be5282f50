// The DNS wire codec of the hot path, written by hand: a strict, bounds-checked query parser
// (one question, optional EDNS0 OPT) and a response writer with name compression, EDNS0 and
// truncation with TC (RFC 1035 §4, RFC 6891, RFC 2181 §9). It is not a general message codec:
// upstream responses are read with dns-packet in forward.ts. Pure; no I/O.

/** RR type numbers we use (RFC 1035, 3596, 2782, 6891). */
export const TYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  HINFO: 13,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
} as const;

export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  /** Extended rcode (needs OPT): 16 = 1 in the OPT's upper bits. */
  BADVERS: 16,
} as const;

export type RcodeName = keyof typeof RCODE;

/** Mnemonics by rcode number (the labels CoreDNS's metrics use). */
const RCODE_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(RCODE).map(([k, v]) => [v, k]),
);

/** Mnemonic of an rcode; `OTHER` for one we have no name for. */
export function rcodeName(rcode: number): string {
  return RCODE_NAMES[rcode] ?? 'OTHER';
}

const TYPE_NAMES = new Map<number, string>(Object.entries(TYPE).map(([k, v]) => [v, k]));

/** Mnemonic of a type number (`TYPE65534` for unknown ones, as RFC 3597 writes them). */
export function typeName(t: number): string {
  return TYPE_NAMES.get(t) ?? `TYPE${t}`;
}

/** Type number of a mnemonic or `TYPEnnn`; undefined when unknown. */
export function typeNumber(name: string): number | undefined {
  const upper = name.toUpperCase();
  const known = (TYPE as Record<string, number>)[upper];
  if (known !== undefined) return known;
  const m = /^TYPE(\d{1,5})$/.exec(upper);
  return m ? Number(m[1]) : undefined;
}

/** Our advertised EDNS0 UDP payload size (DNS flag day 2020). */
export const EDNS_UDP_SIZE = 1232;
/** Largest message without EDNS0 over UDP. */
export const PLAIN_UDP_SIZE = 512;
/** Largest message over TCP (the 2-byte length prefix). */
export const TCP_SIZE = 65535;

/** A message with the 2-byte length prefix it carries over TCP (RFC 1035 §4.2.2). */
export function tcpFrame(msg: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(2 + msg.length);
  out.writeUInt16BE(msg.length, 0);
  out.set(msg, 2);
  return out;
}

/** The first message of a TCP byte stream, or undefined until all of it has arrived. */
export function firstTcpMessage(stream: Buffer): Buffer | undefined {
  if (stream.length < 2) return undefined;
  const len = stream.readUInt16BE(0);
  return stream.length >= 2 + len ? stream.subarray(2, 2 + len) : undefined;
}

export type ResourceRecord =
  | { name: string; type: 'A' | 'AAAA'; ttl: number; address: string }
  | { name: string; type: 'CNAME' | 'PTR' | 'NS'; ttl: number; target: string }
  | {
      name: string;
      type: 'SRV';
      ttl: number;
      priority: number;
      weight: number;
      port: number;
      target: string;
    }
  | { name: string; type: 'TXT'; ttl: number; text: string[] }
  | {
      name: string;
      type: 'SOA';
      ttl: number;
      mname: string;
      rname: string;
      serial: number;
      refresh: number;
      retry: number;
      expire: number;
      minimum: number;
    }
  /** Any other record, rdata already in wire form without compressed names (RFC 3597). */
  | { name: string; type: 'OPAQUE'; rrtype: number; ttl: number; rdata: Uint8Array };

export interface Edns {
  readonly udpSize: number;
  readonly version: number;
  readonly dnssecOk: boolean;
}

/** A query that parsed. Names are presentation text (escaped as dig prints them). */
export interface ParsedQuery {
  readonly id: number;
  readonly flags: number;
  readonly opcode: number;
  /** The question name in the query's own case, FQDN with the trailing dot (`.` for root). */
  readonly qname: string;
  readonly qtype: number;
  readonly qclass: number;
  /** Offset just past the question (QTYPE and QCLASS included). */
  readonly questionEnd: number;
  /** Start offset of each question label, and its presentation text; for compression. */
  readonly labelOffsets: readonly number[];
  readonly labels: readonly string[];
  readonly edns: Edns | undefined;
}

export type ParseResult =
  | { ok: true; query: ParsedQuery }
  /** `drop`: not worth answering (shorter than a header, or a response). */
  | { ok: false; drop: true }
  /** Answer with this rcode, echoing the ID (and the question when it could be read). */
  | { ok: false; drop: false; id: number; flags: number; rcode: number; questionEnd: number };

const QR = 0x8000;
const OPCODE_MASK = 0x7800;
const AA = 0x0400;
const TC = 0x0200;
const RD = 0x0100;
const RA = 0x0080;
const CD = 0x0010;

function labelText(buf: Uint8Array, start: number, len: number): string {
  let plain = true;
  for (let i = start; i < start + len; i++) {
    const c = buf[i] ?? 0;
    if (c < 0x21 || c > 0x7e || c === 0x2e || c === 0x5c) {
      plain = false;
      break;
    }
  }
  if (plain) return Buffer.from(buf.buffer, buf.byteOffset + start, len).toString('latin1');
  let s = '';
  for (let i = start; i < start + len; i++) {
    const c = buf[i] ?? 0;
    if (c === 0x2e || c === 0x5c) s += `\\${String.fromCharCode(c)}`;
    else if (c < 0x21 || c > 0x7e) s += `\\${String(c).padStart(3, '0')}`;
    else s += String.fromCharCode(c);
  }
  return s;
}

/** Skips a (possibly compressed) name in a message; returns the offset after it or -1. */
function skipName(buf: Uint8Array, off: number): number {
  let total = 0;
  for (;;) {
    if (off >= buf.length) return -1;
    const len = buf[off] ?? 0;
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2 <= buf.length ? off + 2 : -1;
    if ((len & 0xc0) !== 0) return -1;
    total += len + 1;
    if (total > 255) return -1;
    off += len + 1;
  }
}

/**
 * Parses a query. Never throws: malformed input gives FORMERR (when an ID could be read)
 * or `drop`. Rules: QR clear; exactly one question whose name has no compression pointers,
 * labels ≤ 63 octets, name ≤ 255 octets; every other record well-formed; at most one OPT,
 * owned by the root name. A non-QUERY opcode gives NOTIMP.
 */
export function parseQuery(buf: Uint8Array): ParseResult {
  return parse(buf, true);
}

/**
 * parseQuery without building the name strings (`qname` is '' and `labels` empty): the
 * cache-hit path, which only needs the question's extent, type and EDNS.
 */
export function scanQuery(buf: Uint8Array): ParseResult {
  return parse(buf, false);
}

function parse(buf: Uint8Array, wantLabels: boolean): ParseResult {
  if (buf.length < 12) return { ok: false, drop: true };
  const id = ((buf[0] ?? 0) << 8) | (buf[1] ?? 0);
  const flags = ((buf[2] ?? 0) << 8) | (buf[3] ?? 0);
  if ((flags & QR) !== 0) return { ok: false, drop: true };
  const qd = ((buf[4] ?? 0) << 8) | (buf[5] ?? 0);
  const an = ((buf[6] ?? 0) << 8) | (buf[7] ?? 0);
  const ns = ((buf[8] ?? 0) << 8) | (buf[9] ?? 0);
  const ar = ((buf[10] ?? 0) << 8) | (buf[11] ?? 0);
  const opcode = (flags >> 11) & 0xf;
  const fail = (rcode: number, questionEnd = 12): ParseResult => ({
    ok: false,
    drop: false,
    id,
    flags,
    rcode,
    questionEnd,
  });
  if (opcode !== 0) return fail(RCODE.NOTIMP);
  if (qd !== 1) return fail(RCODE.FORMERR);
  let off = 12;
  const labels: string[] = [];
  const labelOffsets: number[] = [];
  let nameLen = 1;
  for (;;) {
    if (off >= buf.length) return fail(RCODE.FORMERR);
    const len = buf[off] ?? 0;
    if (len === 0) {
      off++;
      break;
    }
    if (len > 63) return fail(RCODE.FORMERR);
    nameLen += len + 1;
    if (nameLen > 255 || off + 1 + len > buf.length) return fail(RCODE.FORMERR);
    labelOffsets.push(off);
    if (wantLabels) labels.push(labelText(buf, off + 1, len));
    off += 1 + len;
  }
  if (off + 4 > buf.length) return fail(RCODE.FORMERR);
  const qtype = ((buf[off] ?? 0) << 8) | (buf[off + 1] ?? 0);
  const qclass = ((buf[off + 2] ?? 0) << 8) | (buf[off + 3] ?? 0);
  off += 4;
  const questionEnd = off;
  let edns: Edns | undefined;
  for (let i = 0; i < an + ns + ar; i++) {
    const nameStart = off;
    off = skipName(buf, off);
    if (off < 0 || off + 10 > buf.length) return fail(RCODE.FORMERR, questionEnd);
    const type = ((buf[off] ?? 0) << 8) | (buf[off + 1] ?? 0);
    const klass = ((buf[off + 2] ?? 0) << 8) | (buf[off + 3] ?? 0);
    const ttlHi = ((buf[off + 4] ?? 0) << 8) | (buf[off + 5] ?? 0);
    const ttlLo = ((buf[off + 6] ?? 0) << 8) | (buf[off + 7] ?? 0);
    const rdlen = ((buf[off + 8] ?? 0) << 8) | (buf[off + 9] ?? 0);
    off += 10 + rdlen;
    if (off > buf.length) return fail(RCODE.FORMERR, questionEnd);
    if (type === TYPE.OPT) {
      if (i < an + ns || edns !== undefined || buf[nameStart] !== 0)
        return fail(RCODE.FORMERR, questionEnd);
      edns = {
        udpSize: Math.max(klass, PLAIN_UDP_SIZE),
        version: ttlHi & 0xff,
        dnssecOk: (ttlLo & 0x8000) !== 0,
      };
    }
  }
  return {
    ok: true,
    query: {
      id,
      flags,
      opcode,
      qname: !wantLabels ? '' : labels.length === 0 ? '.' : `${labels.join('.')}.`,
      qtype,
      qclass,
      questionEnd,
      labelOffsets,
      labels,
      edns,
    },
  };
}

/** Splits a presentation name into wire labels (handles `\.` and `\DDD`); root is []. */
export function nameToLabels(name: string): Buffer[] {
  if (name === '.' || name === '') return [];
  const out: Buffer[] = [];
  let cur: number[] = [];
  for (let i = 0; i < name.length; i++) {
    const ch = name.charCodeAt(i);
    if (ch === 0x5c && i + 1 < name.length) {
      const d = name.slice(i + 1, i + 4);
      if (/^\d{3}$/.test(d)) {
        cur.push(Number(d) & 0xff);
        i += 3;
      } else {
        cur.push(name.charCodeAt(i + 1) & 0xff);
        i += 1;
      }
    } else if (ch === 0x2e) {
      out.push(Buffer.from(cur));
      cur = [];
    } else {
      cur.push(ch & 0xff);
    }
  }
  if (cur.length > 0) out.push(Buffer.from(cur));
  return out;
}

/** Splits a presentation name into presentation labels (escapes kept). */
export function splitName(name: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < name.length; i++) {
    const ch = name.charCodeAt(i);
    if (ch === 0x5c) i++;
    else if (ch === 0x2e) {
      out.push(name.slice(start, i));
      start = i + 1;
    }
  }
  if (start < name.length) out.push(name.slice(start));
  return out;
}

/** The name with its trailing dot (presentation FQDN). */
export function fqdn(name: string): string {
  return name.endsWith('.') ? name : `${name}.`;
}

/** Lower-cases ASCII letters only (DNS case-insensitivity, RFC 4343). */
export function lowerName(name: string): string {
  return /[A-Z]/.test(name) ? name.replace(/[A-Z]/g, (c) => c.toLowerCase()) : name;
}

function ipv4Bytes(text: string): number[] | undefined {
  const out: number[] = [0, 0, 0, 0];
  let part = 0;
  let digits = 0;
  let v = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || v > 255 || part > 3) return undefined;
      out[part++] = v;
      v = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39 && digits < 3) {
      v = v * 10 + (c - 0x30);
      digits++;
    } else {
      return undefined;
    }
  }
  return part === 4 ? out : undefined;
}

function ipv6Bytes(text: string): number[] | undefined {
  let head = text;
  let tailV4: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = ipv4Bytes(text.slice(lastColon + 1));
    if (!v4) return undefined;
    tailV4 = v4;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string): number[] | undefined => {
    if (s === '') return [];
    const groups = s.split(':');
    const out: number[] = [];
    for (const g of groups) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const left = parse(halves[0] ?? '');
  const right = halves.length === 2 ? parse(halves[1] ?? '') : [];
  if (!left || !right) return undefined;
  const fill = 8 - left.length - right.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const groups = [...left, ...new Array<number>(fill).fill(0), ...right];
  const bytes: number[] = [];
  for (const g of groups) bytes.push(g >> 8, g & 0xff);
  if (tailV4.length === 4) bytes.splice(12, 4, ...tailV4);
  return bytes;
}

/** Address bytes of an A (4) or AAAA (16) record, or undefined when malformed. */
export function addressBytes(type: 'A' | 'AAAA', address: string): number[] | undefined {
  return type === 'A' ? ipv4Bytes(address) : ipv6Bytes(address);
}

/** What goes into a response (the question is copied from the query). */
export interface ResponseParts {
  readonly rcode: number;
  readonly authoritative: boolean;
  readonly truncated?: boolean;
  readonly answer: readonly ResourceRecord[];
  readonly authority: readonly ResourceRecord[];
  readonly additional: readonly ResourceRecord[];
}

const TYPE_CODES: Record<Exclude<ResourceRecord['type'], 'OPAQUE'>, number> = {
  A: TYPE.A,
  AAAA: TYPE.AAAA,
  CNAME: TYPE.CNAME,
  PTR: TYPE.PTR,
  NS: TYPE.NS,
  SRV: TYPE.SRV,
  TXT: TYPE.TXT,
  SOA: TYPE.SOA,
};

class Overflow extends Error {}

/**
 * Writes one message into a scratch buffer. Names are compressed against earlier names
 * with the exact same spelling (case-sensitive, so owner names keep the case the client
 * used while targets keep theirs). A record that does not fit under `limit` is rolled back.
 */
class MessageWriter {
  private readonly buf: Buffer;
  off = 0;
  private readonly names = new Map<string, number>();
  private readonly added: string[] = [];
  private readonly limit: number;

  constructor(scratch: Buffer, limit: number) {
    this.buf = scratch;
    this.limit = limit;
  }

  private ensure(n: number): void {
    if (this.off + n > this.limit || this.off + n > this.buf.length) throw new Overflow();
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.off++] = v & 0xff;
  }

  u16(v: number): void {
    this.ensure(2);
    this.buf.writeUInt16BE(v & 0xffff, this.off);
    this.off += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.off);
    this.off += 4;
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.off);
    this.off += b.length;
  }

  /** Registers the labels of a name already in the buffer (the copied question). */
  registerName(labels: readonly string[], offsets: readonly number[]): void {
    let suffix = '.';
    for (let i = labels.length - 1; i >= 0; i--) {
      suffix = suffix === '.' ? `${labels[i] ?? ''}.` : `${labels[i] ?? ''}.${suffix}`;
      const at = offsets[i] ?? 0;
      if (at < 0x3fff && !this.names.has(suffix)) this.names.set(suffix, at);
    }
  }

  name(name: string, compress = true): void {
    if (name === '.' || name === '') {
      this.u8(0);
      return;
    }
    if (name.includes('\\') || !name.endsWith('.')) {
      this.escapedName(fqdn(name), compress);
      return;
    }
    // Fast path: plain FQDN; each suffix is a slice of the name, labels copied as bytes.
    const n = name.length - 1;
    let start = 0;
    while (start < n) {
      if (compress) {
        const suffix = start === 0 ? name : name.slice(start);
        const ptr = this.names.get(suffix);
        if (ptr !== undefined) {
          this.u16(0xc000 | ptr);
          return;
        }
        if (this.off < 0x3fff) {
          this.names.set(suffix, this.off);
          this.added.push(suffix);
        }
      }
      let end = name.indexOf('.', start);
      if (end < 0 || end > n) end = n;
      const len = Math.min(end - start, 63);
      this.ensure(1 + len);
      const buf = this.buf;
      let o = this.off;
      buf[o++] = len;
      for (let k = 0; k < len; k++) buf[o++] = name.charCodeAt(start + k) & 0xff;
      this.off = o;
      start = end + 1;
    }
    this.u8(0);
  }

  private escapedName(name: string, compress: boolean): void {
    const labels = splitName(name);
    const wire = nameToLabels(name);
    for (let i = 0; i < labels.length; i++) {
      const suffix = `${labels.slice(i).join('.')}.`;
      const ptr = compress ? this.names.get(suffix) : undefined;
      if (ptr !== undefined) {
        this.u16(0xc000 | ptr);
        return;
      }
      if (compress && this.off < 0x3fff) {
        this.names.set(suffix, this.off);
        this.added.push(suffix);
      }
      const label = wire[i] ?? Buffer.alloc(0);
      this.u8(Math.min(label.length, 63));
      this.bytes(label.subarray(0, 63));
    }
    this.u8(0);
  }

  /** Writes one record; returns false (and leaves nothing behind) when it does not fit. */
  record(rr: ResourceRecord): boolean {
    const mark = this.off;
    const marked = this.added.length;
    try {
      this.name(rr.name);
      this.u16(rr.type === 'OPAQUE' ? rr.rrtype : TYPE_CODES[rr.type]);
      this.u16(1);
      this.u32(rr.ttl);
      const lenAt = this.off;
      this.u16(0);
      this.rdata(rr);
      this.buf.writeUInt16BE(this.off - lenAt - 2, lenAt);
      return true;
    } catch (e) {
      if (!(e instanceof Overflow)) throw e;
      this.off = mark;
      for (const k of this.added.splice(marked)) this.names.delete(k);
      return false;
    }
  }

  private rdata(rr: ResourceRecord): void {
    switch (rr.type) {
      case 'A':
      case 'AAAA': {
        const b = addressBytes(rr.type, rr.address);
        if (!b) throw new Error(`bad ${rr.type} address ${rr.address}`);
        this.bytes(Uint8Array.from(b));
        return;
      }
      case 'CNAME':
      case 'PTR':
      case 'NS':
        this.name(rr.target);
        return;
      case 'SRV':
        this.u16(rr.priority);
        this.u16(rr.weight);
        this.u16(rr.port);
        // RFC 2782: the SRV target is not compressed.
        this.name(rr.target, false);
        return;
      case 'TXT':
        for (const s of rr.text) {
          const b = Buffer.from(s, 'latin1');
          if (b.length === 0) this.u8(0);
          for (let i = 0; i < b.length; i += 255) {
            const chunk = b.subarray(i, i + 255);
            this.u8(chunk.length);
            this.bytes(chunk);
          }
        }
        return;
      case 'SOA':
        this.name(rr.mname);
        this.name(rr.rname);
        this.u32(rr.serial);
        this.u32(rr.refresh);
        this.u32(rr.retry);
        this.u32(rr.expire);
        this.u32(rr.minimum);
        return;
      case 'OPAQUE':
        this.bytes(rr.rdata);
        return;
    }
  }
}

const scratch = Buffer.allocUnsafe(TCP_SIZE + 2);

/**
 * Encodes a response to `query` (whose raw bytes are `queryBuf`): header with the query's ID,
 * RD and CD echoed, RA set; the question copied byte for byte (so the owner names that point
 * at it echo the client's case); then the sections, truncated to `limit` bytes. Records that
 * do not fit are dropped: from the answer or authority section this sets TC (the client
 * retries over TCP); dropped glue in the additional section does not. An OPT record is
 * appended when the query had one, with our payload size and the DO bit echoed.
 */
export function encodeResponse(
  queryBuf: Uint8Array,
  query: Pick<ParsedQuery, 'questionEnd' | 'labels' | 'labelOffsets' | 'edns'>,
  parts: ResponseParts,
  limit: number,
): Buffer {
  const optLen = query.edns ? 11 : 0;
  const w = new MessageWriter(scratch, Math.max(limit, 12) - optLen);
  w.off = 12;
  w.bytes(queryBuf.subarray(12, query.questionEnd));
  w.registerName(query.labels, query.labelOffsets);
  let tc = parts.truncated === true;
  const counts = [0, 0, 0];
  const sections = [parts.answer, parts.authority, parts.additional];
  outer: for (let s = 0; s < 3; s++) {
    for (const rr of sections[s] ?? []) {
      if (!w.record(rr)) {
        if (s < 2) tc = true;
        break outer;
      }
      counts[s] = (counts[s] ?? 0) + 1;
    }
  }
  const rcode = parts.rcode;
  if (query.edns) {
    scratch[w.off] = 0;
    scratch.writeUInt16BE(TYPE.OPT, w.off + 1);
    scratch.writeUInt16BE(EDNS_UDP_SIZE, w.off + 3);
    scratch[w.off + 5] = (rcode >> 4) & 0xff;
    scratch[w.off + 6] = 0;
    scratch.writeUInt16BE(query.edns.dnssecOk ? 0x8000 : 0, w.off + 7);
    scratch.writeUInt16BE(0, w.off + 9);
    w.off += 11;
  }
  const qflags = ((queryBuf[2] ?? 0) << 8) | (queryBuf[3] ?? 0);
  // The opcode is copied from the query (RFC 1035 §4.1.1), so a NOTIMP for an UPDATE or a
  // NOTIFY says which operation is not implemented, as CoreDNS's answers do.
  const flags =
    QR |
    (qflags & (OPCODE_MASK | RD | CD)) |
    RA |
    (parts.authoritative ? AA : 0) |
    (tc ? TC : 0) |
    (rcode & 0xf);
  scratch[0] = queryBuf[0] ?? 0;
  scratch[1] = queryBuf[1] ?? 0;
  scratch.writeUInt16BE(flags, 2);
  scratch.writeUInt16BE(query.questionEnd > 12 ? 1 : 0, 4);
  scratch.writeUInt16BE(counts[0] ?? 0, 6);
  scratch.writeUInt16BE(counts[1] ?? 0, 8);
  scratch.writeUInt16BE((counts[2] ?? 0) + (query.edns ? 1 : 0), 10);
  return Buffer.from(scratch.subarray(0, w.off));
}

/**
 * An error response (FORMERR, NOTIMP, SERVFAIL, REFUSED...) that echoes the ID and, when it
 * was readable (`questionEnd` > 12), the question.
 */
export function encodeError(
  queryBuf: Uint8Array,
  questionEnd: number,
  rcode: number,
  edns?: Edns,
): Buffer {
  const end = Math.min(questionEnd, queryBuf.length);
  return encodeResponse(
    queryBuf,
    { questionEnd: end, labels: [], labelOffsets: [], edns },
    { rcode, authoritative: false, answer: [], authority: [], additional: [] },
    TCP_SIZE,
  );
}

/** The UDP size limit for a response to this query. */
export function udpLimit(edns: Edns | undefined): number {
  return edns ? Math.min(Math.max(edns.udpSize, PLAIN_UDP_SIZE), TCP_SIZE) : PLAIN_UDP_SIZE;
}

/** Presentation text of a record, as dig prints it (for tests and logs). */
export function formatRecord(rr: ResourceRecord): string {
  const head = `${rr.name} ${rr.ttl} IN ${rr.type === 'OPAQUE' ? typeName(rr.rrtype) : rr.type}`;
  switch (rr.type) {
    case 'A':
    case 'AAAA':
      return `${head} ${rr.address}`;
    case 'CNAME':
    case 'PTR':
    case 'NS':
      return `${head} ${rr.target}`;
    case 'SRV':
      return `${head} ${rr.priority} ${rr.weight} ${rr.port} ${rr.target}`;
    case 'TXT':
      return `${head} ${rr.text.map((t) => JSON.stringify(t)).join(' ')}`;
    case 'SOA':
      return `${head} ${rr.mname} ${rr.rname} ${rr.serial} ${rr.refresh} ${rr.retry} ${rr.expire} ${rr.minimum}`;
    case 'OPAQUE':
      return `${head} \\# ${rr.rdata.length} ${Buffer.from(rr.rdata).toString('hex')}`;
  }
}

/** What the cache-hit path needs from a query; one reused object, no allocation. */
export interface QuickScan {
  questionEnd: number;
  qtype: number;
  hasEdns: boolean;
  dnssecOk: boolean;
  udpSize: number;
}

const quick: QuickScan = { questionEnd: 0, qtype: 0, hasEdns: false, dnssecOk: false, udpSize: 0 };

/**
 * The common query shape only (QUERY opcode, one question without pointers, nothing but an
 * optional version-0 OPT after it), read without allocating. Anything else returns
 * undefined and takes parseQuery's full path. The returned object is reused by the next call.
 */
export function quickScan(buf: Uint8Array): QuickScan | undefined {
  const len = buf.length;
  if (len < 17) return undefined;
  // QR=0, opcode 0; QDCOUNT 1, ANCOUNT 0, NSCOUNT 0, ARCOUNT 0 or 1.
  if (((buf[2] ?? 0) & 0xf8) !== 0 || buf[4] !== 0 || buf[5] !== 1) return undefined;
  if (buf[6] !== 0 || buf[7] !== 0 || buf[8] !== 0 || buf[9] !== 0 || buf[10] !== 0)
    return undefined;
  const ar = buf[11] ?? 0;
  if (ar > 1) return undefined;
  let off = 12;
  let nameLen = 1;
  for (;;) {
    if (off >= len) return undefined;
    const l = buf[off] ?? 0;
    if (l === 0) break;
    if (l > 63) return undefined;
    nameLen += l + 1;
    if (nameLen > 255) return undefined;
    off += l + 1;
  }
  off++;
  if (off + 4 > len) return undefined;
  quick.qtype = ((buf[off] ?? 0) << 8) | (buf[off + 1] ?? 0);
  off += 4;
  quick.questionEnd = off;
  if (ar === 0) {
    if (off !== len) return undefined;
    quick.hasEdns = false;
    quick.dnssecOk = false;
    quick.udpSize = PLAIN_UDP_SIZE;
    return quick;
  }
  // OPT: root name, type 41, class = size, TTL = ext-rcode, version, flags; rdlen; rdata.
  if (off + 11 > len || buf[off] !== 0 || buf[off + 1] !== 0 || buf[off + 2] !== TYPE.OPT)
    return undefined;
  if (buf[off + 6] !== 0) return undefined;
  const rdlen = ((buf[off + 9] ?? 0) << 8) | (buf[off + 10] ?? 0);
  if (off + 11 + rdlen !== len) return undefined;
  quick.hasEdns = true;
  quick.udpSize = Math.max(((buf[off + 3] ?? 0) << 8) | (buf[off + 4] ?? 0), PLAIN_UDP_SIZE);
  quick.dnssecOk = ((buf[off + 7] ?? 0) & 0x80) !== 0;
  return quick;
}
