// Helpers for the tracer's kernel-agreement test: network namespaces with a per-run prefix
// (`svcnet-tr<pid>-…`, swept at start when their run is gone), ptp-style pod links to a node
// namespace, and tiny node agents started inside namespaces: a server that answers TCP and
// UDP with "<its address>:<port> <client address>", and a client that makes connections on
// request (JSON lines on stdin/stdout) and reports reply / refused / timeout. Everything runs
// through `ip netns exec`; nothing touches the namespace the test runs in. Also what both
// kernel-agreement tests (iptables and nftables) share: the fixture-like manifests, the
// node / external client / pod arrangement, the scenarios' shape, and whether an observation
// is what a traced outcome predicts.

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import {
  defaultContext,
  parsePacketSpec,
  type Origin,
  type Packet,
  type RecentEntry,
  type TraceContext,
} from '../../../src/trace/packet.js';
import type { Outcome } from '../../../src/trace/result.js';
import { parseIP, type ParsedIP } from '../../../src/util/ip.js';
import { missingToolsReason } from './prereq.js';

export const PREFIX = `svcnet-tr${process.pid}-`;

/**
 * Why the kernel test cannot run here, or undefined when it can. `tools` are the ones the
 * test loads rules with besides `ip` (default: iptables'; the nftables test passes `nft`).
 */
export function missingPrerequisite(
  tools: readonly string[] = ['iptables-restore', 'iptables-save'],
): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  const missing = missingToolsReason(['ip', ...tools]);
  if (missing !== undefined) return missing;
  const probe = spawnSync('ip', ['netns', 'list']);
  if (probe.status !== 0) return `ip netns unavailable: ${probe.stderr.toString().trim()}`;
  return undefined;
}

export function sh(cmd: string, args: readonly string[], input?: string): string {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return r.stdout;
}

export function inNs(ns: string, cmd: string, args: readonly string[], input?: string): string {
  return sh('ip', ['netns', 'exec', ns, cmd, ...args], input);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Removes namespaces left by earlier runs of this test whose process is gone. */
export function sweepStale(): void {
  const names = sh('ip', ['netns', 'list'])
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '');
  for (const n of names) {
    const m = /^svcnet-tr(\d+)-/.exec(n);
    if (m && !isAlive(Number(m[1]))) spawnSync('ip', ['netns', 'del', n]);
  }
}

export function addNs(short: string): string {
  const name = PREFIX + short;
  sh('ip', ['netns', 'add', name]);
  inNs(name, 'ip', ['link', 'set', 'lo', 'up']);
  return name;
}

/** Deletes every namespace of this run. */
export function removeAll(): void {
  const names = sh('ip', ['netns', 'list'])
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(PREFIX));
  for (const n of names) spawnSync('ip', ['netns', 'del', n]);
}

let linkSeq = 0;

/**
 * Connects a node namespace to an external client's with a veth pair named eth0 at both ends
 * (the node's uplink), gives each end its addresses (CIDR form) and brings both up. Routes
 * are the caller's.
 */
