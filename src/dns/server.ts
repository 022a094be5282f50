// The DNS server: UDP and TCP listeners (same port) in front of the resolver and the
// forwarder. The query path is synchronous for cluster names: a response cache keyed by the
// question with the name lowercased (response-cache.ts) holds the encoded answers of the
// current index generation, and a hit only patches the ID, flags and the question's spelling
// (and appends OPT).
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
import { respell, ResponseCache } from './response-cache.js';
import { zoneTransfer } from './transfer.js';
import {
  RCODE,
  TCP_SIZE,
  TYPE,
  encodeError,
  encodeResponse,
  lowerName,
  parseQuery,
  rcodeName,
  tcpFrame,
  typeName,
  udpLimit,
  type ParsedQuery,
  type ResourceRecord,
} from './wire.js';
import { closeQuietly } from '../util/close.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';

export type Proto = 'udp' | 'tcp';

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

/** What a cached response keeps for the metrics of its hits. */
interface CacheExtra {
  readonly zone: string;
  readonly rcode: string;
  /** Metric series per (proto, family), filled on first use. */
  readonly combos: (Combo | undefined)[];
}

/** One message being answered, and what its metrics need. */
interface Exchange {
  readonly msg: Buffer;
  readonly proto: Proto;
  readonly family: '1' | '2';
  /** performance.now() at arrival (0 without metrics). */
  readonly t0: number;
}

/** A query that parsed, as the stages of the chain see it. */
interface Query extends Exchange {
  readonly q: ParsedQuery;
  /** Largest response for this query and transport. */
  readonly limit: number;
}

/** A stage's response, with what the metrics record of it. */
interface Reply<Out extends Buffer | Buffer[] = Buffer | Buffer[]> {
  readonly out: Out;
  readonly zone: string;
  readonly rcode: number;
  /** The part that answered: kubernetes, forward, or '' for errors before either. */
  readonly plugin: string;
}

/** A link of the chain: a response, one to come from upstream, or undefined to pass it on. */
type Stage = (query: Query) => Reply | Promise<Reply<Buffer>> | undefined;

/**
 * Answers raw DNS messages; transport-agnostic (the servers below own the sockets). A query
 * that parses runs down a chain of stages (badvers, transfer when enabled, kubernetes,
 * forward), each answering or passing it on; metrics are recorded once, around the chain,
 * as CoreDNS's metrics plugin wraps the rest in a Recorder.
 */
export class DnsHandler {
  private readonly cache: ResponseCache<CacheExtra>;
  /** Queries that raised inside the handler (a bug); answered SERVFAIL. */
  internalErrors = 0;
  private readonly opts: DnsHandlerOptions;
  private readonly stages: readonly Stage[];

  constructor(opts: DnsHandlerOptions) {
    this.opts = opts;
    this.cache = new ResponseCache(opts.responseCacheSize ?? 100_000);
    const forwarder = opts.forwarder;
    this.stages = [
      (query) => this.badvers(query),
      ...(opts.transfer === true ? [(query: Query) => this.transfer(query)] : []),
      (query) => this.kubernetes(query),
      forwarder ? (query) => this.forward(query, forwarder) : (query) => this.refuse(query),
    ];
  }

