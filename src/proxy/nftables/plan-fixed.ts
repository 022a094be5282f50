// The fixed part of a full nftables sync (reference §3.2 steps 1–12): the table, the base
// chains (add+delete once per process so changed priorities take effect, then add+flush),
// the jump chains and their `ct state new` jumps, masquerading with the hairpin set, the
// cluster-ips set and cluster-ips-check (reject wrong ports; drop unallocated ClusterIPs
// inside the ServiceCIDRs), nodeport-ips (or the fib rule when nodePortAddresses matches
// every address), the no-endpoint maps and reject-chain, firewall-ips and firewall-check,
// and the service-ips / service-nodeports dispatch in `services`. Partial syncs skip all of
// it but nodeport-ips, rewritten when the node's NodePort addresses changed. Pure.

import type { NftSet, Statement } from '../../netfilter/nftables/model.js';
import type { IPFamily } from '../../util/ip.js';
import {
  BASE_CHAINS,
  CLUSTER_IPS_CHECK_CHAIN,
  CLUSTER_IPS_SET,
  COMMENT_CLUSTER_IPS,
  COMMENT_DROP_UNALLOCATED,
  COMMENT_FIREWALL_IPS,
  COMMENT_HAIRPIN,
  COMMENT_MASQ_ALL,
  COMMENT_MASQ_OUTSIDE,
  COMMENT_NO_ENDPOINT_NODEPORTS,
  COMMENT_NO_ENDPOINT_SERVICES,
  COMMENT_NODEPORT_IPS,
  COMMENT_REJECT_INVALID_PORTS,
  COMMENT_SERVICE_IPS,
  COMMENT_SERVICE_NODEPORTS,
  FIREWALL_CHECK_CHAIN,
  FIREWALL_IPS_MAP,
  HAIRPIN_CONNECTIONS_SET,
  JUMP_CHAINS,
  MASQUERADING_CHAIN,
  NODEPORT_ENDPOINTS_CHECK_CHAIN,
  NODEPORT_IPS_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  REJECT_CHAIN,
  REJECT_CHAIN_COMMENT,
  SERVICES_CHAIN,
  SERVICE_ENDPOINTS_CHECK_CHAIN,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  TABLE_COMMENT,
} from './names.js';
import type { NftablesProxierOptions, NftNodePortDestinations } from './options.js';
import {
  CT_STATE_NEW,
  L4PROTO,
  MARK,
  OpList,
  TH_DPORT,
  TableObjects,
  addrType,
  anonset,
  concat,
  daddr,
  dispatchVmap,
  fibLocal,
  ifNotLocal,
  ipX,
  jump,
  markOr,
  match,
  saddr,
  setref,
  value,
  verdict,
} from './statements.js';

export interface FixedPlanInput {
  readonly family: IPFamily;
  readonly options: NftablesProxierOptions;
  readonly nodePorts: NftNodePortDestinations;
  /** ServiceCIDRs of the family (canonical). */
  readonly serviceCIDRs: readonly string[];
  /** add+delete every base chain first (the first sync of a process). */
  readonly recreateBaseChains: boolean;
}

/** A verdict map keyed by `ADDR . inet_proto . inet_service` (or, `byPort`, without ADDR). */
function verdictMap(
  t: TableObjects,
  family: IPFamily,
  name: string,
  comment: string,
  byPort = false,
): NftSet {
  const key = byPort
    ? ['inet_proto', 'inet_service']
    : [addrType(family), 'inet_proto', 'inet_service'];
  return t.set('map', name, key, { valueType: ['verdict'], comment });
}

/** `[fib daddr type local ip daddr != 127.0.0.0/8]` or `[ip daddr @nodeport-ips]`. */
function nodePortDestination(input: FixedPlanInput): Statement[] {
  const x = ipX(input.family);
  if (input.nodePorts.matchAll)
    return [
      fibLocal('daddr'),
      match(daddr(x), value(input.family === 'IPv4' ? '127.0.0.0/8' : '::1'), '!='),
    ];
  return [match(daddr(x), setref(NODEPORT_IPS_SET))];
}

function baseAndJumpChains(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  // kube-proxy writes add+delete; the flush between keeps the delete valid where a chain
  // must be empty to be deleted (the kernel drops a base chain's rules itself; our Fake,
  // like nft's documentation, asks for an empty chain).
  if (input.recreateBaseChains)
    for (const bc of BASE_CHAINS) {
      ops.add(t.chain(bc.name));
      ops.flush(t.chain(bc.name));
      ops.delete(t.chain(bc.name));
    }
  for (const bc of BASE_CHAINS) {
    const c = t.chain(bc.name, { type: bc.type, hook: bc.hook, priority: bc.priority });
    ops.add(c);
    ops.flush(c);
  }
  const created = new Set<string>();
  const ensure = (name: string, comment?: string) => {
    if (created.has(name)) return;
    created.add(name);
    const c = t.chain(name, comment === undefined ? {} : { comment });
    ops.add(c);
    ops.flush(c);
  };
  for (const j of JUMP_CHAINS) {
    ensure(j.target);
    ops.add(t.rule(j.source, [...(j.ctStateNew ? [CT_STATE_NEW] : []), verdict(jump(j.target))]));
  }
  for (const name of [SERVICES_CHAIN, CLUSTER_IPS_CHECK_CHAIN, MASQUERADING_CHAIN]) ensure(name);
  ensure(REJECT_CHAIN, REJECT_CHAIN_COMMENT);
}

