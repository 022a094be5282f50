// The nftables tracer agrees with the kernel (issue #15, "Kernel agreement"). Services and
// EndpointSlices (addresses as in kube-proxy's test fixtures: node 192.168.0.2, pods
// 10.180.x.y, ClusterIPs 172.30.0.x in the ServiceCIDR 172.30.0.0/16) are planned by our
// nftables planner, rendered as one `nft -f` transaction and loaded with the real nft into a
// node namespace (one load for every scenario), then read back with `nft list ruleset`. Each
// scenario is traced twice — over the render and over the kernel's dump — and both traces
// must give the same outcomes. Then real TCP and UDP connections from namespaces arranged as
// a pod, the node itself and an external client (trace-netns.ts, shared with the iptables
// test) reach servers standing for the endpoints, which answer with their address and the
// client address they saw. Whatever the kernel did — which endpoint answered, whether the
// source was masqueraded, refused or dropped — must be one of the traced outcomes, every
// time. The last test does the same per node of a three-node manifest through `svcnet render
// --mode nftables --node` and `svcnet trace -f --mode nftables --node`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRender } from '../../src/cli/render.js';
import { runTrace } from '../../src/cli/trace.js';
import { parseManifests } from '../../src/kube/manifest.js';
import type { Ruleset } from '../../src/netfilter/nftables/model.js';
import { parseRuleset } from '../../src/netfilter/nftables/parse.js';
import { renderTransaction } from '../../src/netfilter/nftables/render.js';
import { defaultProxyConfig } from '../../src/proxy/config.js';
import { planNftablesFromObjects } from '../../src/proxy/nftables/plan-objects.js';
import { nftablesProxierOptionsFor } from '../../src/proxy/proxier-options.js';
import { loadNftRules } from '../../src/trace/nft/input.js';
import { traceNftPacket } from '../../src/trace/nft/trace.js';
import type { RecentEntry } from '../../src/trace/packet.js';
import type { Outcome, TraceResult } from '../../src/trace/result.js';
import {
  Clients,
  LOCAL,
  REMOTE,
  SVC2_TO_SVC5,
  SVC7_SVC8,
  TCP80,
  Client,
  EXTERNAL_CLIENT,
  NODE_FILES,
  PER_NODE,
  addNs,
  agrees,
  checkScenario,
  describeObservation,
  describeOutcomes,
  dnats,
  fixtureNode,
  inNs,
  linkPod,
  masq,
  missingPrerequisite,
  nodeWithClient,
  observe,
  only,
  removeAll,
  scenarioPacket,
  sliceManifest as slice,
  startServer,
  stopAgents,
  svcManifest as svc,
  sweepStale,
  type Scenario,
} from './lib/trace-netns.js';
import { skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(missingPrerequisite(['nft']));

const TCP_UDP = '[{name: p80, port: 80, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]';

const MANIFESTS = [
  svc('svc1', `  clusterIP: 172.30.0.41\n  externalIPs: [192.168.99.21]\n  ports: ${TCP_UDP}\n`),
  slice('svc1', TCP_UDP, [
    ['10.180.0.1', LOCAL],
    ['10.180.1.1', REMOTE],
  ]),
  ...SVC2_TO_SVC5,
  svc(
    'svc6',
    `  type: NodePort\n  clusterIP: 172.30.0.46\n  ports: [{name: p80, port: 80, protocol: TCP, nodePort: 3006}, {name: dns, port: 53, protocol: UDP, nodePort: 3006}]\n`,
  ),
  ...SVC7_SVC8,
  // Terminating endpoints: used only when no endpoint is ready, and then only serving ones.
  svc('svc9', `  clusterIP: 172.30.0.49\n  ports: ${TCP80}\n`),
  slice('svc9', TCP80, [
    ['10.180.0.9', LOCAL, 'serving-terminating'],
    ['10.180.1.9', REMOTE, 'terminating'],
  ]),
  svc('svc10', `  clusterIP: 172.30.0.50\n  ports: ${TCP80}\n`),
  slice('svc10', TCP80, [
    ['10.180.0.10', LOCAL, 'serving-terminating'],
    ['10.180.1.10', REMOTE],
  ]),
].join('\n---\n');

/** Every endpoint address; one namespace holds them all, one server answers for all. */
const ENDPOINTS = [
  '10.180.0.1',
  '10.180.1.1',
  '10.180.0.2',
  '10.180.1.2',
  '10.180.0.3',
  '10.180.0.4',
  '10.180.1.4',
  '10.180.0.5',
  '10.180.1.5',
  '10.180.1.7',
  '10.180.1.8',
  '10.180.0.9',
  '10.180.1.9',
  '10.180.0.10',
  '10.180.1.10',
];
/** UDP answers come from a socket bound to the endpoint address: one server per address. */
const UDP_ENDPOINTS = ['10.180.0.1', '10.180.1.1'];

const POD = { client: 'pod', src: '10.0.0.2' } as const;
const NODE = { client: 'node', src: '192.168.0.2' } as const;
const EXT = { client: 'ext', src: '203.0.113.2' } as const;
const BOTH1 = ['10.180.0.1:80', '10.180.1.1:80'];

const SCENARIOS: Scenario[] = [
  {
    name: 'ClusterIP, one endpoint, from a pod',
    ...POD,
    dst: '172.30.0.43:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(false, '10.180.0.3:80'),
  },
  {
    name: 'ClusterIP, two endpoints, TCP from a pod',
    ...POD,
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 6,
    expect: masq(false, ...BOTH1),
  },
  {
    name: 'ClusterIP, two endpoints, UDP from a pod',
    ...POD,
    dst: '172.30.0.41:53',
    proto: 'udp',
    attempts: 6,
    expect: masq(false, '10.180.0.1:53', '10.180.1.1:53'),
  },
  {
    name: 'ClusterIP from the node (masquerade: not from the cluster CIDR)',
    ...NODE,
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, ...BOTH1),
  },
  {
    name: 'ClusterIP from outside the node',
    ...EXT,
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, ...BOTH1),
  },
  {
    name: 'ClusterIP, a port the Service does not have: rejected',
    ...POD,
    dst: '172.30.0.41:81',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'an unallocated ClusterIP in the ServiceCIDR: dropped',
    ...POD,
    dst: '172.30.0.99:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'ClusterIP, a port the Service does not have, from the node: rejected',
    ...NODE,
    dst: '172.30.0.41:81',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'an unallocated ClusterIP in the ServiceCIDR, from the node: dropped',
    ...NODE,
    dst: '172.30.0.99:80',
    proto: 'udp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'hairpin: an endpoint reaches itself via its ClusterIP (masqueraded)',
    client: 'hairpin',
    src: '10.180.0.3',
    bind: true,
    dst: '172.30.0.43:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'externalIP from outside',
    ...EXT,
    dst: '192.168.99.21:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, ...BOTH1),
  },
  {
    name: 'NodePort from another pod',
    ...POD,
    dst: '192.168.0.2:3003',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'NodePort from an external client',
    ...EXT,
    dst: '192.168.0.2:3003',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from outside: local endpoint, source kept',
    ...EXT,
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'NodePort eTP=Local from outside',
    ...EXT,
    dst: '192.168.0.2:3001',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'externalIP eTP=Local from outside',
    ...EXT,
    dst: '192.168.99.22:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from a pod: all endpoints',
    ...POD,
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 6,
    expect: masq(false, '10.180.0.2:80', '10.180.1.2:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from the node: all endpoints, masqueraded',
    ...NODE,
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, '10.180.0.2:80', '10.180.1.2:80'),
  },
  {
    name: 'LoadBalancer source range: allowed client',
    ...EXT,
    dst: '5.6.7.8:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.5:80', '10.180.1.5:80'),
  },
  {
    name: 'LoadBalancer source range: blocked client is dropped',
    client: 'ext',
    src: '203.0.113.130',
    bind: true,
    dst: '5.6.7.8:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'NodePort ignores loadBalancerSourceRanges',
    client: 'ext',
    src: '203.0.113.130',
    bind: true,
    dst: '192.168.0.2:3002',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.5:80', '10.180.1.5:80'),
  },
  {
    name: 'no endpoints: TCP rejected',
    ...POD,
    dst: '172.30.0.46:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'no endpoints: UDP rejected',
    ...POD,
    dst: '172.30.0.46:53',
    proto: 'udp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'no endpoints, from the node',
    ...NODE,
    dst: '172.30.0.46:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'no endpoints, NodePort from outside',
    ...EXT,
    dst: '192.168.0.2:3006',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'eTP=Local without local endpoints: LoadBalancer dropped',
    ...EXT,
    dst: '9.10.11.12:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'eTP=Local without local endpoints: NodePort dropped',
    ...EXT,
    dst: '192.168.0.2:3007',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'iTP=Local from a pod: local endpoint only',
    ...POD,
    dst: '172.30.0.44:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.4:80'),
  },
  {
    name: 'iTP=Local from the node',
    ...NODE,
    dst: '172.30.0.44:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.4:80'),
  },
  {
    name: 'iTP=Local without local endpoints: dropped',
    ...POD,
    dst: '172.30.0.48:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'no ready endpoint: the serving terminating one is used',
    ...POD,
    dst: '172.30.0.49:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.9:80'),
  },
  {
    name: 'a ready endpoint: terminating ones are not used',
    ...POD,
    dst: '172.30.0.50:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.1.10:80'),
  },
];

