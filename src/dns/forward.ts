// The forwarder: names outside the cluster zones go to upstream servers (by default the
// nameservers of the resolv.conf of our own namespace, as CoreDNS's `forward . /etc/resolv.conf`),
// over the transport the client used, with a per-attempt timeout, failover across upstreams
// inside a total deadline, and a bounded number of queries in flight (REFUSED beyond it, as
// `max_concurrent`). An upstream that refuses (ICMP port unreachable on a connected socket)
// fails at once, so a dead upstream gives a quick SERVFAIL, never a hang. Answers go through
// the cache (cache.ts). Also resolves ExternalName targets for the resolver's `chase`.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { SvcnetError } from '../errors.js';
import { realClock, type Clock } from '../util/clock.js';
import { scanResponse, type DnsCache } from './cache.js';
import {
  RCODE,
  rcodeName,
  encodeError,
  firstTcpMessage,
  fqdn,
  lowerName,
  tcpFrame,
  typeName,
  udpLimit,
  type Edns,
  type ResourceRecord,
} from './wire.js';

export interface UpstreamAddress {
  readonly host: string;
  readonly port: number;
}

/** Parses `ADDR`, `ADDR:PORT` or `[V6]:PORT` (port 53 by default). */
export function parseUpstream(text: string): UpstreamAddress {
  const bad = (): never => {
    throw new SvcnetError(
      'INVALID_INPUT',
      `--upstream ${text}: expected ADDR[:PORT] or [IPv6]:PORT`,
    );
  };
  let host = text;
  let port = 53;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) {
    host = v6[1] ?? '';
    if (v6[2] !== undefined) port = Number(v6[2]);
  } else if (!isIPv6(text)) {
    const i = text.lastIndexOf(':');
    if (i >= 0) {
      host = text.slice(0, i);
      if (!/^\d+$/.test(text.slice(i + 1))) bad();
      port = Number(text.slice(i + 1));
    }
  }
  if (!/^[\d.]+$/.test(host) && !isIPv6(host)) bad();
  if (!Number.isInteger(port) || port < 1 || port > 65535) bad();
  return { host, port };
}

export interface ForwarderOptions {
  readonly upstreams: readonly UpstreamAddress[];
  /** Per upstream attempt (CoreDNS forward: 2 s read timeout). */
  readonly attemptTimeoutMs?: number;
  /** Whole query, across failovers. */
  readonly totalTimeoutMs?: number;
  readonly cache?: DnsCache;
  readonly maxConcurrent?: number;
  /** Called after each upstream exchange (metrics). */
  readonly onExchange?: (to: string, rcode: string, seconds: number) => void;
  /** Timers of the attempt timeouts and the total deadline; default the wall clock. */
  readonly clock?: Clock;
}

export interface ForwardedQuery {
  /** Lower-case question name. */
  readonly lname: string;
  readonly qtype: number;
  readonly qclass: number;
  readonly questionEnd: number;
  readonly edns: Edns | undefined;
}

interface Pending {
  resolve(msg: Buffer): void;
  reject(err: Error): void;
}

/** One connected UDP socket to one upstream, multiplexing queries by ID. */
class UdpChannel {
  private socket: UdpSocket | undefined;
  private ready: Promise<UdpSocket> | undefined;
  private readonly pending = new Map<number, Pending>();
  private readonly to: UpstreamAddress;
  private readonly clock: Clock;

  constructor(to: UpstreamAddress, clock: Clock) {
    this.to = to;
    this.clock = clock;
  }

  private open(): Promise<UdpSocket> {
    if (this.ready) return this.ready;
    const s = createSocket(isIPv6(this.to.host) ? 'udp6' : 'udp4');
    this.socket = s;
    s.on('message', (msg) => {
      if (msg.length < 12) return;
      const p = this.pending.get(msg.readUInt16BE(0));
      if (!p) return;
      this.pending.delete(msg.readUInt16BE(0));
      p.resolve(msg);
    });
    s.on('error', (err) => {
      // ECONNREFUSED from an ICMP port unreachable: fail everything in flight now.
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    });
    this.ready = new Promise<UdpSocket>((resolve, reject) => {
      s.once('error', reject);
      s.connect(this.to.port, this.to.host, () => {
        s.off('error', reject);
        resolve(s);
      });
    });
    this.ready.catch(() => {
      this.close();
    });
    return this.ready;
  }

