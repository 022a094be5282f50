// Parsers for the values inside iptables match and target options, as the tracer needs them:
// address specs (`ADDR[/PREFIX|/MASK][,...]`), port ranges and lists, mark values/masks,
// DNAT/SNAT addresses, interface patterns and address types. They return undefined on a
// value they cannot read; the per-kind evaluators turn that into an "unsupported" reason.
// Pure.

import { maskOf, parseCIDR, parseIP, type ParsedCIDR, type ParsedIP } from '../util/ip.js';
import { parsePort } from './packet.js';

/** One address spec part with a dotted (or IPv6) mask; undefined unless contiguous. */
function maskedAddress(part: string, slash: number, maskText: string): ParsedCIDR | undefined {
  const ip = parseIP(part.slice(0, slash));
  const mask = parseIP(maskText);
  if (!ip || mask?.family !== ip.family) return undefined;
  // A dotted mask must be contiguous; find its prefix length.
  const bits = ip.family === 'IPv4' ? 32 : 128;
  let prefix = -1;
  for (let p = 0; p <= bits; p++) if (maskOf(ip.family, p) === mask.value) prefix = p;
  if (prefix < 0) return undefined;
  return { family: ip.family, base: ip.value & mask.value, prefix };
}

/** Parses `ADDR[/PREFIX|/MASK]` (one or a comma list) into CIDRs. */
export function parseAddressSpec(text: string): ParsedCIDR[] | undefined {
  const out: ParsedCIDR[] = [];
  for (const part of text.split(',')) {
    const slash = part.indexOf('/');
    if (slash < 0) {
      const ip = parseIP(part);
      if (!ip) return undefined;
      out.push({ family: ip.family, base: ip.value, prefix: ip.family === 'IPv4' ? 32 : 128 });
      continue;
    }
    const maskText = part.slice(slash + 1);
    if (maskText.includes('.') || (maskText.includes(':') && part.includes(':'))) {
      const c = maskedAddress(part, slash, maskText);
      if (!c) return undefined;
      out.push(c);
      continue;
    }
    const c = parseCIDR(part);
    if (!c) {
      // iptables accepts host bits in the address (it clears them).
      const ip = parseIP(part.slice(0, slash));
      const prefix = Number(maskText);
      if (!ip || !/^\d+$/.test(maskText) || prefix > (ip.family === 'IPv4' ? 32 : 128))
        return undefined;
      out.push({ family: ip.family, base: ip.value & maskOf(ip.family, prefix), prefix });
      continue;
    }
    out.push(c);
  }
  return out;
}

export interface PortRange {
  readonly lo: number;
  readonly hi: number;
}

/** `PORT`, `LO:HI`, `:HI`, `LO:` and comma lists of them. */
export function parsePortRanges(text: string): PortRange[] | undefined {
  const out: PortRange[] = [];
  for (const part of text.split(',')) {
    const [a, b] = part.split(':');
    const lo = a === '' || a === undefined ? 0 : parsePort(a, true);
    const hi = b === undefined ? lo : b === '' ? 65535 : parsePort(b, true);
    if (lo === undefined || hi === undefined || lo > hi) return undefined;
    out.push({ lo, hi });
  }
  return out;
}

/** `VALUE[/MASK]` (decimal or 0x); the mask defaults to all 32 bits. */
export function parseMarkValue(text: string): { value: bigint; mask: bigint } | undefined {
  const [v, m] = text.split('/');
  try {
    const value = BigInt(v ?? '');
    const mask = m === undefined ? 0xffffffffn : BigInt(m);
    return { value, mask };
  } catch {
    return undefined;
  }
}

/** `-i eth+` matches every name starting with `eth`. */
export function interfaceMatches(pattern: string, name: string): boolean {
  return pattern.endsWith('+') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** Address types `-m addrtype` knows here. */
export const ADDR_TYPES: readonly string[] = [
  'LOCAL',
  'UNICAST',
  'BROADCAST',
  'MULTICAST',
  'UNSPEC',
];

/** The address type of `ip`, given whether it is one of the node's (LOCAL). */
export function addrTypeOf(isLocal: boolean, ip: ParsedIP): string {
  if (isLocal) return 'LOCAL';
  if (ip.family === 'IPv4') {
    if (ip.value === 0xffffffffn) return 'BROADCAST';
    if (ip.value >> 28n === 0xen) return 'MULTICAST';
    if (ip.value === 0n) return 'UNSPEC';
    return 'UNICAST';
  }
  if (ip.value >> 120n === 0xffn) return 'MULTICAST';
  if (ip.value === 0n) return 'UNSPEC';
  return 'UNICAST';
}

/**
 * Parses a DNAT/SNAT address: `IP`, `IP:PORT`, `[IPv6]:PORT`, with ranges (`IP-IP`,
 * `PORT-PORT`) reduced to their first value (the kernel picks within the range).
 */
export function parseNatAddress(
  text: string,
): { ip: ParsedIP | undefined; port: number | undefined } | undefined {
  let host = text;
  let port: string | undefined;
  const m6 = /^\[([^\]]+)\](?::(.+))?$/.exec(text);
  if (m6) {
    host = m6[1] ?? '';
    port = m6[2];
  } else if (text.split(':').length === 2) {
    [host, port] = text.split(':') as [string, string];
  }
  const firstHost = host.split('-')[0] ?? '';
  const ip = firstHost === '' ? undefined : parseIP(firstHost);
  if (firstHost !== '' && !ip) return undefined;
  let p: number | undefined;
  if (port !== undefined) {
    p = parsePort(port.split('-')[0] ?? '');
    if (p === undefined) return undefined;
  }
  if (!ip && p === undefined) return undefined;
  return { ip, port: p };
}
