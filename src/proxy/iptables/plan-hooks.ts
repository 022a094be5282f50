// The proxy's kernel hooks on a full sync, so a full sync is one `iptables-save` plus one
// atomic `iptables-restore` instead of a check-then-insert exec per jump rule:
// `scanKernelState` reads what exists (chain names per table and the rules of built-in
// chains) from an iptables-save dump, `addHooks` decides what is missing on that small state
// (`-I CHAIN 1 …` for every missing jump, in kube-proxy's ensure order, and a declaration for
// every missing KUBE-PROXY-CANARY or jump target chain), and `withHooks` splices those lines
// into the plan's per-table sections as text: the plan's own (large) text is never parsed.
// Pure.

import type { ChainDecl, IptablesTableName, Rule } from '../../netfilter/iptables/model.js';
import { BUILTIN_CHAINS, TABLE_NAMES } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { renderChainDecl, renderRule } from '../../netfilter/iptables/render.js';
import { commentOf, targetOf } from '../../netfilter/iptables/rule.js';
import type { JumpRule, PlanTable } from './plan.js';
import { flat } from './rule-writer.js';

/** What a dump says exists. */
export interface KernelState {
  /** Chain names per table. */
  readonly chains: ReadonlyMap<IptablesTableName, ReadonlySet<string>>;
  /** Rules of built-in chains per table: `chain` and its args. */
  readonly builtinRules: ReadonlyMap<
    IptablesTableName,
    readonly { chain: string; args: readonly string[] }[]
  >;
}

const BUILTIN_NAMES = new Set(Object.values(BUILTIN_CHAINS).flat());
const APPEND = /^(?:\[\d+:\d+\]\s+)?-A\s+(\S+)/;

/**
 * Reads an iptables-save dump (all tables) with `parseDocument`, keeping only what hooks
 * need: every table and chain declaration and the rules of built-in chains. The rules of the
 * proxy's own chains (nearly all lines) are dropped before parsing, so this stays cheap.
 */
/** A string that shares no storage with a larger one (a slice keeps its parent alive). */
function ownCopy(s: string): string {
  return flat(` ${s}`).slice(1);
}

export function scanKernelState(dump: string): KernelState {
  const kept = dump.split('\n').filter((raw) => {
    const m = APPEND.exec(raw.trim());
    return m === null || BUILTIN_NAMES.has(m[1] ?? '');
  });
  const chains = new Map<IptablesTableName, Set<string>>();
  const builtinRules = new Map<IptablesTableName, { chain: string; args: readonly string[] }[]>();
  for (const t of parseDocument(kept.join('\n')).tables) {
    const names = chains.get(t.name) ?? new Set<string>();
    // Own copies: a name sliced from the dump keeps the whole dump alive, and stale chain
    // names can stay in the plan state (large-cluster cleanup throttling).
    for (const c of t.chains) names.add(ownCopy(c.name));
    chains.set(t.name, names);
    const rules = t.rules.filter((r) => BUILTIN_CHAINS[t.name].includes(r.chain));
    if (rules.length > 0)
      builtinRules.set(t.name, [
        ...(builtinRules.get(t.name) ?? []),
        ...rules.map((r) => ({ chain: r.chain, args: r.args })),
      ]);
  }
  return { chains, builtinRules };
}

function jumpPresent(state: KernelState, j: JumpRule): boolean {
  const comment = commentOf(j.args);
  return (state.builtinRules.get(j.table) ?? []).some(
    (r) =>
      r.chain === j.sourceChain &&
      targetOf(r.args) === j.targetChain &&
      (comment === undefined || commentOf(r.args) === comment),
  );
}

/** The hook lines of one table: declarations and inserts. */
export interface TableHooks {
  readonly chains: readonly ChainDecl[];
  readonly inserts: readonly Rule[];
}

/** What a full sync adds to the plan to restore the hooks. */
export interface Hooks {
  readonly tables: ReadonlyMap<IptablesTableName, TableHooks>;
  readonly insertedJumps: number;
  readonly createdChains: number;
}

/**
 * The missing hooks: canary chains to declare, and missing jumps to insert at the top of
 * their built-in chains in kube-proxy's ensure order (each goes to the top, so the last
 * ensured is first; see hooks.ts `hooksInLiveOrder`). A jump's target chain is declared too
 * unless the plan declares it (`planDeclares`) or it exists: declaring an existing chain
 * would flush it.
 */
export function addHooks(
  jumps: readonly JumpRule[],
  canaries: readonly { readonly table: IptablesTableName; readonly chain: string }[],
  state: KernelState,
  planDeclares: (table: IptablesTableName, chain: string) => boolean,
): Hooks {
  const tables = new Map<IptablesTableName, { chains: ChainDecl[]; inserts: Rule[] }>();
  const section = (name: IptablesTableName) => {
    let s = tables.get(name);
    if (s === undefined) {
      s = { chains: [], inserts: [] };
      tables.set(name, s);
    }
    return s;
  };
  let createdChains = 0;
  let insertedJumps = 0;
  const declared = (name: IptablesTableName, chain: string): boolean =>
    planDeclares(name, chain) ||
    (tables.get(name)?.chains.some((c) => c.name === chain) ?? false) ||
    (state.chains.get(name)?.has(chain) ?? false);
  for (const c of canaries) {
    if (state.chains.get(c.table)?.has(c.chain) === true) continue;
    section(c.table).chains.push({ name: c.chain, policy: '-' });
    createdChains++;
  }
  for (const j of jumps) {
    if (jumpPresent(state, j)) continue;
    if (!declared(j.table, j.targetChain)) {
      section(j.table).chains.push({ name: j.targetChain, policy: '-' });
      createdChains++;
    }
    section(j.table).inserts.push({ chain: j.sourceChain, args: j.args, insert: { position: 1 } });
    insertedJumps++;
  }
  return { tables, insertedJumps, createdChains };
}

function lines(items: readonly string[]): string {
  return items.length === 0 ? '' : items.join('\n') + '\n';
}

/**
 * The restore input of a full sync: each table section of the plan's `text` (located by
 * `tables`) with its hook lines spliced in (declarations after the plan's, inserts after the
 * plan's rules, whose target chains are declared above), preceded by a section of its own
 * for a table that only has hooks (mangle's canary). The plan's text is sliced, not parsed.
 */
export function withHooks(text: string, tables: readonly PlanTable[], hooks: Hooks): string {
  const out: string[] = [];
  for (const name of TABLE_NAMES) {
    const h = hooks.tables.get(name);
    if (h === undefined || tables.some((t) => t.name === name)) continue;
    out.push(
      `*${name}\n`,
      lines(h.chains.map(renderChainDecl)),
      lines(h.inserts.map(renderRule)),
      'COMMIT\n',
    );
  }
  for (const t of tables) {
    const h = hooks.tables.get(t.name);
    out.push(text.slice(t.start, t.rulesStart));
    if (h !== undefined) out.push(lines(h.chains.map(renderChainDecl)));
    out.push(text.slice(t.rulesStart, t.end));
    if (h !== undefined) out.push(lines(h.inserts.map(renderRule)));
    out.push('COMMIT\n');
  }
  return out.join('');
}
