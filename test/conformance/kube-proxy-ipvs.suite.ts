// Conformance: kube-proxy's IPVS mode. Drives our pipeline — change trackers → planIpvs →
// a fake kernel that takes each plan as its new state (upstream's fake reports 0
// connections, so removed real servers go at once) — through the steps of every scenario
// file in ../shared/fixtures/kube-proxy/ipvs: virtual servers, real servers, ipset
// contents, iptables chains (jump and match-set per rule) and the kube-ipvs0 addresses.
// Each expectation is one case; the vector files run through their own modules
// (ipset-vectors.json: kube-proxy-ipvs-ipset.ts, misc-unit-vectors.json:
// kube-proxy-ipvs-misc.ts). A step of a kind not built here is reported as skipped with
// the reason, never as passed.

import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import { virtualServerKey, toIpvsProtocol } from '../../src/netfilter/ipvs/model.js';
import { ServiceChangeTracker } from '../../src/proxy/model/service-change-tracker.js';
import { EndpointsChangeTracker } from '../../src/proxy/model/endpoints-change-tracker.js';
import { takeSnapshot } from '../../src/proxy/model/snapshot.js';
import { IPSET_DEFS, IPSET_RULE_ROWS, ipsetName } from '../../src/proxy/ipvs/names.js';
import { planIpvs } from '../../src/proxy/ipvs/plan.js';
import type { IpvsPlan } from '../../src/proxy/ipvs/plan.js';
import { renderIpvsIptables, ruleJump, ruleMatchSet } from '../../src/proxy/ipvs/rules.js';
import { applyIpvsOperations, reconcileIpvs } from '../../src/proxy/ipvs/reconcile.js';
import { renderList, renderSave } from '../../src/netfilter/ipvs/render.js';
import { targetPartOf } from '../../src/netfilter/iptables/rule.js';
import { masqueradeOf } from '../../src/netfilter/iptables/rule-views.js';
import type { IpvsService, VirtualServerFlag } from '../../src/netfilter/ipvs/model.js';
import type { IpvsProxierOptions } from '../../src/proxy/ipvs/options.js';
import { cidrContains, parseCIDRSloppy, parseIPSloppy, isLoopback } from '../../src/util/ip.js';
import type { IPFamily } from '../../src/util/ip.js';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { fixturesPresent } from './harness.js';
import {
  asEndpointSlices,
  asRefs,
  asServices,
  loadFixtures,
  readJSON,
} from './kube-proxy-fixtures.js';
import type { Fixture, FixtureStep } from './kube-proxy-fixtures.js';
import { IPSET_VECTORS_FILE, ipsetVectorCases } from './kube-proxy-ipvs-ipset.js';
import { MISC_VECTORS_FILE, miscUnitCases } from './kube-proxy-ipvs-misc.js';

/** profiles.json of the ipvs folder (its own shape: nodeIPs, networkInterfaces, ...). */
interface IpvsProfile {
  readonly ipFamily: IPFamily;
  readonly nodeName: string;
  readonly nodeIP: string | null;
  readonly nodeIPs: string[];
  readonly nodePortAddresses: string[];
  readonly networkInterfaces: { name: string; addresses: string[] }[];
  readonly masqueradeAll: boolean;
  readonly masqueradeMark: string;
  readonly scheduler: string;
  readonly iptablesHasRandomFully: boolean;
  readonly ipsetNamesIPv6Prefixed: boolean;
  readonly excludeCIDRs: string[];
}

interface VsJSON {
  protocol: string;
  address: string;
  port: number;
  scheduler?: string;
  flags?: string[];
  timeout?: number;
}
interface RsJSON {
  address: string;
  port: number;
  weight: number;
  forward: string;
}
interface SetJSON {
  name: string;
  type: string;
  entries: string[];
  compare: string;
}
interface ChainJSON {
  chain: string;
  rules: { jump: string; matchSet: string }[];
}
type Step = FixtureStep & {
  virtualServers?: VsJSON[];
  virtualServer?: VsJSON;
  realServers?: RsJSON[];
  weight?: number;
  sets?: SetJSON[];
  addresses?: string[];
  chains?: ChainJSON[];
};

function isAllRange(c: string): boolean {
  return c === '0.0.0.0/0' || c === '::/0';
}

