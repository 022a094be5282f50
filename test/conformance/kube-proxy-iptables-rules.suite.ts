// Conformance: kube-proxy's iptables rule text. Drives our real pipeline — change trackers →
// planIptables → render → the atomic FakeIptables — through the steps of every iptables
// fixture whose expectation is rule text (expectRuleset / expectRestoreInput / expectChain,
// the rule-count metrics, the partial-restore failure and recovery) plus the chain-name and
// probability vectors. Each expectation is one case. Packet-flow expectations belong to the
// tracer's suite and are not counted here.

import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import { parseDocument, splitArgs } from '../../src/netfilter/iptables/parse.js';
import { FakeIptables } from '../../src/netfilter/iptables/fake.js';
import type { IptablesTableName } from '../../src/netfilter/iptables/model.js';
import { ServiceChangeTracker } from '../../src/proxy/model/service-change-tracker.js';
import { EndpointsChangeTracker } from '../../src/proxy/model/endpoints-change-tracker.js';
import { takeSnapshot } from '../../src/proxy/model/snapshot.js';
import { planIptables } from '../../src/proxy/iptables/plan.js';
import type { IptablesPlan, PlanState } from '../../src/proxy/iptables/plan.js';
import type { IptablesProxierOptions } from '../../src/proxy/iptables/options.js';
import { checkRuleJumps, sortIptablesText } from '../../src/proxy/iptables/compare.js';
import { endpointChainName, servicePortChains } from '../../src/proxy/iptables/names.js';
import { computeProbability } from '../../src/proxy/iptables/probability.js';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { fixturesPresent } from './harness.js';
import {
  asEndpointSlices,
  asRefs,
  asServices,
  iptablesOptions,
  loadFixtures,
  loadProfiles,
  resolveProfile,
} from './kube-proxy-fixtures.js';
import type { Fixture, FixtureCase, FixtureProfile, FixtureStep } from './kube-proxy-fixtures.js';

/** A minimal kube-proxy: what one IP family's proxier does per sync, over a FakeIptables. */
function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
}

/** Feeds the previous/current pair of one object to a change tracker and records the current. */
function fold<T>(
  store: Map<string, T>,
  key: string,
  cur: T | undefined,
  update: (prev: T | undefined, cur: T | undefined) => void,
): void {
  update(store.get(key), cur);
  if (cur === undefined) store.delete(key);
  else store.set(key, cur);
}

class FixtureProxier {
  readonly ipt: FakeIptables;
  private readonly svcTracker: ServiceChangeTracker;
  private readonly epTracker: EndpointsChangeTracker;
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice>();
  private state: PlanState | undefined;
  needFullSync = true;
  partialRestoreFailures = 0;
  lastPlan: IptablesPlan | undefined;
  lastRestoreText = '';
  lastSyncFailed = false;

  readonly options: IptablesProxierOptions;

  constructor(options: IptablesProxierOptions, profile: FixtureProfile) {
    this.options = options;
    this.ipt = new FakeIptables(profile.ipFamily);
    this.svcTracker = new ServiceChangeTracker(profile.ipFamily);
    this.epTracker = new EndpointsChangeTracker(profile.ipFamily, profile.nodeName);
  }

  upsertServices(objs: Service[]): void {
    for (const s of objs) fold(this.services, keyOf(s), s, (a, b) => this.svcTracker.update(a, b));
  }

  deleteServices(refs: { namespace: string; name: string }[]): void {
    for (const r of refs)
      fold(this.services, `${r.namespace}/${r.name}`, undefined, (a, b) =>
        this.svcTracker.update(a, b),
      );
  }

  upsertSlices(objs: EndpointSlice[]): void {
    for (const s of objs) fold(this.slices, keyOf(s), s, (a, b) => this.epTracker.update(a, b));
  }

  deleteSlices(refs: { namespace: string; name: string }[]): void {
    for (const r of refs)
      fold(this.slices, `${r.namespace}/${r.name}`, undefined, (a, b) =>
        this.epTracker.update(a, b),
      );
  }

  sync(): void {
    const snap = takeSnapshot(this.svcTracker, this.epTracker);
    const fullSync = this.needFullSync;
    const existing = this.ipt.chainNames('nat');
    const plan = planIptables(
      {
        family: snap.family,
        services: snap.services,
        endpoints: snap.endpoints,
        options: this.options,
        changedServices: fullSync ? 'all' : snap.changedServices,
        existingNatChains: existing,
      },
      this.state,
    );
    this.lastPlan = plan;
    for (const j of plan.jumps) {
      this.ipt.ensureChainSync(j.table, j.targetChain);
      this.ipt.ensureRuleSync('prepend', j.table, j.sourceChain, j.args);
    }
    const text = plan.text;
    this.lastRestoreText = text;
    try {
      this.ipt.restoreSync(text, { noflush: true, counters: true });
    } catch {
      this.lastSyncFailed = true;
      if (!fullSync) this.partialRestoreFailures++;
      this.needFullSync = true;
      return;
    }
    this.lastSyncFailed = false;
    this.state = plan.state;
    this.needFullSync = false;
  }
}

