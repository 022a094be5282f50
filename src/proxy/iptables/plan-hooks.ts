// Folds the proxy's kernel hooks into a full sync's restore document, so a full sync is one
// `iptables-save` plus one atomic `iptables-restore` instead of a check-then-insert exec per
// jump rule: `scanKernelState` reads what exists (chain names per table and the jump rules
// of built-in chains) from an iptables-save dump, and `addHooks` adds `-I CHAIN 1 …` for
// every missing jump and declares every missing KUBE-PROXY-CANARY chain. Pure.

import type {
  ChainDecl,
  IptablesDocument,
  IptablesTableName,
  Rule,
  TableDoc,
} from '../../netfilter/iptables/model.js';
import { BUILTIN_CHAINS, isTableName } from '../../netfilter/iptables/model.js';
import { splitArgs } from '../../netfilter/iptables/parse.js';
import { commentOf, targetOf } from '../../netfilter/iptables/rule.js';
import type { JumpRule } from './plan.js';

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

/** Scans an iptables-save dump (all tables) cheaply: only built-in chains' rules are split. */
export function scanKernelState(dump: string): KernelState {
  const chains = new Map<IptablesTableName, Set<string>>();
  const builtinRules = new Map<IptablesTableName, { chain: string; args: string[] }[]>();
  let table: IptablesTableName | undefined;
  for (const raw of dump.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('*')) {
      const name = line.slice(1);
      table = isTableName(name) ? name : undefined;
      if (table !== undefined && !chains.has(table)) chains.set(table, new Set());
      continue;
    }
    if (table === undefined) continue;
    if (line.startsWith(':')) {
      chains.get(table)?.add(line.slice(1).split(/\s+/)[0] ?? '');
      continue;
    }
    if (!line.startsWith('-A ')) continue;
    const sp = line.indexOf(' ', 3);
    const chain = sp < 0 ? line.slice(3) : line.slice(3, sp);
    if (!BUILTIN_CHAINS[table].includes(chain)) continue;
    const list = builtinRules.get(table) ?? [];
    list.push({ chain, args: splitArgs(line.slice(sp + 1)) });
    builtinRules.set(table, list);
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

/**
 * Returns `doc` plus the missing hooks: canary chains declared in their tables (an empty
 * mangle section is added when needed), missing jumps inserted at the top of their built-in
 * chains in kube-proxy's ensure order (each goes to the top, so the last ensured is first).
 * Target chains of jumps must be declared by `doc` or exist already.
 */
export function addHooks(
  doc: IptablesDocument,
  jumps: readonly JumpRule[],
  canaries: readonly { readonly table: IptablesTableName; readonly chain: string }[],
  state: KernelState,
): { document: IptablesDocument; insertedJumps: number; createdChains: number } {
  const tables = new Map<
    IptablesTableName,
    { chains: ChainDecl[]; rules: Rule[]; base: TableDoc | undefined }
  >();
  for (const t of doc.tables)
    tables.set(t.name, { chains: [...t.chains], rules: [...t.rules], base: t });
  const section = (name: IptablesTableName) => {
    let s = tables.get(name);
    if (s === undefined) {
      s = { chains: [], rules: [], base: undefined };
      tables.set(name, s);
    }
    return s;
  };
  let createdChains = 0;
  const declared = (name: IptablesTableName, chain: string): boolean =>
    (tables.get(name)?.chains.some((c) => c.name === chain) ?? false) ||
    (state.chains.get(name)?.has(chain) ?? false);
  for (const c of canaries) {
    if (state.chains.get(c.table)?.has(c.chain) === true) continue;
    section(c.table).chains.push({ name: c.chain, policy: '-' });
    createdChains++;
  }
  const inserts = new Map<IptablesTableName, Rule[]>();
  for (const j of jumps) {
    if (jumpPresent(state, j)) continue;
    if (!declared(j.table, j.targetChain)) {
      section(j.table).chains.push({ name: j.targetChain, policy: '-' });
      createdChains++;
    }
    const list = inserts.get(j.table) ?? [];
    list.push({ chain: j.sourceChain, args: j.args, insert: { position: 1 } });
    inserts.set(j.table, list);
  }
  let insertedJumps = 0;
  const out: TableDoc[] = [];
  const order: IptablesTableName[] = ['raw', 'mangle', 'nat', 'filter', 'security'];
  for (const name of order) {
    const s = tables.get(name);
    if (s === undefined) continue;
    const ins = inserts.get(name) ?? [];
    insertedJumps += ins.length;
    out.push({
      name,
      chains: s.chains,
      // Inserts come after the table's own rules, whose target chains are declared above.
      rules: [...s.rules, ...ins],
      deleteChains: s.base?.deleteChains ?? [],
      ...(s.base?.flushChains !== undefined ? { flushChains: s.base.flushChains } : {}),
    });
  }
  return { document: { tables: out }, insertedJumps, createdChains };
}
