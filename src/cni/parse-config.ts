// Parsing and validation of the svcnet-cni plugin configuration (the JSON on stdin): link
// mode (ptp or bridge) and its options, the host-local style IPAM section (range sets,
// gateway, rangeStart/rangeEnd, routes, dataDir), dns, prevResult and the GC attachment
// list. Every field error is collected and reported at once with CNI code 7 (invalid
// network config); bad JSON is code 6; an unsupported cniVersion is code 1. Pure; no I/O.

import {
  cidrContains,
  cidrSize,
  formatCIDR,
  formatIP,
  maskOf,
  parseCIDR,
  parseIP,
  type ParsedCIDR,
  type ParsedIP,
} from '../util/ip.js';
import { NAME_RE } from './parse-request.js';
import {
  CniError,
  CniErrorCode,
  type CniAttachment,
  type CniCommand,
  type CniDNS,
  type CniResult,
  type CniRoute,
} from './types.js';
import { requireSupportedVersion } from './version.js';

export type LinkMode = 'ptp' | 'bridge';

/** IPAM types served in-process (same on-disk format and semantics as host-local). */
export const BUILTIN_IPAM_TYPES: readonly string[] = ['host-local', 'svcnet-ipam'];

/** One address range inside a range set. Bounds are inclusive. */
export interface IpRange {
  readonly subnet: ParsedCIDR;
  readonly rangeStart: bigint;
  readonly rangeEnd: bigint;
  readonly gateway: ParsedIP | undefined;
}

/** One address is allocated from each range set (two sets give dual stack). */
export type RangeSet = readonly IpRange[];

export interface BuiltinIpamConfig {
  readonly kind: 'builtin';
  readonly type: string;
  readonly rangeSets: readonly RangeSet[];
  readonly routes: readonly CniRoute[];
  readonly dataDir: string;
  readonly dns: CniDNS | undefined;
}

export interface DelegatedIpamConfig {
  readonly kind: 'delegate';
  /** Binary name searched in CNI_PATH. */
  readonly type: string;
}

export type IpamConfig = BuiltinIpamConfig | DelegatedIpamConfig;

export interface PluginConfig {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: string;
  readonly mode: LinkMode;
  readonly mtu: number | undefined;
  /** Bridge mode: the bridge device in the host namespace. */
  readonly bridge: string;
  readonly isGateway: boolean;
  readonly isDefaultGateway: boolean;
  readonly ipMasq: boolean;
  readonly hairpinMode: boolean;
  /** Bridge mode: put the bridge in promiscuous mode. */
  readonly promiscMode: boolean;
  /** Bridge mode: replace another address the bridge has instead of failing (isGateway). */
  readonly forceAddress: boolean;
  readonly ipam: IpamConfig | undefined;
  readonly dns: CniDNS | undefined;
  readonly prevResult: CniResult | undefined;
  /** GC: attachments to keep (either spelling of the key). */
  readonly validAttachments: readonly CniAttachment[] | undefined;
}

export const DEFAULT_DATA_DIR = '/var/lib/cni/networks';
export const DEFAULT_BRIDGE = 'cni0';

/** Keys that only bridge mode takes. */
const BRIDGE_ONLY = [
  'isGateway',
  'isDefaultGateway',
  'hairpinMode',
  'promiscMode',
  'forceAddress',
  'bridge',
];

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses JSON text or throws code 6 (decode failure). */
export function decodeJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new CniError(
      CniErrorCode.decodeFailure,
      `${what}: cannot decode JSON: ${(e as Error).message}`,
    );
  }
}

/** Collects field errors for one config object. */
class Problems {
  readonly list: string[] = [];
  private readonly object: string;
  constructor(object: string) {
    this.object = object;
  }
  add(field: string, msg: string): void {
    this.list.push(`${this.object}: ${field}: ${msg}`);
  }
  throwIfAny(): void {
    if (this.list.length > 0)
      throw new CniError(CniErrorCode.invalidNetworkConfig, this.list.join('; '));
  }
}

