// The lab load balancer's address pool (`svcnet lab up --lb-pool CIDR|START-END`): parsing,
// membership, the addresses in allocation order, and the CIDRs that cover it (the outside
// host routes them via the hub). IPv4 only, like the lab network. Pure.

import { SvcnetError } from '../errors.js';
import { formatCIDR, formatIP, parseCIDR, parseIP } from '../util/ip.js';

/** The lab's default pool: the top of the lab bridge's 172.18.0.0/16, as kind users pick for MetalLB. */
export const DEFAULT_LB_POOL = '172.18.255.200-172.18.255.250';

/** A pool larger than this is refused: allocation walks it. */
export const MAX_LB_POOL_SIZE = 4096;

export interface LbPool {
  /** First and last address, inclusive, as 32-bit integers. */
  readonly first: bigint;
  readonly last: bigint;
}

function invalid(text: string, why: string): SvcnetError {
  return new SvcnetError('INVALID_INPUT', `--lb-pool: ${why}, got ${JSON.stringify(text)}`);
}

/** Parses `A.B.C.D/N` or `A.B.C.D-E.F.G.H`; throws INVALID_INPUT naming --lb-pool. */
export function parseLbPool(text: string): LbPool {
  let first: bigint;
  let last: bigint;
  const dash = text.indexOf('-');
  if (dash >= 0) {
    const a = parseIP(text.slice(0, dash).trim());
    const b = parseIP(text.slice(dash + 1).trim());
    if (a?.family !== 'IPv4' || b?.family !== 'IPv4')
      throw invalid(text, 'must be an IPv4 CIDR or range START-END');
    first = a.value;
    last = b.value;
    if (last < first) throw invalid(text, 'the range ends before it starts');
  } else {
    const c = parseCIDR(text.trim());
    if (c?.family !== 'IPv4') throw invalid(text, 'must be an IPv4 CIDR or range START-END');
    first = c.base;
    last = c.base + (1n << BigInt(32 - c.prefix)) - 1n;
  }
  if (last - first + 1n > BigInt(MAX_LB_POOL_SIZE))
    throw invalid(text, `holds more than ${String(MAX_LB_POOL_SIZE)} addresses`);
  return { first, last };
}

/** Whether the IPv4 address text is in the pool. */
export function inLbPool(pool: LbPool, ip: string): boolean {
  const p = parseIP(ip);
  return p?.family === 'IPv4' && p.value >= pool.first && p.value <= pool.last;
}

/** The pool's addresses in allocation order (lowest first). */
export function lbPoolAddresses(pool: LbPool): string[] {
  const out: string[] = [];
  for (let v = pool.first; v <= pool.last; v++) out.push(formatIP({ family: 'IPv4', value: v }));
  return out;
}

/** The fewest CIDRs that cover exactly the pool, lowest first. */
export function lbPoolCIDRs(pool: LbPool): string[] {
  const out: string[] = [];
  let v = pool.first;
  while (v <= pool.last) {
    let prefix = 32;
    // Grow the block while it stays aligned and inside the pool.
    while (prefix > 0) {
      const size = 1n << BigInt(33 - prefix);
      if (v % size !== 0n || v + size - 1n > pool.last) break;
      prefix -= 1;
    }
    out.push(formatCIDR({ family: 'IPv4', base: v, prefix }));
    v += 1n << BigInt(32 - prefix);
  }
  return out;
}
