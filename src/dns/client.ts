// A minimal DNS client for loopback: builds a query with dns-packet and exchanges it over UDP
// or TCP with a server on 127.0.0.1. Used by the tests, the fuzz run and the benchmark's
// warm-up checks; not a stub resolver (see resolvconf.ts walkSearch for the search walk).

import { createSocket } from 'node:dgram';
import { createConnection } from 'node:net';
import * as dnsPacket from 'dns-packet';

/** A query message (RD set; an EDNS0 OPT with that payload size when `edns` is given). */
export function q(name: string, type: dnsPacket.RecordType = 'A', id = 7, edns?: number): Buffer {
  return dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name, type }],
    ...(edns !== undefined
      ? {
          additionals: [
            {
              name: '.',
              type: 'OPT',
              udpPayloadSize: edns,
              extendedRcode: 0,
              ednsVersion: 0,
              flags: 0,
              flag_do: false,
              options: [],
            },
          ],
        }
      : {}),
  });
}

/** Sends one message over UDP to 127.0.0.1:port; undefined on timeout. */
export function udp(port: number, msg: Buffer, timeoutMs = 2000): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    const t = setTimeout(() => {
      s.close();
      resolve(undefined);
    }, timeoutMs);
    s.on('message', (m) => {
      clearTimeout(t);
      s.close();
      resolve(m);
    });
    s.send(msg, port, '127.0.0.1');
  });
}

/** Sends one message over TCP (2-byte framing) to 127.0.0.1:port and reads one reply. */
export function tcp(port: number, msg: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port });
    let buf: Buffer = Buffer.alloc(0);
    s.on('connect', () => {
      const pre = Buffer.alloc(2);
      pre.writeUInt16BE(msg.length, 0);
      s.write(Buffer.concat([pre, msg]));
    });
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        s.destroy();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    s.on('error', reject);
  });
}