  async exchange(query: Buffer, timeoutMs: number): Promise<Buffer> {
    const s = await this.open();
    let id = (Math.random() * 0x10000) | 0;
    for (let i = 0; i < 16 && this.pending.has(id); i++) id = (Math.random() * 0x10000) | 0;
    if (this.pending.has(id)) throw new SvcnetError('INTERNAL', 'no free query ID');
    const out = Buffer.from(query);
    out.writeUInt16BE(id, 0);
    return new Promise<Buffer>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(id);
        reject(new SvcnetError('TIMEOUT', `upstream ${this.to.host}:${this.to.port} timed out`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (m) => {
          this.clock.clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          this.clock.clearTimeout(timer);
          reject(e);
        },
      });
      s.send(out, (err) => {
        if (!err) return;
        const p = this.pending.get(id);
        this.pending.delete(id);
        p?.reject(err);
      });
    });
  }

  close(): void {
    for (const p of this.pending.values()) p.reject(new SvcnetError('INTERNAL', 'closed'));
    this.pending.clear();
    try {
      this.socket?.close();
    } catch {
      // already closed
    }
    this.socket = undefined;
    this.ready = undefined;
  }
}

function tcpExchange(
  to: UpstreamAddress,
  query: Buffer,
  timeoutMs: number,
  clock: Clock,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const sock = connect({ host: to.host, port: to.port });
    let buf = Buffer.alloc(0);
    const done = (err: Error | undefined, msg?: Buffer): void => {
      clock.clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else if (msg) resolve(msg);
    };
    const timer = clock.setTimeout(() => {
      done(new SvcnetError('TIMEOUT', `upstream ${to.host}:${to.port} (tcp) timed out`));
    }, timeoutMs);
    sock.on('error', (e) => {
      done(e);
    });
    sock.on('connect', () => {
      sock.write(tcpFrame(query));
    });
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const msg = firstTcpMessage(buf);
      if (msg) done(undefined, msg);
    });
    sock.on('end', () => {
      done(new SvcnetError('EXEC_FAILED', `upstream ${to.host}:${to.port} closed the connection`));
    });
  });
}

/** Forwards queries to upstreams, with cache, failover and a deadline. */
export class Forwarder {
  private readonly upstreams: readonly UpstreamAddress[];
  private readonly channels: UdpChannel[];
  private readonly attemptTimeoutMs: number;
  private readonly totalTimeoutMs: number;
  private readonly maxConcurrent: number;
  private inFlight = 0;
  private next = 0;
  /** Queries answered REFUSED because maxConcurrent was reached. */
  rejects = 0;
  private readonly opts: ForwarderOptions;
  private readonly clock: Clock;

  constructor(opts: ForwarderOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? realClock;
    this.upstreams = opts.upstreams;
    this.channels = opts.upstreams.map((u) => new UdpChannel(u, this.clock));
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 2000;
    this.totalTimeoutMs = opts.totalTimeoutMs ?? 5000;
    this.maxConcurrent = opts.maxConcurrent ?? 1000;
  }

  /** Sends a raw query to the upstreams in turn until one answers; throws when none did. */
  private async exchange(query: Buffer, tcp: boolean): Promise<Buffer> {
    if (this.upstreams.length === 0)
      throw new SvcnetError('NOT_FOUND', 'no upstream nameservers configured');
    const deadline = this.clock.now() + this.totalTimeoutMs;
    const start = this.next++ % this.upstreams.length;
    let lastErr: unknown;
    for (let i = 0; ; i++) {
      const left = deadline - this.clock.now();
      if (left <= 0 || i >= this.upstreams.length * 2) break;
      const k = (start + i) % this.upstreams.length;
      const to = this.upstreams[k];
      const channel = this.channels[k];
      if (!to || !channel) break;
      const t0 = process.hrtime.bigint();
      try {
        const timeout = Math.min(this.attemptTimeoutMs, left);
        const msg = tcp
          ? await tcpExchange(to, query, timeout, this.clock)
          : await channel.exchange(query, timeout);
        this.opts.onExchange?.(
          `${to.host}:${to.port}`,
          rcodeName((msg[3] ?? 0) & 0xf),
          Number(process.hrtime.bigint() - t0) / 1e9,
        );
        return msg;
      } catch (e) {
        lastErr = e;
      }
    }
    throw lastErr instanceof Error ? lastErr : new SvcnetError('TIMEOUT', 'all upstreams failed');
  }