/** The NodePort VS addresses, as upstream's fake proxier finds them (see profiles.json). */
export function nodePortIPsOf(p: IpvsProfile): string[] {
  const sameFamily = (ip: string): boolean => parseIPSloppy(ip)?.family === p.ipFamily;
  if (p.nodePortAddresses.length === 0 || p.nodePortAddresses.some(isAllRange)) {
    return p.nodeIPs.filter((ip) => {
      const parsed = parseIPSloppy(ip);
      if (!parsed || parsed.family !== p.ipFamily || isLoopback(parsed)) return false;
      return !ip.toLowerCase().startsWith('fe80:');
    });
  }
  const cidrs = p.nodePortAddresses.map((c) => parseCIDRSloppy(c)).filter((c) => c !== undefined);
  const out: string[] = [];
  for (const itf of p.networkInterfaces) {
    for (const a of itf.addresses) {
      const ip = a.split('/')[0] ?? '';
      const parsed = parseIPSloppy(ip);
      if (!parsed || !sameFamily(ip) || isLoopback(parsed)) continue;
      if (cidrs.some((c) => cidrContains(c, parsed)) && !out.includes(ip)) out.push(ip);
    }
  }
  return out;
}

export function ipvsOptionsOf(p: IpvsProfile): IpvsProxierOptions {
  return {
    nodeName: p.nodeName,
    nodeIP: p.nodeIP ?? '',
    scheduler: p.scheduler,
    masqueradeAll: p.masqueradeAll,
    masqueradeMark: p.masqueradeMark,
    hasRandomFully: p.iptablesHasRandomFully,
    localDetector: { mode: 'None' },
    nodePortIPs: nodePortIPsOf(p),
    localAddresses: p.nodeIPs,
    ipsetNamesIPv6Prefixed: p.ipsetNamesIPv6Prefixed,
  };
}

function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
}

/** Informer events into the shared trackers; each sync's plan becomes the fake kernel state. */
class IpvsFixtureProxier {
  private readonly svcTracker: ServiceChangeTracker;
  private readonly epTracker: EndpointsChangeTracker;
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice>();
  plan: IpvsPlan | undefined;
  /** The fake kernel's virtual servers (0 connections everywhere, as upstream's fake). */
  kernel = new Map<string, IpvsService>();
  initialSync = false;
  excludeCIDRs: readonly string[] = [];

  readonly options: IpvsProxierOptions;
  readonly family: IPFamily;

  constructor(options: IpvsProxierOptions, family: IPFamily) {
    this.options = options;
    this.family = family;
    this.svcTracker = new ServiceChangeTracker(family);
    this.epTracker = new EndpointsChangeTracker(family, options.nodeName);
  }

  applyObjectStep(step: FixtureStep): boolean {
    switch (step.action) {
      case 'upsertServices':
        for (const s of asServices(step)) {
          this.svcTracker.update(this.services.get(keyOf(s)), s);
          this.services.set(keyOf(s), s);
        }
        return true;
      case 'deleteServices':
        for (const r of asRefs(step)) {
          const k = `${r.namespace}/${r.name}`;
          this.svcTracker.update(this.services.get(k), undefined);
          this.services.delete(k);
        }
        return true;
      case 'upsertEndpointSlices':
        for (const s of asEndpointSlices(step)) {
          this.epTracker.update(this.slices.get(keyOf(s)), s);
          this.slices.set(keyOf(s), s);
        }
        return true;
      case 'deleteEndpointSlices':
        for (const r of asRefs(step)) {
          const k = `${r.namespace}/${r.name}`;
          this.epTracker.update(this.slices.get(k), undefined);
          this.slices.delete(k);
        }
        return true;
      default:
        return false;
    }
  }

  /** Services (`ns/name`) with a ready endpoint on this node, after applying pending changes. */
  localReadyServices(): number {
    const snap = takeSnapshot(this.svcTracker, this.epTracker);
    const names = new Set<string>();
    for (const [key, eps] of snap.endpoints) {
      if (eps.some((e) => e.isLocal && e.ready)) names.add(key.slice(0, key.lastIndexOf('/')));
    }
    return names.size;
  }

  sync(): void {
    const snap = takeSnapshot(this.svcTracker, this.epTracker);
    this.plan = planIpvs({
      family: this.family,
      services: snap.services,
      endpoints: snap.endpoints,
      options: this.options,
    });
    this.reconcile(this.plan.virtualServers, true);
    this.initialSync = false;
  }

