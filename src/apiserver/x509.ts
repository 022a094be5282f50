// A self-signed serving certificate for the API server, built in-process: a minimal DER
// (ASN.1) encoder for one X.509 v3 certificate (ECDSA P-256, CA:TRUE so it is its own trust
// anchor, serverAuth, subjectAltName with the addresses and names clients dial), signed with
// node:crypto. kubectl only sends bearer tokens over TLS, so the API server serves HTTPS and
// puts this certificate in the kubeconfig it writes.

import {
  X509Certificate,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
} from 'node:crypto';
import { realClock, type Clock } from '../util/clock.js';
import { parseIPSloppy } from '../util/ip.js';

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...c: Buffer[]): Buffer => tlv(0x30, ...c);
const set = (...c: Buffer[]): Buffer => tlv(0x31, ...c);

function oid(text: string): Buffer {
  const parts = text.split('.').map(Number);
  const out = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const stack = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128))
      stack.unshift((v & 0x7f) | 0x80);
    out.push(...stack);
  }
  return tlv(0x06, Buffer.from(out));
}

/**
 * A non-negative INTEGER from big-endian bytes, in DER's minimal form: redundant leading zero
 * bytes dropped (OpenSSL refuses the certificate otherwise), one 0x00 put back when the high
 * bit would make the value negative.
 */
function integer(b: Buffer): Buffer {
  let start = 0;
  while (start < b.length - 1 && b[start] === 0) start++;
  const v = b.length === 0 ? Buffer.from([0]) : b.subarray(start);
  return tlv(0x02, (v[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function utcTime(d: Date): Buffer {
  const p = (n: number): string => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

function ipBytes(ip: string): Buffer | undefined {
  const p = parseIPSloppy(ip);
  if (!p) return undefined;
  const n = p.family === 'IPv4' ? 4 : 16;
  const out = Buffer.alloc(n);
  let v = p.value;
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

export interface ServingCert {
  /** PEM certificate (also the CA clients trust). */
  readonly cert: string;
  /** PEM PKCS#8 private key. */
  readonly key: string;
}

/** Creates a self-signed serving certificate valid for `hosts` (IPs and DNS names). */
export function createServingCert(
  hosts: readonly string[],
  now = new Date(),
  serial: Buffer = randomBytes(16),
): ServingCert {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const ecdsaSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from('svcnet-apiserver', 'utf8')))));
  const notBefore = new Date(now.getTime() - 3600_000);
  const notAfter = new Date(now.getTime() + 10 * 365 * 86400_000);
  const san: Buffer[] = [];
  for (const h of new Set(hosts)) {
    const ip = ipBytes(h);
    san.push(ip ? tlv(0x87, ip) : tlv(0x82, Buffer.from(h, 'ascii')));
  }
  const extensions = tlv(
    0xa3,
    seq(
      extension('2.5.29.19', true, seq(tlv(0x01, Buffer.from([0xff])))),
      extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0x84]))),
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.17', false, seq(...san)),
    ),
  );
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaSha256,
    name,
    seq(utcTime(notBefore), utcTime(notAfter)),
    name,
    spki,
    extensions,
  );
  const signature = sign('sha256', tbs, privateKey);
  const der = seq(tbs, ecdsaSha256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const cert = new X509Certificate(der).toString();
  const key = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return { cert, key };
}

/** True when the PEM pair parses, has not expired (by `clock`) and covers every host. */
export function certCovers(
  pair: ServingCert,
  hosts: readonly string[],
  clock: Pick<Clock, 'now'> = realClock,
): boolean {
  try {
    const x = new X509Certificate(pair.cert);
    createPrivateKey(pair.key);
    if (Date.parse(x.validTo) < clock.now()) return false;
    return hosts.every((h) =>
      ipBytes(h) ? x.checkIP(h) !== undefined : x.checkHost(h) !== undefined,
    );
  } catch {
    return false;
  }
}
