// Conformance: kube-proxy's nftables rule text. Drives our real pipeline — change trackers →
// planNftables → the atomic NftFake — through the steps of every nftables fixture whose
// expectation is rule text or map elements (expectRuleset, expectMapElement, the stale-chain
// aging steps, the restart over a preloaded ruleset, and the operation counts of partial
// syncs), the no-local-endpoints gauge cases, plus the chain-name, comment-truncation and
// ServiceCIDR vectors. Each expectation is one case. Rulesets are compared as the Fake's
// dump in the fixtures' sorted order. Packet flows belong to the flows suite.

import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import { NftFake } from '../../src/netfilter/nftables/fake.js';
import { sortTransactionText } from '../../src/netfilter/nftables/render.js';
import type { TableState } from '../../src/netfilter/nftables/model.js';
import { tableKey } from '../../src/netfilter/nftables/model.js';
import { ServiceChangeTracker } from '../../src/proxy/model/service-change-tracker.js';
import { EndpointsChangeTracker } from '../../src/proxy/model/endpoints-change-tracker.js';
import { takeSnapshot } from '../../src/proxy/model/snapshot.js';
import {
  endpointChainNameBase,
  servicePortChainNameBase,
  servicePortName,
  truncateComment,
} from '../../src/proxy/nftables/names.js';
import { serviceCIDRsOfFamily } from '../../src/proxy/nftables/options.js';
import type { NftablesProxierOptions } from '../../src/proxy/nftables/options.js';
import { planNftables, tableRefOf } from '../../src/proxy/nftables/plan.js';
import type { NftablesPlan, NftPlanState } from '../../src/proxy/nftables/plan.js';
import type { IPFamily } from '../../src/util/ip.js';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { fixturesPresent } from './harness.js';
import {
  asEndpointSlices,
  asRefs,
  asServices,
  loadFixtures,
  loadProfiles,
  nftablesOptions,
  readJSON,
  resolveProfile,
} from './kube-proxy-fixtures.js';
import type { Fixture, FixtureProfile, FixtureStep } from './kube-proxy-fixtures.js';

function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
}

/**
 * A minimal nftables kube-proxy over an NftFake: informer events into the shared trackers,
 * a plan per sync (full the first time and after a failure, with the kernel's table read
 * back; partial otherwise), the cleanup transaction then the main one, state adopted only
 * on success. The clock moves only when a fixture ages the stale chains.
 */
export class NftFixtureProxier {
  readonly fake = new NftFake();
  readonly family: IPFamily;
  readonly options: NftablesProxierOptions;
  private readonly svcTracker: ServiceChangeTracker;
  private readonly epTracker: EndpointsChangeTracker;
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice>();
  state: NftPlanState | undefined;
  needFullSync = true;
  nowMs = 1_000_000;
  lastPlan: NftablesPlan | undefined;
  lastSyncError: unknown;
  cleanupFailures = 0;
  /** The table before the last sync (what a restart reads back). */
  beforeLastSync: TableState | undefined;

  constructor(options: NftablesProxierOptions, profile: FixtureProfile) {
    this.options = options;
    this.family = profile.ipFamily;
    this.svcTracker = new ServiceChangeTracker(profile.ipFamily);
    this.epTracker = new EndpointsChangeTracker(profile.ipFamily, profile.nodeName);
  }

  upsertServices(objs: Service[]): void {
    for (const s of objs) {
      this.svcTracker.update(this.services.get(keyOf(s)), s);
      this.services.set(keyOf(s), s);
    }
  }

  deleteServices(refs: { namespace: string; name: string }[]): void {
    for (const r of refs) {
      const key = `${r.namespace}/${r.name}`;
      this.svcTracker.update(this.services.get(key), undefined);
      this.services.delete(key);
    }
  }

  upsertSlices(objs: EndpointSlice[]): void {
    for (const s of objs) {
      this.epTracker.update(this.slices.get(keyOf(s)), s);
      this.slices.set(keyOf(s), s);
    }
  }

  deleteSlices(refs: { namespace: string; name: string }[]): void {
    for (const r of refs) {
      const key = `${r.namespace}/${r.name}`;
      this.epTracker.update(this.slices.get(key), undefined);
      this.slices.delete(key);
    }
  }

