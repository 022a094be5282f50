// Conformance suite `kube-proxy-iptables-flows`: every packetFlow expectation in
// ../shared/fixtures/kube-proxy/iptables, traced by src/trace in its fixture-compatible mode
// (the fixtures README's "Packet-flow semantics"). Each flow is one case.
//
// The rules a flow runs against are, in order of preference: the kube-proxy rule text the
// fixture itself gives before the flow (preloadRuleset / expectRestoreInput / expectRuleset,
// which is exactly kube-proxy's output), or the fixture's Services and EndpointSlices rendered
// by our iptables renderer with the fixture's proxier profile. When neither is available the
// case is skipped with the reason.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { fixturesPresent } from './harness.js';
import { parseDocument } from '../../src/netfilter/iptables/parse.js';
import { tracePacket, type TraceResult } from '../../src/trace/walk.js';
import { defaultContext, type Packet, type Protocol } from '../../src/trace/packet.js';
import { parseIP, type ParsedIP } from '../../src/util/ip.js';
import { renderFixtureRules, type FixtureObjects, type Profile } from './trace-fixture-rules.js';

interface FlowTest {
  readonly name: string;
  readonly sourceIP: string;
  readonly protocol?: string;
  readonly destIP: string;
  readonly destPort: number;
  readonly output: string;
  readonly masq: boolean;
}

interface Step {
  readonly action: string;
  readonly text?: string;
  readonly objects?: readonly Record<string, unknown>[];
  readonly tests?: readonly FlowTest[];
}

interface Fixture {
  readonly test: string;
  readonly subtest?: string;
  readonly proxier?: { readonly profile: string; readonly overrides?: Record<string, unknown> };
  readonly steps?: readonly Step[];
}

interface ProfilesFile {
  readonly profiles: Record<string, Profile>;
}

/** The label kube-proxy's tracer gives one outcome (fixtures README, `output`). */
export function fixtureLabel(o: TraceResult['outcomes'][number]): string {
  if (o.verdict === 'drop') return 'DROP';
  if (o.verdict === 'reject') return 'REJECT';
  if (o.verdictBy === 'rule' && o.path.at(-1)?.effect === 'accept') return 'ACCEPT';
  return o.dnat ?? '';
}

/** The fixture's `output` for a whole trace: the set of outcome labels, joined. */
export function fixtureOutput(r: TraceResult): { labels: Set<string>; masq: boolean } {
  const labels = new Set(r.outcomes.map(fixtureLabel));
  if (labels.size > 1) labels.delete('');
  return { labels, masq: r.outcomes.some((o) => o.masquerade) };
}

function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

function runFlow(
  rulesText: string,
  profile: Profile,
  t: FlowTest,
): { ok: boolean; detail: string } {
  const doc = parseDocument(rulesText);
  const src = parseIP(t.sourceIP);
  const dst = parseIP(t.destIP);
  if (!src || !dst)
    return { ok: false, detail: `bad addresses in fixture: ${t.sourceIP} ${t.destIP}` };
  const packet: Packet = {
    src,
    dst,
    protocol: (t.protocol ?? 'TCP').toLowerCase() as Protocol,
    srcPort: 40000,
    dstPort: t.destPort,
  };
  const local: ParsedIP[] = [];
  for (const a of profile.tracerLocalIPs) {
    const ip = parseIP(a);
    if (ip) local.push(ip);
  }
  const ctx = defaultContext('pod', local, { mode: 'fixture-compatible' });
  const result = tracePacket(doc, packet, ctx);
  const { labels, masq } = fixtureOutput(result);
  const expected = new Set(t.output === '' ? [''] : t.output.split(', '));
  const same = labels.size === expected.size && [...labels].every((l) => expected.has(l));
  const got = [...labels].sort().join(', ');
  const ok = same && masq === t.masq;
  const unsupported = result.unsupported.map(
    (u) => `${u.chain} #${u.rule}: ${u.reasons.join('; ')}`,
  );
  return {
    ok,
    detail: ok
      ? ''
      : `expected output ${JSON.stringify(t.output)} masq=${t.masq}, got ${JSON.stringify(got)} masq=${masq}` +
        (unsupported.length > 0 ? `\nunsupported: ${unsupported.join(' | ')}` : ''),
  };
}

export const suite: ConformanceSuite = {
  name: 'kube-proxy-iptables-flows',
  run() {
    const dir = fixturesPresent('kube-proxy/iptables');
    const profilesDir = fixturesPresent('kube-proxy');
    if (!dir || !profilesDir)
      return Promise.resolve({
        skipped: 'fixtures absent: ../shared/fixtures/kube-proxy/iptables',
      });
    const profiles = (
      JSON.parse(readFileSync(join(profilesDir, 'profiles.json'), 'utf8')) as ProfilesFile
    ).profiles;
    const results: CaseResult[] = [];
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()) {
      const fx = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture;
      const steps = fx.steps ?? [];
      if (!steps.some((s) => s.action === 'packetFlow')) continue;
      const base = profiles[fx.proxier?.profile ?? 'iptables-ipv4'];
      if (!base) {
        results.push({
          name: file,
          status: 'failed',
          detail: `unknown profile ${fx.proxier?.profile ?? ''}`,
        });
        continue;
      }
      const profile: Profile = { ...base, ...(fx.proxier?.overrides ?? {}) };
      const services = new Map<string, Record<string, unknown>>();
      const slices = new Map<string, Record<string, unknown>>();
      let text: string | undefined;
      let textFromFixture = false;
      let flowStep = 0;
      for (const s of steps) {
        switch (s.action) {
          case 'upsertServices':
            for (const o of s.objects ?? []) services.set(keyOf(o), o);
            textFromFixture = false;
            break;
          case 'upsertEndpointSlices':
            for (const o of s.objects ?? []) slices.set(keyOf(o), o);
            textFromFixture = false;
            break;
          case 'deleteServices':
            for (const o of s.objects ?? [])
              services.delete(`${String(o.namespace)}/${String(o.name)}`);
            textFromFixture = false;
            break;
          case 'deleteEndpointSlices':
            for (const o of s.objects ?? [])
              slices.delete(`${String(o.namespace)}/${String(o.name)}`);
            textFromFixture = false;
            break;
          case 'preloadRuleset':
          case 'expectRestoreInput':
          case 'expectRuleset':
            if (s.text !== undefined) {
              text = s.text;
              textFromFixture = true;
            }
            break;
          case 'packetFlow': {
            flowStep++;
            let rules: string | undefined = textFromFixture ? text : undefined;
            let why = '';
            if (rules === undefined) {
              const objects: FixtureObjects = {
                services: [...services.values()],
                endpointSlices: [...slices.values()],
              };
              const rendered = renderFixtureRules(objects, profile);
              if ('text' in rendered) rules = rendered.text;
              else why = rendered.unavailable;
            }
            for (const t of s.tests ?? []) {
              const name = `${file.replace(/\.json$/, '')}#${flowStep} ${t.name}`;
              if (rules === undefined) {
                results.push({ name, status: 'skipped', detail: why });
                continue;
              }
              try {
                const r = runFlow(rules, profile, t);
                results.push({
                  name,
                  status: r.ok ? 'passed' : 'failed',
                  ...(r.ok ? {} : { detail: r.detail }),
                });
              } catch (e) {
                results.push({
                  name,
                  status: 'failed',
                  detail: e instanceof Error ? e.message : String(e),
                });
              }
            }
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
