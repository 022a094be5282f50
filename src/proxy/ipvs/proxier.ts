// The IPVS proxier: kube-proxy's ipvs mode on the shared proxier wiring (proxier-base.ts:
// informers → change trackers → bounded-frequency runner, health-check node ports, UDP
// conntrack cleanup). Each sync of a family takes a snapshot, asks the pure `planIpvs` for
// the whole state and applies it, full or partial:
// - A full sync (the first, after a failure, every syncPeriod — or fullSyncPeriodMs when
//   given — and when options other than the node's addresses changed) reads the kernel
//   back: kube-ipvs0 ensured and its addresses read; every ipset created -exist and the
//   entries `ipset save` lists turned into the planned ones with del/add lines in one
//   `ipset restore` (as kube-proxy does: never flushed, so no moment without them); the
//   virtual/real servers diffed against `ipvsadm -S -n` (+ `-L -n` for connection
//   counters) and changed in one `ipvsadm -R`; the iptables rules written with
//   iptables-restore --noflush.
// - A partial sync reads nothing back but the connection counters of the virtual servers
//   losing real servers (ipvsadm -L -n per virtual server, or once for all past a few): it
//   applies the difference from the state the last sync left (`AppliedIpvs`) — ipset entries
//   deleted and added in one `ipset restore`, virtual/real servers in one `ipvsadm -R`,
//   kube-ipvs0 addresses bound and unbound, the iptables rules only when their text changed.
// In both, reconcileIpvs keeps a removed TCP real server with connections at weight 0 while
// they drain, then deletes it. Order matters: sets exist before the rules that match them,
// virtual servers before their addresses attract traffic; addresses go last.

import type { Node } from '../../kube/types.js';
import type { Ip, IpLink } from '../../os/ip.js';
import type { IPFamily } from '../../util/ip.js';
import { addrAdd, dummy } from '../../util/ip-ops.js';
import type { IpOp } from '../../util/ip-ops.js';
import { ProxierBase, newFamilyTrackers } from '../proxier-base.js';
import type { FamilyTrackers, ProxierBaseDeps, SyncStart } from '../proxier-base.js';
import type { ProxySnapshot } from '../model/snapshot.js';
import type { SyncReport } from '../proxier.js';
import type { IpvsKernel } from './kernel.js';
import { diffAddresses, ipsetContents, ipsetDiffOps } from './kernel-diff.js';
import type { IpsetContents } from './kernel-diff.js';
import { applyIpvsOperations, connectionsOf, reconcileIpvs, servicesToDrain } from './reconcile.js';
import { makeIpvsState } from '../../netfilter/ipvs/model.js';
import type { IpvsService, IpvsState } from '../../netfilter/ipvs/model.js';
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

/** What the kernel holds for a family after the last successful sync: a partial sync's base. */
export interface AppliedIpvs {
  /** This family's virtual servers (unplanned ones kept by excludeCIDRs included). */
  readonly ipvs: IpvsState;
  readonly ipsets: IpsetContents;
  /** Addresses on kube-ipvs0. */
  readonly bound: ReadonlySet<string>;
  /** The iptables-restore text last written. */
  readonly iptables: string;
  /** The options it was planned with: other options make the next sync full. */
  readonly optionsKey: string;
}

interface FamilyState extends FamilyTrackers {
  readonly kernel: IpvsKernel;
  lastPlan: IpvsPlan | undefined;
  applied: AppliedIpvs | undefined;
}

/** What one apply did: the new applied state and the bytes handed to the kernel. */
interface Applied {
  readonly state: AppliedIpvs;
  readonly bytes: number;
}

function hostBits(family: IPFamily): number {
  return family === 'IPv6' ? 128 : 32;
}

/** The state without connection counters (they are not state, and go stale at once). */
function withoutCounters(state: IpvsState): Map<string, IpvsService> {
  const out = new Map<string, IpvsService>();
  for (const [key, s] of state)
    out.set(key, {
      virtualServer: s.virtualServer,
      realServers: s.realServers.map(({ address, port, weight, forward }) => ({
        address,
        port,
        weight,
        forward,
      })),
    });
  return out;
}

