// What `svcnet proxy --cleanup` removes, as a pure plan over an `iptables-save` dump: every
// chain the iptables proxier creates (fixed chains, per-service KUBE-SVC/SVL/EXT/FW/SEP
// chains, KUBE-FIREWALL and the KUBE-PROXY-CANARY chains) and every rule elsewhere that
// jumps to one of them (the hooks in built-in chains). The result is one restore input per
// dump, applied with --noflush: declaring a chain flushes it, a chain holding hooks is
// flushed (`-F`) and refilled with its other rules in their order, `-X` deletes the
// proxy's chains — atomically, so a failure leaves everything as it was.

import type { IptablesDocument, IptablesTableName } from '../../netfilter/iptables/model.js';
import { quoteArg } from '../../netfilter/iptables/render.js';
import { targetOf } from '../../netfilter/iptables/rule.js';
import {
  FILTER_FIXED_CHAINS,
  KUBE_FIREWALL,
  KUBE_PROXY_CANARY,
  NAT_FIXED_CHAINS,
  isServiceChainName,
} from './names.js';

/** Whether the iptables proxier owns `chain` in `table`. */
export function isOwnedChain(table: IptablesTableName, chain: string): boolean {
  if (chain === KUBE_PROXY_CANARY)
    return table === 'mangle' || table === 'nat' || table === 'filter';
  if (table === 'nat')
    return (NAT_FIXED_CHAINS as readonly string[]).includes(chain) || isServiceChainName(chain);
  if (table === 'filter')
    return (FILTER_FIXED_CHAINS as readonly string[]).includes(chain) || chain === KUBE_FIREWALL;
  return false;
}

export interface CleanupPlan {
  /** Restore input (empty when there is nothing to remove). */
  readonly text: string;
  readonly deletedChains: number;
  readonly deletedRules: number;
}

/** Plans the removal of everything the proxier created, from the current dump. */
export function planCleanup(current: IptablesDocument): CleanupPlan {
  const out: string[] = [];
  let deletedChains = 0;
  let deletedRules = 0;
  for (const t of current.tables) {
    const owned = t.chains.map((c) => c.name).filter((c) => isOwnedChain(t.name, c));
    if (owned.length === 0) continue;
    const ownedSet = new Set(owned);
    const isHook = (r: (typeof t.rules)[number]): boolean => {
      if (ownedSet.has(r.chain)) return false;
      const target = targetOf(r.args);
      return target !== undefined && ownedSet.has(target);
    };
    const hooked = [...new Set(t.rules.filter(isHook).map((r) => r.chain))];
    out.push(`*${t.name}`);
    for (const c of owned) out.push(`:${c} - [0:0]`);
    for (const c of hooked) {
      out.push(`-F ${c}`);
      for (const r of t.rules)
        if (r.chain === c && !isHook(r)) out.push(`-A ${c} ${r.args.map(quoteArg).join(' ')}`);
    }
    for (const c of owned) out.push(`-X ${c}`);
    deletedRules += t.rules.filter(isHook).length;
    out.push('COMMIT');
    deletedChains += owned.length;
  }
  return { text: out.length === 0 ? '' : `${out.join('\n')}\n`, deletedChains, deletedRules };
}