  /**
   * Answers a client's query from the cache or the upstreams, with the client's ID. On
   * failure: SERVFAIL; over the concurrency limit: REFUSED.
   */
  async forward(query: Buffer, q: ForwardedQuery, proto: 'udp' | 'tcp'): Promise<Buffer> {
    const key = `${q.lname}|${q.qtype}|${q.qclass}|${q.edns ? (q.edns.dnssecOk ? 2 : 1) : 0}`;
    const limit = proto === 'udp' ? udpLimit(q.edns) : 65535;
    const hit = this.opts.cache?.get(key, query, q.questionEnd);
    if (hit && hit.length <= limit) return hit;
    if (this.inFlight >= this.maxConcurrent) {
      this.rejects++;
      return encodeError(query, q.questionEnd, RCODE.REFUSED, q.edns);
    }
    this.inFlight++;
    try {
      const msg = await this.exchange(query, proto === 'tcp');
      // As CoreDNS's cache: the first answer already carries the capped TTLs.
      if (this.opts.cache?.put(key, msg) !== undefined) {
        const capped = this.opts.cache.get(key, query, q.questionEnd, false);
        if (capped) return capped;
      }
      const out = Buffer.from(msg);
      out[0] = query[0] ?? 0;
      out[1] = query[1] ?? 0;
      return out;
    } catch {
      return encodeError(query, q.questionEnd, RCODE.SERVFAIL, q.edns);
    } finally {
      this.inFlight--;
    }
  }

  /**
   * Looks a name up upstream (ExternalName targets): the answer records and the TC bit, or
   * undefined when no upstream answered.
   */
  async lookup(
    name: string,
    type: number,
  ): Promise<{ answer: ResourceRecord[]; truncated: boolean } | undefined> {
    const query = dnsPacket.encode({
      type: 'query',
      id: 0,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name: name.replace(/\.$/, ''), type: typeName(type) as dnsPacket.RecordType }],
    });
    const questionEnd = scanResponse(query)?.questionEnd ?? query.length;
    let msg: Buffer | undefined = this.opts.cache?.get(
      `${lowerName(name)}|${type}|1|0`,
      query,
      questionEnd,
    );
    if (!msg) {
      try {
        msg = await this.exchange(query, false);
        this.opts.cache?.put(`${lowerName(name)}|${type}|1|0`, msg);
      } catch {
        return undefined;
      }
    }
    try {
      const decoded = dnsPacket.decode(msg);
      const answer: ResourceRecord[] = [];
      for (const a of decoded.answers ?? []) {
        const rr = fromPacketAnswer(a);
        if (rr) answer.push(rr);
      }
      return { answer, truncated: ((decoded.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0 };
    } catch {
      return undefined;
    }
  }

  close(): void {
    for (const c of this.channels) c.close();
  }
}

/** Converts a dns-packet answer to our record type (the kinds a CNAME chase can return). */
export function fromPacketAnswer(a: dnsPacket.Answer): ResourceRecord | undefined {
  const name = fqdn(a.name);
  const ttl = a.type === 'OPT' ? 0 : (a.ttl ?? 0);
  switch (a.type) {
    case 'A':
    case 'AAAA':
      return { name, type: a.type, ttl, address: a.data };
    case 'CNAME':
    case 'PTR':
    case 'NS':
      return { name, type: a.type, ttl, target: fqdn(a.data) };
    case 'SRV':
      return {
        name,
        type: 'SRV',
        ttl,
        priority: a.data.priority ?? 0,
        weight: a.data.weight ?? 0,
        port: a.data.port,
        target: fqdn(a.data.target),
      };
    case 'TXT': {
      const d = a.data;
      const list = Array.isArray(d) ? d : [d];
      return {
        name,
        type: 'TXT',
        ttl,
        text: list.map((x) => (typeof x === 'string' ? x : x.toString('latin1'))),
      };
    }
    default:
      return undefined;
  }
}
