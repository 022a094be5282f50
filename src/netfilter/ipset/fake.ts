// FakeIpset: an in-memory ipset for tests, dry runs and the tracer. `run(ops)` / `restore`
// apply a whole script atomically (all or nothing, like `ipset restore` within one call's
// failure report, but stricter: nothing of a failed script sticks), with the kernel's
// refusals: create of an existing set with other parameters, add of a present entry or del
// of an absent one without `-exist`, a missing set, a full set (maxelem), destroy of a set in
// use, swap of sets of another type. Entries are validated against the set type and family
// and stored canonical (entry.ts), unless built with `{ validateEntries: false }` (the
// upstream ipset unit vectors use opaque strings). `save()` dumps canonical `ipset save` text.

import { SvcnetError, type ErrorCode } from '../../errors.js';
import { checkEntry } from './entry.js';
import {
  sortEntries,
  type IpsetEntry,
  type IpsetSet,
  type IpsetState,
  IPSET_MAX_NAME_LENGTH,
} from './model.js';
import { parseRestore } from './parse.js';
import { renderCreateOptions, renderOperation, renderSave, type IpsetOperation } from './render.js';

export class IpsetError extends SvcnetError {
  /** 0-based index of the failing operation in the script. */
  readonly index: number;

  constructor(code: ErrorCode, index: number, op: IpsetOperation, reason: string) {
    super(code, `ipset: error in line ${String(index + 1)} (${renderOperation(op)}): ${reason}`);
    this.index = index;
    this.name = 'IpsetError';
  }
}

class Refused extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

interface LiveSet {
  set: IpsetSet;
  entries: Map<string, IpsetEntry>;
}

export interface FakeIpsetOptions {
  /** Validate and canonicalize entries (default true). */
  readonly validateEntries?: boolean;
}

export class FakeIpset {
  private sets = new Map<string, LiveSet>();
  private readonly inUse = new Set<string>();
  private readonly validateEntries: boolean;

  constructor(options: FakeIpsetOptions = {}) {
    this.validateEntries = options.validateEntries ?? true;
  }

  /** Applies `ops` atomically; throws IpsetError and keeps the old state on any refusal. */
  run(ops: readonly IpsetOperation[]): void {
    const next = cloneSets(this.sets);
    ops.forEach((op, index) => {
      try {
        this.apply(next, op);
      } catch (err) {
        if (err instanceof Refused) throw new IpsetError(err.code, index, op, err.message);
        throw err;
      }
    });
    this.sets = next;
  }

  /** `ipset restore < text`. */
  restore(text: string): void {
    this.run(parseRestore(text));
  }

  /** Marks a set as referenced by a kernel component (an iptables `--match-set`). */
  setInUse(name: string, inUse: boolean): void {
    if (inUse) this.inUse.add(name);
    else this.inUse.delete(name);
  }

  has(name: string): boolean {
    return this.sets.has(name);
  }

  /** One set with its entries sorted, or undefined. */
  get(name: string): IpsetSet | undefined {
    const live = this.sets.get(name);
    return live ? snapshot(live) : undefined;
  }

  /** Entry values of a set (sorted); [] when the set does not exist. */
  entries(name: string): string[] {
    return this.get(name)?.entries.map((e) => e.value) ?? [];
  }

  state(): IpsetState {
    const out = new Map<string, IpsetSet>();
    for (const [name, live] of this.sets) out.set(name, snapshot(live));
    return out;
  }

  /** Canonical `ipset save` text. */
  save(): string {
    return renderSave(this.state());
  }

  private apply(sets: Map<string, LiveSet>, op: IpsetOperation): void {
    switch (op.verb) {
      case 'create':
        this.create(sets, op.set, op.exist ?? false);
        return;
      case 'add':
        this.add(need(sets, op.name), op.entry, op.exist ?? false);
        return;
      case 'del':
        this.del(need(sets, op.name), op.entry, op.exist ?? false);
        return;
      case 'flush':
        for (const live of op.name === undefined ? sets.values() : [need(sets, op.name)])
          live.entries.clear();
        return;
      case 'destroy':
        this.destroy(sets, op.name);
        return;
      case 'swap':
        swap(sets, op.name, op.other);
        return;
    }
  }

