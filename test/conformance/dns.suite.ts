// Conformance suite `dns`: every query case of ../shared/fixtures/dns (CoreDNS kubernetes
// plugin tests, the Kubernetes DNS spec 1.1.0, kubernetes.io examples, the e2e DNS tests,
// zone transfers, the optional zonal extension) is sent to a real svcnet DNS server on
// loopback over UDP (and TCP where the scenario says so), and the answer is compared by the
// fixture README's rules (CoreDNS SortAndCheck). Names outside the cluster zone go to a
// FakeUpstream on loopback serving the fixture's upstream stubs. Search-path cases run our
// stub resolver (resolv.conf search + ndots) against the same server; resolv.conf cases run
// the kubelet resolv.conf logic. Fixtures are read in place.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { createSocket } from 'node:dgram';
import * as dnsPacket from 'dns-packet';
import type { CaseResult, ConformanceSuite } from './harness.js';
import { FakeUpstream, type Stub } from '../../src/dns/fake-upstream.js';
import { Forwarder } from '../../src/dns/forward.js';
import { RecordIndex, type ServiceImport, type ZoneView } from '../../src/dns/record-index.js';
import { DnsHandler, DnsServer } from '../../src/dns/server.js';
import type { PodMode, ResolverConfig } from '../../src/dns/resolve.js';
import {
  dnsPolicyType,
  formatResolvConf,
  limitNameservers,
  limitSearches,
  LEGACY_SEARCH_LIMITS,
  mergeOptions,
  parseResolvConf,
  podDNSConfig,
  walkSearch,
  type PodDNSOption,
} from '../../src/dns/resolvconf.js';
import type { EndpointSlice, Pod, Service } from '../../src/kube/types.js';
import { canonicalIP } from '../../src/util/ip.js';

interface FixtureRecord {
  name: string;
  type: string;
  ttl: number | null;
  data?: string;
  data_regex?: string;
}

interface Expect {
  rcode?: string;
  tc?: boolean;
  answer?: FixtureRecord[];
  authority?: FixtureRecord[];
  additional?: FixtureRecord[];
  answer_min?: number;
  records_ordered?: FixtureRecord[];
}

interface FixtureCase {
  id: string;
  group?: string;
  kind?: string;
  query: { name: string; type: string; serial?: number };
  upstream?: Stub[];
  expect: Expect;
  name_compare?: string;
}

interface Cluster {
  absent_namespaces?: string[];
  services?: Service[];
  endpointSlices?: EndpointSlice[];
  pods?: Pod[];
  serviceImports?: ServiceImport[];
}

interface Scenario {
  id: string;
  config: {
    zones: string[];
    ttl: number | null;
    pods: PodMode;
    namespaces: string[];
    endpoint_pod_names: boolean;
    ignore_empty_service: boolean;
    fallthrough: string[] | null;
    zonal: boolean;
    multicluster_zones: string[];
    local_ips: string[];
    synced: boolean;
    soa_serial?: number;
  };
  cluster?: Cluster;
  cluster_from?: { file: string; scenario: string };
  also_run?: { scenario: string; groups: string[] }[];
  upstream?: Stub[];
  transports?: ('udp' | 'tcp')[];
  cases: FixtureCase[];
  client?: { resolv_conf?: { nameserver: string[]; search: string[]; options: string[] } };
  search_cases?: {
    id: string;
    input: string;
    type: string;
    expected_queries_in_order: { name: string; type: string; rcode: string }[];
    resolves_as: string;
  }[];
}

interface Fixture {
  scenarios: Scenario[];
}

const QUERY_FILES = [
  'coredns-handler.json',
  'coredns-handler-options.json',
  'coredns-reverse.json',
  'coredns-xfr.json',
  'coredns-zonal-extension.json',
  'kubernetes-dns-spec.json',
  'kubernetes-docs-examples.json',
  'kubernetes-e2e-dns.json',
];

function resolverConfig(s: Scenario): ResolverConfig {
  const c = s.config;
  return {
    zones: c.zones.map((z) => z.toLowerCase()),
    ttl: c.ttl ?? 5,
    pods: c.pods,
    namespaces: c.namespaces,
    endpointPodNames: c.endpoint_pod_names,
    ignoreEmptyService: c.ignore_empty_service,
    fallthrough: c.fallthrough ?? undefined,
    zonal: c.zonal,
    multiclusterZones: c.multicluster_zones.map((z) => z.toLowerCase()),
    localIPs: c.local_ips,
  };
}

