// FakeUpstream: a scripted DNS server on loopback (UDP and TCP, one port) standing in for the
// recursive resolvers the forwarder talks to. It answers questions from a stub table (rcode,
// TC bit, answer records in presentation form), counts what it was asked, and can be told to
// stay silent (a black hole) to test timeouts. Unknown names get NXDOMAIN. Tests, the
// conformance suite and dry runs use it; it never listens beyond the address it is given.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { closeQuietly } from '../util/close.js';
import { RCODE, firstTcpMessage, tcpFrame } from './wire.js';

export interface StubRecord {
  readonly name: string;
  readonly type: string;
  readonly ttl: number | null;
  readonly data: string;
}

export interface Stub {
  readonly query: { readonly name: string; readonly type: string };
  readonly response: {
    readonly rcode: string;
    readonly tc?: boolean;
    readonly answer?: readonly StubRecord[];
  };
}

function toAnswer(r: StubRecord): dnsPacket.Answer {
  const name = r.name.replace(/\.$/, '');
  const ttl = r.ttl ?? 30;
  switch (r.type) {
    case 'A':
    case 'AAAA':
      return { name, type: r.type, ttl, data: r.data };
    case 'CNAME':
    case 'PTR':
    case 'NS':
      return { name, type: r.type, ttl, data: r.data.replace(/\.$/, '') };
    case 'TXT':
      return { name, type: 'TXT', ttl, data: [r.data.replace(/^"|"$/g, '')] };
    case 'SRV': {
      const [priority, weight, port, target] = r.data.split(/\s+/);
      return {
        name,
        type: 'SRV',
        ttl,
        data: {
          priority: Number(priority),
          weight: Number(weight),
          port: Number(port),
          target: (target ?? '').replace(/\.$/, ''),
        },
      };
    }
    default:
      throw new Error(`FakeUpstream: unsupported stub record type ${r.type}`);
  }
}

/** A stub's rcode for the 4-bit header field; SERVFAIL for a name that has none there. */
function headerRcode(name: string): number {
  const rcode = (RCODE as Partial<Record<string, number>>)[name];
  return rcode !== undefined && rcode < 16 ? rcode : RCODE.SERVFAIL;
}

export class FakeUpstream {
  private stubs: Stub[] = [];
  private udp: UdpSocket | undefined;
  private tcp: Server | undefined;
  private readonly conns = new Set<Socket>();
  /** Every question received, as `name TYPE` (lower-case name, no trailing dot). */
  readonly received: string[] = [];
  /** When true, queries are read and never answered. */
  silent = false;
  port = 0;

  setStubs(stubs: readonly Stub[]): void {
    this.stubs = [...stubs];
  }

  answer(msg: Buffer): Buffer | undefined {
    let q: dnsPacket.DecodedPacket;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      return undefined;
    }
    const question = q.questions?.[0];
    if (!question) return undefined;
    this.received.push(`${question.name.toLowerCase()} ${question.type}`);
    if (this.silent) return undefined;
    const stub = this.stubs.find(
      (s) =>
        s.query.name.replace(/\.$/, '').toLowerCase() === question.name.toLowerCase() &&
        s.query.type === question.type,
    );
    const rcode = headerRcode(stub?.response.rcode ?? 'NXDOMAIN');
    const flags =
      dnsPacket.RECURSION_DESIRED |
      dnsPacket.RECURSION_AVAILABLE |
      (stub?.response.tc ? dnsPacket.TRUNCATED_RESPONSE : 0) |
      rcode;
    return dnsPacket.encode({
      type: 'response',
      id: q.id ?? 0,
      flags,
      questions: [question],
      answers: (stub?.response.answer ?? []).map(toAnswer),
    });
  }

  async start(host = '127.0.0.1'): Promise<void> {
    const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, host, () => {
        resolve();
      });
    });
    this.port = udp.address().port;
    udp.on('message', (msg, rinfo) => {
      const out = this.answer(msg);
      if (out) udp.send(out, rinfo.port, rinfo.address);
    });
    this.udp = udp;
    const tcp = createServer((s) => {
      this.conns.add(s);
      s.on('close', () => this.conns.delete(s));
      s.on('error', () => s.destroy());
      let buf: Buffer = Buffer.alloc(0);
      s.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        for (let msg = firstTcpMessage(buf); msg; msg = firstTcpMessage(buf)) {
          buf = buf.subarray(2 + msg.length);
          const out = this.answer(msg);
          if (out) s.write(tcpFrame(out));
        }
      });
    });
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(this.port, host, () => {
        resolve();
      });
    });
    this.tcp = tcp;
  }

  async stop(): Promise<void> {
    for (const c of this.conns) c.destroy();
    const udp = this.udp;
    const tcp = this.tcp;
    await Promise.all([closeQuietly(udp), closeQuietly(tcp)]);
  }
}
