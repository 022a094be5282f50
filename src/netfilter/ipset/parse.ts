// Reads `ipset save` output and `ipset restore` scripts back into the model: create lines
// with ipset 7.x's options (family, hashsize, maxelem, range, comment; `bucketsize`,
// `initval`, `counters`, `forceadd` are accepted and dropped as per-boot or unused), add/del
// lines with an optional quoted comment, flush/destroy/swap and `-exist` (`-!`). Errors are
// SvcnetError INVALID_INPUT `line N: ...`. Pure; values are kept as written (the Fake
// canonicalizes them).

import { SvcnetError } from '../../errors.js';
import {
  isIpsetType,
  sortEntries,
  type IpsetEntry,
  type IpsetFamily,
  type IpsetSet,
} from './model.js';
import type { IpsetOperation } from './render.js';

/** Splits a line into words; double-quoted words may hold spaces and `\"`. */
export function tokenizeLine(line: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (line[i] === ' ' || line[i] === '\t') {
      i++;
      continue;
    }
    if (line[i] === '"') {
      let word = '';
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length) i++;
        word += line.charAt(i);
        i++;
      }
      if (i >= line.length) throw new Error('unterminated quoted string');
      i++;
      words.push(word);
      continue;
    }
    let j = i;
    while (j < line.length && line[j] !== ' ' && line[j] !== '\t') j++;
    words.push(line.slice(i, j));
    i = j;
  }
  return words;
}

function takeExist(words: string[]): boolean {
  const idx = words.findIndex((w) => w === '-exist' || w === '-!');
  if (idx < 0) return false;
  words.splice(idx, 1);
  return true;
}

function intArg(word: string | undefined, what: string): number {
  if (word === undefined || !/^\d+$/.test(word)) throw new Error(`${what} needs a number`);
  return Number(word);
}

const DROPPED_FLAGS = new Set(['counters', 'forceadd', 'skbinfo']);
const DROPPED_VALUES = new Set(['bucketsize', 'initval', 'timeout', 'netmask', 'markmask']);

function parseCreate(words: readonly string[]): IpsetSet {
  const [name, type, ...rest] = words;
  if (name === undefined || type === undefined) throw new Error('create needs a name and a type');
  if (!isIpsetType(type)) throw new Error(`unsupported set type ${type}`);
  let family: IpsetFamily | undefined = type.startsWith('bitmap:') ? undefined : 'inet';
  const options: {
    hashsize?: number;
    maxelem?: number;
    range?: { from: number; to: number };
    comment?: boolean;
  } = {};
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i] ?? '';
    if (w === 'family') {
      const f = rest[++i];
      if (f !== 'inet' && f !== 'inet6') throw new Error(`bad family ${String(f)}`);
      family = f;
    } else if (w === 'hashsize') options.hashsize = intArg(rest[++i], w);
    else if (w === 'maxelem') options.maxelem = intArg(rest[++i], w);
    else if (w === 'comment') options.comment = true;
    else if (w === 'range') {
      const m = /^(\d+)-(\d+)$/.exec(rest[++i] ?? '');
      if (!m) throw new Error('range needs FROM-TO');
      options.range = { from: Number(m[1]), to: Number(m[2]) };
    } else if (DROPPED_VALUES.has(w)) i++;
    else if (!DROPPED_FLAGS.has(w)) throw new Error(`unknown create option ${w}`);
  }
  return { name, type, ...(family ? { family } : {}), options, entries: [] };
}

function parseEntry(words: readonly string[]): { name: string; entry: IpsetEntry } {
  const [name, value, ...rest] = words;
  if (name === undefined || value === undefined) throw new Error('needs a set name and an entry');
  let comment: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i] ?? '';
    if (w === 'comment') {
      comment = rest[++i];
      if (comment === undefined) throw new Error('comment needs a value');
    } else if (DROPPED_VALUES.has(w) || w === 'packets' || w === 'bytes') i++;
    else throw new Error(`unknown entry option ${w}`);
  }
  return { name, entry: comment === undefined ? { value } : { value, comment } };
}

function parseWords(words: string[]): IpsetOperation {
  const exist = takeExist(words);
  const [verb, ...args] = words;
  switch (verb) {
    case 'create':
    case 'n':
      return { verb: 'create', set: parseCreate(args), ...(exist ? { exist } : {}) };
    case 'add':
    case 'a':
    case 'del':
    case 'd': {
      const { name, entry } = parseEntry(args);
      const v = verb === 'add' || verb === 'a' ? 'add' : 'del';
      return { verb: v, name, entry, ...(exist ? { exist } : {}) };
    }
    case 'flush':
    case 'destroy':
    case 'x':
      if (args.length > 1) throw new Error(`${verb} takes at most one set name`);
      return {
        verb: verb === 'x' ? 'destroy' : verb,
        ...(args[0] !== undefined ? { name: args[0] } : {}),
      };
    case 'swap':
    case 'w':
      if (args.length !== 2) throw new Error('swap takes two set names');
      return { verb: 'swap', name: args[0] ?? '', other: args[1] ?? '' };
    default:
      throw new Error(`unknown command ${String(verb)}`);
  }
}

/** Parses an `ipset restore` script (or `ipset save` output) into operations. */
export function parseRestore(text: string): IpsetOperation[] {
  const ops: IpsetOperation[] = [];
  text.split('\n').forEach((raw, idx) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      ops.push(parseWords(tokenizeLine(line)));
    } catch (err) {
      throw new SvcnetError('INVALID_INPUT', `line ${String(idx + 1)}: ${(err as Error).message}`);
    }
  });
  return ops;
}

/** Parses `ipset save` output into sets (entries sorted). Only create and add lines. */
export function parseSave(text: string): Map<string, IpsetSet> {
  const sets = new Map<string, IpsetSet>();
  const entries = new Map<string, IpsetEntry[]>();
  for (const op of parseRestore(text)) {
    if (op.verb === 'create') {
      sets.set(op.set.name, op.set);
      entries.set(op.set.name, []);
    } else if (op.verb === 'add') {
      const list = entries.get(op.name);
      if (!list)
        throw new SvcnetError('INVALID_INPUT', `add to set ${op.name} before its create line`);
      list.push(op.entry);
    } else {
      throw new SvcnetError(
        'INVALID_INPUT',
        `ipset save output holds only create and add lines, not ${op.verb}`,
      );
    }
  }
  for (const [name, set] of sets)
    sets.set(name, { ...set, entries: sortEntries(entries.get(name) ?? []) });
  return sets;
}
