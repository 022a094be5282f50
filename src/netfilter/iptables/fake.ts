// The iptables seam (one IP family, like kube-proxy's utiliptables.Interface) and its atomic
// in-memory Fake. The Fake applies iptables-restore input the way the kernel would: with
// --noflush a declared chain is created or flushed, undeclared chains keep their rules,
// `-X` deletes; without it every table in the input is flushed first. A rule that jumps to
// a chain that does not exist, a rule appended to a missing chain, a rule its typed form
// (rule.ts) refuses (a DNAT without --to-destination, an option missing its value), or deleting
// a chain that is referenced, non-empty or built in fails the WHOLE restore and changes nothing. It dumps
// its state as iptables-save text. Production code (dry runs, the tracer, tests) uses it.

import { SvcnetError } from '../../errors.js';
import type { IPFamily } from '../../util/ip.js';
import type { IptablesDocument, IptablesTableName, Rule } from './model.js';
import { BUILTIN_CHAINS, TABLE_NAMES, isBuiltinChain } from './model.js';
import { parseDocument } from './parse.js';
import { renderRule } from './render.js';
import { targetOf, typedRuleOf, validateRule } from './rule.js';

export interface RestoreOptions {
  /** `--noflush`: keep chains the input does not declare (kube-proxy always sets it). */
  readonly noflush: boolean;
  /** `--counters`: accepted; the Fake keeps no counters. */
  readonly counters?: boolean;
}

/** Where ensureRule puts a missing rule. */
export type RulePosition = 'prepend' | 'append';

/** One family's iptables, as the proxy uses it. Real implementations exec the binaries. */
export interface Iptables {
  readonly family: IPFamily;
  /** `iptables-restore` the text; throws SvcnetError IPTABLES_RESTORE_FAILED on failure. */
  restore(text: string, options: RestoreOptions): Promise<void>;
  /** `iptables-save [-t table]` output. */
  save(table?: IptablesTableName): Promise<string>;
  /** Creates the chain if missing; returns true if it already existed. */
  ensureChain(table: IptablesTableName, chain: string): Promise<boolean>;
  /** Adds the rule if no identical rule exists; returns true if it already existed. */
  ensureRule(
    position: RulePosition,
    table: IptablesTableName,
    chain: string,
    args: readonly string[],
  ): Promise<boolean>;
  /** Whether the chain exists (the canary check). */
  chainExists(table: IptablesTableName, chain: string): Promise<boolean>;
}

interface ChainState {
  policy: string;
  rules: (readonly string[])[];
}

type TableState = Map<string, ChainState>;

/** Targets that are not chains (the extensions kube-proxy and common tools use). */
const STANDARD_TARGETS = new Set([
  'ACCEPT',
  'DROP',
  'RETURN',
  'QUEUE',
  'REJECT',
  'MARK',
  'MASQUERADE',
  'DNAT',
  'SNAT',
  'REDIRECT',
  'LOG',
  'CONNMARK',
  'NOTRACK',
  'CT',
  'TPROXY',
  'TCPMSS',
]);

function emptyTable(table: IptablesTableName): TableState {
  const t: TableState = new Map();
  for (const c of BUILTIN_CHAINS[table]) t.set(c, { policy: 'ACCEPT', rules: [] });
  return t;
}

