// A minimal DNS client for loopback: builds a query with dns-packet and exchanges it over UDP
// or TCP with a server on 127.0.0.1. Used by the tests, the fuzz run and the benchmark's
// warm-up checks; not a stub resolver (see resolvconf.ts walkSearch for the search walk).

import { createSocket } from 'node:dgram';
import { createConnection } from 'node:net';
import * as dnsPacket from 'dns-packet';
import { firstTcpMessage, tcpFrame } from './wire.js';

/**
 * A query message (RD set; an EDNS0 OPT with that payload size when `edns` is given, with the
 * DO bit when `dnssecOk`).
 */
export function q(
  name: string,
  type: dnsPacket.RecordType = 'A',
  id = 7,
  edns?: number,
  dnssecOk = false,
): Buffer {
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
              flags: dnssecOk ? dnsPacket.DNSSEC_OK : 0,
              flag_do: dnssecOk,
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
      s.write(tcpFrame(msg));
    });
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const reply = firstTcpMessage(buf);
      if (reply) {
        s.destroy();
        resolve(reply);
      }
    });
    s.on('error', reject);
  });
}