  /** Hits and misses of the encoded-response cache, and its entries (tests, the bench). */
  responseCacheStats(): { hits: number; misses: number; size: number } {
    return { hits: this.cache.hits, misses: this.cache.misses, size: this.cache.size };
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
      const ex: Exchange = { msg, proto, family, t0 };
      const parsed = parseQuery(msg);
      if (!parsed.ok) {
        if (parsed.drop) return undefined;
        const out = encodeError(msg, parsed.questionEnd, parsed.rcode);
        return this.record(ex, 0, { out, zone: '.', rcode: parsed.rcode, plugin: '' });
      }
      const q = parsed.query;
      const query: Query = { ...ex, q, limit: proto === 'udp' ? udpLimit(q.edns) : TCP_SIZE };
      for (const stage of this.stages) {
        const reply = stage(query);
        if (reply === undefined) continue;
        if (reply instanceof Promise) return reply.then((r) => this.record(ex, q.qtype, r));
        return this.record(ex, q.qtype, reply);
      }
      return undefined;
    } catch (e) {
      this.internalErrors++;
      this.opts.log?.error({ err: e }, 'DNS handler failed');
      if (msg.length < 12) return undefined;
      return encodeError(msg, 12, RCODE.SERVFAIL);
    }
  }

  /** The metrics of one reply (the Recorder), then the reply's message(s). */
  private record<Out extends Buffer | Buffer[]>(
    { msg, proto, family, t0 }: Exchange,
    qtype: number,
    reply: Reply<Out>,
  ): Out {
    const out = reply.out;
    this.opts.metrics?.observe({
      proto,
      family,
      type: typeName(qtype),
      zone: reply.zone,
      rcode: rcodeName(reply.rcode),
      plugin: reply.plugin,
      seconds: (performance.now() - t0) / 1000,
      requestSize: msg.length,
      responseSize: Array.isArray(out) ? out.reduce((n, b) => n + b.length, 0) : out.length,
    });
    return out;
  }

  private fromCache(msg: Buffer, proto: Proto, family: '1' | '2', t0: number): Buffer | undefined {
    const hit = this.cache.lookup(msg, proto, this.opts.index.generation);
    if (!hit) return undefined;
    const metrics = this.opts.metrics;
    if (metrics) {
      const combos = hit.entry.extra.combos;
      const slot = (proto === 'tcp' ? 2 : 0) + (family === '2' ? 1 : 0);
      let combo = combos[slot];
      if (!combo) {
        combo = metrics.combo({
          proto,
          family,
          type: typeName(hit.qtype),
          zone: hit.entry.extra.zone,
          rcode: hit.entry.extra.rcode,
          plugin: 'kubernetes',
        });
        combos[slot] = combo;
      }
      metrics.record(combo, (performance.now() - t0) / 1000, msg.length, hit.out.length);
    }
    return hit.out;
  }

  /**
   * Keeps a cluster answer for repeated questions. The entry serves every spelling of the
   * name when the answers to the all-lower and all-upper spellings agree after the question
   * (the query's case then only shows through pointers into it), else only this spelling.
   */
  private store(query: Query, a: Answer, wire: Buffer): void {
    if (!this.opts.isSynced()) return;
    const { msg, q, limit } = query;
    const generation = this.opts.index.generation;
    const tail = (spelled: Buffer): Buffer | undefined => {
      const parsed = parseQuery(spelled);
      if (!parsed.ok) return undefined;
      const res = resolve(
        this.opts.index,
        this.opts.config,
        { name: parsed.query.qname, type: parsed.query.qtype },
        true,
      );
      if (res.kind !== 'answer') return undefined;
      return encodeResponse(spelled, parsed.query, res, limit).subarray(q.questionEnd);
    };
    const lower = tail(respell(msg, q.questionEnd, false));
    const upper = lower && tail(respell(msg, q.questionEnd, true));
    const caseBound = !lower || !upper || !lower.equals(upper);
    this.cache.store(msg, q.questionEnd, q.edns !== undefined, wire, generation, caseBound, {
      zone: a.zone,
      rcode: rcodeName(a.rcode),
      combos: [],
    });
  }

  /** EDNS versions above 0 get BADVERS (RFC 6891 §6.1.3). */
  private badvers({ msg, q }: Query): Reply | undefined {
    if (!q.edns || q.edns.version === 0) return undefined;
    const out = encodeError(msg, q.questionEnd, RCODE.BADVERS, q.edns);
    return { out, zone: '.', rcode: RCODE.BADVERS, plugin: '' };
  }

  /** AXFR/IXFR of a zone apex over TCP (CoreDNS `transfer`); otherwise passed on. */
  private transfer({ msg, q, proto }: Query): Reply | undefined {
    if (q.qtype !== TYPE.AXFR && q.qtype !== TYPE.IXFR) return undefined;
    const zone = matchZone(this.opts.config.zones, lowerName(q.qname));
    if (proto !== 'tcp' || zone === undefined || lowerName(q.qname) !== zone) return undefined;
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
    return { out, zone, rcode: RCODE.NOERROR, plugin: 'kubernetes' };
  }

  /** The cluster zones (resolve.ts); names outside them are passed on. */
  private kubernetes(query: Query): Reply | Promise<Reply<Buffer>> | undefined {
    const { q } = query;
    const res = resolve(
      this.opts.index,
      this.opts.config,
      { name: q.qname, type: q.qtype },
      this.opts.isSynced(),
    );
    if (res.kind === 'forward') return undefined;
    if (res.kind === 'answer') {
      const reply = this.answer(query, res);
      if ((reply.out.readUInt16BE(2) & 0x0200) === 0 && res.rcode !== RCODE.SERVFAIL)
        this.store(query, res, reply.out);
      return reply;
    }
    // A CNAME out of the zone: its target is looked up upstream (NODATA without one).
    const forwarder = this.opts.forwarder;
    if (!forwarder) return this.answer(query, res.onFailure);
    return forwarder.lookup(res.target, res.type).then((up) => {
      if (!up) return this.answer(query, res.onFailure);
      return this.answer(query, {
        kind: 'answer',
        rcode: RCODE.NOERROR,
        authoritative: true,
        truncated: up.truncated,
        answer: [...res.prefix, ...up.answer],
        authority: [],
        additional: [],
        zone: res.zone,
      });
    });
  }

  private answer({ msg, q, limit }: Query, a: Answer): Reply<Buffer> {
    const out = encodeResponse(msg, q, a, limit);
    return { out, zone: a.zone, rcode: a.rcode, plugin: 'kubernetes' };
  }

  /** Everything else goes upstream (CoreDNS `forward`). */
  private async forward({ msg, q, proto }: Query, forwarder: Forwarder): Promise<Reply<Buffer>> {
    const out = await forwarder.forward(
      msg,
      {
        lname: lowerName(q.qname),
        qtype: q.qtype,
        qclass: q.qclass,
        questionEnd: q.questionEnd,
        edns: q.edns,
      },
      proto,
    );
    return { out, zone: '.', rcode: (out[3] ?? 0) & 0xf, plugin: 'forward' };
  }

  /** No forwarder: names outside the cluster zones are REFUSED. */
  private refuse({ msg, q }: Query): Reply {
    const out = encodeError(msg, q.questionEnd, RCODE.REFUSED, q.edns);
    return { out, zone: '.', rcode: RCODE.REFUSED, plugin: '' };
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
  /** Timers of the TCP timeouts; default the wall clock. */
  readonly clock?: Clock;
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
  /** Messages received (UDP datagrams and TCP messages), since start. */
  received = 0;
  private boundPort = 0;
  private handler: DnsHandler;
  private readonly opts: ListenOptions;
  private readonly log: Logger | undefined;

  constructor(handler: DnsHandler, opts: ListenOptions, log?: Logger) {
    this.handler = handler;
    this.opts = opts;
    this.log = log;
  }

  /**
   * Answers every message that arrives from now on with `handler` (a reload); answers
   * already under way finish with the one they started with, so nothing is dropped.
   */
  setHandler(handler: DnsHandler): void {
    this.handler = handler;
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
      this.received++;
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
    const clock = this.opts.clock ?? realClock;
    let timer: TimerHandle | undefined;
    let midMessage = false;
    const arm = (ms: number): void => {
      clock.clearTimeout(timer);
      timer = clock.setTimeout(() => s.destroy(), ms);
    };
    arm(idleMs);
    s.on('close', () => {
      clock.clearTimeout(timer);
    });
    let buf: Buffer = Buffer.alloc(0);
    const fam = s.remoteFamily === 'IPv6' ? '2' : '1';
    const send = (out: Buffer): void => {
      if (!s.destroyed) s.write(tcpFrame(out));
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
        this.received++;
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