function countRules(text: string, table: string): number {
  const t = parseDocument(text).tables.find((x) => x.name === table);
  return t?.rules.length ?? 0;
}

function diffText(expected: string, actual: string): string {
  const e = expected.split('\n');
  const a = actual.split('\n');
  const out: string[] = [];
  for (let i = 0; i < Math.max(e.length, a.length); i++)
    if (e[i] !== a[i])
      out.push(`line ${i + 1}:\n  want: ${e[i] ?? '<none>'}\n  got:  ${a[i] ?? '<none>'}`);
  return out.slice(0, 8).join('\n');
}

function normalizeChainText(t: string): string {
  return t
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l !== '')
    .join('\n');
}

interface RunContext {
  readonly fixture: Fixture;
  readonly proxier: FixtureProxier;
  readonly results: CaseResult[];
  /** nat total after the first full sync (the fixtures' "T"). */
  natT: number | undefined;
  lastExpectedNatRules: number;
  counterBeforeSync: number;
}

function record(ctx: RunContext, name: string, problem: string | undefined): void {
  ctx.results.push(
    problem === undefined
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: problem },
  );
}

function expectRules(ctx: RunContext, step: FixtureStep, name: string): void {
  const text = ctx.proxier.lastRestoreText;
  const want = sortIptablesText(step.text ?? '');
  const got = sortIptablesText(text);
  ctx.lastExpectedNatRules = countRules(step.text ?? '', 'nat');
  let problem = want === got ? undefined : diffText(want, got);
  if (problem === undefined && step.checkConsistency === true) {
    const issues = checkRuleJumps(parseDocument(text));
    if (issues.length > 0) problem = issues.join('\n');
  }
  record(ctx, name, problem);
}

function expectChain(ctx: RunContext, table: string, chain: string, text: string, name: string) {
  const got = normalizeChainText(ctx.proxier.ipt.chainRules(table as IptablesTableName, chain));
  const want = normalizeChainText(text);
  record(ctx, name, got === want ? undefined : `want:\n${want}\ngot:\n${got}`);
}

function expectNatMetrics(ctx: RunContext, step: FixtureStep, name: string): void {
  const plan = ctx.proxier.lastPlan;
  if (!plan) {
    record(ctx, name, 'no sync ran');
    return;
  }
  ctx.natT ??= plan.counts.natRulesTotal;
  const m = /^T(?:\s*\+\s*(\d+))?/.exec((step.total ?? '').trim());
  const problems: string[] = [];
  if (plan.counts.natRulesLast !== ctx.lastExpectedNatRules)
    problems.push(`last{nat} = ${plan.counts.natRulesLast}, want ${ctx.lastExpectedNatRules}`);
  if (m) {
    const want = ctx.natT + Number(m[1] ?? '0');
    if (plan.counts.natRulesTotal !== want)
      problems.push(
        `total{nat} = ${plan.counts.natRulesTotal}, want ${want} (${step.total ?? ''})`,
      );
  }
  record(ctx, name, problems.length > 0 ? problems.join('; ') : undefined);
}

function expectMetricRuleCount(ctx: RunContext, step: FixtureStep, name: string): void {
  const plan = ctx.proxier.lastPlan;
  const table = step.labels?.table ?? 'nat';
  if (!plan) {
    record(ctx, name, 'no sync ran');
    return;
  }
  const metric = table === 'filter' ? plan.counts.filterRules : plan.counts.natRulesTotal;
  const want = countRules(ctx.proxier.lastRestoreText, table);
  record(ctx, name, metric === want ? undefined : `metric ${metric}, restore has ${want} rules`);
}