/** The fixtures' namespace model: every namespace exists except the absent ones. */
function withNamespaces(
  index: RecordIndex,
  absent: readonly string[],
): ZoneView & { generation: number } {
  return new Proxy(index, {
    get(target, prop, receiver) {
      if (prop === 'namespaceExists') return (ns: string) => !absent.includes(ns);
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

// ---- record comparison (fixture README "Comparison rules") ----

interface Actual {
  name: string;
  type: string;
  ttl: number;
  data: string;
  /** SOA: mname only is compared. */
  mname?: string;
}

const RCODE_NAMES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'];

function rcodeOf(m: dnsPacket.DecodedPacket): string {
  return RCODE_NAMES[(m.flags ?? 0) & 0xf] ?? String((m.flags ?? 0) & 0xf);
}

function fqdn(n: string): string {
  return n === '' ? '.' : n.endsWith('.') ? n : `${n}.`;
}

function toActual(a: dnsPacket.Answer): Actual | undefined {
  if (a.type === 'OPT') return undefined;
  const base = { name: fqdn(a.name), type: a.type, ttl: a.ttl ?? 0 };
  switch (a.type) {
    case 'A':
    case 'AAAA':
      return { ...base, data: canonicalIP(a.data) ?? a.data };
    case 'CNAME':
    case 'PTR':
    case 'NS':
      return { ...base, data: fqdn(a.data) };
    case 'SRV':
      return {
        ...base,
        data: `${a.data.priority ?? 0} ${a.data.weight ?? 0} ${a.data.port} ${fqdn(a.data.target)}`,
      };
    case 'TXT': {
      const list = Array.isArray(a.data) ? a.data : [a.data];
      return {
        ...base,
        data: `"${list.map((x) => (typeof x === 'string' ? x : x.toString())).join('')}"`,
      };
    }
    case 'SOA':
      return {
        ...base,
        mname: fqdn(a.data.mname),
        data: `${fqdn(a.data.mname)} ${fqdn(a.data.rname)} ${a.data.serial ?? 0} ${a.data.refresh ?? 0} ${a.data.retry ?? 0} ${a.data.expire ?? 0} ${a.data.minimum ?? 0}`,
      };
    default:
      return { ...base, data: '?' };
  }
}

function normData(type: string, data: string): string {
  if (type === 'A' || type === 'AAAA') return canonicalIP(data) ?? data;
  if (type === 'TXT') return `"${data.replace(/^"|"$/g, '')}"`;
  return data;
}

function recordMatches(exp: FixtureRecord, act: Actual, ci: boolean): boolean {
  const nameOk = ci ? exp.name.toLowerCase() === act.name.toLowerCase() : exp.name === act.name;
  if (!nameOk || exp.type !== act.type) return false;
  if (exp.ttl !== null && exp.ttl !== act.ttl) return false;
  if (exp.data_regex !== undefined) return new RegExp(exp.data_regex).test(act.data);
  if (exp.type === 'SOA') return (exp.data ?? '').split(/\s+/)[0] === act.mname;
  return normData(exp.type, exp.data ?? '') === act.data;
}

function compareSection(label: string, exp: FixtureRecord[], act: Actual[], ci: boolean): string[] {
  const problems: string[] = [];
  const show = (): string =>
    `\n  expected:\n${exp.map((e) => `    ${e.name} ${e.ttl} ${e.type} ${e.data ?? `/${e.data_regex ?? ''}/`}`).join('\n')}\n  got:\n${act.map((a) => `    ${a.name} ${a.ttl} ${a.type} ${a.data}`).join('\n')}`;
  if (exp.length !== act.length) {
    problems.push(`${label}: ${act.length} records, want ${exp.length}${show()}`);
    return problems;
  }
  const used = new Set<number>();
  const ordered = [
    ...exp.filter((e) => e.data_regex === undefined),
    ...exp.filter((e) => e.data_regex !== undefined),
  ];
  for (const e of ordered) {
    const i = act.findIndex((a, k) => !used.has(k) && recordMatches(e, a, ci));
    if (i < 0) {
      problems.push(
        `${label}: no match for ${e.name} ${e.ttl} ${e.type} ${e.data ?? e.data_regex ?? ''}${show()}`,
      );
      return problems;
    }
    used.add(i);
  }
  return problems;
}

function cnameOrder(answer: Actual[]): string | undefined {
  for (let i = 0; i < answer.length; i++) {
    const a = answer[i];
    if (a?.type !== 'CNAME') continue;
    const target = a.data.toLowerCase();
    const before = answer.slice(0, i).find((r) => r.name.toLowerCase() === target);
    if (before) return `CNAME ${a.name} -> ${a.data} comes after its target record`;
  }
  return undefined;
}

// ---- transports ----

function queryPacket(name: string, type: string, id: number, serial?: number): Buffer {
  const packet: dnsPacket.Packet = {
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [
      { name: name === '.' ? '.' : name.replace(/\.$/, ''), type: type as dnsPacket.RecordType },
    ],
    // As dig sends by default: EDNS0 with a 1232-byte UDP payload.
    additionals: [
      {
        name: '.',
        type: 'OPT',
        udpPayloadSize: 1232,
        extendedRcode: 0,
        ednsVersion: 0,
        flags: 0,
        flag_do: false,
        options: [],
      },
    ],
  };
  if (serial !== undefined)
    packet.authorities = [
      {
        name: name.replace(/\.$/, ''),
        type: 'SOA',
        ttl: 0,
        data: { mname: '.', rname: '.', serial, refresh: 0, retry: 0, expire: 0, minimum: 0 },
      },
    ];
  return dnsPacket.encode(packet);
}

function sendUdp(port: number, msg: Buffer, timeoutMs = 3000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      reject(new Error('UDP query timed out'));
    }, timeoutMs);
    s.on('message', (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m);
    });
    s.send(msg, port, '127.0.0.1');
  });
}

