// An in-memory nftables that applies a transaction ATOMICALLY or rejects it whole, as
// knftables' Fake does and the kernel would (reference §4.2). Each operation is checked
// against the state left by the ones before it: a rule's chain, its jump/goto/vmap targets
// and its @set/@map references must exist; `create` of an existing object, `delete` of a
// missing one, deleting a chain that is not empty or still referenced (by a rule or a map
// element) or a set a rule uses, an element whose key does not fit its set's type, or an
// element for a missing set fail the whole transaction with an NftError naming the
// operation; nothing changes then. It keeps rule handles as the kernel does, remembers the
// last transaction (knftables' LastTransaction, for operation counts), lists objects, dumps
// its state as `add …` lines (render.ts dump) and loads such text (the fixtures'
// preloadRuleset). Production code (dry runs, the tracer, tests) uses it. No I/O.

import { SvcnetError } from '../../errors.js';
import type {
  ChainState,
  NftChain,
  NftElement,
  NftRule,
  NftSet,
  NftTable,
  Operation,
  Ruleset,
  SetState,
  TableRef,
  TableState,
  Transaction,
} from './model.js';
import { elementKey, emptyRuleset, tableKey } from './model.js';
import { parseTransaction } from './parse.js';
import { dump, renderOperation } from './render.js';
import { checkElementKey, checkElementValue, ruleReferences } from './fake-check.js';

/** A transaction the Fake (or nft) refused. `index` is the failing operation (0-based). */
export class NftError extends SvcnetError {
  readonly index: number;

  constructor(index: number, op: Operation, reason: string) {
    const line = renderOperation(op);
    const shown = line.length > 200 ? `${line.slice(0, 197)}...` : line;
    super('NFT_FAILED', `operation ${String(index + 1)} (${shown}): ${reason}`);
    this.index = index;
    this.name = 'NftError';
  }
}

/** Why one operation failed; wrapped into an NftError by run(). */
class Refused extends Error {}

function refuse(reason: string): never {
  throw new Refused(reason);
}

function cloneTable(t: TableState): TableState {
  const chains = new Map<string, ChainState>();
  for (const [k, c] of t.chains) chains.set(k, { chain: c.chain, rules: [...c.rules] });
  const sets = new Map<string, SetState>();
  for (const [k, s] of t.sets) sets.set(k, { set: s.set, elements: new Map(s.elements) });
  return { table: t.table, chains, sets };
}

function cloneRuleset(rs: Ruleset): Ruleset {
  const tables = new Map<string, TableState>();
  for (const [k, t] of rs.tables) tables.set(k, cloneTable(t));
  return { tables };
}

const sameList = (a?: readonly string[], b?: readonly string[]): boolean =>
  (a ?? []).join(' . ') === (b ?? []).join(' . ');

/** The working state of one transaction. */
class Apply {
  readonly rs: Ruleset;
  nextHandle: number;
  /**
   * How many rules and map elements name each chain (`table\0chain`), built at the first
   * chain delete of a transaction and kept current after it, so deleting many chains
   * costs one scan, not one per chain.
   */
  private refs: Map<string, number> | undefined;

  constructor(rs: Ruleset, nextHandle: number) {
    this.rs = rs;
    this.nextHandle = nextHandle;
  }

  private buildRefs(): Map<string, number> {
    const refs = new Map<string, number>();
    for (const t of this.rs.tables.values()) {
      const tk = tableKey(t.table);
      const add = (chain: string): void => {
        const k = `${tk}\0${chain}`;
        refs.set(k, (refs.get(k) ?? 0) + 1);
      };
      for (const c of t.chains.values())
        for (const r of c.rules) ruleReferences(r).chains.forEach(add);
      for (const st of t.sets.values()) for (const e of st.elements.values()) elementTarget(e, add);
    }
    return refs;
  }

  /** Counts (delta +1/-1) the chains a rule or element names, when the index exists. */
  private track(t: TableState, what: NftRule | NftElement, delta: number): void {
    const refs = this.refs;
    if (refs === undefined) return;
    const tk = tableKey(t.table);
    const bump = (chain: string): void => {
      const k = `${tk}\0${chain}`;
      refs.set(k, (refs.get(k) ?? 0) + delta);
    };
    if (what.kind === 'rule') ruleReferences(what).chains.forEach(bump);
    else elementTarget(what, bump);
  }

  private isReferenced(t: TableState, chain: string): boolean {
    this.refs ??= this.buildRefs();
    return (this.refs.get(`${tableKey(t.table)}\0${chain}`) ?? 0) > 0;
  }