  reconcile(wanted: readonly IpvsService[], deleteStale: boolean): void {
    const ops = reconcileIpvs(this.kernel, wanted, {
      family: this.family,
      excludeCIDRs: this.excludeCIDRs,
      connections: () => 0,
      initialSync: this.initialSync,
      deleteStale,
    });
    this.kernel = applyIpvsOperations(this.kernel, ops);
  }
}

function vsText(v: VsJSON): string {
  const flags = [...(v.flags ?? [])].filter((f) => f !== 'hashed').sort();
  return `${v.protocol.toUpperCase()} ${v.address}:${v.port} ${v.scheduler ?? ''} [${flags.join(',')}] ${v.timeout ?? 0}`;
}

function plannedVsJSON(s: IpvsService): VsJSON {
  const v = s.virtualServer;
  return {
    protocol: v.protocol,
    address: v.address,
    port: v.port,
    scheduler: v.scheduler,
    flags: v.flags.map((f) => (f === 'schedFlag2' ? 'sourceHash' : f)),
    timeout: v.timeoutSeconds ?? 0,
  };
}

function sameSet(got: string[], want: string[]): string | undefined {
  const g = [...got].sort();
  const w = [...want].sort();
  return JSON.stringify(g) === JSON.stringify(w)
    ? undefined
    : `got ${JSON.stringify(g)}, want ${JSON.stringify(w)}`;
}

function findVs(kernel: ReadonlyMap<string, IpvsService>, v: VsJSON): IpvsService | undefined {
  const protocol = toIpvsProtocol(v.protocol);
  if (!protocol) return undefined;
  return kernel.get(virtualServerKey({ protocol, address: v.address, port: v.port }));
}

function toModelVs(v: VsJSON): IpvsService {
  const flags = (v.flags ?? [])
    .filter((f) => f !== 'hashed')
    .map((f) => (f === 'sourceHash' ? 'schedFlag2' : f) as VirtualServerFlag);
  return {
    virtualServer: {
      protocol: toIpvsProtocol(v.protocol) ?? 'tcp',
      address: v.address,
      port: v.port,
      scheduler: v.scheduler ?? 'rr',
      flags,
      ...(v.timeout ? { timeoutSeconds: v.timeout } : {}),
    },
    realServers: [],
  };
}

function checkVirtualServers(p: IpvsFixtureProxier, step: Step): string | undefined {
  const got = [...p.kernel.values()].map(plannedVsJSON);
  if (step.compare === 'count') {
    return got.length === step.count
      ? undefined
      : `got ${got.length} virtual servers, want ${String(step.count)}`;
  }
  const want = (step.virtualServers ?? []).map(vsText);
  if (step.compare === 'contains') {
    const have = new Set(got.map(vsText));
    const missing = want.filter((w) => !have.has(w));
    return missing.length === 0
      ? undefined
      : `missing ${missing.join('; ')} in ${[...have].join('; ')}`;
  }
  return sameSet(got.map(vsText), want);
}

function checkRealServers(p: IpvsFixtureProxier, step: Step): string | undefined {
  const v = step.virtualServer;
  if (!v) return 'no virtualServer';
  const vs = findVs(p.kernel, v);
  const got = vs?.realServers ?? [];
  if (step.compare === 'allWeightsEqual') {
    const bad = got.filter((r) => r.weight !== step.weight);
    return bad.length === 0
      ? undefined
      : `weights ${got.map((r) => r.weight).join(',')}, want all ${String(step.weight)}`;
  }
  const text = (r: RsJSON): string => `${r.address}:${r.port} w${r.weight} ${r.forward}`;
  const gotText = got.map(text);
  const wantText = (step.realServers ?? []).map(text);
  if (step.compare === 'exact-ordered') {
    return JSON.stringify(gotText) === JSON.stringify(wantText)
      ? undefined
      : `got ${JSON.stringify(gotText)}, want ${JSON.stringify(wantText)}`;
  }
  return sameSet(gotText, wantText);
}

