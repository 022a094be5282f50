// The packet and the node context a trace starts from: addresses, protocol, ports, where the
// packet comes from (a pod on the node, the node itself, a client outside the node), the
// node's own addresses (what `-m addrtype LOCAL` and routing see), conntrack state, existing
// ClientIP affinity (xt_recent entries) and the packet mark. Also the parsers for the user's
// `--src`/`--dst` values, which collect every field error. Pure.

import { ValidationError, type FieldError } from '../errors.js';
import {
  parseCIDR,
  parseIP,
  formatIP,
  cidrContains,
  isLoopback,
  type ParsedCIDR,
  type ParsedIP,
} from '../util/ip.js';

export type Protocol = 'tcp' | 'udp' | 'sctp';
export const PROTOCOLS: readonly Protocol[] = ['tcp', 'udp', 'sctp'];

/** Where the first packet of the connection enters netfilter. */
export type Origin = 'pod' | 'node' | 'external';

/** Conntrack state of the traced packet (`-m conntrack --ctstate`, `-m state --state`). */
export type CtState = 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED';
export const CT_STATES: readonly CtState[] = [
  'NEW',
  'ESTABLISHED',
  'RELATED',
  'INVALID',
  'UNTRACKED',
];

/** How rules are evaluated. */
export type TraceMode =
  /** What the kernel does: the hooks of the packet's real path, in kernel table order. */
  | 'kernel'
  /**
   * kube-proxy's own unit-test tracer (fixtures README, "Packet-flow semantics"): nat
   * PREROUTING, then the filter chains KUBE-SERVICES, KUBE-EXTERNAL-SERVICES, KUBE-NODEPORTS
   * and KUBE-PROXY-FIREWALL against the DNATed address (port unchanged); recent, mark and
   * conntrack matches never match.
   */
  | 'fixture-compatible';

export interface Packet {
  readonly src: ParsedIP;
  readonly dst: ParsedIP;
  readonly protocol: Protocol;
  readonly srcPort: number;
  readonly dstPort: number;
}

/** An xt_recent list entry for the packet's source: ClientIP affinity recorded earlier. */
export interface RecentEntry {
  /** List name (`--name`), e.g. `KUBE-SEP-I77PXRDZVX7PMWMN`. */
  readonly name: string;
  /** How long ago the source was last seen, in seconds (default 0). */
  readonly ageSeconds: number;
}

export interface TraceContext {
  readonly origin: Origin;
  /** Addresses the node owns besides 127.0.0.0/8 and ::1 (kernel "LOCAL" addresses). */
  readonly localAddresses: readonly ParsedIP[];
  readonly inInterface?: string;
  readonly outInterface?: string;
  readonly ctState: CtState;
  readonly mark: bigint;
  readonly recent: readonly RecentEntry[];
  readonly mode: TraceMode;
  /** The mark bit kube-proxy uses for masquerade (fixture-compatible `masq`); default 0x4000. */
  readonly masqueradeMark: bigint;
}

/** Defaults for everything but the origin and local addresses. */
export function defaultContext(
  origin: Origin,
  localAddresses: readonly ParsedIP[],
  over: Partial<TraceContext> = {},
): TraceContext {
  return {
    origin,
    localAddresses,
    ctState: 'NEW',
    mark: 0n,
    recent: [],
    mode: 'kernel',
    masqueradeMark: 0x4000n,
    ...over,
  };
}

/** Whether the kernel would call `ip` a LOCAL address of this node. */
export function isLocalAddress(ctx: TraceContext, ip: ParsedIP): boolean {
  if (isLoopback(ip)) return true;
  if (ip.family === 'IPv4' && ip.value >> 24n === 127n) return true;
  return ctx.localAddresses.some((a) => a.family === ip.family && a.value === ip.value);
}

/**
 * Infers the origin from the source: one of the node's addresses → node; inside a pod CIDR
 * → pod; anything else → external.
 */
export function inferOrigin(
  src: ParsedIP,
  localAddresses: readonly ParsedIP[],
  podCIDRs: readonly ParsedCIDR[],
): Origin {
  if (
    isLoopback(src) ||
    localAddresses.some((a) => a.family === src.family && a.value === src.value)
  )
    return 'node';
  if (podCIDRs.some((c) => cidrContains(c, src))) return 'pod';
  return 'external';
}

/** Formats `ip:port`, bracketing IPv6. */
export function formatHostPort(ip: ParsedIP, port: number): string {
  const a = formatIP(ip);
  return ip.family === 'IPv6' ? `[${a}]:${port}` : `${a}:${port}`;
}

