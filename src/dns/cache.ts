// The answer cache of the forwarding path, with CoreDNS `cache 30` semantics: positive
// answers kept for their smallest TTL and negative ones (NXDOMAIN, NODATA) for the SOA's
// negative TTL (RFC 2308), each clamped to [minTtl, maxTtl] (5 s..30 s by default), at most
// `capacity` entries per kind with the oldest evicted. Entries are upstream wire messages; a
// hit copies one, patches the ID, the client's spelling of the question and the TTLs
// (decremented by the time spent in the cache). Only for names we forward: the cluster zone
// is answered from the index and never cached here (kubeadm's `disable success/denial`).
// Pure apart from the injected clock.

import { realClock, type Clock } from '../util/clock.js';
import { TYPE } from './wire.js';

export interface CacheOptions {
  readonly capacity?: number;
  /** Upper bound on positive TTLs (`cache 30`: 30 s; CoreDNS's own default 3600). */
  readonly maxTtl?: number;
  /** Upper bound on negative TTLs (`cache 30`: 30 s). */
  readonly maxDenialTtl?: number;
  /** Lower bound on every TTL (CoreDNS: 5 s). */
  readonly minTtl?: number;
  /** Time for TTL expiry and aging; default the wall clock. */
  readonly clock?: Clock;
}

interface Entry {
  readonly wire: Buffer;
  readonly ttlOffsets: readonly number[];
  readonly ttls: readonly number[];
  readonly storedAt: number;
  readonly expires: number;
}

export type CacheKind = 'success' | 'denial';

export interface CacheStats {
  hits: number;
  misses: number;
  evictions: number;
}

function skipName(buf: Buffer, off: number): number {
  for (let guard = 0; guard < 128; guard++) {
    if (off >= buf.length) return -1;
    const len = buf[off] ?? 0;
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2;
    off += len + 1;
  }
  return -1;
}

interface Scan {
  rcode: number;
  answers: number;
  ttlOffsets: number[];
  ttls: number[];
  /** Negative TTL from the SOA in the authority section: min(SOA TTL, SOA minimum). */
  soaTtl: number | undefined;
  questionEnd: number;
}

/** Walks a response's records; undefined when it is malformed. */
export function scanResponse(buf: Buffer): Scan | undefined {
  if (buf.length < 12) return undefined;
  const qd = buf.readUInt16BE(4);
  const an = buf.readUInt16BE(6);
  const ns = buf.readUInt16BE(8);
  const ar = buf.readUInt16BE(10);
  let off = 12;
  for (let i = 0; i < qd; i++) {
    off = skipName(buf, off);
    if (off < 0 || off + 4 > buf.length) return undefined;
    off += 4;
  }
  const questionEnd = off;
  const ttlOffsets: number[] = [];
  const ttls: number[] = [];
  let soaTtl: number | undefined;
  for (let i = 0; i < an + ns + ar; i++) {
    off = skipName(buf, off);
    if (off < 0 || off + 10 > buf.length) return undefined;
    const type = buf.readUInt16BE(off);
    const ttl = buf.readUInt32BE(off + 4);
    const rdlen = buf.readUInt16BE(off + 8);
    if (off + 10 + rdlen > buf.length) return undefined;
    if (type !== TYPE.OPT) {
      ttlOffsets.push(off + 4);
      ttls.push(ttl);
    }
    if (type === TYPE.SOA && i >= an && i < an + ns) {
      let r = skipName(buf, off + 10);
      if (r > 0) r = skipName(buf, r);
      if (r > 0 && r + 20 <= buf.length) {
        const minimum = buf.readUInt32BE(r + 16);
        soaTtl = Math.min(ttl, minimum);
      }
    }
    off += 10 + rdlen;
  }
  return { rcode: (buf[3] ?? 0) & 0xf, answers: an, ttlOffsets, ttls, soaTtl, questionEnd };
}

/** A cache of upstream responses keyed by lower-case name, type, class and EDNS/DO bits. */
export class DnsCache {
  private readonly success = new Map<string, Entry>();
  private readonly denial = new Map<string, Entry>();
  private readonly capacity: number;
  private readonly maxTtl: number;
  private readonly maxDenialTtl: number;
  private readonly minTtl: number;
  private readonly clock: Clock;
  readonly stats: Record<CacheKind, CacheStats> = {
    success: { hits: 0, misses: 0, evictions: 0 },
    denial: { hits: 0, misses: 0, evictions: 0 },
  };

  constructor(opts: CacheOptions = {}) {
    this.capacity = opts.capacity ?? 9984;
    this.maxTtl = opts.maxTtl ?? 30;
    this.maxDenialTtl = opts.maxDenialTtl ?? this.maxTtl;
    this.minTtl = opts.minTtl ?? 5;
    this.clock = opts.clock ?? realClock;
  }

  size(kind: CacheKind): number {
    return kind === 'success' ? this.success.size : this.denial.size;
  }

  /**
   * Stores a response (when it is cacheable: NOERROR or NXDOMAIN, not truncated). Returns
   * the kind it was stored as, or undefined.
   */
  put(key: string, wire: Buffer): CacheKind | undefined {
    const scan = scanResponse(wire);
    if (!scan) return undefined;
    const flags = wire.readUInt16BE(2);
    if ((flags & 0x0200) !== 0) return undefined;
    const rcode = flags & 0xf;
    let kind: CacheKind;
    let ttl: number;
    if (rcode === 0 && scan.answers > 0) {
      kind = 'success';
      const answerTtls = scan.ttls.slice(0, scan.answers);
      ttl = Math.min(Math.min(...answerTtls), this.maxTtl);
    } else if (rcode === 0 || rcode === 3) {
      kind = 'denial';
      ttl = Math.min(scan.soaTtl ?? this.minTtl, this.maxDenialTtl);
    } else {
      return undefined;
    }
    ttl = Math.max(ttl, this.minTtl);
    const map = kind === 'success' ? this.success : this.denial;
    map.delete(key);
    if (map.size >= this.capacity) {
      const oldest = map.keys().next();
      if (!oldest.done) {
        map.delete(oldest.value);
        this.stats[kind].evictions++;
      }
    }
    const now = this.clock.now();
    map.set(key, {
      wire: Buffer.from(wire),
      ttlOffsets: scan.ttlOffsets,
      ttls: scan.ttls.map((t) => Math.min(t, ttl)),
      storedAt: now,
      expires: now + ttl * 1000,
    });
    return kind;
  }

  /**
   * A cached response for `query` (raw client query; its ID and question bytes are patched
   * in), or undefined. `questionEnd` is where the client's question ends.
   */
  get(key: string, query: Buffer, questionEnd: number, count = true): Buffer | undefined {
    const now = this.clock.now();
    for (const kind of ['success', 'denial'] as const) {
      const map = kind === 'success' ? this.success : this.denial;
      const e = map.get(key);
      if (!e) continue;
      if (now >= e.expires) {
        map.delete(key);
        continue;
      }
      if (count) this.stats[kind].hits++;
      const out = Buffer.from(e.wire);
      out[0] = query[0] ?? 0;
      out[1] = query[1] ?? 0;
      if (questionEnd <= out.length) query.copy(out, 12, 12, questionEnd);
      const elapsed = Math.floor((now - e.storedAt) / 1000);
      for (let i = 0; i < e.ttlOffsets.length; i++)
        out.writeUInt32BE(Math.max(0, (e.ttls[i] ?? 0) - elapsed), e.ttlOffsets[i] ?? 0);
      return out;
    }
    if (count) this.stats.success.misses++;
    return undefined;
  }
}
