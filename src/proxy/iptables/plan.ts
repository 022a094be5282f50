// planIptables: the pure core of kube-proxy's iptables mode. Given one family's Service
// ports, endpoints and proxier options (and, for partial syncs, what changed plus the
// previous plan's state), it returns the iptables-restore input a sync applies with
// `--noflush --counters` (as text, and as a typed document on demand), the jump rules to
// ensure from the built-in chains, the state the next plan starts from, and rule counts for
// metrics. It does no I/O: the caller applies the text and adopts `state` only if the
// restore succeeded (after a failure, plan a full sync from the old state).
//
// Full sync: every chain is written. Partial sync (KEP-3453): the filter table and the fixed
// nat chains are written in full, but only the KUBE-SVC/SVL/EXT/FW/SEP chains of changed
// Services; per-port results of unchanged Services are reused from the previous state.
// Stale service chains (existing minus active) are declared and deleted with `-X`.
// `changes` is that text without what a partial sync would rewrite as it already is (see
// `changesOnly`): what the proxier applies, since a legacy restore costs the whole table.

import type { IptablesDocument } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import type { EndpointsMap } from '../model/endpoints-change-tracker.js';
import type { ServicePortMap } from '../model/service-change-tracker.js';
import type { IPFamily } from '../../util/ip.js';
import {
  CANARY_TABLES,
  FILTER_FIXED_CHAINS,
  KUBE_FIREWALL,
  KUBE_PROXY_CANARY,
  NAT_FIXED_CHAINS,
  KUBE_NODEPORTS,
  KUBE_SERVICES,
  isServiceChainName,
} from './names.js';
import type { IptablesProxierOptions } from './options.js';
import {
  forwardRules,
  jumpRules,
  kubeFirewallRules,
  markMasqRules,
  nodePortsJumpRules,
  postroutingRules,
  writesKubeFirewall,
} from './plan-fixed.js';
import type { JumpRule } from './plan-fixed.js';
import { planServicePort } from './plan-service.js';
import type {
  PlannedPort,
  SepName,
  ServicePlanContext,
  ServicePortFragment,
} from './plan-service.js';
import {
  bucketCount,
  findFragment,
  groupPorts,
  makeBucket,
  partialEndpointCount,
  portsOfServices,
} from './plan-buckets.js';
import type { Bucket, PartialInput } from './plan-buckets.js';
import type { ServicePortInfo } from '../model/service-port.js';
import type { EndpointInfo } from '../model/endpoint.js';
import { RuleWriter, chainLine } from './rule-writer.js';

export type { JumpRule } from './plan-fixed.js';
export type { ServicePortFragment } from './plan-service.js';

export interface IptablesPlanInput {
  readonly family: IPFamily;
  readonly services: ServicePortMap;
  readonly endpoints: EndpointsMap;
  readonly options: IptablesProxierOptions;
  /**
   * `namespace/name` of Services changed since the previous successful plan, for a partial
   * sync; `'all'` (or absent, or no previous state, or changed options) means a full sync.
   */
  readonly changedServices?: ReadonlySet<string> | 'all';
  /**
   * Nat chains that exist in the kernel now (from `iptables-save -t nat`); defaults to the
   * chains the previous state says exist. Only KUBE-SVC/SVL/EXT/FW/SEP names matter.
   */
  readonly existingNatChains?: Iterable<string>;
  /** Milliseconds clock (for large-cluster stale-chain cleanup throttling). */
  readonly nowMs?: number;
}

/** What the next plan needs from this one. Adopt it only after a successful restore. */
export interface PlanState {
  readonly family: IPFamily;
  readonly optionsText: string;
  /** Per Service port, what it contributed, bucketed by Service (see plan-buckets.ts). */
  readonly buckets: readonly Bucket[];
  /** Stale service chains left in place (large-cluster cleanup throttling). */
  readonly orphans: ReadonlySet<string>;
  readonly lastCleanupMs: number;
  readonly largeClusterMode: boolean;
  /** Memo of endpoint chain names (carried from plan to plan). */
  readonly sepNames: WeakMap<EndpointInfo, SepName>;
  /** The rules of no Service port, as written (a few lines; see `changesOnly`). */
  readonly fixedTexts: FixedTexts;
}

/**
 * The rules of no Service port: filter's (KUBE-FIREWALL, KUBE-FORWARD), nat's first
 * (KUBE-POSTROUTING, KUBE-MARK-MASQ) and last (the KUBE-SERVICES jump to KUBE-NODEPORTS).
 */
