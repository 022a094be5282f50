// How a transaction is written for `nft -f -`. nft 1.0.6 downloads every table's chains and
// sets (and objects, flowtables) before it evaluates an `add rule`, `add element` or any
// `delete`: at 10k Services that is 10k anonymous maps and 20k chains per call, ~40 ms. It
// downloads nothing but the table list for `add chain`, `add set`/`add map` (with or without
// elements) and `flush chain`. So the cache-free form writes the SAME objects differently:
//   add rule T C r1 / add rule T C r2   ->  add chain T C { r1 ; r2 ; }
//   add element T S { a } / { b }       ->  add set T S { <S's definition> elements = { a, b } ; }
// (re-adding a set with its own definition is a no-op in the kernel). A rule naming a set
// (`@cluster-ips`) is written that way only when the set is declared earlier in the same
// transaction, or its definition is known (then it is re-declared first): nft resolves set
// references from that cache. Anything else is written as the plain renderer writes it.
// The rules and elements reaching the kernel are byte for byte the renderer's. Each output
// line records the operations it carries (and their columns), so an error nft reports by
// line and column names the operation. Pure.

import type { NftElement, NftRule, NftSet, Operation, TableRef, Transaction } from './model.js';
import { renderElementItem, renderOperation } from './render.js';
import { renderRule } from './rule.js';
import { ruleReferences } from './fake-check.js';

/** One line handed to nft: the operations it carries, with their 1-based start columns. */
export interface EncodedLine {
  readonly ops: readonly number[];
  /** Parallel to ops when the line carries several (grouped elements or rules). */
  readonly cols?: readonly number[];
}

export interface Encoded {
  readonly text: string;
  readonly lines: readonly EncodedLine[];
}

/** Named sets' definitions by `family table name`. */
export type SetDefinitions = Map<string, NftSet>;

export function setKey(ref: TableRef, name: string): string {
  return `${ref.family} ${ref.table} ${name}`;
}

/** Keeps `defs` in step with what an applied transaction declared or deleted. */
export function learnDefinitions(defs: SetDefinitions, tx: Transaction): void {
  for (const { verb, object: o } of tx) {
    if (o.kind === 'set' || o.kind === 'map') {
      if (verb === 'add' || verb === 'create') defs.set(setKey(o, o.name), o);
      else if (verb === 'delete') defs.delete(setKey(o, o.name));
    } else if (o.kind === 'table' && verb === 'delete') {
      const prefix = `${o.family} ${o.table} `;
      for (const k of [...defs.keys()]) if (k.startsWith(prefix)) defs.delete(k);
    }
  }
}

/** One line per operation, as the renderer writes it. */
export function encodePlain(tx: Transaction): Encoded {
  const lines = tx.map((_, i) => ({ ops: [i] }));
  return { text: tx.map((op) => `${renderOperation(op)}\n`).join(''), lines };
}

class Writer {
  readonly out: string[] = [];
  readonly lines: EncodedLine[] = [];
  push(text: string, ops: readonly number[], cols?: readonly number[]): void {
    this.out.push(text);
    this.lines.push(cols === undefined ? { ops } : { ops, cols });
  }
  /** A head, then items separated by `sep`, then a tail; records each item's column. */
  group(head: string, items: readonly string[], sep: string, tail: string, ops: number[]): void {
    const cols: number[] = [];
    let text = head;
    items.forEach((item, k) => {
      if (k > 0) text += sep;
      cols.push(text.length + 1);
      text += item;
    });
    this.push(text + tail, ops, cols);
  }
}

function isPlainAddRule(op: Operation): op is Operation & { object: NftRule } {
  const o = op.object;
  return op.verb === 'add' && o.kind === 'rule' && o.handle === undefined && o.index === undefined;
}

function sameChain(a: NftRule, b: NftRule): boolean {
  return a.chain === b.chain && a.table === b.table && a.family === b.family;
}

/** Sets a rule names, or undefined when it may name some the model does not show. */
function namedSets(r: NftRule): string[] | undefined {
  if (r.statements.some((s) => s.kind === 'unsupported' && s.text.includes('@'))) return undefined;
  const refs = ruleReferences(r);
  return [...refs.sets, ...refs.verdictMaps];
}

/** `add set|map F T NAME { …definition… ` without the closing brace. */
function definitionHead(def: NftSet): string {
  const text = renderOperation({ verb: 'add', object: def });
  return text.endsWith(' }') ? text.slice(0, -1) : `${text} { `;
}

/** Whether elements of this set can go in a definition (no interval auto-merge). */
function groupable(def: NftSet | undefined): def is NftSet {
  return def !== undefined && !(def.flags ?? []).includes('interval');
}

/** What the encoders of a run share. */
interface Context {
  readonly tx: Transaction;
  readonly defs: SetDefinitions;
  readonly declared: Set<string>;
  readonly w: Writer;
}

