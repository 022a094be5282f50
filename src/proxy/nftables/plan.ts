// planNftables: the pure core of kube-proxy's nftables mode for one IP family. Given the
// family's Service ports, endpoints and options (and, for partial syncs, what changed plus
// the previous plan's state; on a restart, what the kernel holds), it returns the nft
// transaction for the family's table (`ip kube-proxy` / `ip6 kube-proxy`) as typed
// operations, an optional earlier cleanup transaction (stale chains flushed ≥1 s ago are
// deleted), the state the next plan starts from, counts for metrics, and warnings. It does
// no I/O: the caller runs `cleanup` then `transaction` and adopts `state` only if the
// transaction succeeded (after a failure, plan a full sync from the old state).
//
// Full sync: the fixed objects (plan-fixed.ts) and every Service port's chains are written;
// set and map elements are diffed against the kernel's (`current`) or the previous state's.
// Partial sync: only the changed Services' chains are rewritten and only the elements that
// changed are added or deleted; nothing else is sent but the nodeport-ips set when the node's
// NodePort addresses changed (local addresses never make a sync full). See README.md.

import type {
  NftElement,
  NftSet,
  NftTable,
  Operation,
  TableRef,
  TableState,
  Transaction,
} from '../../netfilter/nftables/model.js';
import type { IPFamily } from '../../util/ip.js';
import type { EndpointInfo } from '../model/endpoint.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import type { ServicePortInfo } from '../model/service-port.js';
import {
  CLUSTER_IPS_SET,
  FIREWALL_IPS_MAP,
  HAIRPIN_CONNECTIONS_SET,
  NO_ENDPOINT_NODEPORTS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  TABLE_NAME,
  isAffinitySetName,
  isServiceChainName,
} from './names.js';
import { resolveNftNodePortAddresses, serviceCIDRsOfFamily } from './options.js';
import type { NftablesProxierOptions } from './options.js';
import { planFixed, planNodePortIPs } from './plan-fixed.js';
import { planServicePort } from './plan-service.js';
import type { NftPortFragment, NftServiceContext } from './plan-service.js';
import { BucketMap, ElementStoreDraft, effective, elementText, slotKey } from './plan-store.js';
import type { ElementSlot } from './plan-store.js';
import { OpList, TableObjects } from './statements.js';

export type { NftablesProxierOptions } from './options.js';
export type { NftPortFragment } from './plan-service.js';

/** How long a flushed stale chain waits before it is deleted (kernels < 6.2, reference row 30). */
export const STALE_CHAIN_DELETE_AFTER_MS = 1000;

/** The sets and maps whose elements Service ports own (diffed, never flushed). */
const SERVICE_SETS: ReadonlySet<string> = new Set([
  CLUSTER_IPS_SET,
  SERVICE_IPS_MAP,
  SERVICE_NODEPORTS_MAP,
  FIREWALL_IPS_MAP,
  NO_ENDPOINT_SERVICES_MAP,
  NO_ENDPOINT_NODEPORTS_MAP,
  HAIRPIN_CONNECTIONS_SET,
]);

export interface NftablesPlanInput {
  readonly family: IPFamily;
  readonly services: ServicePortMap;
  readonly endpoints: EndpointsMap;
  readonly options: NftablesProxierOptions;
  /**
   * `namespace/name` of Services changed since the previous successful plan, for a partial
   * sync; `'all'` (or absent, or no previous state, or changed options) means a full sync.
   */
  readonly changedServices?: ReadonlySet<string> | 'all';
  /** Milliseconds clock: stale chains are deleted once flushed this long ago (1 s). */
  readonly nowMs: number;
  /**
   * The kernel's table now (a restart, or any full sync after reading it back): on a full
   * sync its elements are the diff base (present ones are not re-added) and its chains and
   * affinity sets the candidates for stale cleanup. Ignored on partial syncs.
   */
  readonly current?: TableState;
  /** add+delete every base chain first; default: when there is no previous state. */
  readonly recreateBaseChains?: boolean;
}

/** What the next plan needs from this one. Adopt it only after a successful transaction. */
export interface NftPlanState {
  readonly family: IPFamily;
  /** The options a full sync depends on (`fullSyncOptionsText`): other ones make it full. */
  readonly optionsText: string;
  /** The nodeport-ips set as written (`undefined`: NodePorts match every local address). */
  readonly nodePortIPs: readonly string[] | undefined;
  /** Per Service port key, what it contributed (names and elements, not its rules). */
  readonly fragments: BucketMap<NftPortRecord>;
  /** `namespace/name` → the keys of its ports in `fragments`. */
  readonly portsByService: BucketMap<readonly string[]>;
  /** Elements of the shared sets/maps as written, with their owners. */
  readonly elements: BucketMap<ElementSlot>;
  /** Flushed service chains not yet deleted → when they were flushed (ms). */
  readonly staleChains: ReadonlyMap<string, number>;
  readonly totals: NftPlanTotals;
}