  table(ref: TableRef): TableState {
    return this.rs.tables.get(tableKey(ref)) ?? refuse(`no such table ${tableKey(ref)}`);
  }

  chain(t: TableState, name: string): ChainState {
    return t.chains.get(name) ?? refuse(`no such chain ${JSON.stringify(name)}`);
  }

  set(t: TableState, name: string): SetState {
    return t.sets.get(name) ?? refuse(`no such set or map ${JSON.stringify(name)}`);
  }

  apply(op: Operation): void {
    const o = op.object;
    switch (o.kind) {
      case 'table':
        this.applyTable(op.verb, o);
        return;
      case 'chain':
        this.applyChain(op.verb, o);
        return;
      case 'set':
      case 'map':
        this.applySet(op.verb, o);
        return;
      case 'element':
        this.applyElement(op.verb, o);
        return;
      case 'rule':
        this.applyRule(op.verb, o);
        return;
    }
  }

  private applyTable(verb: Operation['verb'], o: NftTable): void {
    const key = tableKey(o);
    const t = this.rs.tables.get(key);
    if (verb === 'add' || verb === 'create') {
      if (t !== undefined && verb === 'create') refuse(`table ${key} exists`);
      if (t === undefined)
        this.rs.tables.set(key, { table: o, chains: new Map(), sets: new Map() });
      else if (o.comment !== undefined) this.rs.tables.set(key, { ...t, table: o });
      return;
    }
    if (t === undefined) refuse(`no such table ${key}`);
    // Whole-table changes are rare: rebuild the reference index when next needed.
    this.refs = undefined;
    if (verb === 'delete') this.rs.tables.delete(key);
    else if (verb === 'flush') {
      for (const c of t.chains.values()) c.rules.length = 0;
      for (const s of t.sets.values()) s.elements.clear();
    } else refuse(`${verb} is not a table operation`);
  }

  private applyChain(verb: Operation['verb'], o: NftChain): void {
    const t = this.table(o);
    const c = t.chains.get(o.name);
    if (verb === 'add' || verb === 'create') {
      if (c === undefined) {
        t.chains.set(o.name, { chain: o, rules: [] });
        return;
      }
      if (verb === 'create') refuse(`chain ${JSON.stringify(o.name)} exists`);
      if (o.hook !== undefined && (o.hook !== c.chain.hook || o.type !== c.chain.type)) {
        refuse(`chain ${JSON.stringify(o.name)} exists with a different type or hook`);
      }
      if (o.comment !== undefined || o.priority !== undefined || o.policy !== undefined) {
        t.chains.set(o.name, { chain: { ...c.chain, ...o }, rules: c.rules });
      }
      return;
    }
    const state = this.chain(t, o.name);
    if (verb === 'flush') {
      for (const r of state.rules) this.track(t, r, -1);
      state.rules.length = 0;
    } else if (verb === 'delete') {
      if (state.rules.length > 0) refuse(`chain ${JSON.stringify(o.name)} is not empty`);
      if (this.isReferenced(t, o.name)) {
        refuse(`chain ${JSON.stringify(o.name)} is referenced by ${this.referrer(t, o.name)}`);
      }
      t.chains.delete(o.name);
    } else refuse(`${verb} is not a chain operation`);
  }

  /** Who refers to chain `name` (a rule or a map element), for the error. */
  private referrer(t: TableState, name: string): string {
    for (const c of t.chains.values()) {
      for (const r of c.rules) {
        if (ruleReferences(r).chains.includes(name)) return `a rule in chain ${c.chain.name}`;
      }
    }
    for (const s of t.sets.values()) {
      if (s.set.kind !== 'map') continue;
      for (const e of s.elements.values()) {
        const v = e.value;
        if (v !== undefined && (v.kind === 'jump' || v.kind === 'goto') && v.chain === name) {
          return `an element of map ${s.set.name}`;
        }
      }
    }
    return 'something';
  }