/** The render (its `nft -f` text read back) and the kernel's `nft list ruleset` dump. */
let rendered: Ruleset | undefined;
let kernel: Ruleset | undefined;
const clients = new Clients();

function traceIn(
  rules: Ruleset | undefined,
  s: Pick<Scenario, 'src' | 'dst' | 'proto' | 'client'>,
  recent: RecentEntry[] = [],
): TraceResult {
  if (!rules) throw new Error('rules not loaded');
  const { packet, ctx } = scenarioPacket(s, recent);
  return traceNftPacket(rules, packet, ctx);
}

/** What a trace predicts, without the paths (whose rule texts differ between the forms). */
function summary(r: TraceResult): string[] {
  return r.outcomes
    .map(
      (o) =>
        `${o.verdict} ${o.dnat ?? '-'} masq=${o.masquerade} p=${o.probability.toFixed(6)} ${o.servicePort ?? '-'} ${o.endpoint ?? '-'}`,
    )
    .sort();
}

/** The planner's full sync for this node, as `nft -f` text. */
function renderScenarios(): string {
  const set = parseManifests([{ path: 'services.yaml', text: MANIFESTS }]);
  const options = nftablesProxierOptionsFor(
    { ...defaultProxyConfig(LOCAL), clusterCIDRs: ['10.0.0.0/8'] },
    { name: LOCAL, ips: ['192.168.0.2'], zone: '', podCIDRs: [] },
    { localAddresses: ['127.0.0.1/8', '192.168.0.2/24', '203.0.113.1/24', '169.254.1.1/32'] },
    'IPv4',
    ['172.30.0.0/16'],
  );
  const { plan } = planNftablesFromObjects(set.services, set.endpointSlices, options, 'IPv4');
  return renderTransaction(plan.transaction);
}