function cloneTable(t: TableState): TableState {
  const out: TableState = new Map();
  for (const [name, c] of t) out.set(name, { policy: c.policy, rules: [...c.rules] });
  return out;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function fail(message: string): never {
  throw new SvcnetError('IPTABLES_RESTORE_FAILED', message);
}

function jumpTarget(args: readonly string[]): string | undefined {
  return targetOf(args);
}

/** The first problem the rule's typed form has, as iptables-restore would refuse it. */
function ruleProblem(args: readonly string[]): string | undefined {
  return validateRule(typedRuleOf(args))[0];
}

/** Applies one parsed table section to a copy of the table state (throws on error). */
function applyTable(
  base: TableState,
  section: IptablesDocument['tables'][number],
  noflush: boolean,
): TableState {
  const name = section.name;
  const t = noflush ? cloneTable(base) : emptyTable(name);
  const where = (r: Rule | undefined) => (r?.line !== undefined ? `line ${r.line}: ` : '');
  for (const c of section.chains) {
    const existing = t.get(c.name);
    const builtin = isBuiltinChain(name, c.name);
    if (builtin && c.policy === '-') fail(`${name}: built-in chain ${c.name} needs a policy`);
    if (!builtin && c.policy !== '-') fail(`${name}: user chain ${c.name} cannot have a policy`);
    t.set(c.name, { policy: builtin ? c.policy : '-', rules: [] });
    if (existing && builtin && c.policy === '-') t.set(c.name, existing);
  }
  for (const f of section.flushChains ?? []) {
    const c = t.get(f);
    if (!c) fail(`${name}: -F ${f}: no chain by that name`);
    c.rules = [];
  }
  for (const r of section.rules) {
    const c = t.get(r.chain);
    if (!c) fail(`${where(r)}${name}: ${r.chain}: no chain by that name`);
    const problem = ruleProblem(r.args);
    if (problem !== undefined) fail(`${where(r)}${name}: ${r.chain}: ${problem}`);
    if (r.insert) {
      const pos = (r.insert.position ?? 1) - 1;
      if (pos > c.rules.length) fail(`${where(r)}${name}: -I ${r.chain} ${pos + 1}: index too big`);
      c.rules.splice(pos, 0, r.args);
    } else c.rules.push(r.args);
  }
  for (const x of section.deleteChains) {
    const c = t.get(x);
    if (!c) fail(`${name}: -X ${x}: no chain by that name`);
    if (isBuiltinChain(name, x)) fail(`${name}: -X ${x}: cannot delete a built-in chain`);
    if (c.rules.length > 0) fail(`${name}: -X ${x}: chain is not empty`);
    t.delete(x);
  }
  checkReferences(name, t, section.deleteChains);
  return t;
}

function checkReferences(name: string, t: TableState, deleted: readonly string[]): void {
  const gone = new Set(deleted);
  for (const [chain, c] of t)
    for (const args of c.rules) {
      const target = jumpTarget(args);
      if (target === undefined || STANDARD_TARGETS.has(target) || t.has(target)) continue;
      if (gone.has(target))
        fail(`${name}: -X ${target}: chain is still referenced from ${chain} (Too many links)`);
      fail(`${name}: ${chain}: jump to ${target}: no chain or target by that name`);
    }
}

/** The atomic in-memory iptables of one family (see file header). */
export class FakeIptables implements Iptables {
  readonly family: IPFamily;
  private tables = new Map<IptablesTableName, TableState>();
  /** Every restore input applied or attempted, in order (for tests and dry runs). */
  readonly restores: { text: string; options: RestoreOptions; ok: boolean }[] = [];

  constructor(family: IPFamily = 'IPv4') {
    this.family = family;
  }

  private table(name: IptablesTableName): TableState {
    let t = this.tables.get(name);
    if (!t) {
      t = emptyTable(name);
      this.tables.set(name, t);
    }
    return t;
  }

  /** Synchronous restore (the async interface method wraps it). */
  restoreSync(text: string, options: RestoreOptions): void {
    try {
      let doc: IptablesDocument;
      try {
        doc = parseDocument(text);
      } catch (e) {
        fail(`iptables-restore: ${e instanceof Error ? e.message : String(e)}`);
      }
      const next = new Map(this.tables);
      for (const section of doc.tables)
        next.set(
          section.name,
          applyTable(next.get(section.name) ?? emptyTable(section.name), section, options.noflush),
        );
      this.tables = next;
      this.restores.push({ text, options, ok: true });
    } catch (e) {
      this.restores.push({ text, options, ok: false });
      throw e;
    }
  }

  restore(text: string, options: RestoreOptions): Promise<void> {
    return new Promise((resolve) => {
      this.restoreSync(text, options);
      resolve();
    });
  }

  /** iptables-save text of one table, or all tables that exist. */
  saveSync(table?: IptablesTableName): string {
    const names = table ? [table] : TABLE_NAMES.filter((n) => this.tables.has(n));
    return names.map((n) => this.renderTable(n)).join('');
  }

  save(table?: IptablesTableName): Promise<string> {
    return Promise.resolve(this.saveSync(table));
  }

  private renderTable(name: IptablesTableName): string {
    const t = this.table(name);
    const builtins = BUILTIN_CHAINS[name];
    const user = [...t.keys()].filter((c) => !builtins.includes(c)).sort();
    const order = [...builtins, ...user];
    const lines = [`*${name}`];
    for (const c of order) lines.push(`:${c} ${t.get(c)?.policy ?? '-'} [0:0]`);
    for (const c of order)
      for (const args of t.get(c)?.rules ?? []) lines.push(renderRule({ chain: c, args }));
    lines.push('COMMIT');
    return lines.join('\n') + '\n';
  }

  ensureChainSync(table: IptablesTableName, chain: string): boolean {
    const t = this.table(table);
    if (t.has(chain)) return true;
    t.set(chain, { policy: '-', rules: [] });
    return false;
  }

  ensureChain(table: IptablesTableName, chain: string): Promise<boolean> {
    return Promise.resolve(this.ensureChainSync(table, chain));
  }

  ensureRuleSync(
    position: RulePosition,
    table: IptablesTableName,
    chain: string,
    args: readonly string[],
  ): boolean {
    const c = this.table(table).get(chain);
    if (!c)
      throw new SvcnetError('IPTABLES_RESTORE_FAILED', `${table}: ${chain}: no chain by that name`);
    if (c.rules.some((r) => sameArgs(r, args))) return true;
    const problem = ruleProblem(args);
    if (problem !== undefined)
      throw new SvcnetError('IPTABLES_RESTORE_FAILED', `${table}: ${chain}: ${problem}`);
    const target = jumpTarget(args);
    if (target !== undefined && !STANDARD_TARGETS.has(target) && !this.table(table).has(target))
      throw new SvcnetError(
        'IPTABLES_RESTORE_FAILED',
        `${table}: jump to ${target}: no chain by that name`,
      );
    if (position === 'prepend') c.rules.unshift([...args]);
    else c.rules.push([...args]);
    return false;
  }

  ensureRule(
    position: RulePosition,
    table: IptablesTableName,
    chain: string,
    args: readonly string[],
  ): Promise<boolean> {
    return Promise.resolve(this.ensureRuleSync(position, table, chain, args));
  }

  chainExists(table: IptablesTableName, chain: string): Promise<boolean> {
    return Promise.resolve(this.tables.get(table)?.has(chain) ?? false);
  }

  /** The rules of one chain as `-A` lines (empty string if none or missing). */
  chainRules(table: IptablesTableName, chain: string): string {
    return (this.tables.get(table)?.get(chain)?.rules ?? [])
      .map((args) => `${renderRule({ chain, args })}\n`)
      .join('');
  }

  /** Names of the chains of a table. */
  chainNames(table: IptablesTableName): string[] {
    return [...(this.tables.get(table)?.keys() ?? [])];
  }

  /** Removes a whole table (what `iptables -t T -F; -X` by an admin would do), for canary tests. */
  flushTable(table: IptablesTableName): void {
    this.tables.set(table, emptyTable(table));
  }
}