/**
 * The options a full sync depends on, as text: all but the node's addresses (nodePortIPs,
 * localAddresses). Those only change which virtual servers, ipset entries and kube-ipvs0
 * addresses are planned, and a partial sync applies the whole plan's difference from the
 * last one: a pod's veth or link-local address coming and going never makes a sync full.
 */
export function fullSyncOptionsKey(options: IpvsProxierOptions): string {
  return JSON.stringify({ ...options, nodePortIPs: [], localAddresses: [] });
}

/** See the file header. */
export class IpvsProxier extends ProxierBase<FamilyState> {
  private readonly optionsFor: IpvsProxierDeps['optionsFor'];
  private readonly ip: Ip;

  constructor(deps: IpvsProxierDeps) {
    super(
      // kube-proxy's ipvs mode reads back and reconciles everything every syncPeriod; here the
      // syncs in between are partial (unless fullSyncPeriodMs says otherwise).
      { ...deps, fullSyncPeriodMs: deps.fullSyncPeriodMs ?? deps.syncPeriodMs },
      deps.families.map(({ family, kernel }) => ({
        ...newFamilyTrackers(family, deps.nodeName),
        kernel,
        lastPlan: undefined,
        applied: undefined,
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
    const base = f.applied;
    // A failure leaves the kernel part-way: forget what was applied; the retry is full.
    f.applied = undefined;
    let sync: Awaited<ReturnType<IpvsProxier['planAndApply']>>;
    try {
      sync = await this.planAndApply(f, begun, base);
    } catch (err) {
      this.deps.log.error({ err, ipFamily: f.family }, 'ipvs sync failed');
      throw err;
    }
    const { plan, fullSync, applied } = sync;
    f.applied = { ...applied.state, optionsKey: sync.optionsKey };
    f.lastPlan = plan;
    if (fullSync) f.lastFullSyncAt = begun.start;
    f.needFullSync = false;
    return this.finishSync(f, begun, {
      fullSync,
      noLocalEndpointsInternal: plan.noLocalEndpoints.internal,
      noLocalEndpointsExternal: plan.noLocalEndpoints.external,
      numServices: plan.virtualServers.length,
      numEndpoints: plan.virtualServers.reduce((n, v) => n + v.realServers.length, 0),
      bytes: applied.bytes,
    });
  }

  /** Plans and applies a partial sync when it may be one (same options), else a full one. */
  private async planAndApply(
    f: FamilyState,
    begun: SyncStart,
    base: AppliedIpvs | undefined,
  ): Promise<{ plan: IpvsPlan; optionsKey: string; fullSync: boolean; applied: Applied }> {
    if (base !== undefined && !begun.fullSync) {
      const { plan, options, optionsKey } = this.planFamily(f, begun.snapshot, base.bound);
      if (optionsKey === base.optionsKey) {
        const applied = await this.applyPartial(f, plan, options, base);
        return { plan, optionsKey, fullSync: false, applied };
      }
    }
    // A full sync reads kube-ipvs0 first: its addresses are the proxy's, not the node's.
    const onDummy = await this.dummyAddresses(f);
    const { plan, options, optionsKey } = this.planFamily(f, begun.snapshot, onDummy);
    const applied = await this.applyFull(f, plan, options, onDummy);
    return { plan, optionsKey, fullSync: true, applied };
  }

  /**
   * The family's options and plan. The addresses on kube-ipvs0 are left out of the node's
   * local addresses (kube-proxy lists node IPs without kube-ipvs0): an externalIP the proxy
   * bound there is not a node address that makes binding it unneeded.
   */
  private planFamily(
    f: FamilyState,
    snapshot: ProxySnapshot,
    onDummy: Iterable<string>,
  ): { plan: IpvsPlan; options: IpvsProxierOptions; optionsKey: string } {
    const bound = new Set(onDummy);
    const raw = this.optionsFor(f.family, this.node);
    const options = { ...raw, localAddresses: raw.localAddresses.filter((a) => !bound.has(a)) };
    const plan = planIpvs({
      family: f.family,
      services: snapshot.services,
      endpoints: snapshot.endpoints,
      options,
    });
    return { plan, options, optionsKey: fullSyncOptionsKey(options) };
  }

  /** A full sync: reads the kernel back and applies the whole plan (see the file header). */
  private async applyFull(
    f: FamilyState,
    plan: IpvsPlan,
    options: IpvsProxierOptions,
    current: readonly string[],
  ): Promise<Applied> {
    const { bind, unbind } = diffAddresses(plan.boundAddresses, current);
    const sets = await f.kernel.readIpsets();
    await f.kernel.applyIpsets(ipsetDiffOps(plan.ipsets, sets, true));
    const existing = await f.kernel.readIpvs();
    const before = makeIpvsState(existing);
    const ops = reconcileIpvs(before, plan.virtualServers, {
      family: f.family,
      excludeCIDRs: options.excludeCIDRs ?? [],
      connections: connectionsOf(existing),
      initialSync: f.lastPlan === undefined,
    });
    await f.kernel.applyIpvs(ops);
    await this.bindAddresses(f.family, bind);
    const rules = renderIpvsIptables(plan.iptables);
    await f.kernel.applyIptables(rules);
    await this.unbindAddresses(f.family, unbind);
    return {
      state: this.stateAfter(plan, withoutCounters(applyIpvsOperations(before, ops)), rules),
      bytes: rules.length,
    };
  }

  /** A partial sync: applies the difference from `base` (see the file header). */
  private async applyPartial(
    f: FamilyState,
    plan: IpvsPlan,
    options: IpvsProxierOptions,
    base: AppliedIpvs,
  ): Promise<Applied> {
    const { bind, unbind } = diffAddresses(plan.boundAddresses, [...base.bound]);
    const setOps = ipsetDiffOps(plan.ipsets, base.ipsets);
    if (setOps.length > 0) await f.kernel.applyIpsets(setOps);
    const draining = servicesToDrain(base.ipvs, plan.virtualServers);
    const listed = draining.length > 0 ? await f.kernel.readConnections(draining) : [];
    const ops = reconcileIpvs(base.ipvs, plan.virtualServers, {
      family: f.family,
      excludeCIDRs: options.excludeCIDRs ?? [],
      connections: connectionsOf(listed),
      initialSync: false,
    });
    if (ops.length > 0) await f.kernel.applyIpvs(ops);
    await this.bindAddresses(f.family, bind);
    const rules = renderIpvsIptables(plan.iptables);
    const rulesChanged = rules !== base.iptables;
    if (rulesChanged) await f.kernel.applyIptables(rules);
    await this.unbindAddresses(f.family, unbind);
    return {
      // The base has no counters, nor have the operations' real servers: nothing to strip.
      state: this.stateAfter(plan, applyIpvsOperations(base.ipvs, ops), rules),
      bytes: rulesChanged ? rules.length : 0,
    };
  }

  /** The applied state once `plan` went in and the IPVS table became `ipvs`. */
  private stateAfter(plan: IpvsPlan, ipvs: IpvsState, rules: string): AppliedIpvs {
    return {
      ipvs,
      ipsets: ipsetContents(plan.ipsets),
      bound: new Set(plan.boundAddresses),
      iptables: rules,
      optionsKey: '',
    };
  }

  private async bindAddresses(family: IPFamily, addrs: readonly string[]): Promise<void> {
    if (addrs.length === 0) return;
    const bits = hostBits(family);
    await this.ip.batch(
      undefined,
      addrs.map((a) => addrAdd(`${a}/${bits}`, IPVS_DUMMY_DEVICE)),
    );
  }

  private async unbindAddresses(family: IPFamily, addrs: readonly string[]): Promise<void> {
    if (addrs.length === 0) return;
    const bits = hostBits(family);
    await this.ip.batch(
      undefined,
      addrs.map((a): IpOp => ({ op: 'addrDel', cidr: `${a}/${bits}`, dev: IPVS_DUMMY_DEVICE })),
    );
  }

  /** This family's addresses on kube-ipvs0 (created when missing). */
  private async dummyAddresses(f: FamilyState): Promise<string[]> {
    const link = await this.ensureDummy();
    return link.addrs.filter((a) => a.family === f.family).map((a) => a.local);
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
