// `ipset save` / `ipset restore` text for the model: `create NAME TYPE family inet hashsize
// 1024 maxelem 65536 [comment]`, `create NAME bitmap:port range 0-65535`, `add NAME VALUE
// [comment "..."]`, and the other restore verbs (del, flush, destroy, swap; `-exist`). The
// layout follows ipset 7.x save output minus the per-boot `bucketsize`/`initval` words. Pure.

import type { IpsetEntry, IpsetSet, IpsetState } from './model.js';

/** One line of an `ipset restore` script. */
export type IpsetOperation =
  | { readonly verb: 'create'; readonly set: IpsetSet; readonly exist?: boolean }
  | {
      readonly verb: 'add' | 'del';
      readonly name: string;
      readonly entry: IpsetEntry;
      readonly exist?: boolean;
    }
  | { readonly verb: 'flush' | 'destroy'; readonly name?: string }
  | { readonly verb: 'swap'; readonly name: string; readonly other: string };

function quote(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The words after `create NAME TYPE` as ipset 7 prints them. */
export function renderCreateOptions(set: IpsetSet): string[] {
  const words: string[] = [];
  const o = set.options;
  if (set.type.startsWith('bitmap:')) {
    if (o.range) words.push('range', `${String(o.range.from)}-${String(o.range.to)}`);
  } else {
    words.push('family', set.family ?? 'inet');
    if (o.hashsize !== undefined) words.push('hashsize', String(o.hashsize));
    if (o.maxelem !== undefined) words.push('maxelem', String(o.maxelem));
  }
  if (o.comment) words.push('comment');
  return words;
}

export function renderCreate(set: IpsetSet, exist = false): string {
  const words = ['create', set.name, set.type, ...renderCreateOptions(set)];
  if (exist) words.push('-exist');
  return words.join(' ');
}

export function renderEntry(
  verb: 'add' | 'del',
  name: string,
  entry: IpsetEntry,
  exist = false,
): string {
  let line = `${verb} ${name} ${entry.value}`;
  if (verb === 'add' && entry.comment !== undefined) line += ` comment ${quote(entry.comment)}`;
  return exist ? `${line} -exist` : line;
}

export function renderOperation(op: IpsetOperation): string {
  switch (op.verb) {
    case 'create':
      return renderCreate(op.set, op.exist);
    case 'add':
    case 'del':
      return renderEntry(op.verb, op.name, op.entry, op.exist);
    case 'flush':
    case 'destroy':
      return op.name === undefined ? op.verb : `${op.verb} ${op.name}`;
    case 'swap':
      return `swap ${op.name} ${op.other}`;
  }
}

/** A restore script: one line per operation, each ending in a newline. */
export function renderRestore(ops: readonly IpsetOperation[]): string {
  return ops.map((op) => `${renderOperation(op)}\n`).join('');
}

/** `ipset save` of one set: its create line then its entries in order. */
export function renderSet(set: IpsetSet): string {
  return [renderCreate(set), ...set.entries.map((e) => renderEntry('add', set.name, e))]
    .map((l) => `${l}\n`)
    .join('');
}

/** `ipset save` of a state: sets in name order (canonical; the kernel keeps creation order). */
export function renderSave(state: IpsetState): string {
  return [...state.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(renderSet)
    .join('');
}