/** Sends one query over TCP and reads `count` messages (or until a predicate says stop). */
function sendTcp(
  port: number,
  msg: Buffer,
  until: (msgs: Buffer[]) => boolean,
  timeoutMs = 3000,
): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: '127.0.0.1', port });
    const msgs: Buffer[] = [];
    let buf: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error('TCP query timed out'));
    }, timeoutMs);
    s.on('connect', () => {
      const pre = Buffer.alloc(2);
      pre.writeUInt16BE(msg.length, 0);
      s.write(Buffer.concat([pre, msg]));
    });
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        msgs.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
      if (until(msgs)) {
        clearTimeout(timer);
        s.destroy();
        resolve(msgs);
      }
    });
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

// ---- running scenarios ----

interface Running {
  server: DnsServer;
  upstream: FakeUpstream;
  forwarder: Forwarder;
}

async function startScenario(s: Scenario, cluster: Cluster, transfer: boolean): Promise<Running> {
  const index = new RecordIndex();
  for (const svc of cluster.services ?? []) index.upsertService(svc);
  for (const sl of cluster.endpointSlices ?? []) index.upsertEndpointSlice(sl);
  for (const p of cluster.pods ?? []) index.upsertPod(p);
  for (const si of cluster.serviceImports ?? []) index.upsertServiceImport(si);
  index.setSerial(s.config.soa_serial ?? 1499347823);
  const upstream = new FakeUpstream();
  await upstream.start();
  const forwarder = new Forwarder({
    upstreams: [{ host: '127.0.0.1', port: upstream.port }],
    attemptTimeoutMs: 1000,
    totalTimeoutMs: 1500,
  });
  const handler = new DnsHandler({
    index: withNamespaces(index, cluster.absent_namespaces ?? []),
    config: resolverConfig(s),
    isSynced: () => s.config.synced,
    forwarder,
    transfer,
    responseCacheSize: 1000,
  });
  const server = new DnsServer(handler, { host: '127.0.0.1', port: 0 });
  await server.listen();
  return { server, upstream, forwarder };
}

async function stopScenario(r: Running): Promise<void> {
  r.forwarder.close();
  await r.server.close();
  await r.upstream.stop();
}

let nextId = 1;