  /** Applies a step that upserts or deletes objects; false for any other step. */
  applyObjectStep(step: FixtureStep): boolean {
    switch (step.action) {
      case 'upsertServices':
        this.upsertServices(asServices(step));
        return true;
      case 'deleteServices':
        this.deleteServices(asRefs(step));
        return true;
      case 'upsertEndpointSlices':
        this.upsertSlices(asEndpointSlices(step));
        return true;
      case 'deleteEndpointSlices':
        this.deleteSlices(asRefs(step));
        return true;
      default:
        return false;
    }
  }

  /** The family's table as the kernel (Fake) holds it, if any. */
  currentTable(): TableState | undefined {
    return this.fake.ruleset().tables.get(tableKey(tableRefOf(this.family)));
  }

  sync(): void {
    const snap = takeSnapshot(this.svcTracker, this.epTracker);
    const full = this.needFullSync;
    this.beforeLastSync = this.currentTable();
    const current = full ? this.beforeLastSync : undefined;
    const plan = planNftables(
      {
        family: this.family,
        services: snap.services,
        endpoints: snap.endpoints,
        options: this.options,
        changedServices: full ? 'all' : snap.changedServices,
        nowMs: this.nowMs,
        ...(current !== undefined ? { current } : {}),
      },
      this.state,
    );
    this.lastPlan = plan;
    if (plan.cleanup.length > 0)
      try {
        this.fake.run(plan.cleanup);
      } catch {
        this.cleanupFailures++;
      }
    try {
      this.fake.run(plan.transaction);
    } catch (e) {
      this.lastSyncError = e;
      this.needFullSync = true;
      return;
    }
    this.lastSyncError = undefined;
    this.state = plan.state;
    this.needFullSync = this.cleanupFailures > 0 && plan.cleanup.length > 0;
  }
}

function diffText(expected: string, actual: string): string {
  const e = new Set(expected.split('\n'));
  const a = new Set(actual.split('\n'));
  const out: string[] = [];
  for (const l of e) if (!a.has(l)) out.push(`  missing: ${l}`);
  for (const l of a) if (!e.has(l)) out.push(`  extra:   ${l}`);
  if (out.length === 0) out.push('  same lines, different order');
  return out.slice(0, 12).join('\n');
}

interface RunContext {
  readonly fixture: Fixture;
  readonly proxier: NftFixtureProxier;
  readonly results: CaseResult[];
}

function record(results: CaseResult[], name: string, problem: string | undefined): void {
  results.push(
    problem === undefined
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: problem },
  );
}

function expectRuleset(ctx: RunContext, step: FixtureStep, name: string): void {
  const want = sortTransactionText(step.text ?? '');
  const got = sortTransactionText(ctx.proxier.fake.dump());
  record(ctx.results, name, want === got ? undefined : diffText(want, got));
}

function expectMapElement(ctx: RunContext, step: FixtureStep, name: string): void {
  const table = ctx.proxier.currentTable();
  const key = (step.key ?? []).join(' . ');
  const present = table?.sets.get(step.map ?? '')?.elements.has(key) ?? false;
  record(
    ctx.results,
    name,
    present === step.present
      ? undefined
      : `element { ${key} } in ${step.map ?? ''}: present=${String(present)}`,
  );
}

function expectStaleChains(ctx: RunContext, step: FixtureStep, name: string): void {
  const got = [...(ctx.proxier.state?.staleChains.keys() ?? [])].sort();
  const want = [...(step.chains ?? [])].sort();
  record(
    ctx.results,
    name,
    got.join(',') === want.join(',') ? undefined : `stale chains: ${got.join(', ')}`,
  );
}

function expectOperations(ctx: RunContext, step: FixtureStep, name: string): void {
  const got = ctx.proxier.fake.lastTransaction?.length ?? 0;
  record(
    ctx.results,
    name,
    got === step.count
      ? undefined
      : `${String(got)} operations, want ${String(step.count)} (${step.breakdown ?? ''})`,
  );
}

/**
 * The restart case's point (TestSyncProxyRulesStartup; its exact count is informative): the
 * full sync re-adds no Service element the kernel already held with the same value.
 */
