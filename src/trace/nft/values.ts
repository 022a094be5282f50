// The nftables tracer's values: what a selector (`ip daddr`, `meta l4proto`, `th dport`,
// `ct state`, `fib saddr type`, `mark and 0x4000`, `numgen random mod N`, concatenations)
// reads from the packet and its context, and how such a value compares with the text nft
// writes on the other side (an address, a prefix `a/n`, a range `a-b`, a protocol name or
// number, a port, a flag list, a quoted interface name with `*`). A selector the tracer cannot
// read yields a reason instead of a value; the walker reports it as unsupported. Pure.

import type { Selector } from '../../netfilter/nftables/model.js';
import { cidrContains, formatIP, parseCIDR, parseIP, type ParsedIP } from '../../util/ip.js';
import { addrTypeOf } from '../eval-values.js';
import type { Protocol } from '../packet.js';

/** One value read from the packet. */
export type Val =
  | { readonly kind: 'ip'; readonly ip: ParsedIP }
  | { readonly kind: 'num'; readonly n: bigint }
  /** A symbol with an optional numeric equivalent (`tcp` = 6, `local`, `ipv4`). */
  | { readonly kind: 'sym'; readonly s: string; readonly n?: bigint }
  /** Flags (`ct state`, `ct status`): a comparison matches when any given flag is set. */
  | { readonly kind: 'flags'; readonly set: readonly string[] }
  /** An interface name. */
  | { readonly kind: 'str'; readonly s: string };

/** What a selector may read, as the walker knows it at this point of the path. */
export interface PacketView {
  readonly src: ParsedIP;
  readonly dst: ParsedIP;
  readonly protocol: Protocol;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly mark: bigint;
  readonly ctState: string;
  readonly ctStatus: readonly string[];
  readonly inInterface: string | undefined;
  readonly outInterface: string | undefined;
  /** The value every `numgen` in the rule yields on this branch. */
  readonly numgen: number | undefined;
  readonly isLocal: (ip: ParsedIP) => boolean;
}

export const PROTOCOL_NUMBERS: Readonly<Record<string, bigint>> = {
  icmp: 1n,
  tcp: 6n,
  udp: 17n,
  'ipv6-icmp': 58n,
  icmpv6: 58n,
  sctp: 132n,
};

/** A value, or why the selector cannot be read (no value: the rule does not match). */
export type ReadResult =
  | { readonly ok: true; readonly vals: readonly Val[] }
  | { readonly ok: false; readonly missing: true }
  | { readonly ok: false; readonly missing: false; readonly reason: string };

const MISSING: ReadResult = { ok: false, missing: true };

function one(v: Val): ReadResult {
  return { ok: true, vals: [v] };
}

function unsupported(reason: string): ReadResult {
  return { ok: false, missing: false, reason };
}

function protoVal(p: Protocol): Val {
  return { kind: 'sym', s: p, n: PROTOCOL_NUMBERS[p] ?? 0n };
}

function readPayload(sel: Extract<Selector, { kind: 'payload' }>, p: PacketView): ReadResult {
  const family = p.src.family;
  if (sel.base === 'ip' || sel.base === 'ip6') {
    // `ip …` only sees IPv4 packets (an inet table carries both families).
    if ((sel.base === 'ip') !== (family === 'IPv4')) return MISSING;
    if (sel.field === 'saddr') return one({ kind: 'ip', ip: p.src });
    if (sel.field === 'daddr') return one({ kind: 'ip', ip: p.dst });
    if (sel.field === 'protocol' || sel.field === 'nexthdr') return one(protoVal(p.protocol));
    return unsupported(`${sel.base} ${sel.field}`);
  }
  // `tcp dport` implies `meta l4proto tcp`; `th` is any transport header.
  if (sel.base !== 'th' && sel.base !== p.protocol) return MISSING;
  if (sel.field === 'sport') return one({ kind: 'num', n: BigInt(p.srcPort) });
  if (sel.field === 'dport') return one({ kind: 'num', n: BigInt(p.dstPort) });
  return unsupported(`${sel.base} ${sel.field}`);
}

function readMeta(sel: Extract<Selector, { kind: 'meta' }>, p: PacketView): ReadResult {
  switch (sel.key) {
    case 'l4proto':
      return one(protoVal(p.protocol));
    case 'mark':
      return one({ kind: 'num', n: p.mark });
    case 'nfproto':
      return one(
        p.src.family === 'IPv4'
          ? { kind: 'sym', s: 'ipv4', n: 2n }
          : { kind: 'sym', s: 'ipv6', n: 10n },
      );
    case 'iifname':
    case 'iif':
      return one({ kind: 'str', s: p.inInterface ?? '' });
    case 'oifname':
    case 'oif':
      return one({ kind: 'str', s: p.outInterface ?? '' });
  }
}

function readSelector(sel: Selector, p: PacketView): ReadResult {
  switch (sel.kind) {
    case 'payload':
      return readPayload(sel, p);
    case 'meta':
      return readMeta(sel, p);
    case 'ct':
      if (sel.key === 'state') return one({ kind: 'flags', set: [p.ctState] });
      if (sel.key === 'status') return one({ kind: 'flags', set: p.ctStatus });
      return one({ kind: 'num', n: 0n });
    case 'fib': {
      if (sel.result !== 'type') return unsupported(`fib … ${sel.result}`);
      const ip = sel.flags.includes('saddr')
        ? p.src
        : sel.flags.includes('daddr')
          ? p.dst
          : undefined;
      if (!ip) return unsupported(`fib ${sel.flags.join(' . ')} type`);
      return one({ kind: 'sym', s: addrTypeOf(p.isLocal(ip), ip).toLowerCase() });
    }
    case 'numgen':
      if (p.numgen === undefined) return unsupported('numgen outside a forked rule');
      return one({ kind: 'num', n: BigInt(p.numgen) });
    case 'binop': {
      const left = readSelector(sel.left, p);
      if (!left.ok) return left;
      const v = left.vals[0];
      const c = parseNumber(sel.value);
      if (left.vals.length !== 1 || v?.kind !== 'num' || c === undefined)
        return unsupported(`${sel.op} ${sel.value} on a non-numeric value`);
      const n = sel.op === 'and' ? v.n & c : sel.op === 'or' ? v.n | c : v.n ^ c;
      return one({ kind: 'num', n: n & 0xffffffffn });
    }
    case 'concat': {
      const vals: Val[] = [];
      for (const part of sel.parts) {
        const r = readSelector(part, p);
        if (!r.ok) return r;
        vals.push(...r.vals);
      }
      return { ok: true, vals };
    }
  }
}