async function runCase(
  r: Running,
  s: Scenario,
  c: FixtureCase,
  proto: 'udp' | 'tcp',
): Promise<string[]> {
  r.upstream.setStubs([...(s.upstream ?? []), ...(c.upstream ?? [])]);
  const id = nextId++ & 0xffff;
  if (c.kind === 'transfer') {
    const msgs = await sendTcp(
      r.server.port,
      queryPacket(c.query.name, c.query.type, id, c.query.serial),
      (m) => {
        const all = m.flatMap((x) => dnsPacket.decode(x).answers ?? []);
        const soas = all.filter((a) => a.type === 'SOA').length;
        return c.query.type === 'IXFR' ? all.length > 0 : soas >= 2;
      },
    );
    const got = msgs
      .flatMap((m) => dnsPacket.decode(m).answers ?? [])
      .map(toActual)
      .filter((a): a is Actual => a !== undefined);
    const want = c.expect.records_ordered ?? [];
    if (got.length !== want.length)
      return [
        `transfer: ${got.length} records, want ${want.length}\n${got.map((g) => `    ${g.name} ${g.type} ${g.data}`).join('\n')}`,
      ];
    for (let i = 0; i < want.length; i++) {
      const w = want[i];
      const g = got[i];
      if (!w || !g) continue;
      const wantData = w.type === 'SOA' ? (w.data ?? '') : normData(w.type, w.data ?? '');
      if (w.name !== g.name || w.type !== g.type || wantData !== g.data)
        return [
          `transfer record ${i}: got ${g.name} ${g.type} ${g.data}, want ${w.name} ${w.type} ${w.data ?? ''}`,
        ];
    }
    return [];
  }
  const query = queryPacket(c.query.name, c.query.type, id);
  const raw =
    proto === 'udp'
      ? await sendUdp(r.server.port, query)
      : (await sendTcp(r.server.port, query, (m) => m.length > 0))[0];
  if (!raw) return ['no response'];
  const m = dnsPacket.decode(raw);
  const problems: string[] = [];
  const e = c.expect;
  if (m.id !== id) problems.push(`id ${m.id ?? -1}, want ${id}`);
  if (e.rcode !== undefined && rcodeOf(m) !== e.rcode)
    problems.push(`rcode ${rcodeOf(m)}, want ${e.rcode}`);
  const tc = ((m.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0;
  if (e.tc !== undefined && tc !== e.tc) problems.push(`tc ${tc}, want ${e.tc}`);
  const ci = c.name_compare === 'case-insensitive';
  const conv = (list: dnsPacket.Answer[] | undefined): Actual[] =>
    (list ?? []).map(toActual).filter((a): a is Actual => a !== undefined);
  const answer = conv(m.answers);
  if (e.answer) problems.push(...compareSection('answer', e.answer, answer, ci));
  if (e.authority)
    problems.push(...compareSection('authority', e.authority, conv(m.authorities), ci));
  if (e.additional)
    problems.push(...compareSection('additional', e.additional, conv(m.additionals), ci));
  if (e.answer_min !== undefined && answer.length < e.answer_min)
    problems.push(`answer has ${answer.length} records, want at least ${e.answer_min}`);
  const order = cnameOrder(answer);
  if (order) problems.push(order);
  return problems;
}

async function runScenario(
  file: string,
  s: Scenario,
  all: Map<string, Scenario>,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  let cluster = s.cluster;
  if (!cluster && s.cluster_from) cluster = all.get(s.cluster_from.scenario)?.cluster;
  if (!cluster)
    return [{ name: `${file}#${s.id}`, status: 'failed', detail: 'scenario has no cluster' }];
  const transfer = s.cases.some((c) => c.kind === 'transfer');
  const r = await startScenario(s, cluster, transfer);
  try {
    const cases: { c: FixtureCase; from: Scenario }[] = s.cases.map((c) => ({ c, from: s }));
    for (const extra of s.also_run ?? []) {
      const other = all.get(extra.scenario);
      for (const c of other?.cases ?? [])
        if (c.group !== undefined && extra.groups.includes(c.group))
          cases.push({ c: { ...c, id: `${c.id}@${s.id}` }, from: other ?? s });
    }
    for (const { c } of cases) {
      const transports = c.kind === 'transfer' ? (['tcp'] as const) : (s.transports ?? ['udp']);
      for (const proto of transports) {
        const name = `${file}#${s.id}/${c.id}${transports.length > 1 ? ` (${proto})` : ''}`;
        try {
          const problems = await runCase(r, s, c, proto);
          results.push(
            problems.length === 0
              ? { name, status: 'passed' }
              : { name, status: 'failed', detail: problems.join('\n') },
          );
        } catch (e) {
          results.push({
            name,
            status: 'failed',
            detail: e instanceof Error ? e.message : String(e),
          });
        }
      }
    }
    for (const sc of s.search_cases ?? []) {
      const name = `${file}#${s.id}/${sc.id}`;
      const conf = s.client?.resolv_conf;
      if (!conf) {
        results.push({ name, status: 'failed', detail: 'no client resolv_conf' });
        continue;
      }
      // The last expected query leaves the cluster zone: the fake upstream answers it.
      r.upstream.setStubs(
        sc.expected_queries_in_order
          .filter((q) => q.rcode === 'NOERROR')
          .map((q) => ({
            query: { name: q.name, type: q.type },
            response: {
              rcode: 'NOERROR',
              answer: [{ name: q.name, type: 'A', ttl: 30, data: '192.0.2.1' }],
            },
          })),
      );
      try {
        const walk = await walkSearch(
          sc.input,
          sc.type,
          { nameservers: conf.nameserver, searches: conf.search, options: conf.options },
          async (fqdnName, type) => {
            const m = dnsPacket.decode(
              await sendUdp(r.server.port, queryPacket(fqdnName, type, nextId++ & 0xffff)),
            );
            return rcodeOf(m);
          },
        );
        const got = walk.steps.map((x) => `${x.name} ${x.type} ${x.rcode}`).join('\n');
        const want = sc.expected_queries_in_order
          .map((x) => `${x.name} ${x.type} ${x.rcode}`)
          .join('\n');
        if (got !== want || walk.resolvedAs !== sc.resolves_as)
          results.push({
            name,
            status: 'failed',
            detail: `queries:\n${got}\nwant:\n${want}\nresolved as ${walk.resolvedAs ?? '-'}`,
          });
        else results.push({ name, status: 'passed' });
      } catch (e) {
        results.push({
          name,
          status: 'failed',
          detail: e instanceof Error ? e.message : String(e),
        });
      }
    }
  } finally {
    await stopScenario(r);
  }
  return results;
}

// ---- resolv.conf cases (kubelet-resolvconf.json) ----

interface Generate {
  generate: string;
}

function generated(v: string[] | Generate, desc: string): string[] {
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : 'B'.repeat(256)));
  const list2048 = ['A'.repeat(128), ...Array.from({ length: 15 }, () => 'A'.repeat(127))];
  if (/plus 'B'/.test(v.generate)) return [...list2048, 'B'];
  if (
    /2048/.test(v.generate) ||
    /same as input/.test(v.generate) ||
    /trailing 'B' dropped/.test(v.generate)
  )
    return list2048;
  throw new Error(`${desc}: unknown generator ${v.generate}`);
}