function checkIPSets(p: IpvsFixtureProxier, step: Step): string | undefined {
  const plan = p.plan;
  if (!plan) return 'no sync';
  const problems: string[] = [];
  for (const s of step.sets ?? []) {
    const set = plan.ipsets.find((x) => x.name === s.name);
    if (!set) {
      problems.push(`no set ${s.name}`);
      continue;
    }
    if (set.type !== s.type) problems.push(`${s.name}: type ${set.type}, want ${s.type}`);
    const diff = sameSet(
      set.entries.map((e) => e.value),
      s.entries,
    );
    if (diff !== undefined) problems.push(`${s.name}: ${diff}`);
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

function checkChains(p: IpvsFixtureProxier, step: Step): string | undefined {
  const plan = p.plan;
  if (!plan) return 'no sync';
  const problems: string[] = [];
  for (const c of step.chains ?? []) {
    const rules = [
      ...plan.iptables.filter((r) => r.table === 'nat' && r.chain === c.chain),
      ...plan.iptables.filter((r) => r.table === 'filter' && r.chain === c.chain),
    ].map((r) => `${ruleJump(r)}|${ruleMatchSet(r)}`);
    const want = c.rules.map((r) => `${r.jump}|${r.matchSet}`);
    if (JSON.stringify(rules) !== JSON.stringify(want))
      problems.push(`${c.chain}: got ${JSON.stringify(rules)}, want ${JSON.stringify(want)}`);
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

const NO_OP_STEPS = new Set(['servicesSynced', 'endpointSlicesSynced', 'comment']);

const CHECKS: Record<string, (p: IpvsFixtureProxier, step: Step) => string | undefined> = {
  expectVirtualServers: checkVirtualServers,
  expectRealServers: checkRealServers,
  expectIPSets: checkIPSets,
  expectIPTablesChains: checkChains,
  expectBoundAddresses: (p, step) =>
    sameSet([...(p.plan?.boundAddresses ?? [])], step.addresses ?? []),
};

/** setRealServerWeights, setInitialSync and syncEndpoint act on the fake kernel directly. */
function kernelStep(p: IpvsFixtureProxier, raw: Step): boolean {
  const step = raw as Step & {
    servicePortName?: { namespace: string; name: string; port: string };
  };
  const vs = step.virtualServer ? findVs(p.kernel, step.virtualServer) : undefined;
  switch (step.action) {
    case 'setRealServerWeights':
      if (vs)
        p.kernel.set(virtualServerKey(vs.virtualServer), {
          virtualServer: vs.virtualServer,
          realServers: vs.realServers.map((r) => ({ ...r, weight: step.weight ?? 0 })),
        });
      return true;
    case 'setInitialSync':
      p.initialSync = step.value === true;
      return true;
    case 'syncEndpoint': {
      // The real servers the named service port plans for this VS (none if the name matches none).
      const n = step.servicePortName;
      const name = n
        ? n.port === ''
          ? `${n.namespace}/${n.name}`
          : `${n.namespace}/${n.name}:${n.port}`
        : '';
      const planned = p.plan?.virtualServers.find(
        (s) =>
          s.servicePort === name &&
          vs !== undefined &&
          virtualServerKey(s.virtualServer) === virtualServerKey(vs.virtualServer),
      );
      if (vs)
        p.reconcile(
          [{ virtualServer: vs.virtualServer, realServers: planned?.realServers ?? [] }],
          false,
        );
      return true;
    }
    default:
      return false;
  }
}

function runSteps(fixture: Fixture, profile: IpvsProfile): CaseResult[] {
  const proxier = new IpvsFixtureProxier(ipvsOptionsOf(profile), profile.ipFamily);
  proxier.excludeCIDRs = profile.excludeCIDRs;
  const results: CaseResult[] = [];
  let n = 0;
  for (const raw of fixture.steps ?? []) {
    const step = raw as Step;
    if (proxier.applyObjectStep(step) || NO_OP_STEPS.has(step.action)) continue;
    if (step.action === 'sync') {
      proxier.sync();
      continue;
    }
    if (step.action === 'updateEndpointsMap') continue; // applied by the expectation below
    if (kernelStep(proxier, step)) continue;
    if (step.action === 'expectLocalReadyEndpointsCount') {
      const got = proxier.localReadyServices();
      const name = `${fixture.file} #${++n} ${step.action}`;
      results.push(
        got === step.value
          ? { name, status: 'passed' }
          : { name, status: 'failed', detail: `got ${got}, want ${String(step.value)}` },
      );
      continue;
    }
    const name = `${fixture.file} #${++n} ${step.action}`;
    const check = CHECKS[step.action];
    if (!check) {
      results.push({ name, status: 'skipped', detail: `not built: step ${step.action}` });
      continue;
    }
    const problem = check(proxier, step);
    results.push(
      problem === undefined
        ? { name, status: 'passed' }
        : { name, status: 'failed', detail: problem },
    );
  }
  return results;
}

function resolve(
  profiles: Record<string, IpvsProfile>,
  name: string | undefined,
  overrides?: Record<string, unknown>,
): IpvsProfile {
  const base = name === undefined ? undefined : profiles[name];
  if (!base) throw new Error(`unknown ipvs profile ${String(name)}`);
  return { ...base, ...overrides };
}

function checkReference(dir: string): CaseResult[] {
  const ref = readJSON(join(dir, 'ipvs-reference.json')) as {
    ipsets: {
      sets: { name: string; type: string; ipv6Name: string; ruleComment: string | null }[];
    };
    iptables: { ipsetRules: { rows: unknown[] } };
  };
  const results: CaseResult[] = [];
  for (const s of ref.ipsets.sets) {
    const def = IPSET_DEFS.find((d) => d.name === s.name);
    const name = `ipvs-reference.json set ${s.name}`;
    const problems: string[] = [];
    if (!def) problems.push('not defined');
    else {
      if (def.type !== s.type) problems.push(`type ${def.type}, want ${s.type}`);
      const v6 = ipsetName(s.name, 'IPv6', true);
      if (v6 !== s.ipv6Name) problems.push(`IPv6 name ${v6}, want ${s.ipv6Name}`);
      if (s.ruleComment !== null && def.comment !== s.ruleComment)
        problems.push(`comment ${def.comment}`);
    }
    results.push(
      problems.length === 0
        ? { name, status: 'passed' }
        : { name, status: 'failed', detail: problems.join('; ') },
    );
  }
  const rowsOk = JSON.stringify(ref.iptables.ipsetRules.rows) === JSON.stringify(IPSET_RULE_ROWS);
  results.push({
    name: 'ipvs-reference.json ipset rule rows',
    status: rowsOk ? 'passed' : 'failed',
    ...(rowsOk ? {} : { detail: 'IPSET_RULE_ROWS differ from the reference' }),
  });
  return results;
}

function runCases(
  fixture: Fixture,
  profiles: Record<string, IpvsProfile>,
): CaseResult[] | undefined {
  if (fixture.test === 'TestMasqueradeRule' || fixture.test === 'TestDismissLocalhostRuleExist') {
    const cases = fixture.cases as {
      subtest: string;
      profile?: string;
      overrides?: Record<string, unknown>;
      expectRule?: { table: string; chain: string; jump: string; randomFully: boolean };
      expectFirstRule?: { table: string; chain: string; jump: string; sourceAddress: string };
    }[];
    return cases.map((c) => {
      const name = `${fixture.file} ${c.subtest}`;
      const profile = resolve(profiles, c.profile ?? fixture.proxier?.profile, {
        ...fixture.proxier?.overrides,
        ...c.overrides,
      });
      const p = new IpvsFixtureProxier(ipvsOptionsOf(profile), profile.ipFamily);
      p.sync();
      const rules = p.plan?.iptables ?? [];
      let ok = false;
      if (c.expectRule) {
        const e = c.expectRule;
        const r = rules.find(
          (x) => x.table === e.table && x.chain === e.chain && ruleJump(x) === e.jump,
        );
        const target = r && targetPartOf(r.rule);
        ok = target !== undefined && masqueradeOf(target.options).randomFully === e.randomFully;
      } else if (c.expectFirstRule) {
        const e = c.expectFirstRule;
        const r = rules.find((x) => x.table === e.table && x.chain === e.chain);
        const first = r?.rule.parts[0];
        ok =
          r !== undefined &&
          ruleJump(r) === e.jump &&
          first?.kind === 'source' &&
          !first.negate &&
          first.value === e.sourceAddress;
      }
      return ok
        ? { name, status: 'passed' }
        : { name, status: 'failed', detail: 'rule not as expected' };
    });
  }
  if (fixture.test === 'TestNoEndpointsMetric') return noEndpointsMetricCases(fixture, profiles);
  if (fixture.test === 'Test_syncService') return syncServiceCases(fixture, profiles);
  if (fixture.test === 'TestCreateAndLinkKubeChain') return chainDeclarationCases(fixture);
  if (fixture.test.startsWith('TestCleanLegacy')) return cleanLegacyCases(fixture, profiles);
  return undefined;
}

/** The no-local-endpoints gauges after one sync of each case's Service and slice. */
function noEndpointsMetricCases(
  fixture: Fixture,
  profiles: Record<string, IpvsProfile>,
): CaseResult[] {
  const cases = fixture.cases as unknown as {
    subtest: string;
    service: Service;
    endpointSlice: EndpointSlice;
    expect: Record<string, number>;
  }[];
  return cases.map((c) => {
    const name = `${fixture.file} ${c.subtest}`;
    const profile = resolve(profiles, fixture.proxier?.profile, fixture.proxier?.overrides);
    const p = new IpvsFixtureProxier(ipvsOptionsOf(profile), profile.ipFamily);
    p.applyObjectStep({ action: 'upsertServices', objects: [c.service] });
    p.applyObjectStep({ action: 'upsertEndpointSlices', objects: [c.endpointSlice] });
    p.sync();
    const counts = p.plan?.noLocalEndpoints;
    const problems: string[] = [];
    for (const [metric, want] of Object.entries(c.expect)) {
      const policy = /traffic_policy="(\w+)"/.exec(metric)?.[1];
      const got = policy === 'internal' ? counts?.internal : counts?.external;
      if (got !== want) problems.push(`${metric}: got ${String(got)}, want ${want}`);
    }
    return problems.length === 0
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: problems.join('; ') };
  });
}

/** The worked example: its state as `ipvsadm -L -n` and `ipvsadm -S -n` print it. */
function ipvsadmFormatCases(dir: string): CaseResult[] {
  const doc = readJSON(join(dir, 'ipvsadm-format-vectors.json')) as {
    exampleState: (VsJSON & {
      schedFlags: string[];
      persistentTimeout: number | null;
      realServers: (RsJSON & { activeConn: number; inactConn: number })[];
    })[];
    exampleListOutput: string;
    exampleSaveOutput: string;
  };
  const state: IpvsService[] = doc.exampleState.map((v) => {
    const base = toModelVs({
      ...v,
      flags: [
        ...(v.persistentTimeout !== null ? ['persistent'] : []),
        ...(v.schedFlags.some((f) => f.endsWith('-port')) ? ['sourceHash'] : []),
      ],
      timeout: v.persistentTimeout ?? 0,
    });
    return {
      virtualServer: base.virtualServer,
      realServers: v.realServers.map((r) => ({
        address: r.address,
        port: r.port,
        weight: r.weight,
        forward: 'Masq' as const,
        activeConn: r.activeConn,
        inactConn: r.inactConn,
      })),
    };
  });
  const cases: [string, string, string][] = [
    ['ipvsadm -L -n', renderList(state), doc.exampleListOutput],
    ['ipvsadm -S -n', renderSave(state), doc.exampleSaveOutput],
  ];
  return cases.map(([what, got, want]) => {
    const name = `ipvsadm-format-vectors.json example ${what}`;
    return got === want
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: `got:\n${got}want:\n${want}` };
  });
}

/** The `:CHAIN - [0:0]` declarations of each table in the restore input. */
function chainDeclarationCases(fixture: Fixture): CaseResult[] {
  const decls = (
    fixture as unknown as { expectChainDeclarations: { table: string; text: string }[] }
  ).expectChainDeclarations;
  const text = renderIpvsIptables([]);
  return decls.map((d) => {
    const name = `${fixture.file} ${d.table}`;
    const block = text.split(`*${d.table}\n`)[1]?.split('COMMIT')[0] ?? '';
    const got = block
      .split('\n')
      .filter((l) => l.startsWith(':'))
      .map((l) => `${l}\n`)
      .join('');
    return got === d.text
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: `got ${JSON.stringify(got)}` };
  });
}

/** Per-VS sync over a preloaded kernel VS (upstream syncService; binding is the applier's). */
function syncServiceCases(fixture: Fixture, profiles: Record<string, IpvsProfile>): CaseResult[] {
  const cases = fixture.cases as unknown as {
    case: number;
    note: string;
    preloadVirtualServer: VsJSON | null;
    newVirtualServer: VsJSON;
    expectVirtualServers: VsJSON[];
  }[];
  return cases.map((c) => {
    const name = `${fixture.file} case ${c.case} ${c.note}`;
    const profile = resolve(profiles, fixture.proxier?.profile, fixture.proxier?.overrides);
    const p = new IpvsFixtureProxier(ipvsOptionsOf(profile), profile.ipFamily);
    if (c.preloadVirtualServer) {
      const pre = toModelVs(c.preloadVirtualServer);
      p.kernel.set(virtualServerKey(pre.virtualServer), pre);
    }
    p.reconcile([toModelVs(c.newVirtualServer)], false);
    const problem = sameSet(
      [...p.kernel.values()].map((s) => vsText(plannedVsJSON(s))),
      c.expectVirtualServers.map(vsText),
    );
    return problem === undefined
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: problem };
  });
}