export function linkUplink(
  node: string,
  ext: string,
  nodeAddrs: readonly string[],
  extAddrs: readonly string[],
): void {
  sh('ip', [
    '-n',
    node,
    'link',
    'add',
    'eth0',
    'type',
    'veth',
    'peer',
    'name',
    'eth0',
    'netns',
    ext,
  ]);
  for (const [ns, addrs] of [
    [node, nodeAddrs],
    [ext, extAddrs],
  ] as const) {
    for (const a of addrs) sh('ip', ['-n', ns, 'addr', 'add', a, 'dev', 'eth0']);
    sh('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
  }
}

/**
 * Connects a pod namespace to the node namespace the way the CNI ptp plugin does: a veth
 * whose node end carries the gateway 169.254.1.1/32 and a /32 route to the pod address.
 * `moreIPs` puts further addresses (each with its /32 route) on the same namespace, so one
 * server there can stand for several endpoints.
 */
export function linkPod(
  node: string,
  pod: string,
  podIP: string,
  moreIPs: readonly string[] = [],
): void {
  const host = `vtr${linkSeq++}`;
  sh('ip', ['-n', node, 'link', 'add', host, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod]);
  sh('ip', ['-n', node, 'addr', 'add', '169.254.1.1/32', 'dev', host]);
  sh('ip', ['-n', node, 'link', 'set', host, 'up']);
  sh('ip', ['-n', node, 'route', 'add', `${podIP}/32`, 'dev', host]);
  sh('ip', ['-n', pod, 'addr', 'add', `${podIP}/32`, 'dev', 'eth0']);
  sh('ip', ['-n', pod, 'link', 'set', 'eth0', 'up']);
  sh('ip', ['-n', pod, 'route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link']);
  sh('ip', ['-n', pod, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0']);
  for (const ip of moreIPs) {
    sh('ip', ['-n', pod, 'addr', 'add', `${ip}/32`, 'dev', 'eth0']);
    sh('ip', ['-n', node, 'route', 'add', `${ip}/32`, 'dev', host]);
  }
}

// A TCP server learns the (DNATed) local address from the socket; a UDP server on 0.0.0.0
// cannot, so UDP binds the pod address itself and answers with it.
const SERVER = `
const net = require('node:net'); const dgram = require('node:dgram');
const [addr, tcpList, udpList] = process.argv.slice(1);
const tcp = tcpList.split(',').filter(Boolean).map(Number);
const udp = udpList.split(',').filter(Boolean).map(Number);
let pending = tcp.length + udp.length;
const ready = () => { if (--pending === 0) process.stdout.write('ready\\n'); };
if (pending === 0) process.stdout.write('ready\\n');
for (const p of tcp) net.createServer((c) => {
  c.end(c.localAddress + ':' + c.localPort + ' ' + c.remoteAddress + '\\n');
}).listen(p, '0.0.0.0', ready);
for (const p of udp) { const s = dgram.createSocket('udp4');
  s.on('message', (m, r) => s.send(addr + ':' + p + ' ' + r.address + '\\n', r.port, r.address));
  s.bind(p, addr, ready); }
`;

const CLIENT = `
const net = require('node:net'); const dgram = require('node:dgram');
const rl = require('node:readline').createInterface({ input: process.stdin });
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
rl.on('line', (line) => {
  const q = JSON.parse(line); let done = false;
  const finish = (r) => { if (!done) { done = true; clearTimeout(t); out({ id: q.id, ...r }); } };
  const parse = (text) => { const [server, client] = text.trim().split(' '); return { kind: 'reply', server, client }; };
  let t;
  if (q.proto === 'tcp') {
    const c = net.connect({ host: q.dst, port: q.port, ...(q.src ? { localAddress: q.src } : {}) });
    let buf = '';
    c.on('data', (d) => { buf += d; });
    c.on('end', () => finish(parse(buf)));
    c.on('error', (e) => finish(e.code === 'ECONNREFUSED' ? { kind: 'refused' } : { kind: 'error', code: e.code }));
    t = setTimeout(() => { c.destroy(); finish({ kind: 'timeout' }); }, q.timeoutMs);
  } else {
    const s = dgram.createSocket('udp4');
    const close = () => { try { s.close(); } catch {} };
    s.on('message', (m) => { close(); finish(parse(String(m))); });
    s.on('error', (e) => { close(); finish(e.code === 'ECONNREFUSED' ? { kind: 'refused' } : { kind: 'error', code: e.code }); });
    s.bind(0, q.src || undefined, () => s.connect(q.port, q.dst, (err) => {
      if (err) { close(); finish({ kind: 'error', code: err.code }); return; }
      s.send('hello');
    }));
    t = setTimeout(() => { close(); finish({ kind: 'timeout' }); }, q.timeoutMs);
  }
});
`;

const started: ChildProcessWithoutNullStreams[] = [];

function startAgent(
  ns: string,
  script: string,
  args: readonly string[],
): ChildProcessWithoutNullStreams {
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script, '--', ...args]);
  started.push(child);
  return child;
}

/** Starts a server in `ns` answering on the TCP and UDP ports; resolves once it listens. */
export async function startServer(
  ns: string,
  podIP: string,
  tcpPorts: readonly number[],
  udpPorts: readonly number[],
): Promise<void> {
  const child = startAgent(ns, SERVER, [podIP, tcpPorts.join(','), udpPorts.join(',')]);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.once('data', () => {
      resolve();
    });
    child.once('exit', (code) => {
      reject(new Error(`server in ${ns} exited ${code}: ${err}`));
    });
  });
}

export type Observation =
  | { readonly kind: 'reply'; readonly server: string; readonly client: string }
  | { readonly kind: 'refused' | 'timeout' }
  | { readonly kind: 'error'; readonly code: string };

export interface Request {
  readonly proto: 'tcp' | 'udp';
  readonly dst: string;
  readonly port: number;
  readonly src?: string;
  readonly timeoutMs: number;
}