export interface NftPlanCounts {
  /** Operations in `transaction` / `cleanup`. */
  readonly operations: number;
  readonly cleanupOperations: number;
  /** Service and endpoint chains that exist after the sync (active, then stale). */
  readonly serviceChains: number;
  readonly staleChains: number;
  /** Elements in the Service sets and maps after the sync. */
  readonly elements: number;
}

export interface NftablesPlan {
  readonly family: IPFamily;
  readonly table: TableRef;
  /**
   * Run first, as its own transaction, when non-empty: deletes stale chains flushed at least
   * 1 s ago. If it fails, count it (`…_nftables_cleanup_failures_total`), still run
   * `transaction`, and make the next sync full with `current` read from the kernel.
   */
  readonly cleanup: Transaction;
  readonly transaction: Transaction;
  readonly state: NftPlanState;
  readonly fullSync: boolean;
  readonly counts: NftPlanCounts;
  readonly numServices: number;
  readonly numEndpoints: number;
  /** Service ports with iTP/eTP Local and no local endpoints (the no_local_endpoints gauge). */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
  /** Service ports left out because the kernel would refuse them (see `warnings`). */
  readonly skippedServicePorts: number;
  readonly warnings: readonly string[];
}

/** `ip kube-proxy` or `ip6 kube-proxy`. */
export function tableRefOf(family: IPFamily): TableRef {
  return { family: family === 'IPv4' ? 'ip' : 'ip6', table: TABLE_NAME };
}

/**
 * The options a full sync depends on, as text: all but the local addresses. Those reach only
 * the nodeport-ips set, which a partial sync rewrites when its contents change (kube-proxy
 * re-reads its node IPs every sync, and full-syncs only at start, hourly or after a failure).
 */