before(async () => {
  if (skip) return;
  sweepStale();
  const { node, ext, pod } = fixtureNode();
  // Where a packet the rules should drop would go if they did not: a namespace owning those
  // destinations and answering nothing, so an escaped packet is refused, not silently lost.
  // (Destinations the rules should reject are not here: an escape times out at the client.)
  linkPod(node, addNs('sink'), '172.30.0.99', ['172.30.0.48', '9.10.11.12', '5.6.7.8']);
  // One namespace for every endpoint (the hairpin client binds 10.180.0.3 in it).
  const eps = addNs('eps');
  const [first = '', ...more] = ENDPOINTS;
  linkPod(node, eps, first, more);
  await Promise.all([
    startServer(eps, first, [80], []),
    ...UDP_ENDPOINTS.map((e) => startServer(eps, e, [], [53])),
  ]);
  clients.set('hairpin', new Client(eps));
  clients.set('pod', new Client(pod));
  clients.set('node', new Client(node));
  clients.set('ext', new Client(ext));

  const text = renderScenarios();
  rendered = loadNftRules(text);
  inNs(node, 'nft', ['-f', '-'], text);
  // Trace what the kernel holds, as a user would: the node's own `nft list ruleset`.
  kernel = parseRuleset(inNs(node, 'nft', ['list', 'ruleset']));
});