export interface FixedTexts {
  readonly filter: string;
  readonly natHead: string;
  readonly natTail: string;
}

/** Every service chain that exists once `state`'s plan is applied. */
export function natChainsOf(state: Pick<PlanState, 'buckets' | 'orphans'>): Set<string> {
  const out = new Set(state.orphans);
  for (const b of state.buckets)
    for (const f of b.fragments.values()) for (const c of f.natChains) out.add(c);
  return out;
}

export interface RuleCounts {
  readonly filterChains: number;
  readonly filterRules: number;
  readonly natChains: number;
  /** nat `-A` lines written by this restore (`…_iptables_last{table=nat}`). */
  readonly natRulesLast: number;
  /** nat rules in the kernel after it (`…_iptables_total{table=nat}`). */
  readonly natRulesTotal: number;
  readonly deletedChains: number;
}

/**
 * Where one table's section lies in the plan's text, split where full syncs add hook lines:
 * `text.slice(start, rulesStart)` is `*table` and the chain declarations,
 * `text.slice(rulesStart, end)` the rules and chain deletions, and `COMMIT` follows at `end`.
 */
export interface PlanTable {
  readonly name: 'filter' | 'nat';
  readonly start: number;
  readonly rulesStart: number;
  readonly end: number;
  /** The chains every plan declares in this table (jump targets among them). */
  readonly fixedChains: readonly string[];
}

/** One table's text as pieces, before joining. */
interface TablePieces {
  readonly name: PlanTable['name'];
  readonly head: readonly string[];
  readonly body: readonly string[];
  readonly fixedChains: readonly string[];
}

/** Joins the tables into one restore text (one copy) and notes where each part lies. */
function joinTables(tables: readonly TablePieces[]): { text: string; tables: PlanTable[] } {
  const parts: string[] = [];
  const out: PlanTable[] = [];
  let at = 0;
  const add = (pieces: readonly string[]): void => {
    for (const p of pieces) {
      parts.push(p);
      at += p.length;
    }
  };
  for (const t of tables) {
    const start = at;
    add(t.head);
    const rulesStart = at;
    add(t.body);
    out.push({ name: t.name, start, rulesStart, end: at, fixedChains: t.fixedChains });
    add(['COMMIT\n']);
  }
  return { text: parts.join(''), tables: out };
}

export interface IptablesPlan {
  /** The iptables-restore input (`*filter … COMMIT *nat … COMMIT`), no comments. */
  readonly text: string;
  /**
   * `text` without what the kernel already holds from the previous plan (a partial sync's
   * unchanged filter table, unchanged KUBE-SERVICES and KUBE-NODEPORTS, and the fixed nat
   * chains); '' when nothing changed. `text` itself on full syncs. See `changesOnly`.
   */
  readonly changes: string;
  /** Where each table's declarations and rules lie in `text`, in order. */
  readonly tables: readonly PlanTable[];
  /** `text` as a typed document (parsed on first access). */
  readonly document: IptablesDocument;
  /** Rules to ensure at the top of built-in chains; non-empty on full syncs only. */
  readonly jumps: readonly JumpRule[];
  /** Chains kube-proxy keeps (empty) in mangle, nat and filter to detect flushes. */
  readonly canaryChains: readonly {
    readonly table: 'mangle' | 'nat' | 'filter';
    readonly chain: string;
  }[];
  readonly state: PlanState;
  readonly fullSync: boolean;
  readonly counts: RuleCounts;
  readonly numServices: number;
  readonly numEndpoints: number;
  /** Service ports with iTP/eTP Local and no local endpoints (the no_local_endpoints gauge). */
  readonly noLocalEndpointsInternal: number;
  readonly noLocalEndpointsExternal: number;
  readonly largeClusterMode: boolean;
  readonly warnings: readonly string[];
}

/**
 * The options a full sync depends on, as text: all but the local addresses. Those reach only
 * the KUBE-SERVICES NodePort jumps, which every sync rewrites (kube-proxy re-reads its node
 * IPs every sync, and full-syncs only at start, hourly, on canary loss or after a failure).
 */
export function fullSyncOptionsText(options: IptablesProxierOptions): string {
  return JSON.stringify({ ...options, localAddresses: [] });
}