function resolvConfCases(fixtures: string): CaseResult[] {
  const path = join(fixtures, 'kubelet-resolvconf.json');
  const f = JSON.parse(readFileSync(path, 'utf8')) as {
    parse_cases: {
      input: string;
      nameservers: string[];
      searches: string[];
      options: string[];
      error: boolean;
    }[];
    search_limit_cases: {
      desc: string;
      in: string[] | Generate;
      out: string[] | Generate;
      event: boolean;
    }[];
    legacy_search_limit_cases: { desc: string; in: string[]; out: string[]; event: boolean }[];
    nameserver_limit_cases: { in: string[]; out: string[]; event: boolean }[];
    merge_option_cases: {
      existing: string[];
      pod_options: PodDNSOption[] | null;
      out_set: string[];
    }[];
    dns_policy_type_cases: {
      desc: string;
      has_cluster_dns: boolean;
      host_network: boolean;
      dnsPolicy: string;
      type: string;
    }[];
    pod_dns_cases: {
      base: {
        node_resolv_conf: string;
        cluster_dns: string[];
        cluster_domain: string;
        pod_namespace: string;
      };
      cases: {
        desc: string;
        dnsPolicy: string;
        hostNetwork: boolean;
        dnsConfig: { nameservers?: string[]; searches?: string[]; options?: PodDNSOption[] } | null;
        expect: { nameservers: string[]; searches: string[]; options_set: string[] };
      }[];
    };
    docs_example: {
      desc: string;
      dnsPolicy: string;
      hostNetwork: boolean;
      dnsConfig: { nameservers?: string[]; searches?: string[]; options?: PodDNSOption[] };
      expect_resolv_conf: string;
    };
  };
  const out: CaseResult[] = [];
  const check = (name: string, fn: () => string | undefined): void => {
    try {
      const problem = fn();
      out.push(
        problem === undefined
          ? { name, status: 'passed' }
          : { name, status: 'failed', detail: problem },
      );
    } catch (e) {
      out.push({ name, status: 'failed', detail: e instanceof Error ? e.message : String(e) });
    }
  };
  const same = (a: readonly string[], b: readonly string[]): boolean =>
    JSON.stringify(a) === JSON.stringify(b);
  const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
    same([...a].sort(), [...b].sort());
  f.parse_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#parse/${i}`, () => {
      let got;
      try {
        got = parseResolvConf(c.input);
      } catch {
        return c.error ? undefined : 'unexpected error';
      }
      if (c.error) return 'expected an error';
      if (
        !same(got.nameservers, c.nameservers) ||
        !same(got.searches, c.searches) ||
        !same(got.options, c.options)
      )
        return `got ${JSON.stringify(got)}, want ${JSON.stringify(c)}`;
      return undefined;
    });
  });
  f.search_limit_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#search-limit/${i}`, () => {
      const got = limitSearches(generated(c.in, c.desc));
      const want = generated(c.out, c.desc);
      if (!same(got.searches, want) || got.cut !== c.event)
        return `${c.desc}: got ${got.searches.length} entries, event ${got.cut}`;
      return undefined;
    });
  });
  f.legacy_search_limit_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#legacy-search-limit/${i}`, () => {
      const got = limitSearches(c.in, LEGACY_SEARCH_LIMITS);
      return same(got.searches, c.out) && got.cut === c.event
        ? undefined
        : `${c.desc}: got ${JSON.stringify(got)}`;
    });
  });
  f.nameserver_limit_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#nameserver-limit/${i}`, () => {
      const got = limitNameservers(c.in);
      return same(got.nameservers, c.out) && got.cut === c.event
        ? undefined
        : `got ${JSON.stringify(got)}`;
    });
  });
  f.merge_option_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#merge-options/${i}`, () => {
      const got = mergeOptions(c.existing, c.pod_options);
      return sameSet(got, c.out_set) ? undefined : `got ${JSON.stringify(got)}`;
    });
  });
  f.dns_policy_type_cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#dns-policy/${i}`, () => {
      let got: string;
      try {
        got = dnsPolicyType(c.dnsPolicy, c.host_network);
      } catch {
        got = 'error';
      }
      return got === c.type ? undefined : `${c.desc}: got ${got}, want ${c.type}`;
    });
  });
  const base = f.pod_dns_cases.base;
  f.pod_dns_cases.cases.forEach((c, i) => {
    check(`kubelet-resolvconf.json#pod-dns/${i}`, () => {
      const got = podDNSConfig({
        nodeResolvConf: parseResolvConf(base.node_resolv_conf),
        clusterDNS: base.cluster_dns,
        clusterDomain: base.cluster_domain,
        namespace: base.pod_namespace,
        dnsPolicy: c.dnsPolicy,
        hostNetwork: c.hostNetwork,
        dnsConfig: c.dnsConfig,
      });
      const ok =
        same(got.nameservers, c.expect.nameservers) &&
        same(got.searches, c.expect.searches) &&
        sameSet(got.options, c.expect.options_set);
      return ok ? undefined : `${c.desc}: got ${JSON.stringify(got)}`;
    });
  });
  check('kubelet-resolvconf.json#docs-example', () => {
    const d = f.docs_example;
    const got = formatResolvConf(
      podDNSConfig({
        nodeResolvConf: parseResolvConf(base.node_resolv_conf),
        clusterDNS: base.cluster_dns,
        clusterDomain: base.cluster_domain,
        namespace: base.pod_namespace,
        dnsPolicy: d.dnsPolicy,
        hostNetwork: d.hostNetwork,
        dnsConfig: d.dnsConfig,
      }),
    );
    return got === d.expect_resolv_conf ? undefined : `got ${JSON.stringify(got)}`;
  });
  return out;
}

export const suite: ConformanceSuite = {
  name: 'dns',
  async run(fixturesRoot) {
    const dir = join(fixturesRoot, 'dns');
    let files: { file: string; fixture: Fixture }[];
    try {
      files = QUERY_FILES.map((file) => ({
        file,
        fixture: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture,
      }));
    } catch (e) {
      return {
        skipped: `fixtures not readable in ${dir}: ${e instanceof Error ? e.message : String(e)}`,
      };
    }
    const all = new Map<string, Scenario>();
    for (const { fixture } of files) for (const s of fixture.scenarios) all.set(s.id, s);
    const results: CaseResult[] = [];
    for (const { file, fixture } of files)
      for (const s of fixture.scenarios) results.push(...(await runScenario(file, s, all)));
    results.push(...resolvConfCases(dir));
    return results;
  },
};
