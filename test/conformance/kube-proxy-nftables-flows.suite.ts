// Conformance suite `kube-proxy-nftables-flows`: every packetFlow expectation in
// ../shared/fixtures/kube-proxy/nftables (207 flows), traced by src/trace/nft over the ruleset
// our nftables proxy pipeline leaves in the atomic Fake at that step (the rules suite's
// fixture proxier: change trackers, the planner's full then partial syncs, the fixture's
// proxier profile). Each flow is one case and must pass twice: in fixture-compatible mode
// (the fixtures README's "Packet-flow semantics") and in kernel mode (the hooks and routing
// a real node applies).

import { join } from 'node:path';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { fixturesPresent } from './harness.js';
import {
  loadFixtures,
  loadProfiles,
  nftablesOptions,
  resolveProfile,
  type FixtureProfile,
  type FixtureStep,
} from './kube-proxy-fixtures.js';
import { NftFixtureProxier } from './kube-proxy-nftables-rules.suite.js';
import type { Ruleset } from '../../src/netfilter/nftables/model.js';
import { traceNftPacket } from '../../src/trace/nft/trace.js';
import { inferOrigin, defaultContext, type TraceContext } from '../../src/trace/packet.js';
import type { Outcome } from '../../src/trace/result.js';
import { parseCIDR } from '../../src/util/ip.js';
import {
  flowCases,
  flowMismatch,
  flowPacket,
  tracerLocalIPs,
  type FlowTest,
} from './kube-proxy-flows.js';

/** The label kube-proxy's tracer gives one outcome (fixtures README, `output`). */
function fixtureLabel(o: Outcome): string {
  if (o.verdict === 'drop') return 'DROP';
  if (o.verdict === 'reject') return 'REJECT';
  return o.dnat ?? '';
}

/** The fixtures' address conventions: pods 10.0.0.0/8 and fd00:10::/64 (README). */
const POD_CIDRS = ['10.0.0.0/8', 'fd00:10::/64'].map(parseCIDR).filter((c) => c !== undefined);

/**
 * Traces one flow twice: as kube-proxy's tracer does (fixture-compatible, from a pod), and
 * as the kernel would (hooks by priority and routing, the origin inferred from the source:
 * a node address enters through output). Both must give the fixture's answer.
 */
function runFlow(ruleset: Ruleset, profile: FixtureProfile, t: FlowTest): string | undefined {
  const packet = flowPacket(t);
  if (typeof packet === 'string') return packet;
  const local = tracerLocalIPs(profile);
  const fixture = defaultContext('pod', local, { mode: 'fixture-compatible' });
  const kernel = defaultContext(inferOrigin(packet.src, local, POD_CIDRS), local);
  const check = (ctx: TraceContext, mode: string) =>
    flowMismatch(traceNftPacket(ruleset, packet, ctx), t, fixtureLabel, `${mode}: `);
  const failures = [
    check(fixture, 'fixture-compatible'),
    check(kernel, `kernel (from ${kernel.origin})`),
  ].filter((f) => f !== undefined);
  return failures.length > 0 ? failures.join('\n') : undefined;
}

/**
 * The flows of one fixture: its steps drive the rules suite's fixture proxier (trackers,
 * full then partial syncs into the Fake), and each packetFlow is traced over the Fake's
 * ruleset at that point.
 */
function runFixture(
  file: string,
  steps: readonly FixtureStep[],
  profile: FixtureProfile,
): CaseResult[] {
  const results: CaseResult[] = [];
  const proxier = new NftFixtureProxier(nftablesOptions(profile), profile);
  let synced = false;
  let flowStep = 0;
  for (const s of steps) {
    if (proxier.applyObjectStep(s)) continue;
    switch (s.action) {
      case 'sync':
        proxier.sync();
        synced = true;
        break;
      case 'packetFlow': {
        flowStep++;
        if (!synced) proxier.sync();
        const ruleset = proxier.fake.ruleset();
        const tests = (s.tests ?? []) as FlowTest[];
        results.push(...flowCases(file, flowStep, tests, (t) => runFlow(ruleset, profile, t)));
        break;
      }
      default:
        break;
    }
  }
  return results;
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-nftables-flows',
  run(root) {
    const dir = fixturesPresent('kube-proxy/nftables');
    const kubeProxyDir = fixturesPresent('kube-proxy');
    if (!dir || !kubeProxyDir)
      return Promise.resolve({
        skipped: `no fixtures at ${join(root, 'kube-proxy', 'nftables')}`,
      });
    const profiles = loadProfiles(kubeProxyDir);
    const results: CaseResult[] = [];
    for (const fx of loadFixtures(dir)) {
      const steps = fx.steps ?? [];
      if (!steps.some((s) => s.action === 'packetFlow')) continue;
      try {
        results.push(...runFixture(fx.file, steps, resolveProfile(profiles, fx)));
      } catch (e) {
        results.push({ name: fx.file, status: 'failed', detail: String(e) });
      }
    }
    return Promise.resolve(results);
  },
};