/** A client agent in one namespace. */
export class Client {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, (o: Observation) => void>();
  private seq = 0;

  constructor(ns: string) {
    this.child = startAgent(ns, CLIENT, []);
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const o = JSON.parse(line) as Observation & { id: number };
      this.waiting.get(o.id)?.(o);
      this.waiting.delete(o.id);
    });
  }

  send(req: Request): Promise<Observation> {
    const id = this.seq++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin.write(JSON.stringify({ id, ...req }) + '\n');
    });
  }
}

/** Stops every agent this run started (by PID). */
export function stopAgents(): void {
  for (const c of started.splice(0)) {
    if (c.pid !== undefined && c.exitCode === null) c.kill('SIGKILL');
  }
}

// ---- Scenarios, as both kernel-agreement tests write and check them ----

export function svcManifest(name: string, spec: string): string {
  return `apiVersion: v1\nkind: Service\nmetadata: {name: ${name}, namespace: ns}\nspec:\n${spec}`;
}

/** An endpoint: address, node, and its conditions when it is not simply ready. */
export type EndpointSpec = readonly [string, string, ('terminating' | 'serving-terminating')?];

const CONDITIONS = {
  terminating: '{ready: false, serving: false, terminating: true}',
  'serving-terminating': '{ready: false, serving: true, terminating: true}',
};

export function sliceManifest(
  name: string,
  ports: string,
  endpoints: readonly EndpointSpec[],
): string {
  const eps = endpoints
    .map(
      ([ip, node, c]) =>
        `- addresses: [${ip}]\n  nodeName: ${node}${c ? `\n  conditions: ${CONDITIONS[c]}` : ''}`,
    )
    .join('\n');
  return `apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ${name}-1\n  namespace: ns\n  labels: {kubernetes.io/service-name: ${name}}\naddressType: IPv4\nendpoints:\n${eps}\nports: ${ports}`;
}

export type ClientName = 'pod' | 'node' | 'ext' | 'hairpin';

export const CLIENT_ORIGIN: Readonly<Record<ClientName, Origin>> = {
  pod: 'pod',
  hairpin: 'pod',
  node: 'node',
  ext: 'external',
};

export interface Scenario {
  readonly name: string;
  readonly client: ClientName;
  readonly src: string;
  /** Bind the client socket to `src` (a second address of the client). */
  readonly bind?: boolean;
  readonly dst: string;
  readonly proto: 'tcp' | 'udp';
  readonly attempts: number;
  /** What the scenario is about, checked besides agreement (e.g. `drop`, `masq`). */
  readonly expect: (o: readonly Outcome[]) => void;
}

/** A test's clients by name. */
export class Clients {
  private readonly byName = new Map<ClientName, Client>();

  set(name: ClientName, client: Client): void {
    this.byName.set(name, client);
  }

  /** The client called `name`; throws when the test made none. */
  of(name: ClientName): Client {
    const c = this.byName.get(name);
    if (!c) throw new Error(`no client ${name}`);
    return c;
  }
}

function mustParseIP(s: string): ParsedIP {
  const p = parseIP(s);
  if (!p) throw new Error(s);
  return p;
}

/** The addresses of fixtureNode()'s node: its two uplink addresses and the pod gateway. */
export const FIXTURE_NODE_IPS: readonly ParsedIP[] = [
  '192.168.0.2',
  '203.0.113.1',
  '169.254.1.1',
].map(mustParseIP);

/** The packet of `s` and its context on fixtureNode()'s node (`recent`: affinity entries). */
export function scenarioPacket(
  s: Pick<Scenario, 'src' | 'dst' | 'proto' | 'client'>,
  recent: RecentEntry[] = [],
): { readonly packet: Packet; readonly ctx: TraceContext } {
  return {
    packet: parsePacketSpec({ src: s.src, dst: `${s.dst}/${s.proto}` }),
    ctx: defaultContext(CLIENT_ORIGIN[s.client], FIXTURE_NODE_IPS, { recent }),
  };
}

/**
 * One scenario against the kernel: the traced outcomes must be what it is about (`expect`),
 * and each of its connections from `client` one of them. Adds what went wrong to `failures`;
 * returns what the kernel did (each observation once), or undefined when the trace itself
 * failed `expect` (then nothing was sent).
 */
