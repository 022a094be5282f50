// ClusterIP and NodePort allocators as kube-apiserver runs them: a set of used offsets in a
// range, explicit reservations that fail when taken or out of range, and dynamic picks that
// are random within the upper band first, keeping the lower "static" band (what users
// request by hand, e.g. 10.96.0.10 for DNS) free as long as possible. Pure: randomness is
// injected.

import {
  cidrContains,
  cidrSize,
  formatCIDR,
  formatIP,
  parseCIDR,
  parseIPSloppy,
  type IPFamily,
  type ParsedCIDR,
} from '../util/ip.js';

export type AllocateResult =
  | { readonly ok: true; readonly value: number }
  | { readonly ok: false; readonly reason: 'range' | 'allocated' | 'full' };

/** Offsets [0, size) with a static lower band; used by both allocators. */
class OffsetSet {
  private readonly used = new Set<number>();
  readonly size: number;
  readonly staticBand: number;
  private readonly random: () => number;

  constructor(size: number, staticBand: number, random: () => number) {
    this.size = size;
    this.staticBand = staticBand;
    this.random = random;
  }

  has(o: number): boolean {
    return this.used.has(o);
  }

  reserve(o: number): AllocateResult {
    if (o < 0 || o >= this.size) return { ok: false, reason: 'range' };
    if (this.used.has(o)) return { ok: false, reason: 'allocated' };
    this.used.add(o);
    return { ok: true, value: o };
  }

  release(o: number): void {
    this.used.delete(o);
  }

  /** Random free offset in [band, size), else in [0, band). */
  next(): AllocateResult {
    const pick = (lo: number, hi: number): number | undefined => {
      const n = hi - lo;
      if (n <= 0) return undefined;
      const start = Math.floor(this.random() * n);
      for (let i = 0; i < n; i++) {
        const o = lo + ((start + i) % n);
        if (!this.used.has(o)) return o;
      }
      return undefined;
    };
    const o = pick(this.staticBand, this.size) ?? pick(0, this.staticBand);
    if (o === undefined) return { ok: false, reason: 'full' };
    this.used.add(o);
    return { ok: true, value: o };
  }

  get count(): number {
    return this.used.size;
  }
}

/** Service IPs of one family from one CIDR (network and IPv4 broadcast excluded). */
export class ClusterIPAllocator {
  readonly cidr: ParsedCIDR;
  readonly family: IPFamily;
  private readonly set: OffsetSet;

  constructor(cidrText: string, random: () => number) {
    const cidr = parseCIDR(cidrText);
    if (!cidr) throw new Error(`invalid service CIDR ${cidrText}`);
    this.cidr = cidr;
    this.family = cidr.family;
    const total = cidrSize(cidr);
    // Usable: offsets 1 .. total-2 (IPv4 broadcast) or total-1; capped for huge IPv6 ranges.
    const usable = Number(
      (cidr.family === 'IPv4' ? total - 2n : total - 1n) > 1n << 20n
        ? 1n << 20n
        : cidr.family === 'IPv4'
          ? total - 2n
          : total - 1n,
    );
    const band = Math.min(Math.max(16, Math.floor(usable / 16)), 256);
    this.set = new OffsetSet(Math.max(usable, 0), band, random);
  }

  get range(): string {
    return formatCIDR(this.cidr);
  }

  /** The n-th usable address (n from 0): the `kubernetes` Service gets n = 0. */
  addressAt(n: number): string {
    return formatIP({ family: this.family, value: this.cidr.base + BigInt(n + 1) });
  }

  private offsetOf(ip: string): number | undefined {
    const p = parseIPSloppy(ip);
    if (!p || !cidrContains(this.cidr, p)) return undefined;
    const off = Number(p.value - this.cidr.base) - 1;
    return off >= 0 && off < this.set.size ? off : undefined;
  }

  allocate(ip: string): AllocateResult {
    const off = this.offsetOf(ip);
    if (off === undefined) return { ok: false, reason: 'range' };
    return this.set.reserve(off);
  }

  allocateNext(): { ok: true; ip: string } | { ok: false; reason: 'full' } {
    const r = this.set.next();
    return r.ok ? { ok: true, ip: this.addressAt(r.value) } : { ok: false, reason: 'full' };
  }

  release(ip: string): void {
    const off = this.offsetOf(ip);
    if (off !== undefined) this.set.release(off);
  }

  has(ip: string): boolean {
    const off = this.offsetOf(ip);
    return off !== undefined && this.set.has(off);
  }

  get used(): number {
    return this.set.count;
  }
}

/** Node ports from an inclusive range such as 30000-32767. */
export class NodePortAllocator {
  readonly base: number;
  readonly max: number;
  private readonly set: OffsetSet;

  constructor(range: string, random: () => number) {
    const m = /^(\d+)-(\d+)$/.exec(range.trim());
    const lo = Number(m?.[1]);
    const hi = Number(m?.[2]);
    if (!m || lo < 1 || hi > 65535 || lo > hi) throw new Error(`invalid node port range ${range}`);
    this.base = lo;
    this.max = hi;
    const size = hi - lo + 1;
    this.set = new OffsetSet(size, Math.min(Math.max(16, Math.floor(size / 32)), 128), random);
  }

  get range(): string {
    return `${this.base}-${this.max}`;
  }

  allocate(port: number): AllocateResult {
    const r = this.set.reserve(port - this.base);
    return r.ok ? { ok: true, value: port } : r;
  }

  allocateNext(): AllocateResult {
    const r = this.set.next();
    return r.ok ? { ok: true, value: r.value + this.base } : r;
  }

  release(port: number): void {
    if (port >= this.base && port <= this.max) this.set.release(port - this.base);
  }

  has(port: number): boolean {
    return this.set.has(port - this.base);
  }

  /** How many ports are held (health check node ports included). */
  get used(): number {
    return this.set.count;
  }
}
