// Evaluates the matching side of one nftables statement for the walker: a `match` (a value,
// a comma list, `@set`, an anonymous set, relational operators) and the key lookups of
// `vmap` and of a NAT map (named maps through the view's index, anonymous maps entry by
// entry). Each answer is "matched", "did not match", or a reason the tracer cannot tell
// (the walker reports the rule and assumes it does not match). Named-set membership of the
// packet's source also honours existing ClientIP affinity the caller described (`--affinity
// SET`, within the set's timeout). Pure.

import type {
  MapEntry,
  NftElement,
  Operand,
  Selector,
  Statement,
  TableState,
} from '../../netfilter/nftables/model.js';
import type { RecentEntry } from '../packet.js';
import { findElement, type NftView } from './view.js';
import {
  compareNumbers,
  keyMatches,
  readValues,
  valueMatches,
  valueText,
  type PacketView,
  type Val,
} from './values.js';

export type Tri = boolean | { readonly reason: string };

/** The result of a map lookup: the entry found (with its comment), none, or a reason. */
export type Lookup =
  | {
      readonly found: true;
      readonly value: MapEntry['value'];
      readonly comment?: string;
      readonly key: string;
    }
  | { readonly found: false; readonly reason?: string };

export interface EvalEnv {
  readonly view: NftView;
  readonly table: TableState;
  readonly packet: PacketView;
  /** The packet's original source, for `--affinity` set membership. */
  readonly originalSrc: Val;
  readonly recent: readonly RecentEntry[];
}

/** The selector's values; `missing` when the packet has no such field (no match). */
type Read =
  | { readonly kind: 'vals'; readonly vals: readonly Val[] }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unsupported'; readonly reason: string };

function read(sel: Selector, env: EvalEnv): Read {
  const r = readValues(sel, env.packet);
  if (r.ok) return { kind: 'vals', vals: r.vals };
  return r.missing
    ? { kind: 'missing' }
    : { kind: 'unsupported', reason: `cannot read ${r.reason}` };
}

/** Whether the values are in the named set (or map). */
function inNamedSet(vals: readonly Val[], name: string, env: EvalEnv): Tri {
  const set = env.view.lookupSet(env.table, name);
  if (!set) return { reason: `no set @${name} in table ${env.table.table.table}` };
  if (findElement(set, vals)) return true;
  // ClientIP affinity the caller says exists: the original source is in that set.
  const affinity = env.recent.find((e) => e.name === name);
  const timeout = set.state.set.timeoutSeconds;
  const only = vals[0];
  if (
    affinity &&
    vals.length === 1 &&
    only?.kind === 'ip' &&
    env.originalSrc.kind === 'ip' &&
    only.ip.value === env.originalSrc.ip.value &&
    (timeout === undefined || affinity.ageSeconds < timeout)
  )
    return true;
  return false;
}

function matchesOperand(vals: readonly Val[], right: Operand, env: EvalEnv): Tri {
  const tell = (m: boolean | undefined, what: string): Tri =>
    m === undefined ? { reason: `cannot compare with ${what}` } : m;
  switch (right.kind) {
    case 'setref':
      return inNamedSet(vals, right.name, env);
    case 'anonset': {
      for (const item of right.items) {
        const m = keyMatches(vals, item);
        if (m === undefined) return { reason: `cannot compare with { ${item.join(' . ')} }` };
        if (m) return true;
      }
      return false;
    }
    case 'list': {
      const v = vals[0];
      if (vals.length !== 1 || !v) return { reason: 'a list compared with a concatenation' };
      for (const text of right.values) {
        const m = valueMatches(v, text);
        if (m === undefined) return { reason: `cannot compare with ${text}` };
        if (m) return true;
      }
      return false;
    }
    case 'value':
      return tell(keyMatches(vals, right.value.split(' . ')), right.value);
  }
}

/** Evaluates a `match` statement. */
export function evalMatch(s: Extract<Statement, { kind: 'match' }>, env: EvalEnv): Tri {
  const r = read(s.left, env);
  if (r.kind === 'missing') return false;
  if (r.kind === 'unsupported') return { reason: r.reason };
  const list = r.vals;
  if (s.op === '==' || s.op === '!=') {
    const m = matchesOperand(list, s.right, env);
    if (typeof m !== 'boolean') return m;
    return s.op === '==' ? m : !m;
  }
  const v = list[0];
  if (list.length !== 1 || !v || s.right.kind !== 'value')
    return { reason: `${s.op} needs one number on each side` };
  const c = compareNumbers(v, s.op, s.right.value);
  return c === undefined ? { reason: `cannot compare ${s.op} ${s.right.value}` } : c;
}

function elementLookup(e: NftElement | undefined, key: string): Lookup {
  if (!e) return { found: false };
  if (!e.value) return { found: false, reason: `element ${key} has no value` };
  return {
    found: true,
    value: e.value,
    key,
    ...(e.comment !== undefined ? { comment: e.comment } : {}),
  };
}

/** Looks the selector's values up in a named map or in anonymous map entries. */
export function lookupMap(
  key: Selector,
  map:
    | { readonly kind: 'setref'; readonly name: string }
    | { readonly kind: 'anonmap'; readonly entries: readonly MapEntry[] },
  env: EvalEnv,
): Lookup {
  const r = read(key, env);
  if (r.kind === 'missing') return { found: false };
  if (r.kind === 'unsupported') return { found: false, reason: r.reason };
  const list = r.vals;
  const keyText = list.map(valueText).join(' . ');
  if (map.kind === 'setref') {
    const set = env.view.lookupSet(env.table, map.name);
    if (!set)
      return { found: false, reason: `no map @${map.name} in table ${env.table.table.table}` };
    return elementLookup(findElement(set, list), keyText);
  }
  for (const entry of map.entries) {
    const m = keyMatches(list, entry.key);
    if (m === undefined)
      return { found: false, reason: `cannot compare with ${entry.key.join(' . ')}` };
    if (m) return { found: true, value: entry.value, key: keyText };
  }
  return { found: false };
}