  private applySet(verb: Operation['verb'], o: NftSet): void {
    const t = this.table(o);
    const s = t.sets.get(o.name);
    if (verb === 'add' || verb === 'create') {
      if (s === undefined) {
        if (o.keyType.length === 0) refuse(`${o.kind} ${JSON.stringify(o.name)} has no type`);
        if (o.kind === 'map' && (o.valueType ?? []).length === 0) refuse('map has no value type');
        t.sets.set(o.name, { set: o, elements: new Map() });
        return;
      }
      if (verb === 'create') refuse(`${o.kind} ${JSON.stringify(o.name)} exists`);
      const same =
        s.set.kind === o.kind &&
        sameList(s.set.keyType, o.keyType) &&
        sameList(s.set.valueType, o.valueType);
      if (!same) refuse(`${s.set.kind} ${JSON.stringify(o.name)} exists with a different type`);
      return;
    }
    const state = this.set(t, o.name);
    if (state.set.kind !== o.kind) refuse(`${JSON.stringify(o.name)} is a ${state.set.kind}`);
    if (verb === 'flush') {
      for (const e of state.elements.values()) this.track(t, e, -1);
      state.elements.clear();
    } else if (verb === 'delete') {
      for (const c of t.chains.values()) {
        for (const r of c.rules) {
          if (ruleReferences(r).sets.includes(o.name)) {
            refuse(
              `${o.kind} ${JSON.stringify(o.name)} is used by a rule in chain ${c.chain.name}`,
            );
          }
        }
      }
      for (const e of state.elements.values()) this.track(t, e, -1);
      t.sets.delete(o.name);
    } else refuse(`${verb} is not a ${o.kind} operation`);
  }

  private applyElement(verb: Operation['verb'], o: NftElement): void {
    const t = this.table(o);
    const s = this.set(t, o.set);
    const key = elementKey(o.key);
    const old = s.elements.get(key);
    if (verb === 'delete') {
      if (old === undefined) refuse(`no element { ${key} } in ${o.set}`);
      this.track(t, old, -1);
      s.elements.delete(key);
      return;
    }
    if (verb !== 'add' && verb !== 'create') refuse(`${verb} is not an element operation`);
    const keyError = checkElementKey(s.set, o.key);
    if (keyError !== undefined) refuse(keyError);
    const valueError = checkElementValue(s.set, o.value);
    if (valueError !== undefined) refuse(valueError);
    const v = o.value;
    if (v !== undefined && (v.kind === 'jump' || v.kind === 'goto')) this.checkTarget(t, v.chain);
    if (old !== undefined) {
      if (verb === 'create') refuse(`element { ${key} } exists in ${o.set}`);
      if (JSON.stringify(old.value) !== JSON.stringify(o.value)) {
        refuse(`element { ${key} } exists in ${o.set} with a different value`);
      }
      return;
    }
    s.elements.set(key, o);
    this.track(t, o, 1);
  }

  private checkTarget(t: TableState, chain: string): void {
    const c = this.chain(t, chain);
    if (c.chain.hook !== undefined) refuse(`cannot jump to base chain ${JSON.stringify(chain)}`);
  }

  private checkRule(t: TableState, r: NftRule): void {
    const refs = ruleReferences(r);
    for (const name of refs.chains) this.checkTarget(t, name);
    for (const name of refs.sets) this.set(t, name);
    for (const name of refs.verdictMaps) {
      const m = this.set(t, name);
      if (m.set.kind !== 'map' || !sameList(m.set.valueType, ['verdict'])) {
        refuse(`${JSON.stringify(name)} is not a verdict map`);
      }
    }
  }

  private position(rules: readonly NftRule[], r: NftRule): number {
    if (r.handle === undefined) return -1;
    const at = rules.findIndex((x) => x.handle === r.handle);
    if (at < 0) refuse(`no rule with handle ${String(r.handle)} in chain ${r.chain}`);
    return at;
  }

  private applyRule(verb: Operation['verb'], r: NftRule): void {
    const t = this.table(r);
    const c = this.chain(t, r.chain);
    const rules = c.rules;
    if (verb === 'delete') {
      const [gone] = rules.splice(this.position(rules, r), 1);
      if (gone !== undefined) this.track(t, gone, -1);
      return;
    }
    this.checkRule(t, r);
    if (verb === 'replace') {
      const at = this.position(rules, r);
      if (at < 0) refuse('replace rule needs a handle');
      const old = rules[at];
      if (old !== undefined) this.track(t, old, -1);
      rules[at] = placed(r, r.handle ?? 0);
      this.track(t, r, 1);
      return;
    }
    if (verb === 'flush') refuse('flush is not a rule operation');
    const rule = placed(r, this.nextHandle++);
    const insert = verb === 'insert';
    let at: number;
    if (r.index !== undefined) {
      if (r.index >= rules.length)
        refuse(`no rule at index ${String(r.index)} in chain ${r.chain}`);
      at = insert ? r.index : r.index + 1;
    } else if (r.handle !== undefined) {
      at = insert ? this.position(rules, r) : this.position(rules, r) + 1;
    } else {
      at = insert ? 0 : rules.length;
    }
    rules.splice(at, 0, rule);
    this.track(t, rule, 1);
  }
}