/** See the file header. `known` holds definitions of sets that exist before this transaction. */
export function encodeFast(tx: Transaction, known: ReadonlyMap<string, NftSet>): Encoded {
  const defs: SetDefinitions = new Map(known);
  const declared = new Set<string>();
  const w = new Writer();
  const ctx: Context = { tx, defs, declared, w };
  const plain = (i: number): void => {
    const op = tx[i];
    if (op !== undefined) w.push(renderOperation(op), [i]);
  };
  let i = 0;
  while (i < tx.length) {
    const op = tx[i] as Operation;
    const o = op.object;
    if (isPlainAddRule(op)) {
      let j = i + 1;
      while (j < tx.length && isPlainAddRule(tx[j] as Operation)) {
        if (!sameChain((tx[j] as Operation).object as NftRule, o as NftRule)) break;
        j++;
      }
      rules(ctx, i, j);
      i = j;
      continue;
    }
    if ((op.verb === 'add' || op.verb === 'delete') && o.kind === 'element') {
      let j = i + 1;
      while (j < tx.length) {
        const next = tx[j] as Operation;
        if (next.verb !== op.verb || next.object.kind !== 'element') break;
        j++;
      }
      elements(ctx, i, j);
      i = j;
      continue;
    }
    plain(i);
    if (o.kind === 'set' || o.kind === 'map') {
      if (op.verb === 'add' || op.verb === 'create') declared.add(setKey(o, o.name));
      else if (op.verb === 'delete') declared.delete(setKey(o, o.name));
    }
    learnDefinitions(defs, [op]);
    i++;
  }
  return { text: w.out.map((l) => `${l}\n`).join(''), lines: w.lines };
}

function rules(c: Context, from: number, to: number): void {
  const { tx, defs, declared, w } = c;
  const run: number[] = [];
  for (let k = from; k < to; k++) run.push(k);
  const first = (tx[from] as Operation).object as NftRule;
  const redeclare: NftSet[] = [];
  for (const k of run) {
    const names = namedSets((tx[k] as Operation).object as NftRule);
    if (names === undefined) {
      writePlain(tx, run, w);
      return;
    }
    for (const n of names) {
      const key = setKey(first, n);
      if (declared.has(key) || redeclare.some((d) => d.name === n)) continue;
      const def = defs.get(key);
      if (def === undefined) {
        writePlain(tx, run, w);
        return;
      }
      redeclare.push(def);
    }
  }
  for (const def of redeclare) {
    w.push(renderOperation({ verb: 'add', object: def }), run);
    declared.add(setKey(def, def.name));
  }
  const bodies = run.map((k) => renderRule((tx[k] as Operation).object as NftRule));
  const head = `add chain ${first.family} ${first.table} ${first.chain} { `;
  w.group(head, bodies, ' ; ', ' ; }', run);
}

function writePlain(tx: Transaction, run: readonly number[], w: Writer): void {
  for (const k of run) w.push(renderOperation(tx[k] as Operation), [k]);
}

function elements(c: Context, from: number, to: number): void {
  const { tx, defs, declared, w } = c;
  const verb = (tx[from] as Operation).verb;
  // Per set in first-appearance order; within a set the transaction's order. Operations on
  // different sets commute, so regrouping them changes nothing.
  const bySet = new Map<string, number[]>();
  for (let k = from; k < to; k++) {
    const e = (tx[k] as Operation).object as NftElement;
    const key = setKey(e, e.set);
    const list = bySet.get(key);
    if (list === undefined) bySet.set(key, [k]);
    else list.push(k);
  }
  for (const [key, ks] of bySet) {
    const e0 = (tx[ks[0] as number] as Operation).object as NftElement;
    if (verb === 'delete') {
      // Still a cache fetch in nft 1.0.6, but one command per set instead of one per element.
      const items = ks.map((k) => ((tx[k] as Operation).object as NftElement).key.join(' . '));
      w.group(`delete element ${e0.family} ${e0.table} ${e0.set} { `, items, ', ', ' }', ks);
      continue;
    }
    const def = defs.get(key);
    if (!groupable(def)) {
      writePlain(tx, ks, w);
      continue;
    }
    const items = ks.map((k) => renderElementItem((tx[k] as Operation).object as NftElement));
    w.group(`${definitionHead(def)}elements = { `, items, ', ', ' } ; }', ks);
    declared.add(key);
  }
}

/** The operation (index into the encoded transaction) behind a line and column nft named. */
export function operationAt(
  enc: Encoded,
  line: number,
  column: number | undefined,
): number | undefined {
  const l = enc.lines[line - 1];
  if (l === undefined) return undefined;
  if (l.cols === undefined || column === undefined) return l.ops[0];
  let found = l.ops[0];
  l.cols.forEach((c, k) => {
    if (c <= column) found = l.ops[k];
  });
  return found;
}
