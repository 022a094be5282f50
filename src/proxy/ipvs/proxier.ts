// The IPVS proxier: kube-proxy's ipvs mode on the shared proxier wiring (proxier-base.ts:
// informers → change trackers → bounded-frequency runner, health-check node ports, UDP
// conntrack cleanup). Each sync of a family takes a snapshot, asks the pure `planIpvs` for
// the whole state and applies it: the kube-ipvs0 dummy ensured and its addresses bound
// (through the `Ip` seam), every ipset created -exist, flushed and refilled (one `ipset
// restore`), the virtual/real servers diffed against `ipvsadm -S -n` read back and changed in
// one `ipvsadm -R` (reconcileIpvs: a removed TCP real server with connections kept at weight
// 0 while they drain, then deleted), the
// iptables rules with iptables-restore --noflush, and last the addresses no longer wanted
// unbound. Order matters: sets exist before the rules that match them, virtual servers
// before their addresses attract traffic. Every sync is full (the state is read back).

import type { Node } from '../../kube/types.js';
import type { Ip, IpLink } from '../../os/ip.js';
import type { IPFamily } from '../../util/ip.js';
import { addrAdd, dummy } from '../../util/ip-ops.js';
import type { IpOp } from '../../util/ip-ops.js';
import { ProxierBase, newFamilyTrackers } from '../proxier-base.js';
import type { FamilyTrackers, ProxierBaseDeps } from '../proxier-base.js';
import type { SyncReport } from '../proxier.js';
import type { IpvsKernel } from './kernel.js';
import { diffAddresses, ipsetOps } from './kernel-diff.js';
import { reconcileIpvs } from './reconcile.js';
import { makeIpvsState, realServerKey, virtualServerKey } from '../../netfilter/ipvs/model.js';
import type { RealServer, VirtualServer } from '../../netfilter/ipvs/model.js';
import { IPVS_DUMMY_DEVICE } from './names.js';
import type { IpvsProxierOptions } from './options.js';
import { planIpvs } from './plan.js';
import type { IpvsPlan } from './plan.js';
import { renderIpvsIptables } from './rules.js';

export interface IpvsProxierDeps extends ProxierBaseDeps {
  /** One entry per IP family the node runs (IPv4 first for dual-stack). */
  readonly families: readonly { readonly family: IPFamily; readonly kernel: IpvsKernel }[];
  /** The host's links and addresses (kube-ipvs0). */
  readonly ip: Ip;
  /** Plan options for a family, given the Node as last seen (re-evaluated every sync). */
  readonly optionsFor: (family: IPFamily, node: Node | undefined) => IpvsProxierOptions;
}

interface FamilyState extends FamilyTrackers {
  readonly kernel: IpvsKernel;
  lastPlan: IpvsPlan | undefined;
}

function connKey(vs: VirtualServer, rs: RealServer): string {
  return `${virtualServerKey(vs)} ${realServerKey(rs)}`;
}

function hostBits(family: IPFamily): number {
  return family === 'IPv6' ? 128 : 32;
}

/** See the file header. */
export class IpvsProxier extends ProxierBase<FamilyState> {
  private readonly optionsFor: IpvsProxierDeps['optionsFor'];
  private readonly ip: Ip;

  constructor(deps: IpvsProxierDeps) {
    super(
      deps,
      deps.families.map(({ family, kernel }) => ({
        ...newFamilyTrackers(family, deps.nodeName),
        kernel,
        lastPlan: undefined,
      })),
      'ipvs',
    );
    this.optionsFor = deps.optionsFor;
    this.ip = deps.ip;
  }

  /** The last successful plan of a family (for debugging and tests). */
  lastPlan(family: IPFamily): IpvsPlan | undefined {
    return this.families.find((f) => f.family === family)?.lastPlan;
  }

  protected async syncFamily(f: FamilyState): Promise<SyncReport> {
    const begun = this.beginSync(f);
    const options = this.optionsFor(f.family, this.node);
    const plan = planIpvs({
      family: f.family,
      services: begun.snapshot.services,
      endpoints: begun.snapshot.endpoints,
      options,
    });
    let bytes: number;
    try {
      bytes = await this.apply(f, plan);
    } catch (err) {
      this.deps.log.error({ err, ipFamily: f.family }, 'ipvs sync failed');
      throw err;
    }
    f.lastPlan = plan;
    f.lastFullSyncAt = begun.start;
    f.needFullSync = false;
    return this.finishSync(f, begun, {
      fullSync: true,
      noLocalEndpointsInternal: plan.noLocalEndpoints.internal,
      noLocalEndpointsExternal: plan.noLocalEndpoints.external,
      numServices: plan.virtualServers.length,
      numEndpoints: plan.virtualServers.reduce((n, v) => n + v.realServers.length, 0),
      bytes,
    });
  }

  /** Applies one family's plan (see the file header for the order); returns the bytes of rules. */
  private async apply(f: FamilyState, plan: IpvsPlan): Promise<number> {
    const link = await this.ensureDummy();
    const current = link.addrs.filter((a) => a.family === f.family).map((a) => a.local);
    const { bind, unbind } = diffAddresses(plan.boundAddresses, current);
    await f.kernel.applyIpsets(ipsetOps(plan.ipsets));
    const existing = await f.kernel.readIpvs();
    const conns = new Map<string, number>();
    for (const s of existing)
      for (const rs of s.realServers)
        conns.set(connKey(s.virtualServer, rs), (rs.activeConn ?? 0) + (rs.inactConn ?? 0));
    await f.kernel.applyIpvs(
      reconcileIpvs(makeIpvsState(existing), plan.virtualServers, {
        family: f.family,
        excludeCIDRs: [],
        connections: (vs, rs) => conns.get(connKey(vs, rs)) ?? 0,
        initialSync: f.lastPlan === undefined,
      }),
    );
    const bits = hostBits(f.family);
    if (bind.length > 0)
      await this.ip.batch(
        undefined,
        bind.map((a) => addrAdd(`${a}/${bits}`, IPVS_DUMMY_DEVICE)),
      );
    const rules = renderIpvsIptables(plan.iptables);
    await f.kernel.applyIptables(rules);
    if (unbind.length > 0)
      await this.ip.batch(
        undefined,
        unbind.map((a): IpOp => ({ op: 'addrDel', cidr: `${a}/${bits}`, dev: IPVS_DUMMY_DEVICE })),
      );
    return rules.length;
  }

  /** kube-ipvs0, created (down, as kube-proxy leaves it) when missing. */
  private async ensureDummy(): Promise<IpLink> {
    const find = async (): Promise<IpLink | undefined> =>
      (await this.ip.links(undefined)).find((l) => l.name === IPVS_DUMMY_DEVICE);
    const found = await find();
    if (found) return found;
    const ops: IpOp[] = [dummy(IPVS_DUMMY_DEVICE)];
    await this.ip.batch(undefined, ops);
    const made = await find();
    if (!made) throw new Error(`${IPVS_DUMMY_DEVICE} was not created`);
    return made;
  }
}
