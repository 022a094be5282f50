// The IPVS step of a trace: a packet whose destination is a virtual server (its address is
// bound on kube-ipvs0, so it is local to the node) is taken by IPVS — in LOCAL_IN (after the
// filter INPUT chains) for packets entering the node, in LOCAL_OUT (after nat OUTPUT) for the
// node's own — and DNATed to one real server picked by the scheduler. The tracer forks one
// branch per real server with its probability for a new connection:
//   rr   — equal among real servers of weight > 0 (weights only switch a server off);
//   wrr, sh and the rest — weight-proportional (sh: over many clients; each client always
//        gets the same one; lc/wlc/… depend on live connection counts: assumed idle);
//   weight 0 (a terminating endpoint under kube-proxy's graceful termination) — never chosen
//        for a new connection.
// Persistence (`-p`, kube-proxy's ClientIP affinity) keeps a client on its first real server
// for the timeout: said in the step. No real server of weight > 0: the kernel's ip_vs_leave()
// answers ICMP port unreachable and drops the packet (a REJECT outcome). Pure.

import type { ParsedIP } from '../../util/ip.js';
import { formatHostPort, type Protocol } from '../packet.js';
import type { Hook, TraceStep } from '../result.js';
import { formatProbability } from '../walk-state.js';
import type { IpsetState } from './ipset.js';
import { vsKey, type IpvsTable, type RealServer, type VirtualServer } from './ipvsadm.js';

/** What a trace through IPVS mode needs besides the iptables rules. */
export interface IpvsTraceState {
  readonly ipsets: IpsetState;
  readonly ipvs: IpvsTable;
  /** `vsKey` → the Service port behind it (`ns/name:port`), when the caller knows it. */
  readonly serviceNames?: ReadonlyMap<string, string>;
}

/** One way through a virtual server: a real server with its probability, or none. */
export interface IpvsBranch {
  readonly realServer: RealServer | undefined;
  readonly probability: number;
  readonly step: TraceStep;
}

/** The virtual server for protocol, address and port, if any. */
export function findVirtualServer(
  t: IpvsTraceState,
  protocol: Protocol,
  ip: ParsedIP,
  port: number,
): VirtualServer | undefined {
  const key = vsKey(protocol, ip, port);
  return t.ipvs.virtualServers.find((v) => vsKey(v.protocol, v.ip, v.port) === key);
}

/** Every address a virtual server is bound to (kube-ipvs0 and node addresses): local. */
export function virtualServerAddresses(t: IpvsTraceState): ParsedIP[] {
  const seen = new Map<string, ParsedIP>();
  for (const v of t.ipvs.virtualServers) seen.set(`${v.ip.family}/${v.ip.value}`, v.ip);
  return [...seen.values()];
}

/** The chance each real server gets a new connection (summing to 1, or all 0). */
export function realServerShares(vs: VirtualServer): number[] {
  const live = vs.realServers.map((r) => (r.weight > 0 ? r.weight : 0));
  const count = live.filter((w) => w > 0).length;
  if (count === 0) return live.map(() => 0);
  if (vs.scheduler === 'rr') return live.map((w) => (w > 0 ? 1 / count : 0));
  const total = live.reduce((a, b) => a + b, 0);
  return live.map((w) => w / total);
}

function schedulerText(vs: VirtualServer): string {
  if (vs.scheduler === 'rr') return 'round robin among real servers of weight > 0';
  if (vs.scheduler === 'wrr') return 'weighted round robin (weight-proportional)';
  if (vs.scheduler === 'sh')
    return 'source hashing: each client always gets the same real server; weight-proportional over many clients';
  return `scheduler ${vs.scheduler} depends on live connection counts; assumed idle servers (weight-proportional)`;
}

/** The real servers a new connection to `vs` can reach, one branch each (weight 0 kept). */
export function ipvsBranches(t: IpvsTraceState, vs: VirtualServer, hook: Hook): IpvsBranch[] {
  const key = vsKey(vs.protocol, vs.ip, vs.port);
  const servicePort = t.serviceNames?.get(key);
  const chain = `${vs.protocol.toUpperCase()} ${formatHostPort(vs.ip, vs.port)} ${vs.scheduler}`;
  const base = {
    hook,
    table: 'ipvs',
    chain,
    depth: 0,
    ...(servicePort !== undefined ? { servicePort } : {}),
  };
  const persist =
    vs.persistence === undefined
      ? ''
      : `; persistent ${vs.persistence}s (ClientIP affinity): a client's later connections within ${vs.persistence}s go to the real server its first one got`;
  const shares = realServerShares(vs);
  if (shares.every((p) => p === 0))
    return [
      {
        realServer: undefined,
        probability: 1,
        step: {
          ...base,
          effect: 'reject',
          detail: `virtual server ${key} has no real server of weight > 0: IPVS answers ICMP port unreachable and drops the packet (ip_vs_leave)`,
        },
      },
    ];
  return vs.realServers.map((rs, i) => {
    const p = shares[i] ?? 0;
    const endpoint = formatHostPort(rs.ip, rs.port);
    const why =
      p === 0
        ? `weight 0 (terminating): gets no new connections`
        : `${schedulerText(vs)}: probability ${formatProbability(p)}`;
    return {
      realServer: rs,
      probability: p,
      step: {
        ...base,
        effect: 'dnat',
        detail: `IPVS: real server ${endpoint} (${rs.forward}, weight ${rs.weight}), ${why}${persist}`,
        endpoint,
      },
    };
  });
}
