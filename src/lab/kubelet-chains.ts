// The iptables chains a kubelet leaves in its node's tables, which the lab's node agent makes
// too: KUBE-IPTABLES-HINT in mangle (empty; its presence tells kube-proxy's iptables-wrapper,
// and our `--iptables-variant auto` in netfilter/iptables/variant.ts, which backend the node
// uses) and KUBE-KUBELET-CANARY in mangle, nat and filter (kubelet watches these to notice a
// flush of the tables). The kubelet makes both in IPv4 and IPv6 through the one iptables it
// runs; the agent writes them through the backend the lab chose for its proxies
// (iptables-variant.ts), so detection in a node would agree with the proxies' forced variant.
// A family whose tables cannot be written is logged and skipped, as the kubelet does.

import type { Execer } from '../os/exec.js';
import { RealIptables, commandsFor, type IptablesVariant } from '../netfilter/iptables/backend.js';
import type { Iptables } from '../netfilter/iptables/fake.js';
import type { IptablesTableName } from '../netfilter/iptables/model.js';

export const HINT_CHAIN = 'KUBE-IPTABLES-HINT';
export const KUBELET_CANARY_CHAIN = 'KUBE-KUBELET-CANARY';

/** Every (table, chain) the kubelet ensures, in the order it does. */
export const KUBELET_CHAINS: readonly { table: IptablesTableName; chain: string }[] = [
  { table: 'mangle', chain: HINT_CHAIN },
  { table: 'mangle', chain: KUBELET_CANARY_CHAIN },
  { table: 'nat', chain: KUBELET_CANARY_CHAIN },
  { table: 'filter', chain: KUBELET_CANARY_CHAIN },
];

/** Both families' iptables of one backend (plain `iptables` when the lab chose none). */
export function kubeletIptables(
  execer: Execer,
  variant: IptablesVariant | undefined,
): RealIptables[] {
  return (['IPv4', 'IPv6'] as const).map(
    (family) => new RealIptables(execer, family, commandsFor(family, variant)),
  );
}

/**
 * The `iptables-restore --noflush` input that makes every kubelet chain: declaring a chain
 * creates it when missing and empties it otherwise, and these chains are always empty.
 */
export function kubeletChainsRestore(): string {
  const tables = [...new Set(KUBELET_CHAINS.map((c) => c.table))];
  return tables
    .map(
      (t) =>
        `*${t}\n${KUBELET_CHAINS.filter((c) => c.table === t)
          .map((c) => `:${c.chain} - [0:0]\n`)
          .join('')}COMMIT\n`,
    )
    .join('');
}

/**
 * Ensures the kubelet's chains in each family with one iptables-restore each (not a check
 * and a create per chain: sixteen processes at every agent start); returns the families done.
 * A failing family (no ip6tables, IPv6 off in the kernel) is logged and the others still get
 * theirs.
 */
export async function ensureKubeletChains(
  families: readonly Iptables[],
  log: (fields: Record<string, unknown>, msg: string) => void,
): Promise<string[]> {
  const done: string[] = [];
  for (const ipt of families) {
    try {
      await ipt.restore(kubeletChainsRestore(), { noflush: true });
      done.push(ipt.family);
    } catch (e) {
      log(
        { family: ipt.family, err: e instanceof Error ? e.message : String(e) },
        'Failed to create the kubelet iptables chains; some functionality may be missing',
      );
    }
  }
  return done;
}
