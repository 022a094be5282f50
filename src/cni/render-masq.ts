// nftables scripts for bridge/ptp `ipMasq`: Pod traffic leaving the Pod subnet (and not
// multicast) is masqueraded in the plugin's namespace. Layout, per family (`ip`/`ip6`):
//
//   table ip svcnet_cni {
//     map pod_masq { type ipv4_addr : verdict }          # pod IP -> jump masq_<net>
//     chain postrouting { type nat hook postrouting priority srcnat; ip saddr vmap @pod_masq }
//     chain masq_<net> { ip daddr <subnet> return; ip daddr 224.0.0.0/4 return; masquerade }
//   }
//
// ADD re-creates the fixed parts idempotently in one transaction and adds the Pod's map
// element; DEL deletes only the element, so concurrent Pods never rewrite each other's
// rules. Pure; masq.ts runs the scripts with `nft -f -`.

import { createHash } from 'node:crypto';
import type { IPFamily } from '../util/ip.js';

export const MASQ_TABLE = 'svcnet_cni';
export const MASQ_MAP = 'pod_masq';

/** Per-network chain name: `masq_` + 12 hex of sha256(network). */
export function masqChain(network: string): string {
  return `masq_${createHash('sha256').update(network).digest('hex').slice(0, 12)}`;
}

function fam(family: IPFamily): {
  table: string;
  addrType: string;
  multicast: string;
  match: string;
} {
  return family === 'IPv4'
    ? { table: 'ip', addrType: 'ipv4_addr', multicast: '224.0.0.0/4', match: 'ip' }
    : { table: 'ip6', addrType: 'ipv6_addr', multicast: 'ff00::/8', match: 'ip6' };
}

/** Script that ensures the table/map/chains and adds `podIP` → the network's chain. */
export function renderMasqAdd(
  network: string,
  family: IPFamily,
  subnets: readonly string[],
  podIP: string,
): string {
  const f = fam(family);
  const t = `${f.table} ${MASQ_TABLE}`;
  const chain = masqChain(network);
  return [
    `add table ${t}`,
    `add map ${t} ${MASQ_MAP} { type ${f.addrType} : verdict; }`,
    `add chain ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} postrouting`,
    `add rule ${t} postrouting ${f.match} saddr vmap @${MASQ_MAP}`,
    `add chain ${t} ${chain}`,
    `flush chain ${t} ${chain}`,
    ...subnets.map((s) => `add rule ${t} ${chain} ${f.match} daddr ${s} return`),
    `add rule ${t} ${chain} ${f.match} daddr ${f.multicast} return`,
    `add rule ${t} ${chain} masquerade`,
    `add element ${t} ${MASQ_MAP} { ${podIP} : jump ${chain} }`,
    '',
  ].join('\n');
}

/** Script that removes the Pod's map element (fails with ENOENT when absent). */
export function renderMasqDel(family: IPFamily, podIP: string): string {
  return `delete element ${fam(family).table} ${MASQ_TABLE} ${MASQ_MAP} { ${podIP} }\n`;
}
