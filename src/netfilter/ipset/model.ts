// A closed, typed model of the ipsets kube-proxy's IPVS mode writes: a set's name, type
// (hash:ip,port, hash:ip,port,ip, hash:ip,port,net, hash:net, hash:ip, bitmap:port), family,
// creation options (hashsize, maxelem, range, comment support) and its entries, kept as the
// strings `ipset save` prints (`10.0.0.1,tcp:80`, `10.0.0.1,tcp:80,10.0.0.1`, `3001`). It is
// shared by the planner, the save/restore text forms (render.ts, parse.ts) and the Fake
// (fake.ts). Entry validation (entry.ts) follows what the kernel and kube-proxy accept. Pure.

export type IpsetType =
  'hash:ip' | 'hash:ip,port' | 'hash:ip,port,ip' | 'hash:ip,port,net' | 'hash:net' | 'bitmap:port';

export const IPSET_TYPES: readonly IpsetType[] = [
  'hash:ip',
  'hash:ip,port',
  'hash:ip,port,ip',
  'hash:ip,port,net',
  'hash:net',
  'bitmap:port',
];

export type IpsetFamily = 'inet' | 'inet6';

export interface IpsetOptions {
  /** hash types; kube-proxy: 1024. */
  readonly hashsize?: number;
  /** hash types; kube-proxy: 65536. */
  readonly maxelem?: number;
  /** bitmap:port only: `0-65535`. */
  readonly range?: { readonly from: number; readonly to: number };
  /** Created with `comment`: entries may carry a comment. */
  readonly comment?: boolean;
}

export interface IpsetEntry {
  /** As ipset prints it, e.g. `10.0.0.1,tcp:80`. */
  readonly value: string;
  readonly comment?: string;
}

export interface IpsetSet {
  /** At most 31 characters. */
  readonly name: string;
  readonly type: IpsetType;
  /** Hash types only; bitmap:port has no family. */
  readonly family?: IpsetFamily;
  readonly options: IpsetOptions;
  /** Kept sorted by value, no duplicates. */
  readonly entries: readonly IpsetEntry[];
}

/** All sets by name. */
export type IpsetState = ReadonlyMap<string, IpsetSet>;

export const IPSET_MAX_NAME_LENGTH = 31;

export function isIpsetType(s: string): s is IpsetType {
  return (IPSET_TYPES as readonly string[]).includes(s);
}

export function isBitmapType(type: IpsetType): boolean {
  return type.startsWith('bitmap:');
}

/** kube-proxy's options for a new set of `type` (ipset.go): hash 1024/65536, bitmap 0-65535. */
export function defaultIpsetOptions(type: IpsetType): IpsetOptions {
  return isBitmapType(type)
    ? { range: { from: 0, to: 65535 } }
    : { hashsize: 1024, maxelem: 65536 };
}

export function sortEntries(entries: readonly IpsetEntry[]): IpsetEntry[] {
  const byValue = new Map<string, IpsetEntry>();
  for (const e of entries) byValue.set(e.value, e);
  return [...byValue.values()].sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}
