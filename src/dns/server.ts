// The DNS server: UDP and TCP listeners (same port) in front of the resolver and the
// forwarder. The query path is synchronous for cluster names: a response cache keyed by the
// raw question bytes (so the client's case is part of the key) holds the encoded answers of
// the current index generation, and a hit only patches the ID and flags (and appends OPT).
// Misses run the pure resolver and the hand-written encoder. Malformed input gets FORMERR
// or is dropped, never an exception out of the handler. TCP: 2-byte framing, pipelined
// queries, idle timeout and a connection cap (RFC 7766); AXFR/IXFR over TCP when enabled.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server as TcpServer, type Socket } from 'node:net';
import type { Logger } from 'pino';
import * as dnsPacket from 'dns-packet';
import type { Forwarder } from './forward.js';
import type { RecordIndex, ZoneView } from './record-index.js';
import type { Combo, DnsMetrics } from './metrics.js';
import { matchZone, resolve, type Answer, type ResolverConfig } from './resolve.js';
import { zoneTransfer } from './transfer.js';
import {
  RCODE,
  TCP_SIZE,
  TYPE,
  encodeError,
  encodeResponse,
  lowerName,
  parseQuery,
  quickScan,
  EDNS_UDP_SIZE,
  typeName,
  udpLimit,
  type ParsedQuery,
  type ResourceRecord,
} from './wire.js';
import { closeQuietly } from '../util/close.js';

export type Proto = 'udp' | 'tcp';

const RCODE_NAMES: Record<number, string> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  16: 'BADVERS',
};

export interface DnsHandlerOptions {
  readonly index: ZoneView & Pick<RecordIndex, 'generation'>;
  readonly config: ResolverConfig;
  /** Whether the informers have synced (before that, would-be NXDOMAINs are SERVFAIL). */
  readonly isSynced: () => boolean;
  readonly forwarder?: Forwarder;
  readonly metrics?: DnsMetrics;
  readonly log?: Logger;
  /** Serve AXFR/IXFR over TCP (CoreDNS `transfer`); REFUSED otherwise. */
  readonly transfer?: boolean;
  /** Entries in the encoded-response cache (0 disables it). */
  readonly responseCacheSize?: number;
}

interface CachedResponse {
  readonly wire: Buffer;
  readonly zone: string;
  readonly rcode: string;
  /** Metric series per (proto, family), filled on first use. */
  readonly combos: (Combo | undefined)[];
}

/** Answers raw DNS messages; transport-agnostic (the servers below own the sockets). */
export class DnsHandler {
  private readonly cache = new Map<string, CachedResponse>();
  private cacheGeneration = -1;
  private readonly cacheSize: number;
  /** Queries that raised inside the handler (a bug); answered SERVFAIL. */
  internalErrors = 0;
  private readonly opts: DnsHandlerOptions;

  constructor(opts: DnsHandlerOptions) {
    this.opts = opts;
    this.cacheSize = opts.responseCacheSize ?? 100_000;
  }

  /**
   * One message in, zero or one message out (several for a TCP zone transfer). Returns a
   * Promise only when the answer needs an upstream.
   */
  handle(
    msg: Buffer,
    proto: Proto,
    family: '1' | '2' = '1',
  ): Buffer | Buffer[] | undefined | Promise<Buffer | undefined> {
    const t0 = this.opts.metrics ? performance.now() : 0;
    try {
      const fast = this.fromCache(msg, proto, family, t0);
      if (fast) return fast;
      return this.slow(msg, proto, family, t0);
    } catch (e) {
      this.internalErrors++;
      this.opts.log?.error({ err: e }, 'DNS handler failed');
      if (msg.length < 12) return undefined;
      return encodeError(msg, 12, RCODE.SERVFAIL);
    }
  }

  private observe(
    proto: Proto,
    family: '1' | '2',
    qtype: number,
    zone: string,
    rcode: string,
    plugin: string,
    t0: number,
    reqSize: number,
    respSize: number,
  ): void {
    this.opts.metrics?.observeQuery(
      proto,
      family,
      typeName(qtype),
      zone,
      rcode,
      plugin,
      (performance.now() - t0) / 1000,
      reqSize,
      respSize,
    );
  }