function isFullSync(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  optionsText: string,
) {
  return (
    input.changedServices === undefined ||
    input.changedServices === 'all' ||
    previous === undefined ||
    previous.family !== input.family ||
    previous.optionsText !== optionsText
  );
}

function countEndpoints(input: IptablesPlanInput): number {
  let total = 0;
  for (const key of input.services.keys()) total += input.endpoints.get(key)?.length ?? 0;
  return total;
}

function sumBuckets(buckets: readonly Bucket[]) {
  const t = {
    filterRules: 0,
    dispatchRules: 0,
    chainRules: 0,
    noLocalInternal: 0,
    noLocalExternal: 0,
  };
  for (const b of buckets) {
    t.filterRules += b.filterRules;
    t.dispatchRules += b.dispatchRules;
    t.chainRules += b.chainRules;
    t.noLocalInternal += b.noLocalInternal;
    t.noLocalExternal += b.noLocalExternal;
  }
  return t;
}

interface StaleResult {
  readonly deleted: string[];
  readonly orphans: ReadonlySet<string>;
  readonly cleanedAt: number;
}

/** Chains of previous Service ports (in the given buckets) that their current version lacks. */
function replacedChains(
  previous: PlanState,
  buckets: readonly Bucket[],
  which: Iterable<number>,
): string[] {
  const out: string[] = [];
  for (const b of which)
    for (const [key, before] of previous.buckets[b]?.fragments ?? []) {
      const now = findFragment(buckets, key, before.serviceKey);
      if (now === before) continue;
      const keep = new Set(now?.natChains ?? []);
      for (const c of before.natChains) if (!keep.has(c)) out.push(c);
    }
  return out;
}

/**
 * Stale service chains: from the kernel's list when given (as kube-proxy reads
 * `iptables-save`; this costs a pass over every active chain), else by diffing the
 * re-planned Service ports against the previous state (cheap: only changed buckets).
 */
function staleCandidates(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  buckets: readonly Bucket[],
  rebuilt: ReadonlySet<number>,
): string[] {
  if (input.existingNatChains !== undefined) {
    const active = natChainsOf({ buckets, orphans: new Set() });
    return [...new Set(input.existingNatChains)].filter(
      (c) => isServiceChainName(c) && !active.has(c),
    );
  }
  if (!previous) return [];
  const all = previous.buckets.length !== buckets.length;
  const which = all ? previous.buckets.keys() : rebuilt;
  const replaced = replacedChains(previous, buckets, which);
  if (previous.orphans.size === 0) return replaced;
  // An orphan is active again only if its Service port was re-planned in this sync.
  const revived = new Set<string>();
  for (const b of all ? buckets.keys() : rebuilt)
    for (const f of buckets[b]?.fragments.values() ?? [])
      for (const c of f.natChains) revived.add(c);
  const orphans = [...previous.orphans].filter((c) => !revived.has(c));
  return [...new Set([...replaced, ...orphans])];
}

function staleChains(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  buckets: readonly Bucket[],
  rebuilt: ReadonlySet<number>,
  largeClusterMode: boolean,
): StaleResult {
  const now = input.nowMs ?? 0;
  const candidates = staleCandidates(input, previous, buckets, rebuilt).sort();
  // In large clusters kube-proxy deletes stale chains at most once per syncPeriod.
  const throttled =
    largeClusterMode &&
    previous !== undefined &&
    now - previous.lastCleanupMs <= input.options.syncPeriodMs;
  if (throttled)
    return { deleted: [], orphans: new Set(candidates), cleanedAt: previous.lastCleanupMs };
  return { deleted: candidates, orphans: new Set(), cleanedAt: now };
}

const NO_ENDPOINTS: readonly EndpointInfo[] = [];

/** The nat chains holding every Service port's capture rules. */
const DISPATCH_CHAINS = [KUBE_SERVICES, KUBE_NODEPORTS];

/** The partial-sync input, when this sync can be partial with the same bucketing. */
function partialInput(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  fullSync: boolean,
): PartialInput | undefined {
  const changed = input.changedServices;
  if (fullSync || !previous || !(changed instanceof Set)) return undefined;
  if (previous.buckets.length !== bucketCount(input.services.size)) return undefined;
  return {
    previous: previous.buckets,
    changed,
    changedPorts: portsOfServices(input.services, changed),
  };
}

/** The buckets of this sync, which were rebuilt, and the ports whose chains are written. */
interface Assembly {
  readonly buckets: readonly Bucket[];
  readonly rebuilt: ReadonlySet<number>;
  readonly written: readonly PlannedPort[];
}