function expectNoReAdds(ctx: RunContext, name: string): void {
  const before = ctx.proxier.beforeLastSync;
  const readded: string[] = [];
  for (const op of ctx.proxier.fake.lastTransaction ?? []) {
    const o = op.object;
    // nodeport-ips is flushed and refilled on every full sync, as kube-proxy does.
    if (op.verb !== 'add' || o.kind !== 'element' || o.set === 'nodeport-ips') continue;
    const had = before?.sets.get(o.set)?.elements.get(o.key.join(' . '));
    if (
      had !== undefined &&
      JSON.stringify(had.value) === JSON.stringify(o.value) &&
      had.comment === o.comment
    )
      readded.push(`${o.set} { ${o.key.join(' . ')} }`);
  }
  record(
    ctx.results,
    `${name} (present elements not re-added)`,
    readded.length === 0 ? undefined : readded.join(', '),
  );
}

function runStep(ctx: RunContext, step: FixtureStep, index: number): void {
  const p = ctx.proxier;
  const name = `${ctx.fixture.file} step ${String(index + 1)} ${step.action}`;
  if (p.applyObjectStep(step)) return;
  switch (step.action) {
    case 'preloadRuleset':
      p.fake.load(step.text ?? '');
      return;
    case 'sync':
      p.sync();
      // Every transaction must be one the (reference-checking) Fake accepts.
      record(
        ctx.results,
        `${name} (${p.lastPlan?.fullSync === true ? 'full' : 'partial'}) accepted`,
        (p.lastSyncError !== undefined) === (step.expectFailure === true)
          ? undefined
          : `transaction ${p.lastSyncError === undefined ? 'succeeded' : 'failed'} unexpectedly: ${String(p.lastSyncError)}`,
      );
      return;
    case 'expectRuleset':
      expectRuleset(ctx, step, name);
      return;
    case 'expectMapElement':
      expectMapElement(ctx, step, name);
      return;
    case 'ageStaleChains':
      p.nowMs += (step.seconds ?? 0) * 1000;
      return;
    case 'expectStaleChains':
      expectStaleChains(ctx, step, name);
      return;
    case 'expectLastTransactionOperations':
      expectOperations(ctx, step, name);
      return;
    case 'expectTotalOperations':
      expectNoReAdds(ctx, name);
      return;
    default:
      // packetFlow (the flows suite) and tracker-only steps.
      return;
  }
}

function runSteps(fixture: Fixture, profile: FixtureProfile, results: CaseResult[]): void {
  const ctx: RunContext = {
    fixture,
    proxier: new NftFixtureProxier(nftablesOptions(profile), profile),
    results,
  };
  (fixture.steps ?? []).forEach((s, i) => {
    try {
      runStep(ctx, s, i);
    } catch (e) {
      record(
        results,
        `${fixture.file} step ${String(i + 1)} ${s.action}`,
        e instanceof Error ? (e.stack ?? e.message) : String(e),
      );
    }
  });
}

interface MetricCase {
  readonly subtest: string;
  readonly service: Service;
  readonly endpointSlice?: EndpointSlice;
  readonly expect: Record<string, number>;
}

/** TestNoEndpointsMetric: the no_local_endpoints gauges after one sync. */
function runMetricCases(fixture: Fixture, profile: FixtureProfile, results: CaseResult[]): void {
  for (const c of fixture.cases as unknown as MetricCase[]) {
    const p = new NftFixtureProxier(nftablesOptions(profile), profile);
    p.upsertServices([c.service]);
    if (c.endpointSlice) p.upsertSlices([c.endpointSlice]);
    p.sync();
    const got: Record<string, number> = {
      internal: p.lastPlan?.noLocalEndpointsInternal ?? -1,
      external: p.lastPlan?.noLocalEndpointsExternal ?? -1,
    };
    const bad = Object.entries(c.expect).filter(([metric, want]) => {
      const policy = /traffic_policy="(\w+)"/.exec(metric)?.[1] ?? '';
      return got[policy] !== want;
    });
    record(
      results,
      `${fixture.file} ${c.subtest}`,
      bad.length === 0
        ? undefined
        : `got internal=${String(got.internal)} external=${String(got.external)}, want ${JSON.stringify(c.expect)}`,
    );
  }
}