  private fromCache(msg: Buffer, proto: Proto, family: '1' | '2', t0: number): Buffer | undefined {
    if (this.cacheSize === 0) return undefined;
    if (this.cacheGeneration !== this.opts.index.generation) return undefined;
    const q = quickScan(msg);
    if (!q) return undefined;
    const hit = this.cache.get(msg.toString('latin1', 12, q.questionEnd));
    if (!hit) return undefined;
    const opt = q.hasEdns ? 11 : 0;
    const limit = proto === 'udp' ? Math.min(q.udpSize, TCP_SIZE) : TCP_SIZE;
    if (hit.wire.length + opt > limit) return undefined;
    const out = Buffer.allocUnsafe(hit.wire.length + opt);
    hit.wire.copy(out);
    out[0] = msg[0] ?? 0;
    out[1] = msg[1] ?? 0;
    // Echo RD and CD as the slow path does.
    out[2] = ((out[2] ?? 0) & ~0x01) | ((msg[2] ?? 0) & 0x01);
    out[3] = ((out[3] ?? 0) & ~0x10) | ((msg[3] ?? 0) & 0x10);
    if (q.hasEdns) {
      const o = hit.wire.length;
      out[o] = 0;
      out.writeUInt16BE(TYPE.OPT, o + 1);
      out.writeUInt16BE(EDNS_UDP_SIZE, o + 3);
      out.writeUInt32BE(q.dnssecOk ? 0x8000 : 0, o + 5);
      out.writeUInt16BE(0, o + 9);
      out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
    }
    const metrics = this.opts.metrics;
    if (metrics) {
      const slot = (proto === 'tcp' ? 2 : 0) + (family === '2' ? 1 : 0);
      let combo = hit.combos[slot];
      if (!combo) {
        combo = metrics.combo(proto, family, typeName(q.qtype), hit.zone, hit.rcode, 'kubernetes');
        hit.combos[slot] = combo;
      }
      metrics.record(combo, (performance.now() - t0) / 1000, msg.length, out.length);
    }
    return out;
  }

  private store(msg: Buffer, q: ParsedQuery, wire: Buffer, zone: string, rcode: string): void {
    if (this.cacheSize === 0 || !this.opts.isSynced()) return;
    if (this.cacheGeneration !== this.opts.index.generation) {
      this.cache.clear();
      this.cacheGeneration = this.opts.index.generation;
    }
    if (this.cache.size >= this.cacheSize) this.cache.clear();
    // Cache the response as if the query had no OPT; hits append one when needed.
    const plain = q.edns ? Buffer.from(wire.subarray(0, wire.length - 11)) : wire;
    if (q.edns) plain.writeUInt16BE(plain.readUInt16BE(10) - 1, 10);
    this.cache.set(msg.toString('latin1', 12, q.questionEnd), {
      wire: plain,
      zone,
      rcode,
      combos: [],
    });
  }

  private slow(
    msg: Buffer,
    proto: Proto,
    family: '1' | '2',
    t0: number,
  ): Buffer | Buffer[] | undefined | Promise<Buffer | undefined> {
    const parsed = parseQuery(msg);
    if (!parsed.ok) {
      if (parsed.drop) return undefined;
      const out = encodeError(msg, parsed.questionEnd, parsed.rcode);
      this.observe(
        proto,
        family,
        0,
        '.',
        RCODE_NAMES[parsed.rcode] ?? 'OTHER',
        '',
        t0,
        msg.length,
        out.length,
      );
      return out;
    }
    const q = parsed.query;
    const limit = proto === 'udp' ? udpLimit(q.edns) : TCP_SIZE;
    if (q.edns && q.edns.version > 0) {
      const out = encodeError(msg, q.questionEnd, RCODE.BADVERS, q.edns);
      this.observe(proto, family, q.qtype, '.', 'BADVERS', '', t0, msg.length, out.length);
      return out;
    }
    if ((q.qtype === TYPE.AXFR || q.qtype === TYPE.IXFR) && this.opts.transfer === true) {
      const zone = matchZone(this.opts.config.zones, lowerName(q.qname));
      if (proto === 'tcp' && zone !== undefined && lowerName(q.qname) === zone)
        return this.transfer(msg, q, zone, proto, family, t0);
    }
    const res = resolve(
      this.opts.index,
      this.opts.config,
      { name: q.qname, type: q.qtype },
      this.opts.isSynced(),
    );
    if (res.kind === 'answer') {
      const out = encodeResponse(msg, q, res, limit);
      const rcode = RCODE_NAMES[res.rcode] ?? 'OTHER';
      if ((out.readUInt16BE(2) & 0x0200) === 0 && res.rcode !== RCODE.SERVFAIL)
        this.store(msg, q, out, res.zone, rcode);
      this.observe(
        proto,
        family,
        q.qtype,
        res.zone,
        rcode,
        'kubernetes',
        t0,
        msg.length,
        out.length,
      );
      return out;
    }
    const forwarder = this.opts.forwarder;
    if (res.kind === 'chase') {
      if (!forwarder) return this.finish(msg, q, res.onFailure, limit, proto, family, t0);
      return forwarder.lookup(res.target, res.type).then((up) => {
        if (!up) return this.finish(msg, q, res.onFailure, limit, proto, family, t0);
        const answer: Answer = {
          kind: 'answer',
          rcode: RCODE.NOERROR,
          authoritative: true,
          truncated: up.truncated,
          answer: [...res.prefix, ...up.answer],
          authority: [],
          additional: [],
          zone: res.zone,
        };
        return this.finish(msg, q, answer, limit, proto, family, t0);
      });
    }
    if (!forwarder) {
      const out = encodeError(msg, q.questionEnd, RCODE.REFUSED, q.edns);
      this.observe(proto, family, q.qtype, '.', 'REFUSED', '', t0, msg.length, out.length);
      return out;
    }
    return forwarder
      .forward(
        msg,
        {
          lname: lowerName(q.qname),
          qtype: q.qtype,
          qclass: q.qclass,
          questionEnd: q.questionEnd,
          edns: q.edns,
        },
        proto,
      )
      .then((out) => {
        this.observe(
          proto,
          family,
          q.qtype,
          '.',
          RCODE_NAMES[(out[3] ?? 0) & 0xf] ?? 'OTHER',
          'forward',
          t0,
          msg.length,
          out.length,
        );
        return out;
      });
  }

