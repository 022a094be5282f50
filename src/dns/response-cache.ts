// The encoded-response cache of the cluster zones: repeated questions are answered by copying
// a stored response and patching what belongs to the query — the ID, RD and CD, the question
// in the client's spelling (DNS 0x20 mixed case), and an OPT record when the query had one.
// Entries are keyed by the question with the name lowercased (ASCII only, RFC 4343), so a
// client that randomises case still hits; an entry whose bytes after the question depend on
// the spelling (the resolver echoes the query's case in owner names and zone suffixes, which
// the encoder usually compresses to pointers into the question but not always) is marked
// case-bound and serves only that exact spelling. Responses are stored as if the query had
// no OPT; a hit is refused (the caller runs the resolver) when the stored response plus OPT
// exceeds the query's limit, so a truncated answer is never served to a query allowing more,
// nor a large one to a 512-octet client. The whole cache belongs to one index generation and
// is dropped when the generation moves; cluster answers carry the index's fixed TTL (they do
// not count down, as CoreDNS's kubernetes plugin), so a hit serves exactly what the resolver
// would. Pure: no I/O, no clock.

import { EDNS_UDP_SIZE, TCP_SIZE, TYPE, quickScan } from './wire.js';

export interface CachedResponse<Extra> {
  /** The response as to a query without OPT. */
  readonly wire: Buffer;
  /** The question's exact bytes when the response depends on its spelling, else undefined. */
  readonly question: Buffer | undefined;
  /** Whatever the caller keeps beside it (zone, rcode, metric series). */
  readonly extra: Extra;
}

export interface CacheHit<Extra> {
  readonly out: Buffer;
  readonly entry: CachedResponse<Extra>;
  readonly qtype: number;
}

/** Room for the longest question: a 255-octet name and type and class. */
const keyScratch = Buffer.allocUnsafe(255 + 4);

/** The question bytes (12..questionEnd) with the name's ASCII letters lowercased. */
export function questionKey(msg: Uint8Array, questionEnd: number): string {
  const n = questionEnd - 12;
  const nameEnd = n - 4;
  for (let i = 0; i < n; i++) {
    let b = msg[12 + i] ?? 0;
    // Length octets are at most 63, below 'A', so only letters of labels change.
    if (i < nameEnd && b >= 0x41 && b <= 0x5a) b |= 0x20;
    keyScratch[i] = b;
  }
  return keyScratch.toString('latin1', 0, n);
}

/** A copy of `msg` with its question name's letters all upper or all lower case. */
export function respell(msg: Buffer, questionEnd: number, upper: boolean): Buffer {
  const out = Buffer.from(msg);
  for (let i = 12; i < questionEnd - 4; i++) {
    const b = out[i] ?? 0;
    if (upper && b >= 0x61 && b <= 0x7a) out[i] = b & ~0x20;
    else if (!upper && b >= 0x41 && b <= 0x5a) out[i] = b | 0x20;
  }
  return out;
}

export class ResponseCache<Extra> {
  private readonly map = new Map<string, CachedResponse<Extra>>();
  private gen = -1;
  private readonly capacity: number;
  /** Counters for tests and the bench. */
  hits = 0;
  misses = 0;

  /** `capacity` entries at most (then the cache starts over); 0 disables it. */
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.map.size;
  }

  /**
   * The response to `msg` from the cache, patched for it, or undefined (run the resolver):
   * not the common query shape, another generation, not cached, a case-bound entry spelled
   * otherwise, or too large for the query's transport and EDNS size.
   */
  lookup(msg: Buffer, proto: 'udp' | 'tcp', generation: number): CacheHit<Extra> | undefined {
    if (this.capacity === 0 || generation !== this.gen) return undefined;
    const q = quickScan(msg);
    if (!q) return undefined;
    const qEnd = q.questionEnd;
    const entry = this.map.get(questionKey(msg, qEnd));
    if (!entry || (entry.question && entry.question.compare(msg, 12, qEnd) !== 0)) {
      this.misses++;
      return undefined;
    }
    const wire = entry.wire;
    const opt = q.hasEdns ? 11 : 0;
    const limit = proto === 'udp' ? Math.min(q.udpSize, TCP_SIZE) : TCP_SIZE;
    if (wire.length + opt > limit) {
      this.misses++;
      return undefined;
    }
    const out = Buffer.allocUnsafe(wire.length + opt);
    wire.copy(out);
    out[0] = msg[0] ?? 0;
    out[1] = msg[1] ?? 0;
    // Echo RD and CD as the encoder does, and the client's spelling of the question.
    out[2] = ((out[2] ?? 0) & ~0x01) | ((msg[2] ?? 0) & 0x01);
    out[3] = ((out[3] ?? 0) & ~0x10) | ((msg[3] ?? 0) & 0x10);
    msg.copy(out, 12, 12, qEnd);
    if (q.hasEdns) {
      const o = wire.length;
      out[o] = 0;
      out.writeUInt16BE(TYPE.OPT, o + 1);
      out.writeUInt16BE(EDNS_UDP_SIZE, o + 3);
      out.writeUInt32BE(q.dnssecOk ? 0x8000 : 0, o + 5);
      out.writeUInt16BE(0, o + 9);
      out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
    }
    this.hits++;
    return { out, entry, qtype: q.qtype };
  }

  /**
   * Keeps `wire`, the resolver's response to `msg` (whose question ends at `questionEnd`
   * and which had an OPT when `hasEdns`), for `generation`. `caseBound`: the bytes after
   * the question depend on the question's spelling.
   */
  store(
    msg: Buffer,
    questionEnd: number,
    hasEdns: boolean,
    wire: Buffer,
    generation: number,
    caseBound: boolean,
    extra: Extra,
  ): void {
    if (this.capacity === 0) return;
    if (generation !== this.gen) {
      this.map.clear();
      this.gen = generation;
    }
    if (this.map.size >= this.capacity) this.map.clear();
    // Stored as if the query had no OPT (its 11 octets are last); hits append one when asked.
    const plain = Buffer.from(hasEdns ? wire.subarray(0, wire.length - 11) : wire);
    if (hasEdns) plain.writeUInt16BE(plain.readUInt16BE(10) - 1, 10);
    const question = caseBound ? Buffer.from(msg.subarray(12, questionEnd)) : undefined;
    this.map.set(questionKey(msg, questionEnd), { wire: plain, question, extra });
  }
}
