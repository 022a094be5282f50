// IPAM decisions for the built-in host-local style allocator: which address each range set
// hands to an attachment (round-robin after the last reservation, skipping gateways and
// taken addresses, honouring requested IPs), which reservations a DEL or GC releases, and
// the IPAM part of the result. Pure; the store (ipam-store.ts) reads the state and applies
// the returned changes under a lock.

import { formatIP, parseIP, type ParsedIP } from '../util/ip.js';
import type { IpRange, RangeSet, BuiltinIpamConfig } from './parse-config.js';
import { CniError, CniErrorCode, type CniAttachment, type CniResult } from './types.js';

export interface Reservation {
  readonly containerId: string;
  /** Empty for legacy files that carry only the container ID. */
  readonly ifName: string;
}

/** What the store read from `<dataDir>/<network>/`. Keys are canonical IP text. */
export interface IpamState {
  readonly reservations: ReadonlyMap<string, Reservation>;
  /** Range set index → last reserved IP (canonical text). */
  readonly lastReserved: ReadonlyMap<number, string>;
}

/** A change for the store to apply; `reserve` must fail if the address is already taken. */
export type IpamChange =
  | {
      readonly op: 'reserve';
      readonly ip: string;
      readonly owner: Reservation;
      readonly setIndex: number;
    }
  | { readonly op: 'release'; readonly ip: string };

export interface Allocation {
  readonly setIndex: number;
  readonly ip: ParsedIP;
  readonly range: IpRange;
}

function rangeOf(set: RangeSet, ip: ParsedIP): IpRange | undefined {
  return set.find(
    (r) => r.subnet.family === ip.family && ip.value >= r.rangeStart && ip.value <= r.rangeEnd,
  );
}

function isGateway(r: IpRange, v: bigint): boolean {
  return r.gateway !== undefined && r.gateway.value === v;
}

function describeSet(set: RangeSet): string {
  return set
    .map(
      (r) =>
        `${formatIP({ family: r.subnet.family, value: r.rangeStart })}-${formatIP({ family: r.subnet.family, value: r.rangeEnd })}`,
    )
    .join(',');
}

/** Every address of `set` in round-robin order starting after `last`, wrapping once. */
function* candidates(
  set: RangeSet,
  last: ParsedIP | undefined,
): Generator<{ r: IpRange; v: bigint }> {
  let startRange = 0;
  let startValue: bigint | undefined;
  if (last) {
    const idx = set.findIndex(
      (r) =>
        r.subnet.family === last.family && last.value >= r.rangeStart && last.value <= r.rangeEnd,
    );
    if (idx >= 0) {
      startRange = idx;
      startValue = last.value + 1n;
    }
  }
  const n = set.length;
  for (let k = 0; k <= n; k++) {
    const r = set[(startRange + k) % n];
    if (!r) continue;
    const from = k === 0 && startValue !== undefined ? startValue : r.rangeStart;
    const to = k === n && startValue !== undefined ? startValue - 1n : r.rangeEnd;
    if (k === n && startValue === undefined) break;
    for (let v = from; v <= to && v <= r.rangeEnd; v++) yield { r, v };
  }
}

/**
 * Chooses one address per range set for (containerId, ifName). `requested` addresses (from
 * CNI_ARGS IP= or args) are honoured when they fall in a set and are free. Throws CniError:
 * 999 for a duplicate allocation or an exhausted set, 7 for a requested IP outside every set.
 */