  private finish(
    msg: Buffer,
    q: ParsedQuery,
    a: Answer,
    limit: number,
    proto: Proto,
    family: '1' | '2',
    t0: number,
  ): Buffer {
    const out = encodeResponse(msg, q, a, limit);
    this.observe(
      proto,
      family,
      q.qtype,
      a.zone,
      RCODE_NAMES[a.rcode] ?? 'OTHER',
      'kubernetes',
      t0,
      msg.length,
      out.length,
    );
    return out;
  }

  private transfer(
    msg: Buffer,
    q: ParsedQuery,
    zone: string,
    proto: Proto,
    family: '1' | '2',
    t0: number,
  ): Buffer[] {
    let serial: number | undefined;
    if (q.qtype === TYPE.IXFR) {
      try {
        const d = dnsPacket.decode(msg);
        const soa = d.authorities?.find((a) => a.type === 'SOA');
        if (soa?.type === 'SOA') serial = soa.data.serial;
      } catch {
        serial = undefined;
      }
    }
    const records = zoneTransfer(this.opts.index, this.opts.config, zone, serial);
    // Split into messages of at most 1000 records; each fits the 64 KiB TCP frame.
    const out: Buffer[] = [];
    for (let i = 0; i < records.length; i += 1000) {
      const chunk: ResourceRecord[] = records.slice(i, i + 1000);
      out.push(
        encodeResponse(
          msg,
          q,
          {
            rcode: RCODE.NOERROR,
            authoritative: true,
            answer: chunk,
            authority: [],
            additional: [],
          },
          TCP_SIZE,
        ),
      );
    }
    this.observe(
      proto,
      family,
      q.qtype,
      zone,
      'NOERROR',
      'kubernetes',
      t0,
      msg.length,
      out.reduce((n, b) => n + b.length, 0),
    );
    return out;
  }
}

export interface ListenOptions {
  readonly host: string;
  /** 0 picks a free port (the same one for UDP and TCP). */
  readonly port: number;
  /** A TCP connection with no message under way is closed after this long (CoreDNS: 10 s). */
  readonly tcpIdleTimeoutMs?: number;
  /**
   * A TCP message must arrive whole within this long of its first byte; the deadline is not
   * moved by further bytes (CoreDNS's read timeout, 3 s), so a client dripping bytes is cut.
   */
  readonly tcpReadTimeoutMs?: number;
  /** At the cap, the connection longest without a complete message is closed for a new one. */
  readonly maxTcpConnections?: number;
}

/** Defaults of CoreDNS's `timeouts` plugin for TCP. */
const TCP_IDLE_TIMEOUT_MS = 10_000;
const TCP_READ_TIMEOUT_MS = 3_000;

/** UDP + TCP listeners on one address and port. */
export class DnsServer {
  private udp: UdpSocket | undefined;
  private tcp: TcpServer | undefined;
  /** Open TCP connections, longest without a complete message first (Map insertion order). */
  private readonly conns = new Map<Socket, true>();
  /** TCP connections closed to make room for new ones, since start. */
  tcpShed = 0;
  private boundPort = 0;
  private readonly handler: DnsHandler;
  private readonly opts: ListenOptions;
  private readonly log: Logger | undefined;