/** Reads `sel` (a concatenation yields one value per part). */
export function readValues(sel: Selector, p: PacketView): ReadResult {
  return readSelector(sel, p);
}

/** Whether `sel` (or a part of it) is a `numgen` expression. */
export function usesNumgen(sel: Selector): Extract<Selector, { kind: 'numgen' }> | undefined {
  if (sel.kind === 'numgen') return sel;
  if (sel.kind === 'binop') return usesNumgen(sel.left);
  if (sel.kind === 'concat')
    for (const part of sel.parts) {
      const n = usesNumgen(part);
      if (n) return n;
    }
  return undefined;
}

/** Decimal or 0x… number. */
export function parseNumber(text: string): bigint | undefined {
  if (!/^(0x[0-9a-f]+|\d+)$/i.test(text)) return undefined;
  return BigInt(text);
}

function unquote(text: string): string {
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text;
}

function ipMatches(ip: ParsedIP, text: string): boolean | undefined {
  if (text.includes('/')) {
    const c = parseCIDR(text);
    if (!c) return undefined;
    return cidrContains(c, ip);
  }
  const dash = text.indexOf('-');
  if (dash > 0) {
    const lo = parseIP(text.slice(0, dash));
    const hi = parseIP(text.slice(dash + 1));
    if (!lo || !hi) return undefined;
    return lo.family === ip.family && ip.value >= lo.value && ip.value <= hi.value;
  }
  const other = parseIP(text);
  if (!other) return undefined;
  return other.family === ip.family && other.value === ip.value;
}

function numMatches(n: bigint, text: string): boolean | undefined {
  const dash = text.indexOf('-');
  if (dash > 0) {
    const lo = parseNumber(text.slice(0, dash));
    const hi = parseNumber(text.slice(dash + 1));
    if (lo === undefined || hi === undefined) return undefined;
    return n >= lo && n <= hi;
  }
  const v = parseNumber(text);
  return v === undefined ? undefined : v === n;
}

/**
 * Whether one value equals (or lies within) the text nft writes for it; undefined when the
 * text cannot be read for that kind of value.
 */
export function valueMatches(v: Val, text: string): boolean | undefined {
  switch (v.kind) {
    case 'ip':
      return ipMatches(v.ip, text);
    case 'num':
      return numMatches(v.n, text);
    case 'sym': {
      const t = text.toLowerCase();
      if (t === v.s) return true;
      const n = parseNumber(t);
      if (n !== undefined) return v.n === n;
      return PROTOCOL_NUMBERS[t] !== undefined && v.n !== undefined
        ? PROTOCOL_NUMBERS[t] === v.n
        : false;
    }
    case 'flags':
      return v.set.includes(text.toLowerCase());
    case 'str': {
      const t = unquote(text);
      return t.endsWith('*') ? v.s.startsWith(t.slice(0, -1)) : v.s === t;
    }
  }
}

/** Whether the values match one concatenated key (same number of parts). */
export function keyMatches(vals: readonly Val[], key: readonly string[]): boolean | undefined {
  if (vals.length !== key.length) return undefined;
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i];
    const k = key[i];
    if (v === undefined || k === undefined) return undefined;
    const m = valueMatches(v, k);
    if (m !== true) return m;
  }
  return true;
}

/** `<`, `>`, `<=`, `>=` on numbers. */
export function compareNumbers(v: Val, op: string, text: string): boolean | undefined {
  const c = parseNumber(text);
  if (c === undefined) return undefined;
  const n = v.kind === 'num' ? v.n : v.kind === 'sym' ? v.n : undefined;
  if (n === undefined) return undefined;
  if (op === '<') return n < c;
  if (op === '>') return n > c;
  if (op === '<=') return n <= c;
  return n >= c;
}

/** The canonical text of a value, as an exact element key part (see canonicalPart). */
export function valueText(v: Val): string {
  switch (v.kind) {
    case 'ip':
      return formatIP(v.ip);
    case 'num':
      return v.n.toString();
    case 'sym':
    case 'str':
      return v.s;
    case 'flags':
      return v.set.join(',');
  }
}

const PROTOCOL_NAMES = new Map(
  Object.entries(PROTOCOL_NUMBERS).map(([name, n]) => [n.toString(), name] as const),
);

/**
 * The canonical text of an element key part of type `type` when it is one exact value, or
 * undefined when it is an interval (prefix, range) that must be compared part by part.
 */
export function canonicalPart(text: string, type: string | undefined): string | undefined {
  if (text.includes('/')) return undefined;
  const ip = parseIP(text);
  if (ip) return formatIP(ip);
  if (text.includes('-')) return undefined;
  const n = parseNumber(text);
  if (type === 'inet_proto')
    return n !== undefined ? PROTOCOL_NAMES.get(n.toString()) : text.toLowerCase();
  if (n !== undefined) return n.toString();
  return unquote(text).toLowerCase();
}