const scratch = skip ? '' : mkdtempSync(join(tmpdir(), 'svcnet-trace-nft-'));

after(() => {
  stopAgents();
  if (!skip) {
    removeAll();
    rmSync(scratch, { recursive: true, force: true });
  }
});

test(
  'the ruleset read back from the kernel traces without unsupported rules, like the render',
  { skip },
  () => {
    for (const rules of [rendered, kernel]) {
      const r = traceIn(rules, { ...POD, dst: '172.30.0.41:80', proto: 'tcp' });
      assert.deepEqual(r.unsupported, []);
      assert.ok(!r.notes.some((n) => n.includes('assumed')), r.notes.join('\n'));
    }
  },
);

test(
  `the trace of the kernel's dump equals the trace of the render (${SCENARIOS.length} scenarios)`,
  { skip },
  () => {
    const failures: string[] = [];
    for (const s of SCENARIOS) {
      const [ra, rb] = [traceIn(rendered, s), traceIn(kernel, s)];
      for (const r of [ra, rb])
        if (r.unsupported.length > 0)
          failures.push(`${s.name}: unsupported ${r.unsupported.map((u) => u.text).join('; ')}`);
      const [a, b] = [summary(ra), summary(rb)];
      if (JSON.stringify(a) !== JSON.stringify(b))
        failures.push(`${s.name}: render ${a.join(' | ')}; kernel dump ${b.join(' | ')}`);
    }
    assert.deepEqual(failures, []);
  },
);

test(
  `the kernel does one of the traced outcomes (${SCENARIOS.length} scenarios)`,
  { skip },
  async () => {
    assert.ok(SCENARIOS.length >= 20);
    const failures: string[] = [];
    for (const s of SCENARIOS) {
      const trace = traceIn(kernel, s);
      const seen = await checkScenario(s, trace.outcomes, clients.of(s.client), failures);
      if (seen) process.stdout.write(`# ${s.name}: ${[...seen].join('; ')}\n`);
    }
    assert.deepEqual(failures, []);
  },
);

test(
  'ClientIP affinity: later connections stick to the first endpoint, as the trace with that affinity set says',
  { skip },
  async () => {
    const s: Scenario = {
      name: 'affinity',
      ...POD,
      dst: '172.30.0.45:80',
      proto: 'tcp',
      attempts: 4,
      expect: () => undefined,
    };
    const fresh = traceIn(kernel, s);
    masq(false, '10.180.0.5:80', '10.180.1.5:80')(fresh.outcomes);
    const first = await observe(clients.of(s.client), s, fresh.outcomes);
    const chosen = fresh.outcomes.find((o) => agrees(o, first, s.src));
    assert.ok(chosen, `first connection: ${describeObservation(first)}`);
    // The endpoint chain records the source in its affinity set (same suffix).
    const endpointChain = chosen.path.find((p) => p.chain.startsWith('endpoint-'))?.chain ?? '';
    assert.notEqual(endpointChain, '', 'the path goes through an endpoint chain');
    const affinitySet = endpointChain.replace(/^endpoint-/, 'affinity-');
    for (const rules of [rendered, kernel]) {
      const sticky = traceIn(rules, s, [{ name: affinitySet, ageSeconds: 1 }]);
      assert.deepEqual(dnats(sticky.outcomes), [chosen.dnat]);
    }
    const sticky = traceIn(kernel, s, [{ name: affinitySet, ageSeconds: 1 }]);
    for (let i = 0; i < s.attempts; i++) {
      const ob = await observe(clients.of(s.client), s, sticky.outcomes);
      assert.ok(
        sticky.outcomes.some((o) => agrees(o, ob, s.src)),
        `later connection: ${describeObservation(ob)}`,
      );
    }
  },
);