/** Parses a port number 1-65535 (0 allowed when `allowZero`). */
export function parsePort(text: string, allowZero = false): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n <= 65535 && (allowZero || n >= 1) ? n : undefined;
}

export interface PacketSpec {
  /** `--src IP` */
  readonly src: string;
  /** `--dst IP:PORT[/tcp|udp|sctp]` (IPv6 as `[addr]:port`) */
  readonly dst: string;
  /** `--sport PORT` */
  readonly srcPort?: string;
  /** `-p`/`--protocol` when not given in dst. */
  readonly protocol?: string;
}

/**
 * Parses the user's packet description. Every problem is collected and thrown as one
 * ValidationError naming the option (`--src`, `--dst`, `--sport`, `--protocol`).
 */
export function parsePacketSpec(spec: PacketSpec): Packet {
  const errors: FieldError[] = [];
  const bad = (field: string, message: string): void => {
    errors.push({ object: 'packet', field, message });
  };
  const src = parseIP(spec.src);
  if (!src) bad('--src', `not an IP address: ${JSON.stringify(spec.src)}`);

  let dstText = spec.dst;
  let protocol: string | undefined = spec.protocol?.toLowerCase();
  const slash = dstText.lastIndexOf('/');
  if (slash >= 0) {
    const p = dstText.slice(slash + 1).toLowerCase();
    if (protocol !== undefined && protocol !== p)
      bad('--dst', `protocol ${p} conflicts with --protocol ${protocol}`);
    protocol = p;
    dstText = dstText.slice(0, slash);
  }
  protocol ??= 'tcp';
  if (!(PROTOCOLS as readonly string[]).includes(protocol))
    bad('--dst', `protocol must be tcp, udp or sctp, got ${JSON.stringify(protocol)}`);

  let dst: ParsedIP | undefined;
  let dstPort: number | undefined;
  const m6 = /^\[([^\]]+)\]:(.*)$/.exec(dstText);
  const colon = dstText.lastIndexOf(':');
  const [hostText, portText] = m6
    ? [m6[1] ?? '', m6[2] ?? '']
    : colon >= 0 && dstText.indexOf(':') === colon
      ? [dstText.slice(0, colon), dstText.slice(colon + 1)]
      : [dstText, undefined];
  if (portText === undefined)
    bad('--dst', `expected IP:PORT (IPv6 as [IP]:PORT), got ${JSON.stringify(spec.dst)}`);
  else {
    dst = parseIP(hostText);
    if (!dst) bad('--dst', `not an IP address: ${JSON.stringify(hostText)}`);
    dstPort = parsePort(portText);
    if (dstPort === undefined)
      bad('--dst', `port must be 1-65535, got ${JSON.stringify(portText)}`);
  }
  let srcPort = 40000;
  if (spec.srcPort !== undefined) {
    const p = parsePort(spec.srcPort);
    if (p === undefined)
      bad('--sport', `port must be 1-65535, got ${JSON.stringify(spec.srcPort)}`);
    else srcPort = p;
  }
  if (src && dst && src.family !== dst.family)
    bad('--dst', `address family ${dst.family} differs from --src (${src.family})`);
  if (errors.length > 0 || !src || !dst || dstPort === undefined) throw new ValidationError(errors);
  return { src, dst, dstPort, srcPort, protocol: protocol as Protocol };
}

/** Parses `--node-ip` values; errors name the option and index. */
export function parseAddressList(field: string, values: readonly string[]): ParsedIP[] {
  const errors: FieldError[] = [];
  const out: ParsedIP[] = [];
  values.forEach((v, i) => {
    const ip = parseIP(v);
    if (ip) out.push(ip);
    else
      errors.push({
        object: 'trace',
        field: `${field}[${i}]`,
        message: `not an IP address: ${JSON.stringify(v)}`,
      });
  });
  if (errors.length > 0) throw new ValidationError(errors);
  return out;
}

/** Parses CIDR options such as `--pod-cidr`. */
export function parseCIDRList(field: string, values: readonly string[]): ParsedCIDR[] {
  const errors: FieldError[] = [];
  const out: ParsedCIDR[] = [];
  values.forEach((v, i) => {
    const c = parseCIDR(v);
    if (c) out.push(c);
    else
      errors.push({
        object: 'trace',
        field: `${field}[${i}]`,
        message: `not a CIDR: ${JSON.stringify(v)}`,
      });
  });
  if (errors.length > 0) throw new ValidationError(errors);
  return out;
}