  constructor(handler: DnsHandler, opts: ListenOptions, log?: Logger) {
    this.handler = handler;
    this.opts = opts;
    this.log = log;
  }

  /** The bound port (after listen). */
  get port(): number {
    return this.boundPort;
  }

  async listen(): Promise<void> {
    const family = this.opts.host.includes(':') ? 'udp6' : 'udp4';
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket({ type: family, recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(this.opts.port, this.opts.host, () => {
          udp.off('error', reject);
          resolve();
        });
      });
      const port = udp.address().port;
      const tcp = createServer((s) => {
        this.onConnection(s);
      });
      try {
        await new Promise<void>((resolve, reject) => {
          tcp.once('error', reject);
          tcp.listen(port, this.opts.host, () => {
            tcp.off('error', reject);
            resolve();
          });
        });
      } catch (e) {
        udp.close();
        // Port 0: the TCP side of the UDP port we got is taken; try another one.
        if (this.opts.port === 0 && attempt < 10) continue;
        throw e;
      }
      this.udp = udp;
      this.tcp = tcp;
      this.boundPort = port;
      break;
    }
    const udp = this.udp;
    const fam = family === 'udp6' ? '2' : '1';
    udp.on('message', (msg, rinfo) => {
      const res = this.handler.handle(msg, 'udp', fam);
      if (res === undefined) return;
      if (res instanceof Promise) {
        res.then(
          (out) => {
            if (out) udp.send(out, rinfo.port, rinfo.address);
          },
          (e: unknown) => this.log?.error({ err: e }, 'DNS query failed'),
        );
        return;
      }
      const out = Array.isArray(res) ? res[0] : res;
      if (out) udp.send(out, rinfo.port, rinfo.address);
    });
    udp.on('error', (e) => this.log?.error({ err: e }, 'DNS UDP socket error'));
  }

  private onConnection(s: Socket): void {
    const max = this.opts.maxTcpConnections ?? 1000;
    if (this.conns.size >= max) {
      // Shed the connection that has gone longest without a complete message (a slow or
      // idle client), not the new one: a client that asks promptly is always served.
      for (const victim of this.conns.keys()) {
        this.conns.delete(victim);
        victim.destroy();
        this.tcpShed++;
        break;
      }
    }
    this.conns.set(s, true);
    s.setNoDelay(true);
    s.on('close', () => this.conns.delete(s));
    s.on('error', () => s.destroy());
    const idleMs = this.opts.tcpIdleTimeoutMs ?? TCP_IDLE_TIMEOUT_MS;
    const readMs = this.opts.tcpReadTimeoutMs ?? TCP_READ_TIMEOUT_MS;
    // One timer: the idle timeout while no message is under way, else the deadline of the
    // message under way (armed at its first byte, never moved by later bytes).
    let timer: NodeJS.Timeout | undefined;
    let midMessage = false;
    const arm = (ms: number): void => {
      clearTimeout(timer);
      timer = setTimeout(() => s.destroy(), ms);
      timer.unref();
    };
    arm(idleMs);
    s.on('close', () => {
      clearTimeout(timer);
    });
    let buf: Buffer = Buffer.alloc(0);
    const fam = s.remoteFamily === 'IPv6' ? '2' : '1';
    const send = (out: Buffer): void => {
      if (s.destroyed) return;
      const len = Buffer.allocUnsafe(2);
      len.writeUInt16BE(out.length, 0);
      s.write(Buffer.concat([len, out]));
    };
    s.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (!midMessage) {
        midMessage = true;
        arm(readMs);
      }
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = Buffer.from(buf.subarray(2, 2 + len));
        buf = buf.subarray(2 + len);
        if (len < 12) {
          s.destroy();
          return;
        }
        // A complete message: this connection moves to the back of the shedding order, and
        // the next message (if bytes of it are here already) gets a deadline of its own.
        this.conns.delete(s);
        this.conns.set(s, true);
        midMessage = buf.length > 0;
        arm(midMessage ? readMs : idleMs);
        const res = this.handler.handle(msg, 'tcp', fam);
        if (res === undefined) continue;
        if (res instanceof Promise) {
          res.then(
            (out) => {
              if (out) send(out);
            },
            (e: unknown) => this.log?.error({ err: e }, 'DNS query failed'),
          );
        } else if (Array.isArray(res)) {
          for (const out of res) send(out);
        } else {
          send(res);
        }
      }
    });
  }

  async close(): Promise<void> {
    for (const s of this.conns.keys()) s.destroy();
    const udp = this.udp;
    const tcp = this.tcp;
    this.udp = undefined;
    this.tcp = undefined;
    await Promise.all([closeQuietly(udp), closeQuietly(tcp)]);
  }
}