function masquerading(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  const x = ipX(input.family);
  const a = addrType(input.family);
  const mark = input.options.masqueradeMark;
  ops.add(
    t.set('set', HAIRPIN_CONNECTIONS_SET, [a, a, 'inet_proto', 'inet_service'], {
      comment: COMMENT_HAIRPIN,
    }),
  );
  ops.add(
    t.rule(MASQUERADING_CHAIN, [
      match({ kind: 'binop', left: MARK, op: 'and', value: mark }, value('0'), '!='),
      { kind: 'set', target: MARK, value: { kind: 'binop', left: MARK, op: 'xor', value: mark } },
      { kind: 'masquerade', flags: ['fully-random'] },
    ]),
  );
  ops.add(
    t.rule(MASQUERADING_CHAIN, [
      match({ kind: 'ct', key: 'status' }, value('dnat')),
      match(concat(saddr(x), daddr(x), L4PROTO, TH_DPORT), setref(HAIRPIN_CONNECTIONS_SET)),
      { kind: 'masquerade', flags: ['fully-random'] },
    ]),
  );
}

function clusterIPs(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  const x = ipX(input.family);
  ops.add(
    t.set('set', CLUSTER_IPS_SET, [addrType(input.family)], { comment: COMMENT_CLUSTER_IPS }),
  );
  ops.add(
    t.rule(
      CLUSTER_IPS_CHECK_CHAIN,
      [match(daddr(x), setref(CLUSTER_IPS_SET)), verdict({ kind: 'reject' })],
      COMMENT_REJECT_INVALID_PORTS,
    ),
  );
  if (input.serviceCIDRs.length > 0)
    ops.add(
      t.rule(
        CLUSTER_IPS_CHECK_CHAIN,
        [match(daddr(x), anonset(input.serviceCIDRs)), verdict({ kind: 'drop' })],
        COMMENT_DROP_UNALLOCATED,
      ),
    );
}

/**
 * nodeport-ips: add + flush + the addresses, or add + delete when NodePorts match every local
 * address. Also what a partial sync writes when the node's NodePort addresses changed.
 */
export function planNodePortIPs(
  t: TableObjects,
  family: IPFamily,
  nodePorts: NftNodePortDestinations,
  ops: OpList,
): void {
  const set = t.set('set', NODEPORT_IPS_SET, [addrType(family)], {
    comment: COMMENT_NODEPORT_IPS,
  });
  ops.add(set);
  if (nodePorts.matchAll) {
    ops.delete(t.set('set', NODEPORT_IPS_SET, [addrType(family)]));
    return;
  }
  ops.flush(set);
  for (const ip of nodePorts.ips) ops.add(t.element(NODEPORT_IPS_SET, [ip]));
}

function noEndpoints(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  const x = ipX(input.family);
  ops.add(verdictMap(t, input.family, NO_ENDPOINT_SERVICES_MAP, COMMENT_NO_ENDPOINT_SERVICES));
  ops.add(
    verdictMap(t, input.family, NO_ENDPOINT_NODEPORTS_MAP, COMMENT_NO_ENDPOINT_NODEPORTS, true),
  );
  ops.add(t.rule(REJECT_CHAIN, [verdict({ kind: 'reject' })]));
  ops.add(
    t.rule(SERVICE_ENDPOINTS_CHECK_CHAIN, [dispatchVmap(daddr(x), NO_ENDPOINT_SERVICES_MAP)]),
  );
  ops.add(
    t.rule(NODEPORT_ENDPOINTS_CHECK_CHAIN, [
      ...nodePortDestination(input),
      dispatchVmap(undefined, NO_ENDPOINT_NODEPORTS_MAP),
    ]),
  );
}

function firewallAndDispatch(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  const x = ipX(input.family);
  const o = input.options;
  ops.add(verdictMap(t, input.family, FIREWALL_IPS_MAP, COMMENT_FIREWALL_IPS));
  ops.add(t.rule(FIREWALL_CHECK_CHAIN, [dispatchVmap(daddr(x), FIREWALL_IPS_MAP)]));
  ops.add(verdictMap(t, input.family, SERVICE_IPS_MAP, COMMENT_SERVICE_IPS));
  ops.add(verdictMap(t, input.family, SERVICE_NODEPORTS_MAP, COMMENT_SERVICE_NODEPORTS, true));
  // Masquerade ClusterIP traffic from outside the cluster (or all of it), first in services.
  const notLocal = ifNotLocal(o.localDetector, x);
  if (o.masqueradeAll || notLocal.length > 0)
    ops.add(
      t.rule(
        SERVICES_CHAIN,
        [
          match(daddr(x), setref(CLUSTER_IPS_SET)),
          ...(o.masqueradeAll ? [] : notLocal),
          markOr(o.masqueradeMark),
        ],
        o.masqueradeAll ? COMMENT_MASQ_ALL : COMMENT_MASQ_OUTSIDE,
      ),
    );
  ops.add(t.rule(SERVICES_CHAIN, [dispatchVmap(daddr(x), SERVICE_IPS_MAP)]));
  ops.add(
    t.rule(SERVICES_CHAIN, [
      ...nodePortDestination(input),
      dispatchVmap(undefined, SERVICE_NODEPORTS_MAP),
    ]),
  );
}

/** The fixed operations of a full sync, in kube-proxy's order. */
export function planFixed(t: TableObjects, input: FixedPlanInput, ops: OpList): void {
  ops.add({ ...t.ref, kind: 'table', comment: TABLE_COMMENT });
  baseAndJumpChains(t, input, ops);
  masquerading(t, input, ops);
  clusterIPs(t, input, ops);
  planNodePortIPs(t, input.family, input.nodePorts, ops);
  noEndpoints(t, input, ops);
  firewallAndDispatch(t, input, ops);
}