interface JsonTypes {
  boolean: boolean;
  string: string;
}

/** `o[key]` when it has the JSON type; undefined when absent; otherwise a problem at `field`. */
function optOfType<K extends keyof JsonTypes>(
  o: Json,
  key: string,
  type: K,
  p: Problems,
  field: string,
): JsonTypes[K] | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== type) {
    p.add(field, `must be a ${type}, got ${JSON.stringify(v)}`);
    return undefined;
  }
  return v as JsonTypes[K];
}

function optBool(o: Json, key: string, p: Problems, field = key): boolean {
  return optOfType(o, key, 'boolean', p, field) ?? false;
}

function optString(o: Json, key: string, p: Problems, field = key): string | undefined {
  return optOfType(o, key, 'string', p, field);
}

function stringList(v: unknown, field: string, p: Problems): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) {
    p.add(field, 'must be a list of strings');
    return undefined;
  }
  return v;
}

/** Parses a `dns` object (nameservers, domain, search, options). */
function parseDns(v: unknown, field: string, p: Problems): CniDNS | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) {
    p.add(field, 'must be an object');
    return undefined;
  }
  const out: CniDNS = {};
  const ns = stringList(v.nameservers, `${field}.nameservers`, p);
  if (ns) {
    ns.forEach((n, i) => {
      if (!parseIP(n)) p.add(`${field}.nameservers[${i}]`, `not an IP address: "${n}"`);
    });
    out.nameservers = ns;
  }
  const domain = optString(v, 'domain', p, `${field}.domain`);
  if (domain !== undefined) out.domain = domain;
  const search = stringList(v.search, `${field}.search`, p);
  if (search) out.search = search;
  const options = stringList(v.options, `${field}.options`, p);
  if (options) out.options = options;
  return out;
}

function parseRoutes(v: unknown, field: string, p: Problems): CniRoute[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    p.add(field, 'must be a list');
    return [];
  }
  const out: CniRoute[] = [];
  v.forEach((r: unknown, i) => {
    const f = `${field}[${i}]`;
    if (!isObject(r) || typeof r.dst !== 'string') {
      p.add(f, 'must be an object with a "dst" CIDR');
      return;
    }
    const dst = parseCIDR(r.dst);
    if (!dst) {
      p.add(`${f}.dst`, `not a CIDR: "${r.dst}"`);
      return;
    }
    const route: CniRoute = { dst: r.dst };
    if (r.gw !== undefined) {
      const gwText = typeof r.gw === 'string' ? r.gw : '';
      const gw = parseIP(gwText);
      if (!gw || gw.family !== dst.family)
        p.add(`${f}.gw`, `not an ${dst.family} address: ${JSON.stringify(r.gw)}`);
      else route.gw = gwText;
    }
    out.push(route);
  });
  return out;
}

function parseAddr(v: unknown, field: string, p: Problems): ParsedIP | undefined {
  if (v === undefined) return undefined;
  const ip = typeof v === 'string' ? parseIP(v) : undefined;
  if (!ip) p.add(field, `not an IP address: ${JSON.stringify(v)}`);
  return ip;
}