interface NameVector {
  readonly name: string;
  readonly namespace: string;
  readonly service: string;
  readonly port: string;
  readonly protocol: string;
  readonly endpoint?: string;
  readonly expected: string;
}

function runChainNames(path: string, results: CaseResult[]): void {
  const doc = readJSON(path) as {
    servicePortChainNameBase: NameVector[];
    servicePortEndpointChainNameBase: NameVector[];
  };
  for (const v of doc.servicePortChainNameBase) {
    const got = servicePortChainNameBase(
      servicePortName(v.namespace, v.service, v.protocol, v.port),
    );
    record(
      results,
      `chain-name-vectors servicePortChainNameBase ${v.name}`,
      got === v.expected ? undefined : `got ${got}`,
    );
  }
  for (const v of doc.servicePortEndpointChainNameBase) {
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(v.endpoint ?? '');
    const got = endpointChainNameBase(
      servicePortName(v.namespace, v.service, v.protocol, v.port),
      m?.[1] ?? '',
      Number(m?.[2]),
    );
    record(
      results,
      `chain-name-vectors servicePortEndpointChainNameBase ${v.name}`,
      got === v.expected ? undefined : `got ${got}`,
    );
  }
}

interface MiscVectors {
  readonly TestTruncateNFTablesComment: { cases: { name: string; input: string; want: string }[] };
  readonly TestSyncProxyRulesTruncatesNoEndpointServiceComment: {
    service: Service;
    expectedComment: string;
  };
  readonly TestProxier_OnServiceCIDRsChanged: {
    ipFamily: IPFamily;
    input: string[];
    serviceCIDRs: string;
  }[];
}

function runMisc(path: string, profile: FixtureProfile, results: CaseResult[]): void {
  const doc = readJSON(path) as MiscVectors;
  for (const c of doc.TestTruncateNFTablesComment.cases) {
    const got = truncateComment(c.input);
    record(
      results,
      `misc-unit-vectors TestTruncateNFTablesComment ${c.name}`,
      got === c.want ? undefined : `got ${got}`,
    );
  }
  const t = doc.TestSyncProxyRulesTruncatesNoEndpointServiceComment;
  const p = new NftFixtureProxier(nftablesOptions(profile), profile);
  p.upsertServices([t.service]);
  p.sync();
  const full = `${t.service.metadata?.namespace ?? ''}/${t.service.metadata?.name ?? ''}:${t.service.spec?.ports?.[0]?.name ?? ''}`;
  const el = p
    .currentTable()
    ?.sets.get('no-endpoint-services')
    ?.elements.get('172.30.0.47 . tcp . 80');
  const dump = p.fake.dump();
  record(
    results,
    'misc-unit-vectors TestSyncProxyRulesTruncatesNoEndpointServiceComment',
    el?.comment === t.expectedComment && !dump.includes(full)
      ? undefined
      : `comment ${String(el?.comment)}; untruncated in dump: ${String(dump.includes(full))}`,
  );
  for (const [i, c] of doc.TestProxier_OnServiceCIDRsChanged.entries()) {
    const got = serviceCIDRsOfFamily(c.input, c.ipFamily).join(',');
    record(
      results,
      `misc-unit-vectors TestProxier_OnServiceCIDRsChanged ${String(i + 1)} ${c.ipFamily}`,
      got === c.serviceCIDRs ? undefined : `got ${got}`,
    );
  }
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-nftables-rules',
  run(root: string) {
    const dir = fixturesPresent(join('kube-proxy', 'nftables'));
    if (dir === undefined)
      return Promise.resolve({ skipped: `no fixtures at ${join(root, 'kube-proxy', 'nftables')}` });
    const profiles = loadProfiles(join(dir, '..'));
    const ipv4 = profiles['nftables-ipv4'];
    const results: CaseResult[] = [];
    for (const f of loadFixtures(dir)) {
      if (f.file === 'chain-name-vectors.json') runChainNames(join(dir, f.file), results);
      else if (f.file === 'misc-unit-vectors.json' && ipv4)
        runMisc(join(dir, f.file), ipv4, results);
      else if (f.test === 'TestNoEndpointsMetric')
        runMetricCases(f, resolveProfile(profiles, f), results);
      else if (f.steps) runSteps(f, resolveProfile(profiles, f), results);
    }
    return Promise.resolve(results);
  },
};