function runStep(ctx: RunContext, step: FixtureStep, index: number): void {
  const p = ctx.proxier;
  const name = `${ctx.fixture.file} step ${index + 1} ${step.action}`;
  switch (step.action) {
    case 'upsertServices': {
      p.upsertServices(asServices(step));
      return;
    }
    case 'deleteServices': {
      p.deleteServices(asRefs(step));
      return;
    }
    case 'upsertEndpointSlices': {
      p.upsertSlices(asEndpointSlices(step));
      return;
    }
    case 'deleteEndpointSlices': {
      p.deleteSlices(asRefs(step));
      return;
    }
    case 'sync': {
      ctx.counterBeforeSync = p.partialRestoreFailures;
      p.sync();
      if (p.lastPlan?.fullSync === true && !p.lastSyncFailed) {
        const issues = checkRuleJumps(parseDocument(p.lastRestoreText));
        record(ctx, `${name} (full) consistent`, issues.length > 0 ? issues.join('\n') : undefined);
      }
      if (step.expectFailure === true || p.lastSyncFailed)
        record(
          ctx,
          name,
          p.lastSyncFailed === (step.expectFailure === true)
            ? undefined
            : `restore ${p.lastSyncFailed ? 'failed' : 'succeeded'} unexpectedly`,
        );
      return;
    }
    case 'expectRuleset':
    case 'expectRestoreInput': {
      expectRules(ctx, step, name);
      return;
    }
    case 'expectChain': {
      expectChain(ctx, step.table ?? '', step.chain ?? '', step.text ?? '', name);
      return;
    }
    case 'expectNatRuleMetrics': {
      expectNatMetrics(ctx, step, name);
      return;
    }
    case 'expectMetricEqualsRuleCount': {
      expectMetricRuleCount(ctx, step, name);
      return;
    }
    case 'injectKernelRule': {
      const args = splitArgs(step.rule ?? '');
      p.ipt.ensureRuleSync(
        'append',
        (step.table ?? 'nat') as IptablesTableName,
        args[1] ?? '',
        args.slice(2),
      );
      return;
    }
    case 'expectNeedFullSync': {
      record(
        ctx,
        name,
        p.needFullSync === step.value ? undefined : `needFullSync = ${p.needFullSync}`,
      );
      return;
    }
    case 'expectCounterDelta': {
      const delta = p.partialRestoreFailures - ctx.counterBeforeSync;
      record(
        ctx,
        name,
        delta === step.delta ? undefined : `delta ${delta}, want ${String(step.delta)}`,
      );
      return;
    }
    default:
      return; // servicesSynced, packetFlow, ...: not rule text
  }
}

function runSteps(fixture: Fixture, profile: FixtureProfile, results: CaseResult[]): void {
  const ctx: RunContext = {
    fixture,
    proxier: new FixtureProxier(iptablesOptions(profile), profile),
    results,
    natT: undefined,
    lastExpectedNatRules: 0,
    counterBeforeSync: 0,
  };
  (fixture.steps ?? []).forEach((s, i) => {
    try {
      runStep(ctx, s, i);
    } catch (e) {
      record(
        ctx,
        `${fixture.file} step ${i + 1} ${s.action}`,
        e instanceof Error ? e.stack : String(e),
      );
    }
  });
}

function runCases(
  fixture: Fixture,
  profiles: Record<string, ReturnType<typeof resolveProfile>>,
  results: CaseResult[],
) {
  for (const c of fixture.cases as FixtureCase[]) {
    const expectation = c.expectChain;
    if (!expectation) continue;
    const profile = resolveProfile(profiles, fixture, c.overrides);
    const ctx: RunContext = {
      fixture,
      proxier: new FixtureProxier(iptablesOptions(profile), profile),
      results,
      natT: undefined,
      lastExpectedNatRules: 0,
      counterBeforeSync: 0,
    };
    ctx.proxier.sync();
    expectChain(
      ctx,
      expectation.table,
      expectation.chain,
      expectation.text,
      `${fixture.file} ${c.subtest}`,
    );
  }
}

function runProbability(fixture: Fixture, results: CaseResult[]): void {
  for (const [n, want] of Object.entries(fixture.cases as Record<string, string>)) {
    const got = computeProbability(Number(n));
    results.push({
      name: `${fixture.file} n=${n}`,
      status: got === want ? 'passed' : 'failed',
      detail: `got ${got}, want ${want}`,
    });
  }
  let prev = -1;
  let ok = true;
  for (let n = 100000; n >= 2; n--) {
    const v = Number(computeProbability(n));
    if (v <= prev) ok = false;
    prev = v;
  }
  results.push({ name: `${fixture.file} strictly increasing`, status: ok ? 'passed' : 'failed' });
}

function runVectors(fixture: Fixture, results: CaseResult[]): void {
  for (const v of fixture.vectors ?? []) {
    const spn = String(v.servicePortName);
    const proto = String(v.protocol);
    const want = v.chains as Record<string, string>;
    const got = {
      ...servicePortChains(spn, proto),
      sep: endpointChainName(spn, proto, String(v.endpoint)),
    };
    const bad = Object.entries(want).filter(([k, w]) => got[k as keyof typeof got] !== w);
    results.push({
      name: `${fixture.file} ${spn} ${String(v.endpoint)}`,
      status: bad.length === 0 ? 'passed' : 'failed',
      detail: bad.map(([k, w]) => `${k}: got ${got[k as keyof typeof got]}, want ${w}`).join('; '),
    });
  }
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-iptables-rules',
  run(root: string) {
    const dir = fixturesPresent(join('kube-proxy', 'iptables'));
    if (dir === undefined)
      return Promise.resolve({ skipped: `no fixtures at ${join(root, 'kube-proxy', 'iptables')}` });
    const profiles = loadProfiles(join(dir, '..'));
    const results: CaseResult[] = [];
    for (const f of loadFixtures(dir)) {
      if (f.test === 'TestComputeProbability') runProbability(f, results);
      else if (f.vectors) runVectors(f, results);
      else if (Array.isArray(f.cases)) runCases(f, profiles, results);
      else if (f.steps) runSteps(f, resolveProfile(profiles, f), results);
    }
    return Promise.resolve(results);
  },
};