/** Validates one range (host-local semantics: defaults, bounds, gateway). */
function parseRange(v: unknown, field: string, p: Problems): IpRange | undefined {
  if (!isObject(v)) {
    p.add(field, 'must be an object with a "subnet"');
    return undefined;
  }
  if (typeof v.subnet !== 'string') {
    p.add(`${field}.subnet`, "required (a CIDR such as the node's podCIDR)");
    return undefined;
  }
  const subnet = parseCIDR(v.subnet);
  if (!subnet) {
    p.add(`${field}.subnet`, `not a CIDR: "${v.subnet}"`);
    return undefined;
  }
  const bits = subnet.family === 'IPv4' ? 32 : 128;
  const given = parseIP(v.subnet.slice(0, v.subnet.indexOf('/')));
  if (given && given.value !== subnet.base) {
    p.add(
      `${field}.subnet`,
      `"${v.subnet}" is not a network address (did you mean ${formatCIDR(subnet)}?)`,
    );
    return undefined;
  }
  if (subnet.prefix > bits - 2) {
    p.add(
      `${field}.subnet`,
      `${v.subnet} is too small to allocate from (need /${bits - 2} or larger)`,
    );
    return undefined;
  }
  const last = subnet.base + cidrSize(subnet) - 1n;
  const start = parseAddr(v.rangeStart, `${field}.rangeStart`, p);
  const end = parseAddr(v.rangeEnd, `${field}.rangeEnd`, p);
  const gateway = parseAddr(v.gateway, `${field}.gateway`, p);
  let bad = false;
  for (const [name, ip] of [
    ['rangeStart', start],
    ['rangeEnd', end],
    ['gateway', gateway],
  ] as const) {
    if (ip && !cidrContains(subnet, ip)) {
      p.add(`${field}.${name}`, `${formatIP(ip)} is outside subnet ${formatCIDR(subnet)}`);
      bad = true;
    }
  }
  if (bad) return undefined;
  const rangeStart = start?.value ?? subnet.base + 1n;
  // IPv4 excludes the broadcast address; IPv6 has none.
  const rangeEnd = end?.value ?? (subnet.family === 'IPv4' ? last - 1n : last);
  if (rangeStart > rangeEnd) {
    p.add(`${field}.rangeStart`, 'must not be after rangeEnd');
    return undefined;
  }
  const gw = gateway ?? { family: subnet.family, value: subnet.base + 1n };
  return { subnet, rangeStart, rangeEnd, gateway: gw };
}

function overlaps(a: IpRange, b: IpRange): boolean {
  return (
    a.rangeStart <= b.rangeEnd && b.rangeStart <= a.rangeEnd && a.subnet.family === b.subnet.family
  );
}

/** Parses the `ipam` section; undefined when absent. */
function parseIpam(v: unknown, p: Problems): IpamConfig | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v) || typeof v.type !== 'string' || v.type === '') {
    p.add('ipam.type', 'required (the IPAM plugin, e.g. "host-local")');
    return undefined;
  }
  if (!BUILTIN_IPAM_TYPES.includes(v.type)) {
    if (v.type.includes('/')) p.add('ipam.type', `must be a binary name, got "${v.type}"`);
    return { kind: 'delegate', type: v.type };
  }
  let rawSets: unknown = v.ranges;
  if (rawSets === undefined && v.subnet !== undefined) {
    // Legacy flat form: subnet/rangeStart/rangeEnd/gateway at the top of ipam.
    rawSets = [
      [{ subnet: v.subnet, rangeStart: v.rangeStart, rangeEnd: v.rangeEnd, gateway: v.gateway }],
    ];
  }
  const rangeSets: IpRange[][] = [];
  if (!Array.isArray(rawSets) || rawSets.length === 0) {
    p.add(
      'ipam.ranges',
      'required: a non-empty list of range sets, e.g. [[{"subnet":"10.244.1.0/24"}]]',
    );
  } else {
    rawSets.forEach((set: unknown, i) => {
      if (!Array.isArray(set) || set.length === 0) {
        p.add(`ipam.ranges[${i}]`, 'must be a non-empty list of ranges');
        return;
      }
      const ranges: IpRange[] = [];
      set.forEach((r: unknown, j) => {
        const range = parseRange(r, `ipam.ranges[${i}][${j}]`, p);
        if (range) ranges.push(range);
      });
      const fams = new Set(ranges.map((r) => r.subnet.family));
      if (fams.size > 1) p.add(`ipam.ranges[${i}]`, 'mixes IPv4 and IPv6 ranges in one set');
      rangeSets.push(ranges);
    });
    const all = rangeSets.flatMap((set, i) =>
      set.map((r, j) => ({ r, at: `ipam.ranges[${i}][${j}]` })),
    );
    for (let a = 0; a < all.length; a++)
      for (let b = a + 1; b < all.length; b++) {
        const x = all[a];
        const y = all[b];
        if (x && y && overlaps(x.r, y.r)) p.add(y.at, `overlaps ${x.at}`);
      }
  }
  const dataDir = optString(v, 'dataDir', p, 'ipam.dataDir') ?? DEFAULT_DATA_DIR;
  if (!dataDir.startsWith('/')) p.add('ipam.dataDir', `must be an absolute path, got "${dataDir}"`);
  return {
    kind: 'builtin',
    type: v.type,
    rangeSets,
    routes: parseRoutes(v.routes, 'ipam.routes', p),
    dataDir,
    dns: parseDns(v.dns, 'ipam.dns', p),
  };
}