/**
 * Plans the ports this sync writes: all of them on a full sync (the state keeps no chain
 * text to reuse), the changed Services' ports on a partial one.
 */
function assemble(
  input: IptablesPlanInput,
  previous: PlanState | undefined,
  fullSync: boolean,
  partial: PartialInput | undefined,
  ctx: ServicePlanContext,
): Assembly {
  const n = bucketCount(input.services.size);
  const written: PlannedPort[] = [];
  const fragmentFor = (key: string, sp: ServicePortInfo): ServicePortFragment => {
    const planned = planServicePort(sp, input.endpoints.get(key) ?? NO_ENDPOINTS, ctx);
    written.push(planned);
    return planned.fragment;
  };
  const groups = groupPorts(input.services, n, fragmentFor, partial);
  const buckets = partial ? [...partial.previous] : new Array<Bucket>(n);
  for (const [b, frags] of groups) buckets[b] = makeBucket(frags);
  if (!partial && !fullSync && previous) {
    // The bucket count changed on a partial sync: chains of unchanged Services are in the
    // kernel already; write only the changed ones.
    const changed = input.changedServices instanceof Set ? input.changedServices : new Set();
    return {
      buckets,
      rebuilt: new Set(groups.keys()),
      written: written.filter((p) => changed.has(p.fragment.serviceKey)),
    };
  }
  return { buckets, rebuilt: new Set(groups.keys()), written };
}

/** Whether every rebuilt bucket's `part` text is what the previous state had. */
function sameBuckets(
  previous: PlanState,
  a: Assembly,
  part: 'filterText' | 'dispatchText',
): boolean {
  for (const b of a.rebuilt) if (a.buckets[b]?.[part] !== previous.buckets[b]?.[part]) return false;
  return true;
}

/**
 * A partial sync's restore input without what it would rewrite unchanged: the filter table
 * when no rebuilt bucket's filter rules and no fixed filter rule differ, KUBE-SERVICES and
 * KUBE-NODEPORTS when no dispatch rule differs, and KUBE-POSTROUTING and KUBE-MARK-MASQ
 * always (they depend on the options only, and changed options make a full sync). kube-proxy
 * writes them all on every sync; the kernel ends the same either way (a chain a
 * `--noflush` restore does not declare is left as it is, counters included), but
 * iptables-legacy-restore parses every line and copies each table it names out of the
 * kernel and back. A table left out is repaired by the next full sync (hourly, on canary
 * loss or after a failure), as kube-proxy leaves unchanged Services' chains since KEP-3453.
 */
function changesOnly(
  previous: PlanState,
  a: Assembly,
  full: { readonly text: string; readonly filter: TablePieces },
  nat: { readonly decls: readonly string[]; readonly body: readonly string[] },
  fixed: FixedTexts,
): string {
  // Options that change these make a full sync; write everything if they ever differ.
  if (previous.fixedTexts.natHead !== fixed.natHead) return full.text;
  const sameFilter =
    previous.fixedTexts.filter === fixed.filter && sameBuckets(previous, a, 'filterText');
  // The NodePorts jump differs when the local addresses do (no full sync for those).
  const sameDispatch =
    previous.fixedTexts.natTail === fixed.natTail && sameBuckets(previous, a, 'dispatchText');
  const out: TablePieces[] = sameFilter ? [] : [full.filter];
  const decls = nat.decls.filter((d) => d !== '');
  const body = nat.body.filter((r) => r !== '');
  const dispatch = sameDispatch ? [] : [...a.buckets.map((b) => b.dispatchText), fixed.natTail];
  if (dispatch.length > 0 || body.length > 0 || decls.length > 0)
    out.push({
      name: 'nat',
      head: ['*nat\n', ...(sameDispatch ? [] : DISPATCH_CHAINS.map(chainLine)), ...decls],
      body: [...dispatch, ...body],
      fixedChains: [],
    });
  return out.length === 0 ? '' : joinTables(out).text;
}

function lazyDocument(text: string): () => IptablesDocument {
  let doc: IptablesDocument | undefined;
  return () => (doc ??= parseDocument(text));
}

/**
 * Plans one sync of one IP family (see the file header). Never throws on odd Services:
 * anything kube-proxy would skip is skipped, and notable cases come back in `warnings`.
 */