  private create(sets: Map<string, LiveSet>, set: IpsetSet, exist: boolean): void {
    if (set.name.length === 0 || set.name.length > IPSET_MAX_NAME_LENGTH) {
      throw new Refused(
        'INVALID_INPUT',
        `Syntax error: setname '${set.name}' is longer than ${String(IPSET_MAX_NAME_LENGTH)} characters`,
      );
    }
    const old = sets.get(set.name);
    if (old) {
      if (exist && sameParameters(old.set, set)) return;
      throw new Refused('CONFLICT', 'Set cannot be created: set with the same name already exists');
    }
    const live: LiveSet = { set: { ...set, entries: [] }, entries: new Map() };
    sets.set(set.name, live);
    for (const e of set.entries) this.add(live, e, exist);
  }

  private canonical(live: LiveSet, value: string): string {
    if (!this.validateEntries) return value;
    const check = checkEntry(live.set, value);
    if (!check.ok) throw new Refused('INVALID_INPUT', `Syntax error: ${check.reason}`);
    return check.value;
  }

  private add(live: LiveSet, entry: IpsetEntry, exist: boolean): void {
    const value = this.canonical(live, entry.value);
    if (entry.comment !== undefined && !live.set.options.comment) {
      throw new Refused(
        'INVALID_INPUT',
        `Syntax error: set ${live.set.name} was not created with comment support`,
      );
    }
    if (live.entries.has(value)) {
      if (exist) {
        live.entries.set(value, { ...entry, value });
        return;
      }
      throw new Refused('CONFLICT', "Element cannot be added to the set: it's already added");
    }
    const max = live.set.options.maxelem;
    if (max !== undefined && live.entries.size >= max) {
      throw new Refused('CONFLICT', 'Hash is full, cannot add more elements');
    }
    live.entries.set(value, { ...entry, value });
  }

  private del(live: LiveSet, entry: IpsetEntry, exist: boolean): void {
    const value = this.canonical(live, entry.value);
    if (!live.entries.delete(value) && !exist) {
      throw new Refused('NOT_FOUND', "Element cannot be deleted from the set: it's not added");
    }
  }

  private destroy(sets: Map<string, LiveSet>, name: string | undefined): void {
    const names = name === undefined ? [...sets.keys()] : [need(sets, name).set.name];
    for (const n of names) {
      if (this.inUse.has(n))
        throw new Refused(
          'CONFLICT',
          `Set cannot be destroyed: it is in use by a kernel component`,
        );
    }
    for (const n of names) sets.delete(n);
  }
}

function need(sets: Map<string, LiveSet>, name: string): LiveSet {
  const live = sets.get(name);
  if (!live) throw new Refused('NOT_FOUND', 'The set with the given name does not exist');
  return live;
}

function swap(sets: Map<string, LiveSet>, a: string, b: string): void {
  const x = need(sets, a);
  const y = need(sets, b);
  if (x.set.type !== y.set.type || (x.set.family ?? 'inet') !== (y.set.family ?? 'inet')) {
    throw new Refused('CONFLICT', 'The sets cannot be swapped: their type does not match');
  }
  sets.set(a, { set: { ...y.set, name: a }, entries: y.entries });
  sets.set(b, { set: { ...x.set, name: b }, entries: x.entries });
}

function sameParameters(a: IpsetSet, b: IpsetSet): boolean {
  return a.type === b.type && renderCreateOptions(a).join(' ') === renderCreateOptions(b).join(' ');
}

function cloneSets(sets: Map<string, LiveSet>): Map<string, LiveSet> {
  const out = new Map<string, LiveSet>();
  for (const [name, live] of sets) out.set(name, { set: live.set, entries: new Map(live.entries) });
  return out;
}

function snapshot(live: LiveSet): IpsetSet {
  return { ...live.set, entries: sortEntries([...live.entries.values()]) };
}