// The CLI, per node: for each Node of a three-node manifest, `svcnet render --mode nftables
// --node N`'s output is loaded with nft -f (as printed, comments included) into a fresh node
// namespace holding that Node's InternalIP, a real connection goes from an external client to
// <InternalIP>:<nodePort>, and what the kernel did must be one of the outcomes of `svcnet
// trace -f … --mode nftables --node N`. Two NodePorts: examples/nodeport.yaml's (policy
// Cluster: either endpoint, masqueraded, on every node) and one with externalTrafficPolicy
// Local (only the node's own endpoint, source kept; dropped on the node without one). And
// `svcnet trace --rules` over that node's `nft list ruleset` gives the same outcomes.

/** `svcnet trace --json`'s outcomes. */
async function traceCLI(flags: Partial<Parameters<typeof runTrace>[0]>): Promise<Outcome[]> {
  const out = await runTrace({
    src: '',
    dst: '',
    ctState: 'NEW',
    mode: 'kernel',
    assumeHooks: false,
    json: true,
    ...flags,
  });
  return (JSON.parse(out) as { outcomes: Outcome[] }).outcomes;
}

const outcomeKey = (o: Outcome): string =>
  `${o.verdict} ${o.dnat ?? '-'} masq=${o.masquerade} p=${o.probability.toFixed(6)}`;

test(
  'a NodePort on every node of a three-node manifest: render --mode nftables --node loaded with nft -f does one of trace --mode nftables --node’s outcomes',
  { skip },
  async () => {
    const failures: string[] = [];
    for (const [i, n] of PER_NODE.entries()) {
      const { node, ext } = await nodeWithClient(`n${i}`, n.ip);
      const text = await runRender({ file: NODE_FILES, node: n.name, mode: 'nftables' }, []);
      inNs(node, 'nft', ['-f', '-'], text);
      const dumpFile = join(scratch, `${n.name}.nft`);
      writeFileSync(dumpFile, inNs(node, 'nft', ['list', 'ruleset']));
      for (const [port, attempts] of [
        [30080, 3],
        [30777, n.local.length === 0 ? 1 : 2],
      ] as const) {
        const packet = { src: EXTERNAL_CLIENT, dst: `${n.ip}:${port}`, fromExternal: true };
        const traced = await traceCLI({
          ...packet,
          filename: NODE_FILES,
          node: n.name,
          proxyMode: 'nftables',
        });
        const fromDump = await traceCLI({ ...packet, rules: dumpFile, nodeIp: [n.ip] });
        assert.deepEqual(fromDump.map(outcomeKey).sort(), traced.map(outcomeKey).sort());
        // What each NodePort is about on this node, so agreement is not with a wrong trace.
        if (port === 30080) masq(true, '10.244.1.12:5678', '10.244.2.9:5678')(traced);
        else if (n.local.length === 0) only('drop')(traced);
        else masq(false, ...n.local)(traced);
        for (let a = 0; a < attempts; a++) {
          const ob = await observe(ext, { ...packet, proto: 'tcp' }, traced);
          if (!traced.some((o) => agrees(o, ob, EXTERNAL_CLIENT)))
            failures.push(
              `${n.name} ${n.ip}:${port}: kernel: ${describeObservation(ob)}; traced: ${describeOutcomes(traced)}`,
            );
        }
      }
    }
    assert.deepEqual(failures, []);
  },
);