export function planIptables(input: IptablesPlanInput, previous?: PlanState): IptablesPlan {
  const { family, options } = input;
  const optionsText = fullSyncOptionsText(options);
  const fullSync = isFullSync(input, previous, optionsText);
  const partial = partialInput(input, previous, fullSync);
  const numEndpoints = partial
    ? partialEndpointCount(partial, input.endpoints)
    : countEndpoints(input);
  const largeClusterMode = numEndpoints > options.largeClusterEndpointsThreshold;
  const ctx: ServicePlanContext = {
    family,
    options,
    largeClusterMode,
    sepNames: previous?.sepNames ?? new WeakMap<EndpointInfo, SepName>(),
  };
  const a = assemble(input, previous, fullSync, partial, ctx);
  const stale = staleChains(input, previous, a.buckets, a.rebuilt, largeClusterMode);
  const last = nodePortsJumpRules(options, family);
  const totals = sumBuckets(a.buckets);
  const writtenRules = a.written.reduce((n, p) => n + p.fragment.natChainRules, 0);
  const writtenChains = a.written.reduce((n, p) => n + p.fragment.natChains.length, 0);

  const filterChains: string[] = [...FILTER_FIXED_CHAINS];
  const filterHead = new RuleWriter();
  if (writesKubeFirewall(options, family)) {
    filterChains.push(KUBE_FIREWALL);
    for (const r of kubeFirewallRules()) filterHead.addArgs(r.chain, r.args);
  }
  const filterTail = new RuleWriter();
  for (const r of forwardRules(options)) filterTail.addArgs(r.chain, r.args);
  const natHead = new RuleWriter();
  for (const r of [...postroutingRules(options), ...markMasqRules(options)])
    natHead.addArgs(r.chain, r.args);
  const natTail = new RuleWriter();
  for (const r of last.rules) natTail.addArgs(r.chain, r.args);

  const filterTable: TablePieces = {
    name: 'filter',
    head: ['*filter\n', ...filterChains.map(chainLine)],
    body: [filterHead.text, ...a.buckets.map((b) => b.filterText), filterTail.text],
    fixedChains: filterChains,
  };
  const written = {
    decls: [...a.written.map((p) => p.natChainDecls), ...stale.deleted.map(chainLine)],
    body: [...a.written.map((p) => p.natChainText), ...stale.deleted.map((c) => `-X ${c}\n`)],
  };
  const { text, tables } = joinTables([
    filterTable,
    {
      name: 'nat',
      head: ['*nat\n', ...NAT_FIXED_CHAINS.map(chainLine), ...written.decls],
      body: [natHead.text, ...a.buckets.map((b) => b.dispatchText), ...written.body, natTail.text],
      fixedChains: NAT_FIXED_CHAINS,
    },
  ]);
  const fixed: FixedTexts = {
    filter: filterHead.text + filterTail.text,
    natHead: natHead.text,
    natTail: natTail.text,
  };
  const changes =
    partial && previous
      ? changesOnly(previous, a, { text, filter: filterTable }, written, fixed)
      : text;
  const filterRules = filterHead.count + totals.filterRules + filterTail.count;
  const natRulesLast = natHead.count + totals.dispatchRules + writtenRules + natTail.count;
  const natChainCount = NAT_FIXED_CHAINS.length + writtenChains + stale.deleted.length;
  const getDocument = lazyDocument(text);
  return {
    text,
    changes,
    tables,
    get document() {
      return getDocument();
    },
    jumps: fullSync ? jumpRules() : [],
    canaryChains: CANARY_TABLES.map((table) => ({
      table: table as 'mangle' | 'nat' | 'filter',
      chain: KUBE_PROXY_CANARY,
    })),
    state: {
      family,
      optionsText,
      buckets: a.buckets,
      orphans: stale.orphans,
      lastCleanupMs: stale.cleanedAt,
      largeClusterMode,
      sepNames: ctx.sepNames,
      fixedTexts: fixed,
    },
    fullSync,
    counts: {
      filterChains: filterChains.length,
      filterRules,
      natChains: natChainCount,
      natRulesLast,
      natRulesTotal: natRulesLast - writtenRules + totals.chainRules,
      deletedChains: stale.deleted.length,
    },
    numServices: input.services.size,
    numEndpoints,
    noLocalEndpointsInternal: totals.noLocalInternal,
    noLocalEndpointsExternal: totals.noLocalExternal,
    largeClusterMode,
    warnings: last.warnings,
  };
}
