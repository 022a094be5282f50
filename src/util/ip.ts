// IP address and CIDR helpers on bigint: parsing (strict and kube-proxy-lenient), canonical
// text, family, containment, and arithmetic for allocators. Pure; no I/O.
//
// Lenient parsing follows Kubernetes' netutils.ParseIPSloppy: IPv4 octets with leading zeros
// are read as decimal ("010.001.002.003" is 10.1.2.3), as Go < 1.17 did, because objects
// stored before the stricter validation still carry them.

import ipaddr from 'ipaddr.js';

export type IPFamily = 'IPv4' | 'IPv6';

export interface ParsedIP {
  readonly family: IPFamily;
  /** Address as an unsigned integer (32 or 128 bits). */
  readonly value: bigint;
}

export interface ParsedCIDR {
  readonly family: IPFamily;
  /** Network address (host bits cleared). */
  readonly base: bigint;
  readonly prefix: number;
}

const V4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function bitsOf(family: IPFamily): number {
  return family === 'IPv4' ? 32 : 128;
}

function parseV4Decimal(text: string, allowLeadingZeros: boolean): bigint | undefined {
  const m = V4_RE.exec(text);
  if (!m) return undefined;
  let v = 0n;
  for (let i = 1; i <= 4; i++) {
    const part = m[i] ?? '';
    if (!allowLeadingZeros && part.length > 1 && part.startsWith('0')) return undefined;
    const n = Number.parseInt(part, 10);
    if (n > 255) return undefined;
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

function parseWith(text: string, lenient: boolean): ParsedIP | undefined {
  const t = text.trim() === text ? text : undefined;
  if (t === undefined || t === '') return undefined;
  if (t.includes(':')) {
    if (!ipaddr.IPv6.isValid(t) || t.includes('%')) return undefined;
    const addr = ipaddr.IPv6.parse(t);
    // An IPv4-mapped IPv6 address is still an IPv6 address to Kubernetes.
    let v = 0n;
    for (const part of addr.parts) v = (v << 16n) | BigInt(part);
    return { family: 'IPv6', value: v };
  }
  const v = parseV4Decimal(t, lenient);
  return v === undefined ? undefined : { family: 'IPv4', value: v };
}

/** Strict parse: canonical-ish IPv4 (no leading zeros) or any valid IPv6. */
export function parseIP(text: string): ParsedIP | undefined {
  return parseWith(text, false);
}

/** kube-proxy's lenient parse (ParseIPSloppy): IPv4 octets may carry leading zeros. */
export function parseIPSloppy(text: string): ParsedIP | undefined {
  return parseWith(text, true);
}

export function formatIP(ip: ParsedIP): string {
  if (ip.family === 'IPv4') {
    const v = ip.value;
    return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
  }
  const parts: number[] = [];
  for (let i = 7; i >= 0; i--) parts.push(Number((ip.value >> BigInt(i * 16)) & 0xffffn));
  return ipaddr.IPv6.parse(parts.map((p) => p.toString(16)).join(':')).toString();
}

/** Canonical text of an address (lenient input), or undefined when it is not an IP. */
export function canonicalIP(text: string): string | undefined {
  const ip = parseIPSloppy(text);
  return ip ? formatIP(ip) : undefined;
}

export function ipFamilyOf(text: string): IPFamily | undefined {
  return parseIPSloppy(text)?.family;
}

function parseCIDRWith(text: string, lenient: boolean): ParsedCIDR | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseWith(text.slice(0, slash), lenient);
  const prefixText = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = bitsOf(ip.family);
  if (prefix > bits) return undefined;
  return { family: ip.family, base: ip.value & maskOf(ip.family, prefix), prefix };
}

export function parseCIDR(text: string): ParsedCIDR | undefined {
  return parseCIDRWith(text, false);
}

export function parseCIDRSloppy(text: string): ParsedCIDR | undefined {
  return parseCIDRWith(text, true);
}

export function maskOf(family: IPFamily, prefix: number): bigint {
  const bits = BigInt(bitsOf(family));
  const all = (1n << bits) - 1n;
  return all ^ ((1n << (bits - BigInt(prefix))) - 1n);
}

export function formatCIDR(c: ParsedCIDR): string {
  return `${formatIP({ family: c.family, value: c.base })}/${c.prefix}`;
}

export function cidrContains(c: ParsedCIDR, ip: ParsedIP): boolean {
  return c.family === ip.family && (ip.value & maskOf(c.family, c.prefix)) === c.base;
}

/** Number of addresses in the CIDR. */
export function cidrSize(c: ParsedCIDR): bigint {
  return 1n << BigInt(bitsOf(c.family) - c.prefix);
}

/** The address `offset` places after the network address (no bounds check beyond the CIDR). */
export function cidrAddress(c: ParsedCIDR, offset: bigint): ParsedIP | undefined {
  if (offset < 0n || offset >= cidrSize(c)) return undefined;
  return { family: c.family, value: c.base + offset };
}

export function isLoopback(ip: ParsedIP): boolean {
  return ip.family === 'IPv4' ? ip.value >> 24n === 127n : ip.value === 1n;
}
