// A read-only view of an iptables document for walking: chains by table with their policy and
// rules. kube-proxy's restore input (and our render output) carries only kube-proxy's own
// chains; the jumps from the built-in chains (PREROUTING -> KUBE-SERVICES, ...) are installed
// separately. When a built-in chain has no jump into a KUBE-* chain, the view adds the jumps
// kube-proxy installs (kube-proxy.md §1.2 row 26), marked as assumed, so such a document
// traces like a live node. Pure.

import type { IptablesDocument, IptablesTableName, Rule } from '../netfilter/iptables/model.js';
import { BUILTIN_CHAINS, TABLE_NAMES } from '../netfilter/iptables/model.js';
import { targetOf, typedRuleOf } from '../netfilter/iptables/rule.js';
import { dnatOf } from '../netfilter/iptables/rule-views.js';
import { hooksInLiveOrder } from '../proxy/iptables/hooks.js';
import type { JumpRule } from '../proxy/iptables/plan.js';
import type { IPFamily } from '../util/ip.js';

export interface ChainView {
  readonly name: string;
  /** ACCEPT/DROP for built-in chains; `-` for user chains. */
  readonly policy: string;
  readonly rules: readonly Rule[];
}

export interface TableView {
  readonly name: IptablesTableName;
  readonly chains: ReadonlyMap<string, ChainView>;
}

export interface RulesetView {
  readonly tables: ReadonlyMap<IptablesTableName, TableView>;
  /** Rules added by `assumeKubeProxyHooks`, not present in the input. */
  readonly assumed: ReadonlySet<Rule>;
  /** `table/CHAIN` of each built-in chain that got assumed jumps. */
  readonly assumedChains: readonly string[];
}

/**
 * The jumps kube-proxy (iptables mode) ensures in the built-in chains, in a live node's order:
 * kind-like nodes, where kubelet's KUBE-FIREWALL jumps predate kube-proxy's.
 */
const KUBE_PROXY_HOOKS: readonly JumpRule[] = hooksInLiveOrder('kubelet-first');

/**
 * Builds the view. Later declarations and rules of a table that appears twice are merged
 * in order (as iptables-restore --noflush would apply them, ignoring flushes).
 */
export function buildView(doc: IptablesDocument, assumeKubeProxyHooks: boolean): RulesetView {
  const tables = new Map<
    IptablesTableName,
    { chains: Map<string, { policy: string; rules: Rule[] }> }
  >();
  for (const t of doc.tables) {
    let tv = tables.get(t.name);
    if (!tv) {
      tv = { chains: new Map() };
      for (const b of BUILTIN_CHAINS[t.name]) tv.chains.set(b, { policy: 'ACCEPT', rules: [] });
      tables.set(t.name, tv);
    }
    for (const c of t.chains) {
      const existing = tv.chains.get(c.name);
      const policy =
        c.policy === '-' && BUILTIN_CHAINS[t.name].includes(c.name) ? 'ACCEPT' : c.policy;
      if (existing) {
        existing.policy = policy;
        existing.rules = [];
      } else tv.chains.set(c.name, { policy, rules: [] });
    }
    for (const r of t.rules) {
      let cv = tv.chains.get(r.chain);
      if (!cv) {
        cv = { policy: '-', rules: [] };
        tv.chains.set(r.chain, cv);
      }
      if (r.insert) {
        const pos = Math.max(0, Math.min(cv.rules.length, (r.insert.position ?? 1) - 1));
        cv.rules.splice(pos, 0, r);
      } else cv.rules.push(r);
    }
    for (const x of t.deleteChains) tv.chains.delete(x);
  }
  const assumed = new Set<Rule>();
  const assumedChains: string[] = [];
  if (assumeKubeProxyHooks) {
    for (const table of TABLE_NAMES) {
      const tv = tables.get(table);
      if (!tv) continue;
      for (const chain of BUILTIN_CHAINS[table]) {
        const cv = tv.chains.get(chain);
        const hooks = KUBE_PROXY_HOOKS.filter(
          (h) => h.table === table && h.sourceChain === chain && tv.chains.has(h.targetChain),
        );
        if (!cv || hooks.length === 0) continue;
        if (cv.rules.some((r) => targetOf(r.args)?.startsWith('KUBE-'))) continue;
        const added = hooks.map((h) => ({ chain, args: [...h.args] }));
        for (const r of added) assumed.add(r);
        cv.rules = [...added, ...cv.rules];
        assumedChains.push(`${table}/${chain}`);
      }
    }
  }
  const out = new Map<IptablesTableName, TableView>();
  for (const [name, tv] of tables) {
    const chains = new Map<string, ChainView>();
    for (const [cname, cv] of tv.chains)
      chains.set(cname, { name: cname, policy: cv.policy, rules: cv.rules });
    out.set(name, { name, chains });
  }
  return { tables: out, assumed, assumedChains };
}

function familyOfTables(
  tables: readonly IptablesDocument['tables'][number][],
): IPFamily | undefined {
  for (const t of tables)
    for (const r of t.rules)
      for (const part of typedRuleOf(r.args).parts) {
        let v: string;
        if (part.kind === 'source' || part.kind === 'destination') {
          v = part.value ?? '';
          if (v.includes(':')) return 'IPv6';
        } else if (part.kind === 'target' && part.name === 'DNAT') {
          v = dnatOf(part.options).to ?? '';
          if (v.startsWith('[')) return 'IPv6';
        } else continue;
        if (/^\d+\.\d+\.\d+\.\d+/.test(v)) return 'IPv4';
      }
  return undefined;
}

/**
 * A file holding both families' rules (`svcnet render` for dual-stack Services prints an
 * IPv4 and an IPv6 section, each with its own *filter and *nat): keeps the section whose
 * addresses are of `family`. A file with each table once is returned as it is.
 */
export function selectFamily(doc: IptablesDocument, family: IPFamily): IptablesDocument {
  const sections: IptablesDocument['tables'][number][][] = [[]];
  for (const t of doc.tables) {
    const current = sections.at(-1) ?? [];
    if (current.some((x) => x.name === t.name)) sections.push([t]);
    else current.push(t);
  }
  if (sections.length === 1) return doc;
  const match = sections.find((s) => familyOfTables(s) === family);
  return { tables: match ?? sections[0] ?? [] };
}