export function planAllocation(
  cfg: BuiltinIpamConfig,
  state: IpamState,
  containerId: string,
  ifName: string,
  requested: readonly ParsedIP[],
): { allocations: Allocation[]; changes: IpamChange[] } {
  const allocations: Allocation[] = [];
  const changes: IpamChange[] = [];
  const taken = new Set(state.reservations.keys());
  const usedRequests = new Set<ParsedIP>();
  cfg.rangeSets.forEach((set, setIndex) => {
    for (const [ip, owner] of state.reservations) {
      const parsed = parseIP(ip);
      if (
        parsed &&
        rangeOf(set, parsed) &&
        owner.containerId === containerId &&
        owner.ifName === ifName
      )
        throw new CniError(
          CniErrorCode.internal,
          `duplicate allocation: ${ip} is already reserved for container ${containerId} interface ${ifName} (DEL it first)`,
        );
    }
    const want = requested.find((ip) => rangeOf(set, ip));
    if (want) {
      usedRequests.add(want);
      const range = rangeOf(set, want);
      const text = formatIP(want);
      if (!range) return;
      if (taken.has(text) || isGateway(range, want.value))
        throw new CniError(
          CniErrorCode.internal,
          `requested IP ${text} is already allocated or is the gateway`,
        );
      taken.add(text);
      allocations.push({ setIndex, ip: want, range });
      changes.push({ op: 'reserve', ip: text, owner: { containerId, ifName }, setIndex });
      return;
    }
    const lastText = state.lastReserved.get(setIndex);
    const last = lastText === undefined ? undefined : parseIP(lastText);
    for (const { r, v } of candidates(set, last)) {
      if (isGateway(r, v)) continue;
      const ip = { family: r.subnet.family, value: v };
      const text = formatIP(ip);
      if (taken.has(text)) continue;
      taken.add(text);
      allocations.push({ setIndex, ip, range: r });
      changes.push({ op: 'reserve', ip: text, owner: { containerId, ifName }, setIndex });
      return;
    }
    throw new CniError(
      CniErrorCode.internal,
      `no IP addresses available in range set ${setIndex} (${describeSet(set)}): all are reserved`,
    );
  });
  const stray = requested.filter((ip) => !usedRequests.has(ip));
  if (stray.length > 0)
    throw new CniError(
      CniErrorCode.invalidNetworkConfig,
      `requested IP ${stray.map(formatIP).join(', ')} is in none of the configured ranges`,
    );
  return { allocations, changes };
}

function owns(res: Reservation, containerId: string, ifName: string): boolean {
  return res.containerId === containerId && (res.ifName === ifName || res.ifName === '');
}

/** Reservations held by (containerId, ifName), including legacy container-only ones. */
export function ownedAddresses(state: IpamState, containerId: string, ifName: string): string[] {
  return [...state.reservations].filter(([, r]) => owns(r, containerId, ifName)).map(([ip]) => ip);
}

/** The changes a DEL makes: release every reservation of the attachment (none is fine). */
export function planRelease(state: IpamState, containerId: string, ifName: string): IpamChange[] {
  return ownedAddresses(state, containerId, ifName).map((ip) => ({ op: 'release', ip }));
}

/** The changes a GC makes: release reservations whose attachment is not in `valid`. */
export function planGc(state: IpamState, valid: readonly CniAttachment[]): IpamChange[] {
  const keep = (r: Reservation): boolean =>
    valid.some(
      (a) => a.containerID === r.containerId && (r.ifName === '' || a.ifname === r.ifName),
    );
  return [...state.reservations].filter(([, r]) => !keep(r)).map(([ip]) => ({ op: 'release', ip }));
}

/** The IPAM result (ips with gateways, routes, dns) for the chosen allocations. */
export function ipamResult(
  cniVersion: string,
  cfg: BuiltinIpamConfig,
  allocations: readonly Allocation[],
): CniResult {
  const pre1 = cniVersion.startsWith('0.');
  return {
    cniVersion,
    ips: allocations.map((a) => ({
      ...(pre1 ? { version: a.ip.family === 'IPv4' ? ('4' as const) : ('6' as const) } : {}),
      address: `${formatIP(a.ip)}/${a.range.subnet.prefix}`,
      ...(a.range.gateway ? { gateway: formatIP(a.range.gateway) } : {}),
    })),
    routes: cfg.routes.map((r) => ({ ...r })),
    dns: cfg.dns ? { ...cfg.dns } : {},
  };
}

/** Parses the `IP=` CNI_ARG (comma-separated addresses). Throws code 4 on a bad address. */
export function requestedIPs(arg: string | undefined): ParsedIP[] {
  if (arg === undefined || arg === '') return [];
  return arg.split(',').map((s) => {
    const ip = parseIP(s.trim().replace(/\/\d+$/, ''));
    if (!ip)
      throw new CniError(
        CniErrorCode.invalidEnvironment,
        `CNI_ARGS: IP: not an IP address: "${s}"`,
      );
    return ip;
  });
}