export async function checkScenario(
  s: Scenario,
  outcomes: readonly Outcome[],
  client: Client,
  failures: string[],
): Promise<Set<string> | undefined> {
  try {
    s.expect(outcomes);
  } catch (e) {
    failures.push(`${s.name}: tracer: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
  const seen = new Set<string>();
  for (let i = 0; i < s.attempts; i++) {
    const ob = await observe(client, s, outcomes);
    seen.add(describeObservation(ob));
    if (!outcomes.some((o) => agrees(o, ob, s.src)))
      failures.push(
        `${s.name}: kernel: ${describeObservation(ob)}; traced: ${describeOutcomes(outcomes)}`,
      );
  }
  return seen;
}

/** Each outcome's DNAT destination, or its verdict when there is none; sorted. */
export const dnats = (o: readonly Outcome[]): string[] => o.map((x) => x.dnat ?? x.verdict).sort();

/** Asserts the outcomes are exactly these destinations / verdicts. */
export const only =
  (...want: string[]) =>
  (o: readonly Outcome[]): void => {
    assert.deepEqual(dnats(o), [...want].sort());
  };

/** Asserts `only(...want)` and that every outcome is (not) masqueraded. */
export const masq =
  (m: boolean, ...want: string[]) =>
  (o: readonly Outcome[]): void => {
    only(...want)(o);
    assert.ok(
      o.every((x) => x.masquerade === m),
      `masquerade should be ${m}`,
    );
  };

/** Whether a kernel observation is what this outcome predicts. */
export function agrees(o: Outcome, ob: Observation, src: string): boolean {
  switch (ob.kind) {
    case 'reply':
      return o.verdict === 'accept' && o.dnat === ob.server && o.masquerade === (ob.client !== src);
    case 'refused':
      return o.verdict === 'reject';
    case 'timeout':
      return o.verdict === 'drop';
    case 'error':
      return false;
  }
}

export function describeObservation(ob: Observation): string {
  return ob.kind === 'reply'
    ? `reply from ${ob.server} seeing client ${ob.client}`
    : ob.kind === 'error'
      ? `error ${ob.code}`
      : ob.kind;
}

export function describeOutcomes(o: readonly Outcome[]): string {
  return o.map((x) => `${x.verdict} ${x.dnat ?? ''} masq=${x.masquerade}`).join(' | ');
}

/** Sends one connection of `s` from `client`; waits long only when an answer is expected. */
export function observe(
  client: Client,
  s: Pick<Scenario, 'src' | 'bind' | 'dst' | 'proto'>,
  expected: readonly Outcome[],
): Promise<Observation> {
  const [dst = '', port = '0'] = s.dst.split(':');
  const dropExpected = expected.every((o) => o.verdict === 'drop');
  return client.send({
    proto: s.proto,
    dst,
    port: Number(port),
    ...(s.bind === true ? { src: s.src } : {}),
    timeoutMs: dropExpected ? 1500 : 8000,
  });
}

/**
 * kube-proxy's fixture node: `node` (192.168.0.2/24 and 203.0.113.1/24 on its uplink,
 * forwarding on, default route to the client with source 192.168.0.2, as on a kind node),
 * `ext` (203.0.113.2/24 and 203.0.113.130/24, routed via the node) and a pod `pod`
 * (10.0.0.2).
 */
export function fixtureNode(): { node: string; ext: string; pod: string } {
  const node = addNs('node');
  const ext = addNs('ext');
  linkUplink(
    node,
    ext,
    ['192.168.0.2/24', '203.0.113.1/24'],
    ['203.0.113.2/24', '203.0.113.130/24'],
  );
  sh('ip', ['-n', ext, 'route', 'add', 'default', 'via', '203.0.113.1']);
  sh('ip', [
    '-n',
    node,
    'route',
    'add',
    'default',
    'via',
    '203.0.113.2',
    'dev',
    'eth0',
    'src',
    '192.168.0.2',
  ]);
  inNs(node, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
  const pod = addNs('pod');
  linkPod(node, pod, '10.0.0.2');
  return { node, ext, pod };
}

// ---- The fixture-like Services both kernel-agreement tests load ----

export const TCP80 = '[{name: p80, port: 80, protocol: TCP}]';
/** The node under test, and another node (its endpoints are remote). */
export const LOCAL = 'test-node';
export const REMOTE = 'remote';

/**
 * svc2-svc5 (LoadBalancer eTP=Local with an externalIP, NodePort, iTP=Local, LoadBalancer
 * with source ranges and ClientIP affinity) with their slices, in manifest order.
 */
export const SVC2_TO_SVC5: readonly string[] = [
  svcManifest(
    'svc2',
    `  type: LoadBalancer\n  externalTrafficPolicy: Local\n  clusterIP: 172.30.0.42\n  externalIPs: [192.168.99.22]\n  healthCheckNodePort: 30000\n  ports: [{name: p80, port: 80, protocol: TCP, nodePort: 3001}]\nstatus: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}\n`,
  ),
  sliceManifest('svc2', TCP80, [
    ['10.180.0.2', LOCAL],
    ['10.180.1.2', REMOTE],
  ]),
  svcManifest(
    'svc3',
    `  type: NodePort\n  clusterIP: 172.30.0.43\n  ports: [{name: p80, port: 80, protocol: TCP, nodePort: 3003}]\n`,
  ),
  sliceManifest('svc3', TCP80, [['10.180.0.3', LOCAL]]),
  svcManifest(
    'svc4',
    `  clusterIP: 172.30.0.44\n  internalTrafficPolicy: Local\n  ports: [{name: p80, port: 80, protocol: TCP}]\n`,
  ),
  sliceManifest('svc4', TCP80, [
    ['10.180.0.4', LOCAL],
    ['10.180.1.4', REMOTE],
  ]),
  svcManifest(
    'svc5',
    `  type: LoadBalancer\n  clusterIP: 172.30.0.45\n  loadBalancerSourceRanges: [203.0.113.0/25]\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 10800}}\n  ports: [{name: p80, port: 80, protocol: TCP, nodePort: 3002}]\nstatus: {loadBalancer: {ingress: [{ip: 5.6.7.8}]}}\n`,
  ),
  sliceManifest('svc5', TCP80, [
    ['10.180.0.5', LOCAL],
    ['10.180.1.5', REMOTE],
  ]),
];

/** svc7 (LoadBalancer eTP=Local, remote endpoint only) and svc8 (iTP=Local, remote only). */
export const SVC7_SVC8: readonly string[] = [
  svcManifest(
    'svc7',
    `  type: LoadBalancer\n  externalTrafficPolicy: Local\n  clusterIP: 172.30.0.47\n  healthCheckNodePort: 30007\n  ports: [{name: p80, port: 80, protocol: TCP, nodePort: 3007}]\nstatus: {loadBalancer: {ingress: [{ip: 9.10.11.12}]}}\n`,
  ),
  sliceManifest('svc7', TCP80, [['10.180.1.7', REMOTE]]),
  svcManifest(
    'svc8',
    `  clusterIP: 172.30.0.48\n  internalTrafficPolicy: Local\n  ports: [{name: p80, port: 80, protocol: TCP}]\n`,
  ),
  sliceManifest('svc8', TCP80, [['10.180.1.8', REMOTE]]),
];

// ---- The three-node manifest of examples/, checked per node through the CLI ----

export const NODE_FILES = [
  'examples/nodes.yaml',
  'examples/nodeport.yaml',
  'examples/nodeport-local.yaml',
];
/** Every endpoint of NODE_FILES; one namespace per node stands for all of them. */
export const NODE_ENDPOINTS = [
  '10.244.1.12',
  '10.244.2.9',
  '10.244.1.21',
  '10.244.2.21',
  '10.244.2.22',
];
export const EXTERNAL_CLIENT = '172.18.0.100';
/** Each Node of NODE_FILES: its InternalIP and the eTP=Local NodePort's endpoints on it. */
export const PER_NODE: readonly { name: string; ip: string; local: string[] }[] = [
  { name: 'svcnet-control-plane', ip: '172.18.0.2', local: [] },
  { name: 'svcnet-worker', ip: '172.18.0.3', local: ['10.244.1.21:8080'] },
  { name: 'svcnet-worker2', ip: '172.18.0.4', local: ['10.244.2.21:8080', '10.244.2.22:8080'] },
];

/** A node namespace with `nodeIP`, an external client beside it and the endpoints behind it. */
export async function nodeWithClient(
  short: string,
  nodeIP: string,
): Promise<{ node: string; ext: Client }> {
  const node = addNs(`${short}-node`);
  const ext = addNs(`${short}-ext`);
  linkUplink(node, ext, [`${nodeIP}/24`], [`${EXTERNAL_CLIENT}/24`]);
  inNs(node, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
  const pods = addNs(`${short}-pods`);
  const [first = '', ...more] = NODE_ENDPOINTS;
  linkPod(node, pods, first, more);
  await startServer(pods, first, [5678, 8080], []);
  return { node, ext: new Client(ext) };
}