function parseAttachments(o: Json, p: Problems): CniAttachment[] | undefined {
  const v = o['cni.dev/valid-attachments'] ?? o['cni.dev/attachments'];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    p.add('cni.dev/valid-attachments', 'must be a list of {containerID, ifname}');
    return undefined;
  }
  const out: CniAttachment[] = [];
  v.forEach((a: unknown, i) => {
    if (isObject(a) && typeof a.containerID === 'string' && typeof a.ifname === 'string')
      out.push({ containerID: a.containerID, ifname: a.ifname });
    else p.add(`cni.dev/valid-attachments[${i}]`, 'must be {containerID, ifname}');
  });
  return out;
}

/**
 * Loose structural check of a result (prevResult or a plugin's output): an object with
 * `cniVersion` and, when present, list-typed `interfaces`/`ips`/`routes` whose entries carry
 * their required keys. Throws code 6 naming `what` otherwise.
 */
export function parseResult(v: unknown, what: string): CniResult {
  const fail = (m: string): never => {
    throw new CniError(CniErrorCode.decodeFailure, `${what}: ${m}`);
  };
  if (!isObject(v)) return fail('must be a JSON object');
  if (v.cniVersion !== undefined && typeof v.cniVersion !== 'string')
    fail('cniVersion must be a string');
  for (const key of ['interfaces', 'ips', 'routes'] as const)
    if (v[key] !== undefined && !Array.isArray(v[key])) fail(`${key} must be a list`);
  const ips = (v.ips ?? []) as unknown[];
  ips.forEach((ip, i) => {
    if (
      !isObject(ip) ||
      typeof ip.address !== 'string' ||
      !parseCIDR(ip.address.replace(/\/\d+$/, '/0'))
    )
      fail(`ips[${i}].address must be a CIDR`);
  });
  const ifs = (v.interfaces ?? []) as unknown[];
  ifs.forEach((f, i) => {
    if (!isObject(f) || typeof f.name !== 'string') fail(`interfaces[${i}].name must be a string`);
  });
  const routes = (v.routes ?? []) as unknown[];
  routes.forEach((r, i) => {
    if (!isObject(r) || typeof r.dst !== 'string') fail(`routes[${i}].dst must be a CIDR`);
  });
  return v as unknown as CniResult;
}

/**
 * Parses the plugin's stdin for `command`. VERSION needs nothing. ADD/CHECK/DEL need a
 * valid ipam section (code 7 when missing). Throws CniError with the spec's codes.
 */
