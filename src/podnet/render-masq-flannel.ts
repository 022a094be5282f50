// flanneld's `--ip-masq` rules as iptables-restore input (for `--noflush`): in nat, the
// FLANNEL-POSTRTG chain masquerades pod traffic leaving the cluster Network (and traffic from
// outside it into another node's pods) and leaves pod-to-pod traffic alone; in filter,
// FLANNEL-FWD accepts forwarding to and from the Network. Same chains, matches and order as
// flanneld's iptables rules, so `iptables-save` on a node reads like a flannel node's. The
// jumps from POSTROUTING and FORWARD are added only when `withJumps` (the agent checks
// first), so re-applying never duplicates them. Pure: text only.

import { CHAIN_FORWARD, CHAIN_POSTROUTING } from './names.js';

const MASQ = '-m comment --comment "flanneld masq"';
const FWD = '-m comment --comment "flanneld forward"';

/** The jump rules, as `iptables -C`/`-I` argv after the table (for the agent's check). */
export const MASQ_JUMPS = {
  nat: ['POSTROUTING', '-m', 'comment', '--comment', 'flanneld masq', '-j', CHAIN_POSTROUTING],
  filter: ['FORWARD', '-m', 'comment', '--comment', 'flanneld forward', '-j', CHAIN_FORWARD],
} as const;

/** The restore text: both chains rewritten whole, jumps appended when asked. */
export function renderMasqRules(
  network: string,
  podCIDR: string,
  withJumps: { nat: boolean; filter: boolean },
): string {
  const nat = [
    '*nat',
    `:${CHAIN_POSTROUTING} - [0:0]`,
    ...(withJumps.nat ? [`-A POSTROUTING ${MASQ} -j ${CHAIN_POSTROUTING}`] : []),
    // Packets kube-proxy marked for masquerade are its business (flannel leaves them too).
    `-A ${CHAIN_POSTROUTING} -m mark --mark 0x4000/0x4000 ${MASQ} -j RETURN`,
    `-A ${CHAIN_POSTROUTING} -s ${podCIDR} -d ${network} ${MASQ} -j RETURN`,
    `-A ${CHAIN_POSTROUTING} -s ${network} -d ${podCIDR} ${MASQ} -j RETURN`,
    `-A ${CHAIN_POSTROUTING} ! -s ${network} -d ${podCIDR} ${MASQ} -j RETURN`,
    `-A ${CHAIN_POSTROUTING} -s ${network} ! -d 224.0.0.0/4 ${MASQ} -j MASQUERADE --random-fully`,
    `-A ${CHAIN_POSTROUTING} ! -s ${network} -d ${network} ${MASQ} -j MASQUERADE --random-fully`,
    'COMMIT',
  ];
  const filter = [
    '*filter',
    `:${CHAIN_FORWARD} - [0:0]`,
    ...(withJumps.filter ? [`-A FORWARD ${FWD} -j ${CHAIN_FORWARD}`] : []),
    `-A ${CHAIN_FORWARD} -s ${network} ${FWD} -j ACCEPT`,
    `-A ${CHAIN_FORWARD} -d ${network} ${FWD} -j ACCEPT`,
    'COMMIT',
  ];
  return `${[...nat, ...filter].join('\n')}\n`;
}