/** Stale-VS cleanup over a preloaded kernel (upstream cleanLegacyService). */
function cleanLegacyCases(fixture: Fixture, profiles: Record<string, IpvsProfile>): CaseResult[] {
  const f = fixture as unknown as {
    preloadVirtualServers: Record<string, VsJSON>;
    preloadRealServers?: { virtualServer: string; realServer: RsJSON }[];
    activeServices: string[];
    expect: {
      remainingCount?: number;
      remaining?: string[];
      removed?: string[];
      remainingRealServers?: number;
    };
  };
  const profile = resolve(profiles, fixture.proxier?.profile, fixture.proxier?.overrides);
  const p = new IpvsFixtureProxier(ipvsOptionsOf(profile), profile.ipFamily);
  p.excludeCIDRs = profile.excludeCIDRs;
  const keyOfId: Record<string, string> = {};
  for (const [id, v] of Object.entries(f.preloadVirtualServers)) {
    const m = toModelVs(v);
    const reals = (f.preloadRealServers ?? [])
      .filter((r) => r.virtualServer === id)
      .map((r) => ({
        address: r.realServer.address,
        port: r.realServer.port,
        weight: r.realServer.weight,
        forward: 'Masq' as const,
      }));
    keyOfId[id] = virtualServerKey(m.virtualServer);
    p.kernel.set(keyOfId[id], { virtualServer: m.virtualServer, realServers: reals });
  }
  const active = f.activeServices
    .map((id) => p.kernel.get(keyOfId[id] ?? ''))
    .filter((s) => s !== undefined);
  p.reconcile(active, true);
  const problems: string[] = [];
  const e = f.expect;
  if (e.remainingCount !== undefined && p.kernel.size !== e.remainingCount)
    problems.push(`remaining ${p.kernel.size}, want ${e.remainingCount}`);
  for (const id of e.remaining ?? [])
    if (!p.kernel.has(keyOfId[id] ?? '')) problems.push(`${id} removed`);
  for (const id of e.removed ?? [])
    if (p.kernel.has(keyOfId[id] ?? '')) problems.push(`${id} kept`);
  if (e.remainingRealServers !== undefined) {
    const n = [...p.kernel.values()].reduce((a, s) => a + s.realServers.length, 0);
    if (n !== e.remainingRealServers)
      problems.push(`real servers ${n}, want ${e.remainingRealServers}`);
  }
  const name = fixture.file;
  return [
    problems.length === 0
      ? { name, status: 'passed' }
      : { name, status: 'failed', detail: problems.join('; ') },
  ];
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-ipvs',
  async run(): Promise<readonly CaseResult[] | { skipped: string }> {
    const dir = fixturesPresent(join('kube-proxy', 'ipvs'));
    if (dir === undefined) return { skipped: 'fixtures not present' };
    const profiles = (
      readJSON(join(dir, 'profiles.json')) as { profiles: Record<string, IpvsProfile> }
    ).profiles;
    const results: CaseResult[] = [];
    for (const fixture of loadFixtures(dir)) {
      if (fixture.file === 'profiles.json') continue;
      if (fixture.file === 'ipvs-reference.json') {
        results.push(...checkReference(dir));
        continue;
      }
      if (fixture.file === IPSET_VECTORS_FILE) {
        results.push(...(await ipsetVectorCases(dir)));
        continue;
      }
      if (fixture.file === MISC_VECTORS_FILE) {
        results.push(...miscUnitCases(dir));
        continue;
      }
      if (fixture.file === 'ipvsadm-format-vectors.json') {
        results.push(...ipvsadmFormatCases(dir));
        continue;
      }
      const cased = runCases(fixture, profiles);
      if (cased) {
        results.push(...cased);
        continue;
      }
      try {
        const profile = resolve(profiles, fixture.proxier?.profile, fixture.proxier?.overrides);
        results.push(...runSteps(fixture, profile));
      } catch (e) {
        results.push({ name: fixture.file, status: 'failed', detail: (e as Error).message });
      }
    }
    return results;
  },
};
