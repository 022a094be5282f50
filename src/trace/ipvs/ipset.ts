// The ipset state the tracer tests `-m set --match-set NAME FLAGS` against: the sets of an
// `ipset save` dump (`create NAME TYPE …`, `add NAME ENTRY [comment "…"]`) and the membership
// test of the types kube-proxy's IPVS mode uses — hash:ip, hash:net, hash:ip,port,
// hash:ip,port,ip, hash:ip,port,net and bitmap:port — where each FLAGS word (src/dst) says
// which packet field fills that dimension. The text is read by netfilter/ipset's parser; the
// entries are then split into typed dimensions for matching. INVALID_INPUT names the line.
// Pure.

import { SvcnetError } from '../../errors.js';
import type { IpsetSet } from '../../netfilter/ipset/model.js';
import { parseSave } from '../../netfilter/ipset/parse.js';
import { cidrContains, parseCIDR, parseIP, type ParsedCIDR, type ParsedIP } from '../../util/ip.js';
import type { Protocol } from '../packet.js';

/** One dimension of an entry: an address, a network or a protocol:port. */
export type Dimension =
  | { readonly kind: 'ip'; readonly ip: ParsedIP }
  | { readonly kind: 'net'; readonly net: ParsedCIDR }
  | { readonly kind: 'port'; readonly protocol: string; readonly port: number };

export interface IpsetEntry {
  readonly text: string;
  readonly dims: readonly Dimension[];
  readonly comment?: string;
}

export interface Ipset {
  readonly name: string;
  readonly type: string;
  readonly entries: IpsetEntry[];
}

export type IpsetState = ReadonlyMap<string, Ipset>;

/** The dimensions of each supported type, in order. */
const TYPE_DIMS: Readonly<Record<string, readonly ('ip' | 'net' | 'port')[]>> = {
  'hash:ip': ['ip'],
  'hash:net': ['net'],
  'hash:ip,port': ['ip', 'port'],
  'hash:ip,port,ip': ['ip', 'port', 'ip'],
  'hash:ip,port,net': ['ip', 'port', 'net'],
  'bitmap:port': ['port'],
};

export function isSupportedSetType(type: string): boolean {
  return Object.hasOwn(TYPE_DIMS, type);
}

function parseDim(kind: 'ip' | 'net' | 'port', text: string): Dimension | undefined {
  if (kind === 'ip') {
    const ip = parseIP(text);
    return ip && { kind: 'ip', ip };
  }
  if (kind === 'net') {
    const net = parseCIDR(text.includes('/') ? text : `${text}/${text.includes(':') ? 128 : 32}`);
    return net && { kind: 'net', net };
  }
  const m = /^(?:([a-z]+):)?(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port <= 65535 ? { kind: 'port', protocol: m[1] ?? 'tcp', port } : undefined;
}

/** Splits an entry's text into its dimensions (IPv6 addresses hold no commas). */
function parseEntry(type: string, text: string): Dimension[] | undefined {
  const kinds = TYPE_DIMS[type];
  if (!kinds) return undefined;
  const parts = text.split(',');
  if (parts.length !== kinds.length) return undefined;
  const dims: Dimension[] = [];
  for (const [i, kind] of kinds.entries()) {
    const d = parseDim(kind, parts[i] ?? '');
    if (!d) return undefined;
    dims.push(d);
  }
  return dims;
}

/**
 * Reads `ipset save` text with netfilter/ipset's parser (syntax errors name the line), then
 * each entry into its dimensions; an entry that is not of its set's type names its line.
 */
export function parseIpsetSave(text: string): Map<string, Ipset> {
  const lines = text.split('\n');
  const lineOf = (name: string, value: string): number =>
    lines.findIndex((l) => {
      const w = l.trim().split(/\s+/);
      return w[0] === 'add' && w[1] === name && w[2] === value;
    }) + 1;
  // netfilter/ipset's parser reports an add before its create without the line: name it.
  const created = new Set<string>();
  lines.forEach((l, i) => {
    const [cmd, name = ''] = l.trim().split(/\s+/);
    if (cmd === 'create') created.add(name);
    else if (cmd === 'add' && !created.has(name))
      throw new SvcnetError(
        'INVALID_INPUT',
        `line ${i + 1}: ipset save: add to ${name} before its create line`,
      );
  });
  return ipsetsOf(parseSave(text).values(), (name, value) => `line ${lineOf(name, value)}: `);
}

/**
 * netfilter/ipset's sets (parsed or planned) with their entries split into dimensions; an
 * entry not of its set's type is INVALID_INPUT (`where` names its line).
 */
export function ipsetsOf(
  input: Iterable<IpsetSet>,
  where: (name: string, value: string) => string = () => '',
): Map<string, Ipset> {
  const sets = new Map<string, Ipset>();
  for (const set of input) {
    const entries = set.entries.map((e): IpsetEntry => {
      const dims = parseEntry(set.type, e.value);
      if (!dims)
        throw new SvcnetError(
          'INVALID_INPUT',
          `${where(set.name, e.value)}ipset save: ${e.value} is not an entry of a ${set.type} set`,
        );
      return { text: e.value, dims, ...(e.comment !== undefined ? { comment: e.comment } : {}) };
    });
    sets.set(set.name, { name: set.name, type: set.type, entries });
  }
  return sets;
}

/** The packet fields a set lookup reads. */
export interface SetPacket {
  readonly src: ParsedIP;
  readonly dst: ParsedIP;
  readonly protocol: Protocol;
  readonly srcPort: number;
  readonly dstPort: number;
}

function dimMatches(d: Dimension, flag: string, p: SetPacket): boolean {
  const isSrc = flag === 'src';
  if (d.kind === 'port')
    return d.protocol === p.protocol && d.port === (isSrc ? p.srcPort : p.dstPort);
  const ip = isSrc ? p.src : p.dst;
  if (d.kind === 'net') return cidrContains(d.net, ip);
  return d.ip.family === ip.family && d.ip.value === ip.value;
}

/**
 * Whether `p` is in `set` with `flags` (one src/dst word per dimension; ipset lets fewer
 * flags than dimensions test a prefix of them). bitmap:port holds ports of any protocol.
 */
export function setMatch(
  set: Ipset,
  flags: readonly string[],
  p: SetPacket,
): IpsetEntry | undefined {
  if (set.type === 'bitmap:port') {
    const port = flags[0] === 'src' ? p.srcPort : p.dstPort;
    return set.entries.find((e) => e.dims[0]?.kind === 'port' && e.dims[0].port === port);
  }
  return set.entries.find((e) =>
    e.dims.every((d, i) => {
      const f = flags[i];
      return f === undefined || dimMatches(d, f, p);
    }),
  );
}