export function parsePluginConfig(text: string, command: CniCommand): PluginConfig {
  const raw = decodeJson(text, 'network configuration');
  if (!isObject(raw))
    throw new CniError(CniErrorCode.decodeFailure, 'network configuration: must be a JSON object');
  const cniVersion = typeof raw.cniVersion === 'string' ? raw.cniVersion : '';
  if (cniVersion === '')
    throw new CniError(
      CniErrorCode.invalidNetworkConfig,
      'network configuration: cniVersion: required',
    );
  requireSupportedVersion(cniVersion);
  const name = typeof raw.name === 'string' ? raw.name : '';
  const p = new Problems(`network "${name}"`);
  if (!NAME_RE.test(name))
    p.add('name', `must match ${NAME_RE.source}, got ${JSON.stringify(raw.name)}`);
  const type = optString(raw, 'type', p) ?? '';
  // `type: "bridge"` (svcnet-cni installed as `bridge`, like the reference plugin) is bridge mode.
  const modeText = optString(raw, 'mode', p) ?? (type === 'bridge' ? 'bridge' : 'ptp');
  if (modeText !== 'ptp' && modeText !== 'bridge')
    p.add('mode', `must be "ptp" or "bridge", got "${modeText}"`);
  else if (type === 'bridge' && modeText !== 'bridge')
    p.add('mode', `type "bridge" is always bridge mode, got "${modeText}"`);
  const mode: LinkMode = modeText === 'bridge' ? 'bridge' : 'ptp';
  let mtu: number | undefined;
  if (raw.mtu !== undefined) {
    if (
      typeof raw.mtu !== 'number' ||
      !Number.isInteger(raw.mtu) ||
      raw.mtu < 576 ||
      raw.mtu > 65535
    )
      p.add('mtu', `must be an integer 576-65535, got ${JSON.stringify(raw.mtu)}`);
    else mtu = raw.mtu;
  }
  const bridge = optString(raw, 'bridge', p) ?? DEFAULT_BRIDGE;
  if (mode === 'bridge') {
    const bad = bridge === '' || Buffer.byteLength(bridge) > 15 || /[/:\s]/.test(bridge);
    if (bad) p.add('bridge', `not a valid interface name: "${bridge}"`);
  }
  const isDefaultGateway = optBool(raw, 'isDefaultGateway', p);
  const isGateway = optBool(raw, 'isGateway', p) || isDefaultGateway;
  const ipMasq = optBool(raw, 'ipMasq', p);
  const hairpinMode = optBool(raw, 'hairpinMode', p);
  const promiscMode = optBool(raw, 'promiscMode', p);
  const forceAddress = optBool(raw, 'forceAddress', p);
  if (mode === 'ptp')
    for (const key of BRIDGE_ONLY)
      if (raw[key] !== undefined && raw[key] !== false)
        p.add(key, 'only valid with "mode": "bridge"');
  const ipam = parseIpam(raw.ipam, p);
  const needsIpam =
    command === 'ADD' || command === 'CHECK' || command === 'DEL' || command === 'GC';
  if (needsIpam && ipam === undefined)
    p.add(
      'ipam',
      'required: an IPAM section such as {"type":"host-local","ranges":[[{"subnet":"10.244.1.0/24"}]]}',
    );
  const dns = parseDns(raw.dns, 'dns', p);
  const validAttachments = parseAttachments(raw, p);
  p.throwIfAny();
  const prevResult =
    raw.prevResult === undefined ? undefined : parseResult(raw.prevResult, 'prevResult');
  return {
    cniVersion,
    name,
    type,
    mode,
    mtu,
    bridge,
    isGateway,
    isDefaultGateway,
    ipMasq,
    hairpinMode,
    promiscMode,
    forceAddress,
    ipam,
    dns,
    prevResult,
    validAttachments,
  };
}

/** The gateway of a range as CIDR text with the subnet prefix, e.g. `10.244.1.1/24`. */
export function gatewayCIDR(r: IpRange): string | undefined {
  return r.gateway ? `${formatIP(r.gateway)}/${r.subnet.prefix}` : undefined;
}

/** True when `ip` lies within the subnet of `r` and within mask — helper for callers. */
export function rangeHolds(r: IpRange, ip: ParsedIP): boolean {
  return (
    (ip.value & maskOf(r.subnet.family, r.subnet.prefix)) === r.subnet.base &&
    ip.family === r.subnet.family
  );
}
