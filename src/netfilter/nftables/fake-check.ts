// The checks the Fake makes that depend on what a rule or an element says, not on the state:
// which chains, sets and verdict maps a rule refers to, and whether an element's key and
// value fit its set's declared types (`ipv4_addr . inet_proto . inet_service : verdict`),
// as the kernel would refuse a misfit. Prefixes and ranges need the `interval` flag. Pure.

import type { NftElement, NftRule, NftSet, Statement } from './model.js';
import { ipFamilyOf, parseCIDR } from '../../util/ip.js';

export interface RuleReferences {
  /** Chains named by jump/goto (also inside anonymous verdict maps). */
  readonly chains: readonly string[];
  /** Named sets and maps a rule reads or updates (`@name`). */
  readonly sets: readonly string[];
  /** Named maps used with `vmap @name` (must be verdict maps). */
  readonly verdictMaps: readonly string[];
}

const refsCache = new WeakMap<NftRule, RuleReferences>();

function collect(s: Statement, chains: string[], sets: string[], vmaps: string[]): void {
  switch (s.kind) {
    case 'verdict':
      if (s.verdict.kind === 'jump' || s.verdict.kind === 'goto') chains.push(s.verdict.chain);
      return;
    case 'vmap':
      if (s.map.kind === 'setref') {
        sets.push(s.map.name);
        vmaps.push(s.map.name);
        return;
      }
      for (const e of s.map.entries) {
        if (e.value.kind === 'jump' || e.value.kind === 'goto') chains.push(e.value.chain);
      }
      return;
    case 'match':
      if (s.right.kind === 'setref') sets.push(s.right.name);
      return;
    case 'set':
      if (s.value.kind === 'setref') sets.push(s.value.name);
      return;
    case 'setupdate':
      sets.push(s.set);
      return;
    default:
      return;
  }
}

/** What a rule refers to (memoised per rule object). */
export function ruleReferences(r: NftRule): RuleReferences {
  const cached = refsCache.get(r);
  if (cached !== undefined) return cached;
  const chains: string[] = [];
  const sets: string[] = [];
  const verdictMaps: string[] = [];
  for (const s of r.statements) collect(s, chains, sets, verdictMaps);
  const refs = { chains, sets, verdictMaps };
  refsCache.set(r, refs);
  return refs;
}

const PROTOCOLS = new Set([
  'tcp',
  'udp',
  'sctp',
  'icmp',
  'icmpv6',
  'udplite',
  'dccp',
  'gre',
  'esp',
  'ah',
]);

function isUint(s: string, max: number): boolean {
  if (/^\d+$/.test(s)) return Number(s) <= max;
  if (/^0x[0-9a-f]+$/i.test(s)) return Number.parseInt(s.slice(2), 16) <= max;
  return false;
}

function fitsAddress(part: string, family: 'IPv4' | 'IPv6', interval: boolean): boolean {
  if (part.includes('/')) return interval && parseCIDR(part)?.family === family;
  const dash = part.indexOf('-');
  if (dash > 0 && family === 'IPv4') {
    return (
      interval &&
      ipFamilyOf(part.slice(0, dash)) === family &&
      ipFamilyOf(part.slice(dash + 1)) === family
    );
  }
  return ipFamilyOf(part) === family;
}

/** Whether one key or value part fits a datatype; unknown datatypes accept anything. */
function fits(type: string, part: string, interval: boolean): boolean {
  switch (type) {
    case 'ipv4_addr':
      return fitsAddress(part, 'IPv4', interval);
    case 'ipv6_addr':
      return fitsAddress(part, 'IPv6', interval);
    case 'inet_proto':
      return PROTOCOLS.has(part) || isUint(part, 255);
    case 'inet_service': {
      const range = /^(\d+)-(\d+)$/.exec(part);
      if (range !== null)
        return interval && isUint(range[1] ?? '', 65535) && isUint(range[2] ?? '', 65535);
      return isUint(part, 65535);
    }
    case 'mark':
    case 'integer':
      return isUint(part, 0xffffffff);
    default:
      return true;
  }
}

function typeText(types: readonly string[]): string {
  return types.join(' . ');
}

/** Why `key` does not fit `set`'s key type, or undefined if it does. */
export function checkElementKey(set: NftSet, key: readonly string[]): string | undefined {
  if (key.length !== set.keyType.length) {
    return `key ${key.join(' . ')} has ${String(key.length)} parts; ${set.kind} ${set.name} has type ${typeText(set.keyType)}`;
  }
  const interval = set.flags?.includes('interval') === true;
  for (let i = 0; i < key.length; i++) {
    const type = set.keyType[i] ?? '';
    const part = key[i] ?? '';
    if (!fits(type, part, interval))
      return `${JSON.stringify(part)} is not a valid ${type} in ${set.kind} ${set.name}`;
  }
  return undefined;
}

/** Why `value` does not fit `set` (a set takes none; a map needs one of its type). */
export function checkElementValue(set: NftSet, value: NftElement['value']): string | undefined {
  if (set.kind === 'set')
    return value === undefined ? undefined : `set ${set.name} takes no values`;
  const vt = set.valueType ?? [];
  if (value === undefined) return `map ${set.name} needs a value of type ${typeText(vt)}`;
  const verdictMap = vt.length === 1 && vt[0] === 'verdict';
  if (value.kind !== 'data')
    return verdictMap ? undefined : `map ${set.name} holds ${typeText(vt)}, not verdicts`;
  if (verdictMap) return `map ${set.name} holds verdicts`;
  if (value.parts.length !== vt.length) {
    return `value ${value.parts.join(' . ')} does not fit ${typeText(vt)} in map ${set.name}`;
  }
  for (let i = 0; i < vt.length; i++) {
    const part = value.parts[i] ?? '';
    if (!fits(vt[i] ?? '', part, false))
      return `${JSON.stringify(part)} is not a valid ${vt[i] ?? ''} in map ${set.name}`;
  }
  return undefined;
}