/** Calls `f` with the chain an element's verdict names, if any. */
function elementTarget(e: NftElement, f: (chain: string) => void): void {
  const v = e.value;
  if (v !== undefined && (v.kind === 'jump' || v.kind === 'goto')) f(v.chain);
}

/** The rule as stored: with its kernel handle, without a requested index. */
function placed(r: NftRule, handle: number): NftRule {
  const copy: { -readonly [K in keyof NftRule]: NftRule[K] } = { ...r, handle };
  delete copy.index;
  return copy;
}

/** The definitions first, so `add …` text in any order loads (what a dump looks like). */
const LOAD_RANK: Readonly<Record<string, number>> = {
  table: 0,
  chain: 1,
  set: 2,
  map: 2,
  rule: 3,
  element: 4,
};

export class NftFake {
  private state: Ruleset = emptyRuleset();
  private nextHandle = 1;
  /** The last transaction run() applied (knftables' LastTransaction). */
  lastTransaction: Transaction | undefined;

  /**
   * Applies `tx` atomically: every operation or none. Throws NftError (code NFT_FAILED)
   * naming the first operation that fails; the state is then unchanged.
   */
  run(tx: Transaction): void {
    this.applyAll(tx);
    this.lastTransaction = tx;
  }

  /** run() for `nft -f` text (parse errors: INVALID_INPUT naming the line). */
  runText(text: string): void {
    this.run(parseTransaction(text));
  }

  /**
   * Preloads state from `add …` lines (the fixtures' preloadRuleset, or a dump): adds are
   * applied definitions first (tables, chains, sets/maps, rules, elements), keeping their
   * order within each kind; any other verb keeps the text's order. Not a lastTransaction.
   */
  load(text: string): void {
    const ops = parseTransaction(text);
    const addsOnly = ops.every((o) => o.verb === 'add' || o.verb === 'create');
    const ordered = addsOnly
      ? ops
          .map((op, i) => ({ op, i }))
          .sort(
            (a, b) =>
              (LOAD_RANK[a.op.object.kind] ?? 0) - (LOAD_RANK[b.op.object.kind] ?? 0) || a.i - b.i,
          )
          .map(({ op }) => op)
      : ops;
    this.applyAll(ordered);
  }

  private applyAll(tx: Transaction): void {
    const work = new Apply(cloneRuleset(this.state), this.nextHandle);
    tx.forEach((op, i) => {
      try {
        work.apply(op);
      } catch (e) {
        if (e instanceof Refused) throw new NftError(i, op, e.message);
        throw e;
      }
    });
    this.state = work.rs;
    this.nextHandle = work.nextHandle;
  }

  /** A copy of the current state. */
  ruleset(): Ruleset {
    return cloneRuleset(this.state);
  }

  /** The state as `add …` lines (knftables Fake Dump order). */
  dump(): string {
    return dump(this.state);
  }

  private tableOf(ref: TableRef): TableState {
    const t = this.state.tables.get(tableKey(ref));
    if (t === undefined) throw new SvcnetError('NOT_FOUND', `no such table ${tableKey(ref)}`);
    return t;
  }

  /** Names of the table's chains, sorted. Throws NOT_FOUND for a missing table. */
  listChains(ref: TableRef): string[] {
    return [...this.tableOf(ref).chains.keys()].sort();
  }

  /** Names of the table's sets (or maps), sorted. Throws NOT_FOUND for a missing table. */
  listSets(ref: TableRef, kind: 'set' | 'map' = 'set'): string[] {
    const out: string[] = [];
    for (const s of this.tableOf(ref).sets.values()) if (s.set.kind === kind) out.push(s.set.name);
    return out.sort();
  }

  /** The elements of a set or map. Throws NOT_FOUND for a missing table or set. */
  listElements(ref: TableRef, set: string): NftElement[] {
    const s = this.tableOf(ref).sets.get(set);
    if (s === undefined) throw new SvcnetError('NOT_FOUND', `no such set or map ${set}`);
    return [...s.elements.values()];
  }

  /** The rules of a chain, in order (with handles). Throws NOT_FOUND if missing. */
  listRules(ref: TableRef, chain: string): NftRule[] {
    const c = this.tableOf(ref).chains.get(chain);
    if (c === undefined) throw new SvcnetError('NOT_FOUND', `no such chain ${chain}`);
    return [...c.rules];
  }
}
