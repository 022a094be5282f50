// What both packet-flow suites (kube-proxy-iptables-flows, kube-proxy-nftables-flows) share:
// the shape of a packetFlow test, the packet it describes, the tracer's node addresses from
// the profile, the comparison of a trace with the expected `output` and `masq` (fixtures
// README, "Packet-flow semantics"), and one flow as one case. How an outcome is labelled
// differs per dataplane and stays in the suites.

import type { CaseResult } from './harness.js';
import type { FixtureProfile } from './kube-proxy-fixtures.js';
import type { Packet, Protocol } from '../../src/trace/packet.js';
import type { Outcome, TraceResult } from '../../src/trace/result.js';
import { parseIP, type ParsedIP } from '../../src/util/ip.js';

export interface FlowTest {
  readonly name: string;
  readonly sourceIP: string;
  readonly protocol?: string;
  readonly destIP: string;
  readonly destPort: number;
  readonly output: string;
  readonly masq: boolean;
}

/** The flow's packet (source port 40000), or why the fixture's addresses do not parse. */
export function flowPacket(t: FlowTest): Packet | string {
  const src = parseIP(t.sourceIP);
  const dst = parseIP(t.destIP);
  if (!src || !dst) return `bad addresses in fixture: ${t.sourceIP} ${t.destIP}`;
  return {
    src,
    dst,
    protocol: (t.protocol ?? 'TCP').toLowerCase() as Protocol,
    srcPort: 40000,
    dstPort: t.destPort,
  };
}

/** The addresses the fixture's tracer treats as the node's own. */
export function tracerLocalIPs(profile: FixtureProfile): ParsedIP[] {
  return profile.tracerLocalIPs.map(parseIP).filter((a): a is ParsedIP => !!a);
}

/**
 * How a trace differs from the flow's expectation, or undefined when it does not: the set of
 * outcome labels (`label`; '' is dropped when other labels exist) and masquerading on any
 * path. `prefix` starts the message.
 */
export function flowMismatch(
  result: TraceResult,
  t: FlowTest,
  label: (o: Outcome) => string,
  prefix = '',
): string | undefined {
  const labels = new Set(result.outcomes.map(label));
  if (labels.size > 1) labels.delete('');
  const masq = result.outcomes.some((o) => o.masquerade);
  const expected = new Set(t.output === '' ? [''] : t.output.split(', '));
  const same = labels.size === expected.size && [...labels].every((l) => expected.has(l));
  if (same && masq === t.masq) return undefined;
  const unsupported = result.unsupported.map(
    (u) => `${u.chain} #${u.rule}: ${u.reasons.join('; ')}`,
  );
  return (
    `${prefix}expected output ${JSON.stringify(t.output)} masq=${t.masq}, got ${JSON.stringify([...labels].sort().join(', '))} masq=${masq}` +
    (unsupported.length > 0 ? `\nunsupported: ${unsupported.join(' | ')}` : '')
  );
}

/** The cases of one packetFlow step (`flowStep`-th of `file`); `run` gives a flow's failure. */
export function flowCases(
  file: string,
  flowStep: number,
  tests: readonly FlowTest[],
  run: (t: FlowTest) => string | undefined,
): CaseResult[] {
  return tests.map((t): CaseResult => {
    const name = `${file.replace(/\.json$/, '')}#${flowStep} ${t.name}`;
    try {
      const failure = run(t);
      return failure === undefined
        ? { name, status: 'passed' }
        : { name, status: 'failed', detail: failure };
    } catch (e) {
      return { name, status: 'failed', detail: e instanceof Error ? e.message : String(e) };
    }
  });
}