export function fullSyncOptionsText(options: NftablesProxierOptions): string {
  return JSON.stringify({ ...options, localAddresses: [] });
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function isFullSync(
  input: NftablesPlanInput,
  previous: NftPlanState | undefined,
  optionsText: string,
) {
  return (
    !(input.changedServices instanceof Set) ||
    previous === undefined ||
    previous.family !== input.family ||
    previous.optionsText !== optionsText
  );
}

const NO_ENDPOINTS: readonly EndpointInfo[] = [];

/**
 * What the state keeps of a written Service port: what a later sync needs to replace or
 * remove it (chain names, affinity sets, elements, counts). Its rules are dropped once
 * written (they were most of the state: ~3 kB per port at 10 endpoints); a port is
 * re-planned whenever it is written again.
 */
export interface NftPortRecord {
  readonly key: string;
  readonly serviceKey: string;
  readonly chains: readonly string[];
  readonly affinitySets: readonly NftSet[];
  readonly elements: readonly NftElement[];
  readonly numEndpoints: number;
  readonly noLocalEndpointsInternal: boolean;
  readonly noLocalEndpointsExternal: boolean;
  readonly skipped: boolean;
}

function recordOf(f: NftPortFragment): NftPortRecord {
  return {
    key: f.key,
    serviceKey: f.serviceKey,
    chains: f.chains.map((c) => c.chain.name),
    affinitySets: f.affinitySets,
    elements: f.elements,
    numEndpoints: f.numEndpoints,
    noLocalEndpointsInternal: f.noLocalEndpointsInternal,
    noLocalEndpointsExternal: f.noLocalEndpointsExternal,
    skipped: f.skipped,
  };
}

/** The fragments a sync writes and how the state changes. */
interface Assembly {
  readonly written: NftPortFragment[];
  /** Records of `written`, in the same order. */
  readonly writtenRecords: NftPortRecord[];
  /** Ports replaced or removed (partial: of changed Services; full: all previous). */
  readonly replaced: NftPortRecord[];
  readonly fragments: BucketMap<NftPortRecord>;
  readonly portsByService: BucketMap<readonly string[]>;
}

function fragmentPlanner(input: NftablesPlanInput) {
  const ctx: NftServiceContext = {
    family: input.family,
    options: input.options,
    table: new TableObjects(tableRefOf(input.family)),
  };
  return (key: string, sp: ServicePortInfo): NftPortFragment =>
    planServicePort(sp, input.endpoints.get(key) ?? NO_ENDPOINTS, ctx);
}

function assembleFull(
  input: NftablesPlanInput,
  previous: NftPlanState | undefined,
  plan: (key: string, sp: ServicePortInfo) => NftPortFragment,
): Assembly {
  const fragments = BucketMap.empty<NftPortRecord>().draft();
  const byService = new Map<string, string[]>();
  const written: NftPortFragment[] = [];
  const writtenRecords: NftPortRecord[] = [];
  for (const [key, sp] of input.services) {
    const f = plan(key, sp);
    const r = recordOf(f);
    written.push(f);
    writtenRecords.push(r);
    fragments.set(key, r);
    const list = byService.get(sp.serviceKey);
    if (list) list.push(key);
    else byService.set(sp.serviceKey, [key]);
  }
  const ports = BucketMap.empty<readonly string[]>().draft();
  for (const [s, keys] of byService) ports.set(s, keys);
  return {
    written,
    writtenRecords,
    replaced: previous ? previous.fragments.values() : [],
    fragments: fragments.finish(),
    portsByService: ports.finish(),
  };
}

function assemblePartial(
  input: NftablesPlanInput,
  previous: NftPlanState,
  changed: ReadonlySet<string>,
  plan: (key: string, sp: ServicePortInfo) => NftPortFragment,
): Assembly {
  const fragments = previous.fragments.draft();
  const ports = previous.portsByService.draft();
  const replaced: NftPortRecord[] = [];
  for (const s of changed)
    for (const key of previous.portsByService.get(s) ?? []) {
      const f = previous.fragments.get(key);
      if (f) replaced.push(f);
      fragments.delete(key);
    }
  for (const s of changed) ports.delete(s);
  const written: NftPortFragment[] = [];
  const writtenRecords: NftPortRecord[] = [];
  if (changed.size > 0)
    for (const [key, sp] of input.services) {
      if (!changed.has(sp.serviceKey)) continue;
      const f = plan(key, sp);
      const r = recordOf(f);
      written.push(f);
      writtenRecords.push(r);
      fragments.set(key, r);
      ports.set(sp.serviceKey, [...(ports.get(sp.serviceKey) ?? []), key]);
    }
  return {
    written,
    writtenRecords,
    replaced,
    fragments: fragments.finish(),
    portsByService: ports.finish(),
  };
}

/** Elements of the kernel's Service sets (the full-sync diff base on a restart). */
function kernelElements(current: TableState): Map<string, NftElement> {
  const out = new Map<string, NftElement>();
  for (const [name, s] of current.sets) {
    if (!SERVICE_SETS.has(name)) continue;
    for (const e of s.elements.values()) out.set(slotKey(e), e);
  }
  return out;
}

/** A delete needs only the key. */
function keyOnly(e: NftElement): NftElement {
  return { family: e.family, table: e.table, kind: 'element', set: e.set, key: e.key };
}

interface ElementDiff {
  readonly adds: Operation[];
  readonly deletes: Operation[];
}

function diffElements(
  keys: Iterable<string>,
  before: (k: string) => NftElement | undefined,
  after: (k: string) => NftElement | undefined,
): ElementDiff {
  const adds: Operation[] = [];
  const deletes: Operation[] = [];
  for (const k of keys) {
    const b = before(k);
    const a = after(k);
    if (a === undefined) {
      if (b !== undefined) deletes.push({ verb: 'delete', object: keyOnly(b) });
    } else if (b === undefined) adds.push({ verb: 'add', object: a });
    else if (a !== b && elementText(a) !== elementText(b)) {
      // nft refuses to change an element's value in place: delete, then add.
      adds.push({ verb: 'delete', object: keyOnly(b) }, { verb: 'add', object: a });
    }
  }
  return { adds, deletes };
}

function buildElements(
  previous: NftPlanState | undefined,
  a: Assembly,
  fullSync: boolean,
): { store: ElementStoreDraft; base: BucketMap<ElementSlot> } {
  const base = previous?.elements ?? BucketMap.empty<ElementSlot>();
  const store = new ElementStoreDraft((fullSync ? BucketMap.empty<ElementSlot>() : base).draft());
  if (!fullSync) for (const f of a.replaced) for (const e of f.elements) store.remove(f.key, e);
  for (const f of a.written) for (const e of f.elements) store.add(f.key, e);
  return { store, base };
}

function elementChanges(
  input: NftablesPlanInput,
  fullSync: boolean,
  base: BucketMap<ElementSlot>,
  store: ElementStoreDraft,
  next: BucketMap<ElementSlot>,
): ElementDiff {
  const after = (k: string) => effective(next.get(k));
  if (!fullSync) return diffElements(store.touched, (k) => effective(base.get(k)), after);
  if (input.current !== undefined) {
    const kernel = kernelElements(input.current);
    const keys = new Set(kernel.keys());
    for (const [k] of next.entries()) keys.add(k);
    return diffElements(keys, (k) => kernel.get(k), after);
  }
  const keys = new Set<string>();
  for (const [k] of base.entries()) keys.add(k);
  for (const [k] of next.entries()) keys.add(k);
  return diffElements(keys, (k) => effective(base.get(k)), after);
}

function chainsOf(records: Iterable<NftPortRecord>): Set<string> {
  const out = new Set<string>();
  for (const f of records) for (const c of f.chains) out.add(c);
  return out;
}

function affinitySetsOf(records: Iterable<NftPortRecord>): Map<string, NftSet> {
  const out = new Map<string, NftSet>();
  for (const f of records) for (const s of f.affinitySets) out.set(s.name, s);
  return out;
}

interface Staleness {
  /** Chains to flush now (newly stale). */
  readonly flush: string[];
  /** Stale chains to delete in the cleanup transaction. */
  readonly delete: string[];
  readonly staleChains: Map<string, number>;
  /** Affinity sets that exist before this sync (name → definition). */
  readonly existingAffinity: Map<string, NftSet>;
  readonly deleteAffinity: string[];
}

function staleness(
  input: NftablesPlanInput,
  previous: NftPlanState | undefined,
  a: Assembly,
  fullSync: boolean,
): Staleness {
  const now = input.nowMs;
  const kernel = fullSync ? input.current : undefined;
  // On a full sync `written` holds every port.
  const active = chainsOf(a.writtenRecords);
  const prevStale = previous?.staleChains ?? new Map<string, number>();
  let candidates: Iterable<string>;
  if (kernel) candidates = [...kernel.chains.keys()].filter(isServiceChainName);
  else candidates = chainsOf(a.replaced);
  const kernelChains = kernel ? new Set(candidates) : undefined;
  const staleChains = new Map<string, number>();
  const del: string[] = [];
  for (const [c, at] of prevStale) {
    if (active.has(c)) continue;
    if (kernelChains !== undefined && !kernelChains.has(c)) continue;
    if (now - at >= STALE_CHAIN_DELETE_AFTER_MS) del.push(c);
    else staleChains.set(c, at);
  }
  const flush: string[] = [];
  const deleting = new Set(del);
  for (const c of candidates) {
    if (active.has(c) || staleChains.has(c) || deleting.has(c)) continue;
    flush.push(c);
    staleChains.set(c, now);
  }
  const existingAffinity = new Map<string, NftSet>();
  if (kernel) {
    for (const [name, s] of kernel.sets)
      if (isAffinitySetName(name)) existingAffinity.set(name, s.set);
  } else for (const [n, s] of affinitySetsOf(a.replaced)) existingAffinity.set(n, s);
  const activeAffinity = affinitySetsOf(a.writtenRecords);
  const deleteAffinity = [...existingAffinity.keys()].filter((n) => !activeAffinity.has(n));
  return { flush: flush.sort(), delete: del.sort(), staleChains, existingAffinity, deleteAffinity };
}

/** add+flush each chain, (re)create affinity sets, then the rules. */
function writeFragment(
  f: NftPortFragment,
  ops: OpList,
  existingAffinity: ReadonlyMap<string, NftSet>,
): void {
  for (const c of f.chains) {
    ops.add(c.chain);
    ops.flush(c.chain);
  }
  for (const s of f.affinitySets) {
    const before = existingAffinity.get(s.name);
    // nft refuses to change a set's timeout with `add`: the set is recreated instead (its
    // users were flushed above).
    if (before !== undefined && before.timeoutSeconds !== s.timeoutSeconds) ops.delete(before);
    ops.add(s);
  }
  for (const c of f.chains) for (const r of c.rules) ops.add(r);
}

/** Sums over all Service ports, kept in the state so a partial sync only adjusts them. */
export interface NftPlanTotals {
  readonly numEndpoints: number;
  readonly noLocalInternal: number;
  readonly noLocalExternal: number;
  readonly skipped: number;
  readonly chains: number;
}

const ZERO_TOTALS: NftPlanTotals = {
  numEndpoints: 0,
  noLocalInternal: 0,
  noLocalExternal: 0,
  skipped: 0,
  chains: 0,
};

function adjustTotals(
  start: NftPlanTotals,
  minus: readonly NftPortRecord[],
  plus: readonly NftPortRecord[],
): NftPlanTotals {
  const t = { ...start };
  const add = (f: NftPortRecord, k: number) => {
    t.numEndpoints += k * f.numEndpoints;
    if (f.noLocalEndpointsInternal) t.noLocalInternal += k;
    if (f.noLocalEndpointsExternal) t.noLocalExternal += k;
    if (f.skipped) t.skipped += k;
    t.chains += k * f.chains.length;
  };
  for (const f of minus) add(f, -1);
  for (const f of plus) add(f, 1);
  return t;
}

/**
 * Plans one sync of one IP family (see the file header). Never throws on odd Services: a
 * port the kernel would refuse is skipped and counted, and comes back in `warnings`.
 */
export function planNftables(input: NftablesPlanInput, previous?: NftPlanState): NftablesPlan {
  const { family, options } = input;
  const optionsText = fullSyncOptionsText(options);
  const fullSync = isFullSync(input, previous, optionsText);
  const plan = fragmentPlanner(input);
  const a =
    fullSync || previous === undefined || !(input.changedServices instanceof Set)
      ? assembleFull(input, previous, plan)
      : assemblePartial(input, previous, input.changedServices, plan);
  const t = new TableObjects(tableRefOf(family));
  const ops = new OpList();
  const warnings: string[] = [];
  const nodePorts = resolveNftNodePortAddresses(options, family);
  const nodePortIPs = nodePorts.matchAll ? undefined : nodePorts.ips;
  if (fullSync) {
    warnings.push(...nodePorts.warnings);
    planFixed(
      t,
      {
        family,
        options,
        nodePorts,
        serviceCIDRs: serviceCIDRsOfFamily(options.serviceCIDRs, family),
        recreateBaseChains: input.recreateBaseChains ?? previous === undefined,
      },
      ops,
    );
  } else if (!sameList(previous?.nodePortIPs, nodePortIPs)) {
    // A node address nodePortAddresses selects came or went: only the set changes.
    warnings.push(...nodePorts.warnings);
    planNodePortIPs(t, family, nodePorts, ops);
  }
  const stale = staleness(input, previous, a, fullSync);
  for (const f of a.written) {
    warnings.push(...f.warnings);
    if (!f.skipped) writeFragment(f, ops, stale.existingAffinity);
  }
  const { store, base } = buildElements(previous, a, fullSync);
  const elements = store.draft.finish();
  warnings.push(...store.conflicts);
  const diff = elementChanges(input, fullSync, base, store, elements);
  ops.ops.push(...diff.adds);
  for (const c of stale.flush) ops.flush(t.chain(c));
  for (const s of stale.deleteAffinity) {
    const def = stale.existingAffinity.get(s);
    if (def) ops.delete(def);
  }
  ops.ops.push(...diff.deletes);
  const cleanup = stale.delete.map((c): Operation => ({ verb: 'delete', object: t.chain(c) }));
  const totals =
    fullSync || previous === undefined
      ? adjustTotals(ZERO_TOTALS, [], a.writtenRecords)
      : adjustTotals(previous.totals, a.replaced, a.writtenRecords);
  return {
    family,
    table: t.ref,
    cleanup,
    transaction: ops.ops,
    state: {
      family,
      optionsText,
      nodePortIPs,
      fragments: a.fragments,
      portsByService: a.portsByService,
      elements,
      staleChains: stale.staleChains,
      totals,
    },
    fullSync,
    counts: {
      operations: ops.ops.length,
      cleanupOperations: cleanup.length,
      serviceChains: totals.chains + stale.staleChains.size,
      staleChains: stale.staleChains.size,
      elements: elements.size,
    },
    numServices: input.services.size,
    numEndpoints: totals.numEndpoints,
    noLocalEndpointsInternal: totals.noLocalInternal,
    noLocalEndpointsExternal: totals.noLocalExternal,
    skippedServicePorts: totals.skipped,
    warnings,
  };
}

/** The table object a plan's transactions write (for callers that create it themselves). */
export function tableOf(family: IPFamily): NftTable {
  return { ...tableRefOf(family), kind: 'table' };
}
