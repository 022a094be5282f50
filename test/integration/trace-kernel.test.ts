// The tracer agrees with the kernel. Services and EndpointSlices (addresses as in kube-proxy's
// test fixtures: node 192.168.0.2, pods 10.180.x.y, ClusterIPs 172.30.0.x) are rendered by
// our iptables planner, loaded with the real iptables-restore into a node namespace, read
// back with iptables-save, and traced. Then real TCP and UDP connections from namespaces
// arranged as a pod, the node itself and an external client reach servers in one namespace
// per endpoint, which answer with their address and the client address they saw. Whatever
// the kernel did — which endpoint answered, whether the source was masqueraded, refused or
// dropped — must be one of the traced outcomes. The last test does the same per node of a
// three-node manifest, through `svcnet render --node` and `svcnet trace -f --node`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { runRender } from '../../src/cli/render.js';
import { runTrace } from '../../src/cli/trace.js';
import { parseManifests } from '../../src/kube/manifest.js';
import { parseDocument } from '../../src/netfilter/iptables/parse.js';
import { renderDocument } from '../../src/netfilter/iptables/render.js';
import { rulesFromManifests } from '../../src/trace/from-manifests.js';
import type { RecentEntry } from '../../src/trace/packet.js';
import { tracePacket, type Outcome, type TraceResult } from '../../src/trace/walk.js';
import type { IptablesDocument } from '../../src/netfilter/iptables/model.js';
import {
  Clients,
  LOCAL,
  REMOTE,
  SVC2_TO_SVC5,
  SVC7_SVC8,
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
import { missingToolsReason, skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(missingPrerequisite());

const MANIFESTS = [
  svc(
    'svc1',
    `  clusterIP: 172.30.0.41\n  ports: [{name: p80, port: 80, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]\n`,
  ),
  slice('svc1', '[{name: p80, port: 80, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]', [
    ['10.180.0.1', LOCAL],
    ['10.180.1.1', REMOTE],
  ]),
  ...SVC2_TO_SVC5,
  svc(
    'svc6',
    `  clusterIP: 172.30.0.46\n  ports: [{name: p80, port: 80, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]\n`,
  ),
  ...SVC7_SVC8,
].join('\n---\n');

const BACKENDS: { ip: string; udp: number[] }[] = [
  { ip: '10.180.0.1', udp: [53] },
  { ip: '10.180.1.1', udp: [53] },
  { ip: '10.180.0.2', udp: [] },
  { ip: '10.180.1.2', udp: [] },
  { ip: '10.180.0.3', udp: [] },
  { ip: '10.180.0.4', udp: [] },
  { ip: '10.180.1.4', udp: [] },
  { ip: '10.180.0.5', udp: [] },
  { ip: '10.180.1.5', udp: [] },
  { ip: '10.180.1.7', udp: [] },
  { ip: '10.180.1.8', udp: [] },
];

const SCENARIOS: Scenario[] = [
  {
    name: 'ClusterIP from a pod (2 endpoints)',
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 6,
    expect: masq(false, '10.180.0.1:80', '10.180.1.1:80'),
  },
  {
    name: 'ClusterIP UDP from a pod',
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.41:53',
    proto: 'udp',
    attempts: 6,
    expect: masq(false, '10.180.0.1:53', '10.180.1.1:53'),
  },
  {
    name: 'ClusterIP from the node (masquerade: not from a pod)',
    client: 'node',
    src: '192.168.0.2',
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, '10.180.0.1:80', '10.180.1.1:80'),
  },
  {
    name: 'ClusterIP from outside the node',
    client: 'ext',
    src: '203.0.113.2',
    dst: '172.30.0.41:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, '10.180.0.1:80', '10.180.1.1:80'),
  },
  {
    name: 'hairpin: an endpoint reaches itself via its ClusterIP',
    client: 'hairpin',
    src: '10.180.0.3',
    dst: '172.30.0.43:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'NodePort from a pod',
    client: 'pod',
    src: '10.0.0.2',
    dst: '192.168.0.2:3003',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'NodePort from outside',
    client: 'ext',
    src: '203.0.113.2',
    dst: '192.168.0.2:3003',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'NodePort on localhost from the node',
    client: 'node',
    src: '127.0.0.1',
    dst: '127.0.0.1:3003',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.3:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from outside: local endpoint, source kept',
    client: 'ext',
    src: '203.0.113.2',
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'NodePort eTP=Local from outside',
    client: 'ext',
    src: '203.0.113.2',
    dst: '192.168.0.2:3001',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'externalIP eTP=Local from outside',
    client: 'ext',
    src: '203.0.113.2',
    dst: '192.168.99.22:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.2:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from a pod: all endpoints',
    client: 'pod',
    src: '10.0.0.2',
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 6,
    expect: masq(false, '10.180.0.2:80', '10.180.1.2:80'),
  },
  {
    name: 'LoadBalancer eTP=Local from the node: all endpoints, masqueraded',
    client: 'node',
    src: '192.168.0.2',
    dst: '1.2.3.4:80',
    proto: 'tcp',
    attempts: 4,
    expect: masq(true, '10.180.0.2:80', '10.180.1.2:80'),
  },
  {
    name: 'LoadBalancer source range: allowed client',
    client: 'ext',
    src: '203.0.113.2',
    dst: '5.6.7.8:80',
    proto: 'tcp',
    attempts: 4,
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
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.46:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'no endpoints: UDP rejected',
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.46:53',
    proto: 'udp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'no endpoints, from the node',
    client: 'node',
    src: '192.168.0.2',
    dst: '172.30.0.46:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('reject'),
  },
  {
    name: 'eTP=Local without local endpoints: LoadBalancer dropped',
    client: 'ext',
    src: '203.0.113.2',
    dst: '9.10.11.12:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'eTP=Local without local endpoints: NodePort dropped',
    client: 'ext',
    src: '203.0.113.2',
    dst: '192.168.0.2:3007',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
  {
    name: 'iTP=Local from a pod: local endpoint only',
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.44:80',
    proto: 'tcp',
    attempts: 3,
    expect: masq(false, '10.180.0.4:80'),
  },
  {
    name: 'iTP=Local from the node',
    client: 'node',
    src: '192.168.0.2',
    dst: '172.30.0.44:80',
    proto: 'tcp',
    attempts: 2,
    expect: masq(true, '10.180.0.4:80'),
  },
  {
    name: 'iTP=Local without local endpoints: dropped',
    client: 'pod',
    src: '10.0.0.2',
    dst: '172.30.0.48:80',
    proto: 'tcp',
    attempts: 1,
    expect: only('drop'),
  },
];

let rules: IptablesDocument | undefined;
const clients = new Clients();

function traceScenario(
  s: Pick<Scenario, 'src' | 'dst' | 'proto' | 'client'>,
  recent: RecentEntry[] = [],
): TraceResult {
  if (!rules) throw new Error('rules not loaded');
  const { packet, ctx } = scenarioPacket(s, recent);
  return tracePacket(rules, packet, ctx);
}

before(async () => {
  if (skip) return;
  sweepStale();
  const { node, ext, pod } = fixtureNode();
  inNs(node, 'sysctl', ['-q', '-w', 'net.ipv4.conf.all.route_localnet=1']);
  for (const b of BACKENDS) {
    const ns = addNs(`p${b.ip.replace(/\./g, '-')}`);
    linkPod(node, ns, b.ip);
    await startServer(ns, b.ip, [80], b.udp);
    if (b.ip === '10.180.0.3') clients.set('hairpin', new Client(ns));
  }
  clients.set('pod', new Client(pod));
  clients.set('node', new Client(node));
  clients.set('ext', new Client(ext));

  const rendered = rulesFromManifests(
    parseManifests([{ path: 'services.yaml', text: MANIFESTS }]),
    {
      family: 'IPv4',
      nodeName: LOCAL,
      nodeIP: '192.168.0.2',
      localAddresses: ['192.168.0.2/24', '203.0.113.1/24', '169.254.1.1/32'],
      clusterCIDR: '10.0.0.0/8',
      // This host has no nfacct objects; kube-proxy leaves the match out then.
      options: { nfacct: { ctStateInvalidDropped: false, localhostNodePortsAccepted: false } },
    },
  );
  inNs(node, 'iptables-restore', [], renderDocument(rendered.document));
  // Trace what the kernel holds, as a user would: the node's own iptables-save.
  rules = parseDocument(inNs(node, 'iptables-save', []));
});

after(() => {
  stopAgents();
  if (!skip) removeAll();
});

test(
  'the rules loaded into the kernel trace without unsupported matches or assumptions',
  { skip },
  () => {
    const r = traceScenario({
      client: 'pod',
      src: '10.0.0.2',
      dst: '172.30.0.41:80',
      proto: 'tcp',
    });
    assert.deepEqual(r.unsupported, []);
    assert.ok(!r.notes.some((n) => n.includes('assumed')), r.notes.join('\n'));
  },
);

test(
  `the kernel does one of the traced outcomes (${SCENARIOS.length} scenarios)`,
  { skip },
  async () => {
    assert.ok(SCENARIOS.length >= 20);
    const failures: string[] = [];
    for (const s of SCENARIOS)
      await checkScenario(s, traceScenario(s).outcomes, clients.of(s.client), failures);
    assert.deepEqual(failures, []);
  },
);

test(
  'session affinity: after the first connection the trace with that affinity is what the kernel does',
  { skip },
  async () => {
    const s: Scenario = {
      name: 'affinity',
      client: 'pod',
      src: '10.0.0.2',
      dst: '172.30.0.45:80',
      proto: 'tcp',
      attempts: 4,
      expect: () => undefined,
    };
    const fresh = traceScenario(s);
    assert.equal(fresh.outcomes.length, 2);
    const first = await observe(clients.of(s.client), s, fresh.outcomes);
    const chosen = fresh.outcomes.find((o) => agrees(o, first, s.src));
    assert.ok(chosen, `first connection: ${describeObservation(first)}`);
    const sep = chosen.path.find((p) => p.effect === 'dnat')?.chain ?? '';
    assert.match(sep, /^KUBE-SEP-/);
    const sticky = traceScenario(s, [{ name: sep, ageSeconds: 1 }]);
    assert.deepEqual(dnats(sticky.outcomes), [chosen.dnat]);
    for (let i = 0; i < s.attempts; i++) {
      const ob = await observe(clients.of(s.client), s, sticky.outcomes);
      assert.ok(
        sticky.outcomes.some((o) => agrees(o, ob, s.src)),
        `later connection: ${describeObservation(ob)}`,
      );
    }
  },
);

// One node model, checked against the kernel on every node: for each Node of a three-node
// manifest, `svcnet render --node N`'s output is loaded as its text says (the nfacct objects,
// iptables-restore --noflush, then the jumps kube-proxy ensures) into a fresh node namespace
// holding that Node's InternalIP, a real connection goes from an external client to
// <InternalIP>:<nodePort>, and what the kernel did must be one of the outcomes of `svcnet
// trace -f … --node N`. Two NodePorts: examples/nodeport.yaml's (policy Cluster: either
// endpoint, masqueraded, on every node) and one with externalTrafficPolicy Local (only the
// node's own endpoint, source kept; dropped on the node without one), so a trace that took
// the wrong node or node IP disagrees with the kernel.

const skipNodes = skip || skipOrFail(missingToolsReason(['nfacct']));

/** Loads `svcnet render` output into `ns` the way its own comments say to. */
function loadRendered(ns: string, rendered: string): void {
  const lines = rendered.split('\n');
  const ensured = lines.findIndex((l) => l.includes('also ensured by kube-proxy outside'));
  assert.ok(ensured > 0, 'render lists what kube-proxy ensures outside the restore');
  const commands = lines.slice(ensured + 1).map((l) => /^# {3}(.*)$/.exec(l)?.[1]);
  for (const c of commands) if (c?.startsWith('nfacct add ')) inNs(ns, 'sh', ['-c', c]);
  inNs(ns, 'iptables-restore', ['--noflush', '--counters'], rendered);
  for (const c of commands) if (c?.startsWith('iptables ')) inNs(ns, 'sh', ['-c', c]);
}

test(
  'a NodePort on every node of a three-node manifest: render --node loaded into the kernel does one of trace --node’s outcomes',
  { skip: skipNodes },
  async () => {
    const failures: string[] = [];
    for (const [i, n] of PER_NODE.entries()) {
      const { node, ext } = await nodeWithClient(`n${i}`, n.ip);
      const rendered = await runRender({ file: NODE_FILES, node: n.name }, []);
      loadRendered(node, rendered);
      for (const [port, attempts] of [
        [30080, 3],
        [30777, n.local.length === 0 ? 1 : 2],
      ] as const) {
        const traced = (
          JSON.parse(
            await runTrace({
              filename: NODE_FILES,
              node: n.name,
              src: EXTERNAL_CLIENT,
              dst: `${n.ip}:${port}`,
              fromExternal: true,
              ctState: 'NEW',
              mode: 'kernel',
              assumeHooks: true,
              json: true,
            }),
          ) as { outcomes: Outcome[] }
        ).outcomes;
        // What each NodePort is about on this node, so agreement is not with a wrong trace.
        if (port === 30080) masq(true, '10.244.1.12:5678', '10.244.2.9:5678')(traced);
        else if (n.local.length === 0) only('drop')(traced);
        else masq(false, ...n.local)(traced);
        const packet = { src: EXTERNAL_CLIENT, dst: `${n.ip}:${port}`, proto: 'tcp' } as const;
        for (let a = 0; a < attempts; a++) {
          const ob = await observe(ext, packet, traced);
          process.stdout.write(`# ${n.name} ${n.ip}:${port}: ${describeObservation(ob)}\n`);
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
