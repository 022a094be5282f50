// Conformance suite `kube-proxy-iptables-flows`: every packetFlow expectation in
// ../shared/fixtures/kube-proxy/iptables, traced by src/trace in its fixture-compatible mode
// (the fixtures README's "Packet-flow semantics"). Each flow is one case.
//
// The rules a flow runs against are the kube-proxy rule text the fixture itself gives before
// the flow (preloadRuleset / expectRestoreInput / expectRuleset: exactly kube-proxy's
// output) when there is one; otherwise the fixture's Services and EndpointSlices as they
// stand at that step, rendered by our iptables planner (one full sync) with the fixture's
// proxier profile.

import { join } from 'node:path';
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
  type FixtureProfile,
} from './kube-proxy-fixtures.js';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import { parseDocument } from '../../src/netfilter/iptables/parse.js';
import { renderDocument } from '../../src/netfilter/iptables/render.js';
import { planIptables } from '../../src/proxy/iptables/plan.js';
import { EndpointsChangeTracker } from '../../src/proxy/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../../src/proxy/model/service-change-tracker.js';
import { takeSnapshot } from '../../src/proxy/model/snapshot.js';
import { tracePacket } from '../../src/trace/walk.js';
import { defaultContext } from '../../src/trace/packet.js';
import type { Outcome } from '../../src/trace/result.js';
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
  if (o.verdictBy === 'rule' && o.path.at(-1)?.effect === 'accept') return 'ACCEPT';
  return o.dnat ?? '';
}

function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** Our planner's restore text for the objects (one full sync). */
function renderRules(
  profile: FixtureProfile,
  services: readonly Service[],
  slices: readonly EndpointSlice[],
): string {
  const options = iptablesOptions(profile);
  const st = new ServiceChangeTracker(profile.ipFamily);
  const et = new EndpointsChangeTracker(profile.ipFamily, options.nodeName);
  for (const s of services) st.update(undefined, s);
  for (const e of slices) et.update(undefined, e);
  const snap = takeSnapshot(st, et);
  const plan = planIptables({
    family: profile.ipFamily,
    services: snap.services,
    endpoints: snap.endpoints,
    options,
  });
  return renderDocument(plan.document);
}

function runFlow(rulesText: string, profile: FixtureProfile, t: FlowTest): string | undefined {
  const packet = flowPacket(t);
  if (typeof packet === 'string') return packet;
  const ctx = defaultContext('pod', tracerLocalIPs(profile), { mode: 'fixture-compatible' });
  return flowMismatch(tracePacket(parseDocument(rulesText), packet, ctx), t, fixtureLabel);
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-iptables-flows',
  run(root) {
    const dir = fixturesPresent('kube-proxy/iptables');
    const kubeProxyDir = fixturesPresent('kube-proxy');
    if (!dir || !kubeProxyDir)
      return Promise.resolve({
        skipped: `no fixtures at ${join(root, 'kube-proxy', 'iptables')}`,
      });
    const profiles = loadProfiles(kubeProxyDir);
    const results: CaseResult[] = [];
    for (const fx of loadFixtures(dir)) {
      const steps = fx.steps ?? [];
      if (!steps.some((s) => s.action === 'packetFlow')) continue;
      let profile: FixtureProfile;
      try {
        profile = resolveProfile(profiles, fx);
      } catch (e) {
        results.push({ name: fx.file, status: 'failed', detail: String(e) });
        continue;
      }
      const services = new Map<string, Service>();
      const slices = new Map<string, EndpointSlice>();
      let fixtureText: string | undefined;
      let flowStep = 0;
      for (const s of steps) {
        switch (s.action) {
          case 'upsertServices':
            for (const o of asServices(s)) services.set(keyOf(o), o);
            fixtureText = undefined;
            break;
          case 'upsertEndpointSlices':
            for (const o of asEndpointSlices(s)) slices.set(keyOf(o), o);
            fixtureText = undefined;
            break;
          case 'deleteServices':
            for (const r of asRefs(s)) services.delete(`${r.namespace}/${r.name}`);
            fixtureText = undefined;
            break;
          case 'deleteEndpointSlices':
            for (const r of asRefs(s)) slices.delete(`${r.namespace}/${r.name}`);
            fixtureText = undefined;
            break;
          case 'preloadRuleset':
          case 'expectRestoreInput':
          case 'expectRuleset':
            fixtureText = s.text;
            break;
          case 'packetFlow': {
            flowStep++;
            const rules =
              fixtureText ?? renderRules(profile, [...services.values()], [...slices.values()]);
            const tests = (s.tests ?? []) as FlowTest[];
            results.push(...flowCases(fx.file, flowStep, tests, (t) => runFlow(rules, profile, t)));
            break;
          }
          default:
            break;
        }
      }
    }
    return Promise.resolve(results);
  },
};
