// reconcileIpvs: the IPVS operations that turn the kernel's current virtual servers into the
// plan's, as kube-proxy's syncService/syncEndpoint/cleanLegacyService do — add or edit
// changed virtual servers; add missing real servers; on the first sync after a restart,
// reset wanted real servers whose weight is not the plan's; a real server that is no longer
// wanted but still has connections goes to weight 0 (graceful termination: TCP only; UDP
// and SCTP go at once), otherwise it is deleted; one that comes back while at weight 0 is
// deleted and re-added. Virtual servers not planned are deleted unless their address is in
// excludeCIDRs or of the other family. Pure: the caller applies the operations (batched).

import { parseCIDRSloppy, parseIPSloppy, cidrContains } from '../../util/ip.js';
import type { IPFamily } from '../../util/ip.js';
import { realServerKey, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type {
  IpvsOperation,
  IpvsService,
  IpvsState,
  RealServer,
  VirtualServer,
  VirtualServerId,
} from '../../netfilter/ipvs/model.js';

export interface ReconcileOptions {
  readonly family: IPFamily;
  /** VS addresses in these CIDRs are never deleted (ipvs.excludeCIDRs). */
  readonly excludeCIDRs: readonly string[];
  /** Active + inactive connections of a real server (the Fake reports 0). */
  readonly connections: (vs: VirtualServer, rs: RealServer) => number;
  /** The first sync after start: wanted real servers get their planned weight back. */
  readonly initialSync: boolean;
  /** Delete virtual servers not planned (default true; false for a per-service sync). */
  readonly deleteStale?: boolean;
}

function sameVirtualServer(a: VirtualServer, b: VirtualServer): boolean {
  const flags = (v: VirtualServer) => v.flags.filter((f) => f !== 'hashed').join(',');
  return (
    a.scheduler === b.scheduler &&
    flags(a) === flags(b) &&
    (a.timeoutSeconds ?? 0) === (b.timeoutSeconds ?? 0)
  );
}

function excluded(address: string, family: IPFamily, cidrs: readonly string[]): boolean {
  const ip = parseIPSloppy(address);
  if (!ip || ip.family !== family) return true;
  return cidrs.some((c) => {
    const parsed = parseCIDRSloppy(c);
    return parsed !== undefined && cidrContains(parsed, ip);
  });
}

/** Real-server operations for one virtual server that exists (or is being added). */
function realServerOps(
  vs: VirtualServer,
  current: readonly RealServer[],
  wanted: readonly RealServer[],
  options: ReconcileOptions,
): IpvsOperation[] {
  const ops: IpvsOperation[] = [];
  const cur = new Map(current.map((r) => [realServerKey(r), r]));
  const want = new Map(wanted.map((r) => [realServerKey(r), r]));
  for (const [key, rs] of want) {
    const have = cur.get(key);
    if (!have) {
      ops.push({ verb: 'addReal', id: vs, realServer: rs });
    } else if (have.weight !== rs.weight) {
      if (options.initialSync) ops.push({ verb: 'editReal', id: vs, realServer: rs });
      else {
        // Back while draining at weight 0: delete the draining entry and add it afresh.
        ops.push({ verb: 'deleteReal', id: vs, realServer: have });
        ops.push({ verb: 'addReal', id: vs, realServer: rs });
      }
    }
  }
  for (const [key, rs] of cur) {
    if (want.has(key)) continue;
    if (vs.protocol === 'tcp' && options.connections(vs, rs) > 0) {
      if (rs.weight !== 0) ops.push({ verb: 'editReal', id: vs, realServer: { ...rs, weight: 0 } });
    } else {
      ops.push({ verb: 'deleteReal', id: vs, realServer: rs });
    }
  }
  return ops;
}

/**
 * The wanted TCP virtual servers of `current` that have real servers no longer wanted (to
 * delete, or draining at weight 0): whose connection counters graceful termination needs.
 */
export function servicesToDrain(
  current: IpvsState,
  wanted: readonly IpvsService[],
): VirtualServerId[] {
  const out: VirtualServerId[] = [];
  for (const s of wanted) {
    if (s.virtualServer.protocol !== 'tcp') continue;
    const have = current.get(virtualServerKey(s.virtualServer));
    if (have === undefined) continue;
    const want = new Set(s.realServers.map(realServerKey));
    if (have.realServers.some((rs) => !want.has(realServerKey(rs)))) out.push(s.virtualServer);
  }
  return out;
}

/** Active + inactive connections of each listed real server (0 for any other). */
export function connectionsOf(
  listed: readonly IpvsService[],
): (vs: VirtualServerId, rs: Pick<RealServer, 'address' | 'port'>) => number {
  const conns = new Map<string, number>();
  for (const s of listed)
    for (const rs of s.realServers)
      conns.set(
        `${virtualServerKey(s.virtualServer)} ${realServerKey(rs)}`,
        (rs.activeConn ?? 0) + (rs.inactConn ?? 0),
      );
  return (vs, rs) => conns.get(`${virtualServerKey(vs)} ${realServerKey(rs)}`) ?? 0;
}

/** The operations, in order: services and their real servers, then stale services. */
export function reconcileIpvs(
  current: IpvsState,
  wanted: readonly IpvsService[],
  options: ReconcileOptions,
): IpvsOperation[] {
  const ops: IpvsOperation[] = [];
  const wantedKeys = new Set<string>();
  for (const s of wanted) {
    const key = virtualServerKey(s.virtualServer);
    wantedKeys.add(key);
    const have = current.get(key);
    if (!have) ops.push({ verb: 'addService', virtualServer: s.virtualServer });
    else if (!sameVirtualServer(have.virtualServer, s.virtualServer))
      ops.push({ verb: 'editService', virtualServer: s.virtualServer });
    ops.push(...realServerOps(s.virtualServer, have?.realServers ?? [], s.realServers, options));
  }
  for (const [key, s] of current) {
    if (wantedKeys.has(key) || options.deleteStale === false) continue;
    if (excluded(s.virtualServer.address, options.family, options.excludeCIDRs)) continue;
    ops.push({ verb: 'deleteService', id: s.virtualServer });
  }
  return ops;
}

/** `state` after `ops` (what the kernel holds once they succeed). */
export function applyIpvsOperations(
  state: IpvsState,
  ops: readonly IpvsOperation[],
): Map<string, IpvsService> {
  const next = new Map(state);
  const withReals = (key: string, f: (rs: RealServer[]) => RealServer[]): void => {
    const s = next.get(key);
    if (s) next.set(key, { virtualServer: s.virtualServer, realServers: f([...s.realServers]) });
  };
  for (const op of ops) {
    switch (op.verb) {
      case 'addService':
      case 'editService': {
        const key = virtualServerKey(op.virtualServer);
        next.set(key, {
          virtualServer: op.virtualServer,
          realServers: next.get(key)?.realServers ?? [],
        });
        break;
      }
      case 'deleteService':
        next.delete(virtualServerKey(op.id));
        break;
      case 'addReal':
      case 'editReal': {
        const k = realServerKey(op.realServer);
        withReals(virtualServerKey(op.id), (rs) =>
          [...rs.filter((r) => realServerKey(r) !== k), op.realServer].sort((a, b) =>
            realServerKey(a) < realServerKey(b) ? -1 : 1,
          ),
        );
        break;
      }
      case 'deleteReal': {
        const k = realServerKey(op.realServer);
        withReals(virtualServerKey(op.id), (rs) => rs.filter((r) => realServerKey(r) !== k));
        break;
      }
    }
  }
  return next;
}
