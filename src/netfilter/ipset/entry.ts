// Entry validation and canonical form for the ipset types kube-proxy uses, after kube-proxy's
// `Entry.Validate` (pkg/proxy/ipvs/ipset): the IP must be valid and of the set's family, the
// protocol tcp/udp/sctp, the port 0..65535 (bitmap:port: inside the set's range), the second
// IP (hash:ip,port,ip) valid, the net (hash:ip,port,net, hash:net) a valid CIDR. The
// canonical form is what the kernel prints back (`ipset save`): IPv6 compressed lower case,
// a full-length net without its prefix. Pure: returns the canonical value or a reason.

import { parseCIDRSloppy, parseIPSloppy, formatIP, type ParsedIP } from '../../util/ip.js';
import type { IpsetFamily, IpsetSet } from './model.js';

export type EntryCheck =
  { readonly ok: true; readonly value: string } | { readonly ok: false; readonly reason: string };

const PROTOCOLS = new Set(['tcp', 'udp', 'sctp']);

function fail(reason: string): EntryCheck {
  return { ok: false, reason };
}

function checkIP(text: string, family: IpsetFamily, what: string): string | EntryCheck {
  const ip: ParsedIP | undefined = parseIPSloppy(text);
  if (!ip) return fail(`${what} ${JSON.stringify(text)} is not a valid IP address`);
  if ((ip.family === 'IPv6') !== (family === 'inet6')) {
    return fail(`${what} ${text} does not match the set family ${family}`);
  }
  return formatIP(ip);
}

function checkNet(text: string, family: IpsetFamily): string | EntryCheck {
  if (!text.includes('/')) return checkIP(text, family, 'net');
  const cidr = parseCIDRSloppy(text);
  if (!cidr) return fail(`net ${JSON.stringify(text)} is not a valid CIDR`);
  const v6 = cidr.family === 'IPv6';
  if (v6 !== (family === 'inet6'))
    return fail(`net ${text} does not match the set family ${family}`);
  if (cidr.prefix === 0) return fail(`net ${text}: a zero prefix is not allowed`);
  const full = v6 ? 128 : 32;
  const base = formatIP({ family: cidr.family, value: cidr.base });
  return cidr.prefix === full ? base : `${base}/${String(cidr.prefix)}`;
}

function checkPort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
}

/** `proto:port` → canonical text or a failure. */
function checkProtoPort(text: string): string | EntryCheck {
  const colon = text.indexOf(':');
  if (colon < 0) return fail(`${JSON.stringify(text)} is not proto:port`);
  const proto = text.slice(0, colon).toLowerCase();
  if (!PROTOCOLS.has(proto))
    return fail(`protocol ${JSON.stringify(proto)} is not tcp, udp or sctp`);
  const port = checkPort(text.slice(colon + 1));
  if (port === undefined) return fail(`port ${JSON.stringify(text.slice(colon + 1))} is not valid`);
  return `${proto}:${String(port)}`;
}

function join(parts: readonly (string | EntryCheck)[]): EntryCheck {
  const out: string[] = [];
  for (const p of parts) {
    if (typeof p !== 'string') return p;
    out.push(p);
  }
  return { ok: true, value: out.join(',') };
}

/** Validates `value` against `set` (type, family, bitmap range) and canonicalizes it. */
export function checkEntry(
  set: Pick<IpsetSet, 'type' | 'family' | 'options'>,
  value: string,
): EntryCheck {
  const family = set.family ?? 'inet';
  const parts = value.split(',');
  const want = set.type.split(':')[1]?.split(',').length ?? 1;
  if (parts.length !== want) {
    return fail(
      `${JSON.stringify(value)} has ${String(parts.length)} parts; ${set.type} needs ${String(want)}`,
    );
  }
  const [a = '', b = '', c = ''] = parts;
  switch (set.type) {
    case 'hash:ip':
      return join([checkIP(a, family, 'IP')]);
    case 'hash:net':
      return join([checkNet(a, family)]);
    case 'hash:ip,port':
      return join([checkIP(a, family, 'IP'), checkProtoPort(b)]);
    case 'hash:ip,port,ip':
      return join([checkIP(a, family, 'IP'), checkProtoPort(b), checkIP(c, family, 'second IP')]);
    case 'hash:ip,port,net':
      return join([checkIP(a, family, 'IP'), checkProtoPort(b), checkNet(c, family)]);
    case 'bitmap:port':
      return checkBitmapPort(set, a);
  }
}

function checkBitmapPort(set: Pick<IpsetSet, 'options'>, text: string): EntryCheck {
  const port = checkPort(text);
  if (port === undefined) return fail(`port ${JSON.stringify(text)} is not valid`);
  const range = set.options.range ?? { from: 0, to: 65535 };
  if (port < range.from || port > range.to) {
    return fail(
      `port ${String(port)} is outside the set range ${String(range.from)}-${String(range.to)}`,
    );
  }
  return { ok: true, value: String(port) };
}
