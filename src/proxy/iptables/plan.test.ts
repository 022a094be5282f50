// Unit tests of the iptables planner. Behaviour first: where packets go (assertFlows traces
// them through the plan with src/trace: DNAT targets and their probabilities, masquerade,
// REJECT, DROP), then the text: whole rulesets for a few scenarios and the kitchen-sink golden,
// compared in canonical order (assertRulesEqual; UPDATE_GOLDEN=1 rewrites the golden). Partial
// syncs and stale-chain cleanup are checked against the atomic FakeIptables.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EndpointSlice, Service, ServiceSpec } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import { takeSnapshot } from '../model/snapshot.js';
import { endpoint as ep, service as svc, slice } from '../../kube/testing.js';
import { checkRuleJumps, sortIptablesText } from './compare.js';
import { DEFAULT_OPTIONS } from './options.js';
import type { IptablesProxierOptions } from './options.js';
import { endpointChainName, isServiceChainName } from './names.js';
import { natChainsOf, planIptables } from './plan.js';
import { planFromObjects } from './plan-objects.js';
import type { IptablesPlan, PlanState } from './plan.js';
import { assertFlows, assertRulesEqual } from './testing.js';

const OPTS: IptablesProxierOptions = {
  ...DEFAULT_OPTIONS,
  nodeName: 'node-a',
  nodeIP: '172.18.0.2',
  localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
  localAddresses: ['127.0.0.1/8', '172.18.0.2/16', '::1/128', 'fc00::2/64'],
  hasRandomFully: false,
};

/** Trackers + plan, like one proxier; `sync()` returns the plan and keeps its state. */
/** Long-lived trackers over several syncs (partial syncs, state carried over), as the proxier keeps them. */
class Harness {
  readonly svcs: ServiceChangeTracker;
  readonly eps: EndpointsChangeTracker;
  state: PlanState | undefined;
  readonly options: IptablesProxierOptions;
  readonly family: IPFamily;
  constructor(options: IptablesProxierOptions = OPTS, family: IPFamily = 'IPv4') {
    this.options = options;
    this.family = family;
    this.svcs = new ServiceChangeTracker(family);
    this.eps = new EndpointsChangeTracker(family, options.nodeName);
  }
  add(...objs: (Service | EndpointSlice)[]): this {
    for (const o of objs)
      if (o.kind === 'Service') this.svcs.update(undefined, o);
      else this.eps.update(undefined, o as EndpointSlice);
    return this;
  }
  sync(full = true, nowMs = 0): IptablesPlan {
    const s = takeSnapshot(this.svcs, this.eps);
    const plan = planIptables(
      {
        family: this.family,
        services: s.services,
        endpoints: s.endpoints,
        options: this.options,
        changedServices: full ? 'all' : s.changedServices,
        nowMs,
      },
      this.state,
    );
    this.state = plan.state;
    return plan;
  }
}

/** One full sync of `objs`, as `svcnet render` plans it. */
function plan(objs: (Service | EndpointSlice)[], options: Partial<IptablesProxierOptions> = {}) {
  const services = objs.filter((o): o is Service => o.kind === 'Service');
  const slices = objs.filter((o): o is EndpointSlice => o.kind !== 'Service');
  return planFromObjects(services, slices, { ...OPTS, ...options }, 'IPv4').plan;
}

/** Every full plan must be self-consistent and accepted by the atomic fake. */
function assertApplies(p: IptablesPlan, family: IPFamily = 'IPv4'): FakeIptables {
  assert.deepEqual(checkRuleJumps(p.document), []);
  const ipt = new FakeIptables(family);
  ipt.restoreSync(p.text, { noflush: true });
  return ipt;
}

// Packet sources and destinations of the flow tables.
/** A pod on another node. */
const POD = '10.244.3.3';
/** A client off the cluster. */
const OUTSIDE = '203.0.113.9';
/** The node's own address (OPTS.nodeIP). */
const NODE_IP = '172.18.0.2';

/** The node the flows are traced on: OPTS with `over` applied, as the plan saw it. */
function node(over: Partial<IptablesProxierOptions> = {}): IptablesProxierOptions {
  return { ...OPTS, ...over };
}

/** Chain names a plan declares, over all tables. */
function declared(p: IptablesPlan): string[] {
  return p.document.tables.flatMap((t) => t.chains.map((c) => c.name));
}

/** Chains a plan deletes (`-X`), over all tables. */
function deleted(p: IptablesPlan): string[] {
  return p.document.tables.flatMap((t) => t.deleteChains);
}

/** Number of nat rules a plan writes. */
function natRules(p: IptablesPlan): number {
  return p.document.tables.find((t) => t.name === 'nat')?.rules.length ?? 0;
}

// What every full sync with OPTS writes besides the Services' rules (assertRulesEqual sorts, so
// these pieces may stand anywhere in their table).
/** filter: the chains and KUBE-FORWARD. */
const FILTER_BASE = `
  :KUBE-NODEPORTS - [0:0]
  :KUBE-SERVICES - [0:0]
  :KUBE-EXTERNAL-SERVICES - [0:0]
  :KUBE-FORWARD - [0:0]
  :KUBE-PROXY-FIREWALL - [0:0]
  -A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP
  -A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
  -A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
`;
/** filter: FILTER_BASE and, with localhost NodePorts (IPv4), the localnet guard. */
const FILTER_FIXED = `${FILTER_BASE}
  :KUBE-FIREWALL - [0:0]
  -A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
`;
/** nat: the chains, KUBE-MARK-MASQ and KUBE-POSTROUTING. */
const NAT_BASE = `
  :KUBE-NODEPORTS - [0:0]
  :KUBE-SERVICES - [0:0]
  :KUBE-MARK-MASQ - [0:0]
  :KUBE-POSTROUTING - [0:0]
  -A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
  -A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
  -A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
  -A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE
`;
/** nat: the last KUBE-SERVICES rule, handing `match` (node addresses) to KUBE-NODEPORTS. */
function nodePortsLast(match: string): string {
  return `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" ${match} -j KUBE-NODEPORTS`;
}
/** nat: NAT_BASE and the last KUBE-SERVICES rule for every local address. */
const NAT_FIXED = `${NAT_BASE}
  ${nodePortsLast('-m addrtype --dst-type LOCAL')}
`;

/** Restore text of a filter and a nat table. */
function tables(filter: string, nat: string): string {
  return `*filter\n${filter}\nCOMMIT\n*nat\n${nat}\nCOMMIT\n`;
}

/** A full sync's rules with OPTS: the fixed ones plus the Services' `filter` and `nat` lines. */
function fullSyncRules(services: { filter?: string; nat?: string }): string {
  return tables(`${FILTER_FIXED}${services.filter ?? ''}`, `${NAT_FIXED}${services.nat ?? ''}`);
}

/** A NodePort Service `key` with port http 80 on `nodePort`, plus `spec`. */
function nodePortSvc(
  key: string,
  clusterIP: string,
  nodePort: number,
  spec: Partial<ServiceSpec> = {},
): Service {
  return svc(key, {
    type: 'NodePort',
    clusterIP,
    ports: [{ name: 'http', port: 80, nodePort }],
    ...spec,
  });
}

const web = svc('shop/web', { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }] });
const webSlice = slice('shop/web', [
  ep('10.244.1.5', { nodeName: 'node-b' }),
  ep('10.244.0.7', { nodeName: 'node-a' }),
]);

test('golden: a kitchen-sink full sync, and where its packets go', () => {
  const lb = svc(
    'shop/checkout',
    {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.30',
      externalTrafficPolicy: 'Local',
      healthCheckNodePort: 32000,
      externalIPs: ['192.0.2.10'],
      loadBalancerSourceRanges: ['198.51.100.0/24', '172.18.0.0/16'],
      sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
      ports: [{ name: 'https', port: 443, nodePort: 31443 }],
    },
    { status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } },
  );
  const lbSlice = slice(
    'shop/checkout',
    [ep('10.244.0.9', { nodeName: 'node-a' }), ep('10.244.2.4', { nodeName: 'node-c' })],
    { ports: [{ name: 'https', port: 8443, protocol: 'TCP' }] },
  );
  const dns = svc('kube-system/dns', {
    clusterIP: '10.96.0.10',
    ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
  });
  const p = plan([web, webSlice, lb, lbSlice, dns]);
  assertApplies(p);
  const remoteSep = endpointChainName('shop/checkout:https', 'TCP', '10.244.2.4:8443');
  assertFlows(
    p,
    [
      {
        name: 'ClusterIP',
        src: POD,
        dst: '10.96.0.20',
        port: 80,
        want: { '10.244.0.7:8080': 0.5, '10.244.1.5:8080': 0.5 },
      },
      {
        name: 'UDP, no endpoints',
        src: POD,
        dst: '10.96.0.10',
        port: 53,
        proto: 'udp',
        want: 'REJECT',
      },
      {
        name: 'TCP to a UDP-only port',
        src: POD,
        dst: '10.96.0.10',
        port: 53,
        want: 'NONE',
      },
      {
        name: 'LB, allowed source, eTP Local keeps it',
        src: '198.51.100.3',
        dst: '203.0.113.7',
        port: 443,
        want: '10.244.0.9:8443',
      },
      { name: 'LB, other source', src: OUTSIDE, dst: '203.0.113.7', port: 443, want: 'DROP' },
      {
        name: 'LB from the node (in a source range)',
        src: NODE_IP,
        dst: '203.0.113.7',
        port: 443,
        want: '10.244.0.9:8443, 10.244.2.4:8443',
        masq: true,
      },
      {
        name: 'external IP',
        src: OUTSIDE,
        dst: '192.0.2.10',
        port: 443,
        want: '10.244.0.9:8443',
      },
      {
        name: 'external IP from a pod',
        src: POD,
        dst: '192.0.2.10',
        port: 443,
        want: '10.244.0.9:8443, 10.244.2.4:8443',
      },
      {
        name: 'NodePort',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 31443,
        want: '10.244.0.9:8443',
      },
      {
        name: 'NodePort on localhost',
        src: NODE_IP,
        dst: '127.0.0.1',
        port: 31443,
        want: '10.244.0.9:8443, 10.244.2.4:8443',
        masq: true,
      },
      {
        name: 'health check node port',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 32000,
        want: 'ACCEPT',
      },
      {
        name: 'existing affinity',
        src: POD,
        dst: '10.96.0.30',
        port: 443,
        recent: [{ name: remoteSep, ageSeconds: 599 }],
        want: '10.244.2.4:8443',
      },
      {
        name: 'expired affinity',
        src: POD,
        dst: '10.96.0.30',
        port: 443,
        recent: [{ name: remoteSep, ageSeconds: 601 }],
        want: { '10.244.0.9:8443': 0.5, '10.244.2.4:8443': 0.5 },
      },
    ],
    node(),
  );
  const file = join(import.meta.dirname, 'testdata', 'kitchen-sink.golden');
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, sortIptablesText(p.text));
  assertRulesEqual(readFileSync(file, 'utf8'), p);
});

test('ClusterIP: whole ruleset; spread by probability, masquerade of off-cluster sources, hairpin', () => {
  const p = plan([web, webSlice]);
  assertApplies(p);
  assertRulesEqual(
    fullSyncRules({
      nat: `
      :KUBE-SEP-34ZZ2QFGO32YYXXO - [0:0]
      :KUBE-SEP-HKXOLWSZBDAEWUDR - [0:0]
      :KUBE-SVC-67NZLRHBNDSAWJRO - [0:0]
      -A KUBE-SERVICES -m comment --comment "shop/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-67NZLRHBNDSAWJRO
      -A KUBE-SEP-34ZZ2QFGO32YYXXO -m comment --comment shop/web:http -s 10.244.1.5 -j KUBE-MARK-MASQ
      -A KUBE-SEP-34ZZ2QFGO32YYXXO -m comment --comment shop/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.1.5:8080
      -A KUBE-SEP-HKXOLWSZBDAEWUDR -m comment --comment shop/web:http -s 10.244.0.7 -j KUBE-MARK-MASQ
      -A KUBE-SEP-HKXOLWSZBDAEWUDR -m comment --comment shop/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.0.7:8080
      -A KUBE-SVC-67NZLRHBNDSAWJRO -m comment --comment "shop/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
      -A KUBE-SVC-67NZLRHBNDSAWJRO -m comment --comment "shop/web:http -> 10.244.0.7:8080" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-HKXOLWSZBDAEWUDR
      -A KUBE-SVC-67NZLRHBNDSAWJRO -m comment --comment "shop/web:http -> 10.244.1.5:8080" -j KUBE-SEP-34ZZ2QFGO32YYXXO
      `,
    }),
    p,
  );
  assertFlows(
    p,
    [
      {
        name: 'from a pod',
        src: POD,
        dst: '10.96.0.20',
        port: 80,
        want: { '10.244.0.7:8080': 0.5, '10.244.1.5:8080': 0.5 },
      },
      {
        name: 'from off the cluster',
        src: OUTSIDE,
        dst: '10.96.0.20',
        port: 80,
        want: '10.244.0.7:8080, 10.244.1.5:8080',
        masq: true,
      },
      {
        name: 'from the node',
        src: NODE_IP,
        dst: '10.96.0.20',
        port: 80,
        want: '10.244.0.7:8080, 10.244.1.5:8080',
        masq: true,
      },
      {
        name: 'hairpin: an endpoint to itself is masqueraded',
        src: '10.244.0.7',
        dst: '10.96.0.20',
        port: 80,
        want: ['10.244.0.7:8080 masq', '10.244.1.5:8080'],
      },
      { name: 'another port', src: POD, dst: '10.96.0.20', port: 81, want: 'NONE' },
      { name: 'UDP', src: POD, dst: '10.96.0.20', port: 80, proto: 'udp', want: 'NONE' },
    ],
    node(),
  );
  assert.equal(p.counts.natRulesTotal, natRules(p));
});

test('ClusterIP: three endpoints get one third each (probabilities 1/3, 1/2, the rest)', () => {
  const three = slice('shop/web', [ep('10.244.1.1'), ep('10.244.1.2'), ep('10.244.1.3')]);
  const third = 1 / 3;
  assertFlows(
    plan([web, three]),
    [
      {
        src: POD,
        dst: '10.96.0.20',
        port: 80,
        want: { '10.244.1.1:8080': third, '10.244.1.2:8080': third, '10.244.1.3:8080': third },
      },
    ],
    node(),
  );
});

test('no endpoints: whole ruleset; REJECT for every way in, and no nat chains', () => {
  const s = nodePortSvc('shop/empty', '10.96.0.40', 30040, { externalIPs: ['192.0.2.40'] });
  const p = plan([s]);
  assertApplies(p);
  assertRulesEqual(
    fullSyncRules({
      filter: `
      -A KUBE-SERVICES -m comment --comment "shop/empty:http has no endpoints" -m tcp -p tcp -d 10.96.0.40 --dport 80 -j REJECT
      -A KUBE-EXTERNAL-SERVICES -m comment --comment "shop/empty:http has no endpoints" -m tcp -p tcp -d 192.0.2.40 --dport 80 -j REJECT
      -A KUBE-EXTERNAL-SERVICES -m comment --comment "shop/empty:http has no endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30040 -j REJECT
      `,
    }),
    p,
  );
  assertFlows(
    p,
    [
      { name: 'ClusterIP', src: POD, dst: '10.96.0.40', port: 80, want: 'REJECT' },
      {
        name: 'ClusterIP from the node',
        src: NODE_IP,
        dst: '10.96.0.40',
        port: 80,
        want: 'REJECT',
      },
      { name: 'external IP', src: OUTSIDE, dst: '192.0.2.40', port: 80, want: 'REJECT' },
      { name: 'NodePort', src: OUTSIDE, dst: NODE_IP, port: 30040, want: 'REJECT' },
    ],
    node(),
  );
});

test('externalTrafficPolicy Local: short-circuits, local endpoints only, DROP without them', () => {
  const s = nodePortSvc('shop/np', '10.96.0.50', 30050, { externalTrafficPolicy: 'Local' });
  const remoteOnly = plan([s, slice('shop/np', [ep('10.244.1.1', { nodeName: 'node-b' })])]);
  assertApplies(remoteOnly);
  assertFlows(
    remoteOnly,
    [
      {
        name: 'external: no local endpoint',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30050,
        want: 'DROP',
      },
      {
        name: 'pod traffic short-circuits to the cluster-wide endpoints',
        src: POD,
        dst: NODE_IP,
        port: 30050,
        want: '10.244.1.1:8080',
      },
      {
        name: 'the node itself: masqueraded and routed cluster-wide',
        src: NODE_IP,
        dst: '127.0.0.1',
        port: 30050,
        want: '10.244.1.1:8080',
        masq: true,
      },
      {
        name: 'ClusterIP is unaffected',
        src: POD,
        dst: '10.96.0.50',
        port: 80,
        want: '10.244.1.1:8080',
      },
    ],
    node(),
  );
  assert.equal(remoteOnly.noLocalEndpointsExternal, 1);

  const withLocal = plan([
    s,
    slice('shop/np', [
      ep('10.244.1.1', { nodeName: 'node-b' }),
      ep('10.244.0.3', { nodeName: 'node-a' }),
    ]),
  ]);
  assertApplies(withLocal);
  assertFlows(
    withLocal,
    [
      {
        name: 'external: the local endpoint, source kept',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30050,
        want: '10.244.0.3:8080',
      },
      {
        name: 'pod traffic: every endpoint',
        src: POD,
        dst: NODE_IP,
        port: 30050,
        want: '10.244.0.3:8080, 10.244.1.1:8080',
      },
    ],
    node(),
  );
  assert.equal(withLocal.noLocalEndpointsExternal, 0);
});

test('internalTrafficPolicy Local: ClusterIP goes to local endpoints only, DROP when none', () => {
  const s = svc('shop/itp', { clusterIP: '10.96.0.60', internalTrafficPolicy: 'Local' });
  const local = plan([
    s,
    slice('shop/itp', [ep('10.244.0.8', { nodeName: 'node-a' }), ep('10.244.1.8')]),
  ]);
  assertApplies(local);
  assertFlows(
    local,
    [
      {
        name: 'from a pod',
        src: POD,
        dst: '10.96.0.60',
        port: 80,
        want: '10.244.0.8:8080',
      },
      {
        name: 'from off the cluster: masqueraded',
        src: OUTSIDE,
        dst: '10.96.0.60',
        port: 80,
        want: '10.244.0.8:8080',
        masq: true,
      },
    ],
    node(),
  );
  assert.equal(local.noLocalEndpointsInternal, 0);
  const none = plan([s, slice('shop/itp', [ep('10.244.1.8')])]);
  assertApplies(none);
  assertFlows(
    none,
    [{ name: 'no local endpoint', src: POD, dst: '10.96.0.60', port: 80, want: 'DROP' }],
    node(),
  );
  assert.equal(none.noLocalEndpointsInternal, 1);
});

test('LoadBalancer: source ranges, the LB IP as source when the node is in a range, firewall drop; ipMode Proxy is not captured', () => {
  const s = svc(
    'shop/lb',
    {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.70',
      loadBalancerSourceRanges: ['198.51.100.0/24', '172.18.0.0/16'],
      ports: [{ name: 'http', port: 80, nodePort: 30070 }],
    },
    {
      status: {
        loadBalancer: {
          ingress: [{ ip: '203.0.113.70' }, { ip: '203.0.113.71', ipMode: 'Proxy' }],
        },
      },
    },
  );
  const objs = [s, slice('shop/lb', [ep('10.244.1.9')])];
  const p = plan(objs);
  assertApplies(p);
  const ep9 = '10.244.1.9:8080';
  assertFlows(
    p,
    [
      {
        name: 'in a source range',
        src: '198.51.100.3',
        dst: '203.0.113.70',
        port: 80,
        want: ep9,
        masq: true,
      },
      {
        name: 'outside every range',
        src: OUTSIDE,
        dst: '203.0.113.70',
        port: 80,
        want: 'DROP',
      },
      {
        name: 'the LB IP itself as source (node in a range)',
        src: '203.0.113.70',
        dst: '203.0.113.70',
        port: 80,
        want: ep9,
        masq: true,
      },
      { name: 'ipMode Proxy', src: '198.51.100.3', dst: '203.0.113.71', port: 80, want: 'NONE' },
      {
        name: 'NodePort is not filtered',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30070,
        want: ep9,
        masq: true,
      },
    ],
    node(),
  );
  const outside = plan(objs, { nodeIP: '10.1.1.1' });
  assertApplies(outside);
  assertFlows(
    outside,
    [
      {
        name: 'the LB IP itself as source (node outside the ranges)',
        src: '203.0.113.70',
        dst: '203.0.113.70',
        port: 80,
        want: 'DROP',
      },
      {
        name: 'in a source range',
        src: '198.51.100.3',
        dst: '203.0.113.70',
        port: 80,
        want: ep9,
        masq: true,
      },
    ],
    node({ nodeIP: '10.1.1.1' }),
  );
});

test('ClientIP affinity: whole ruleset; a recorded client sticks to its endpoint until the timeout', () => {
  const s = svc('shop/sticky', { clusterIP: '10.96.0.80', sessionAffinity: 'ClientIP' });
  const p = plan([s, slice('shop/sticky', [ep('10.244.1.1'), ep('10.244.1.2')])]);
  assertApplies(p);
  // Recent checks come first, then the random split; each endpoint's DNAT records the client.
  assertRulesEqual(
    fullSyncRules({
      nat: `
      :KUBE-SEP-DKHO6RAX5YQM26XJ - [0:0]
      :KUBE-SEP-JDWHRCOGT6RUZDWI - [0:0]
      :KUBE-SVC-25FJTMN2OLOPNGWS - [0:0]
      -A KUBE-SERVICES -m comment --comment "shop/sticky:http cluster IP" -m tcp -p tcp -d 10.96.0.80 --dport 80 -j KUBE-SVC-25FJTMN2OLOPNGWS
      -A KUBE-SEP-DKHO6RAX5YQM26XJ -m comment --comment shop/sticky:http -s 10.244.1.1 -j KUBE-MARK-MASQ
      -A KUBE-SEP-DKHO6RAX5YQM26XJ -m comment --comment shop/sticky:http -m recent --name KUBE-SEP-DKHO6RAX5YQM26XJ --set -m tcp -p tcp -j DNAT --to-destination 10.244.1.1:8080
      -A KUBE-SEP-JDWHRCOGT6RUZDWI -m comment --comment shop/sticky:http -s 10.244.1.2 -j KUBE-MARK-MASQ
      -A KUBE-SEP-JDWHRCOGT6RUZDWI -m comment --comment shop/sticky:http -m recent --name KUBE-SEP-JDWHRCOGT6RUZDWI --set -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080
      -A KUBE-SVC-25FJTMN2OLOPNGWS -m comment --comment "shop/sticky:http cluster IP" -m tcp -p tcp -d 10.96.0.80 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
      -A KUBE-SVC-25FJTMN2OLOPNGWS -m comment --comment "shop/sticky:http -> 10.244.1.1:8080" -m recent --name KUBE-SEP-DKHO6RAX5YQM26XJ --rcheck --seconds 10800 --reap -j KUBE-SEP-DKHO6RAX5YQM26XJ
      -A KUBE-SVC-25FJTMN2OLOPNGWS -m comment --comment "shop/sticky:http -> 10.244.1.2:8080" -m recent --name KUBE-SEP-JDWHRCOGT6RUZDWI --rcheck --seconds 10800 --reap -j KUBE-SEP-JDWHRCOGT6RUZDWI
      -A KUBE-SVC-25FJTMN2OLOPNGWS -m comment --comment "shop/sticky:http -> 10.244.1.1:8080" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-DKHO6RAX5YQM26XJ
      -A KUBE-SVC-25FJTMN2OLOPNGWS -m comment --comment "shop/sticky:http -> 10.244.1.2:8080" -j KUBE-SEP-JDWHRCOGT6RUZDWI
      `,
    }),
    p,
  );
  const second = endpointChainName('shop/sticky:http', 'TCP', '10.244.1.2:8080');
  assertFlows(
    p,
    [
      {
        name: 'a new client',
        src: POD,
        dst: '10.96.0.80',
        port: 80,
        want: { '10.244.1.1:8080': 0.5, '10.244.1.2:8080': 0.5 },
      },
      {
        name: 'a client seen 3 h ago',
        src: POD,
        dst: '10.96.0.80',
        port: 80,
        recent: [{ name: second, ageSeconds: 10_799 }],
        want: '10.244.1.2:8080',
      },
      {
        name: 'a client seen longer ago',
        src: POD,
        dst: '10.96.0.80',
        port: 80,
        recent: [{ name: second, ageSeconds: 10_801 }],
        want: '10.244.1.1:8080, 10.244.1.2:8080',
      },
    ],
    node(),
  );
});

test('local-traffic detectors and masqueradeAll decide which sources are masqueraded and short-circuited', () => {
  const s = nodePortSvc('shop/np', '10.96.0.90', 30090, { externalTrafficPolicy: 'Local' });
  const objs = [
    s,
    slice('shop/np', [
      ep('10.244.0.2', { nodeName: 'node-a' }),
      ep('10.244.1.2', { nodeName: 'node-b' }),
    ]),
  ];
  const both = '10.244.0.2:8080, 10.244.1.2:8080';
  const localOnly = '10.244.0.2:8080';
  // [name, options, a packet the detector takes for local pod traffic, one it does not (an
  // off-cluster source, another node's pod or another interface), masqueradeAll]
  interface Way {
    readonly src: string;
    readonly inInterface?: string;
  }
  const pod: Way = { src: '10.244.0.33', inInterface: 'veth1234' };
  const cases: [string, Partial<IptablesProxierOptions>, Way, Way, boolean][] = [
    ['ClusterCIDR', {}, pod, { src: OUTSIDE }, false],
    [
      'NodeCIDR',
      { localDetector: { mode: 'NodeCIDR', cidr: '10.244.0.0/24' } },
      pod,
      { src: POD, inInterface: 'veth1234' },
      false,
    ],
    [
      'BridgeInterface',
      { localDetector: { mode: 'BridgeInterface', interfaceName: 'cbr0' } },
      { src: '10.244.0.33', inInterface: 'cbr0' },
      { src: '10.244.0.33', inInterface: 'eth0' },
      false,
    ],
    [
      'InterfaceNamePrefix',
      { localDetector: { mode: 'InterfaceNamePrefix', prefix: 'veth' } },
      pod,
      { src: '10.244.0.33', inInterface: 'eth0' },
      false,
    ],
    ['masqueradeAll', { masqueradeAll: true }, pod, { src: OUTSIDE }, true],
  ];
  for (const [name, o, local, far, masqueradeAll] of cases) {
    const p = plan(objs, o);
    assertApplies(p);
    const at = { dst: '10.96.0.90', port: 80 };
    const np = { dst: NODE_IP, port: 30090 };
    assertFlows(
      p,
      [
        {
          name: `${name}: ClusterIP from a pod`,
          ...local,
          ...at,
          want: both,
          masq: masqueradeAll,
        },
        {
          name: `${name}: ClusterIP from off the cluster`,
          ...far,
          ...at,
          want: both,
          masq: true,
        },
        { name: `${name}: NodePort from a pod short-circuits`, ...local, ...np, want: both },
        { name: `${name}: NodePort from off the cluster`, ...far, ...np, want: localOnly },
      ],
      node(o),
    );
  }
  // No detector: nothing is masqueraded for being off-cluster, nothing short-circuits.
  assertFlows(
    plan(objs, { localDetector: { mode: 'None' } }),
    [
      { name: 'ClusterIP', src: OUTSIDE, dst: '10.96.0.90', port: 80, want: both },
      {
        name: 'NodePort from a pod',
        src: '10.244.0.33',
        dst: NODE_IP,
        port: 30090,
        want: localOnly,
      },
    ],
    node({ localDetector: { mode: 'None' } }),
  );
});

test('NodePorts: localhost, nodePortAddresses, and KUBE-SERVICES sending node addresses last', () => {
  const s = nodePortSvc('shop/np', '10.96.0.91', 30091);
  const objs = [s, slice('shop/np', [ep('10.244.1.2')])];
  const ep2 = '10.244.1.2:8080';
  // A second node address, outside the nodePortAddresses below.
  const addrs = { localAddresses: [...OPTS.localAddresses, '192.168.5.5/24'] };
  const on = plan(objs, addrs);
  assertApplies(on);
  assertFlows(
    on,
    [
      {
        name: 'node address',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30091,
        want: ep2,
        masq: true,
      },
      {
        name: 'another node address',
        src: OUTSIDE,
        dst: '192.168.5.5',
        port: 30091,
        want: ep2,
        masq: true,
      },
      {
        name: 'localhost from the node',
        src: '127.0.0.1',
        dst: '127.0.0.1',
        port: 30091,
        want: ep2,
        masq: true,
      },
      {
        name: 'a ClusterIP port on a node address is not a NodePort',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 80,
        want: 'NONE',
      },
      {
        name: 'localnet from outside is blocked',
        src: OUTSIDE,
        dst: '127.0.0.1',
        port: 22,
        from: 'external',
        want: 'DROP',
      },
    ],
    node(addrs),
  );
  assert.deepEqual(on.warnings, []);

  const off = plan(objs, { ...addrs, localhostNodePorts: false });
  assertApplies(off);
  // No localhost rules, no KUBE-FIREWALL, and 127.0.0.0/8 is not handed to KUBE-NODEPORTS.
  assertRulesEqual(
    tables(
      FILTER_BASE,
      `${NAT_BASE}
      :KUBE-EXT-DCQOGJK4QZZOVIJ6 - [0:0]
      :KUBE-SEP-IG4PNSYLRW77OAXR - [0:0]
      :KUBE-SVC-DCQOGJK4QZZOVIJ6 - [0:0]
      -A KUBE-NODEPORTS -m comment --comment shop/np:http -m tcp -p tcp --dport 30091 -j KUBE-EXT-DCQOGJK4QZZOVIJ6
      -A KUBE-SERVICES -m comment --comment "shop/np:http cluster IP" -m tcp -p tcp -d 10.96.0.91 --dport 80 -j KUBE-SVC-DCQOGJK4QZZOVIJ6
      ${nodePortsLast('-m addrtype --dst-type LOCAL ! -d 127.0.0.0/8')}
      -A KUBE-EXT-DCQOGJK4QZZOVIJ6 -m comment --comment "masquerade traffic for shop/np:http external destinations" -j KUBE-MARK-MASQ
      -A KUBE-EXT-DCQOGJK4QZZOVIJ6 -j KUBE-SVC-DCQOGJK4QZZOVIJ6
      -A KUBE-SEP-IG4PNSYLRW77OAXR -m comment --comment shop/np:http -s 10.244.1.2 -j KUBE-MARK-MASQ
      -A KUBE-SEP-IG4PNSYLRW77OAXR -m comment --comment shop/np:http -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080
      -A KUBE-SVC-DCQOGJK4QZZOVIJ6 -m comment --comment "shop/np:http cluster IP" -m tcp -p tcp -d 10.96.0.91 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
      -A KUBE-SVC-DCQOGJK4QZZOVIJ6 -m comment --comment "shop/np:http -> 10.244.1.2:8080" -j KUBE-SEP-IG4PNSYLRW77OAXR
      `,
    ),
    off,
  );
  assertFlows(
    off,
    [
      {
        name: 'node address',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30091,
        want: ep2,
        masq: true,
      },
      {
        name: 'localhost is not a NodePort',
        src: '127.0.0.1',
        dst: '127.0.0.1',
        port: 30091,
        want: 'NONE',
      },
      {
        name: 'no localnet block',
        src: OUTSIDE,
        dst: '127.0.0.1',
        port: 22,
        from: 'external',
        want: 'NONE',
      },
    ],
    node({ ...addrs, localhostNodePorts: false }),
  );

  const only = {
    ...addrs,
    nodePortAddresses: ['172.18.0.0/16', '127.0.0.1/32', 'fc00::/64'],
    localhostNodePorts: false,
  };
  const cidrs = plan(objs, only);
  assertApplies(cidrs);
  assertFlows(
    cidrs,
    [
      {
        name: 'in nodePortAddresses',
        src: OUTSIDE,
        dst: NODE_IP,
        port: 30091,
        want: ep2,
        masq: true,
      },
      {
        name: 'a node address outside nodePortAddresses',
        src: OUTSIDE,
        dst: '192.168.5.5',
        port: 30091,
        want: 'NONE',
      },
      {
        name: 'localhost, dropped from nodePortAddresses',
        src: '127.0.0.1',
        dst: '127.0.0.1',
        port: 30091,
        want: 'NONE',
      },
    ],
    node(only),
  );
  assert.deepEqual(cidrs.warnings, [
    'nodePortAddresses includes localhost 127.0.0.1, but localhostNodePorts is false',
  ]);
});

test('IPv6: whole ruleset; bracketed endpoints, ::1 is not a NodePort, no localhost rules', () => {
  const s = nodePortSvc('shop/v6', 'fd00:96::5', 30095, { clusterIPs: ['fd00:96::5'] });
  const options: IptablesProxierOptions = {
    ...OPTS,
    nodeIP: 'fc00::2',
    localDetector: { mode: 'ClusterCIDR', cidr: 'fd00:10:244::/56' },
  };
  const h = new Harness(options, 'IPv6');
  h.add(s, slice('shop/v6', [ep('fd00:10:244::0005')], { addressType: 'IPv6' }));
  const p = h.sync();
  assertApplies(p, 'IPv6');
  assertRulesEqual(
    tables(
      FILTER_BASE,
      `${NAT_BASE}
      :KUBE-EXT-NFHSRL3D33J5AN3X - [0:0]
      :KUBE-SEP-RPJYO4SGIZNWFFKD - [0:0]
      :KUBE-SVC-NFHSRL3D33J5AN3X - [0:0]
      -A KUBE-NODEPORTS -m comment --comment shop/v6:http -m tcp -p tcp --dport 30095 -j KUBE-EXT-NFHSRL3D33J5AN3X
      -A KUBE-SERVICES -m comment --comment "shop/v6:http cluster IP" -m tcp -p tcp -d fd00:96::5 --dport 80 -j KUBE-SVC-NFHSRL3D33J5AN3X
      ${nodePortsLast('-m addrtype --dst-type LOCAL ! -d ::1/128')}
      -A KUBE-EXT-NFHSRL3D33J5AN3X -m comment --comment "masquerade traffic for shop/v6:http external destinations" -j KUBE-MARK-MASQ
      -A KUBE-EXT-NFHSRL3D33J5AN3X -j KUBE-SVC-NFHSRL3D33J5AN3X
      -A KUBE-SEP-RPJYO4SGIZNWFFKD -m comment --comment shop/v6:http -s fd00:10:244::5 -j KUBE-MARK-MASQ
      -A KUBE-SEP-RPJYO4SGIZNWFFKD -m comment --comment shop/v6:http -m tcp -p tcp -j DNAT --to-destination [fd00:10:244::5]:8080
      -A KUBE-SVC-NFHSRL3D33J5AN3X -m comment --comment "shop/v6:http cluster IP" -m tcp -p tcp -d fd00:96::5 --dport 80 ! -s fd00:10:244::/56 -j KUBE-MARK-MASQ
      -A KUBE-SVC-NFHSRL3D33J5AN3X -m comment --comment "shop/v6:http -> [fd00:10:244::5]:8080" -j KUBE-SEP-RPJYO4SGIZNWFFKD
      `,
    ),
    p,
  );
  const ep5 = '[fd00:10:244::5]:8080';
  assertFlows(
    p,
    [
      { name: 'ClusterIP', src: 'fd00:10:244::9', dst: 'fd00:96::5', port: 80, want: ep5 },
      { name: 'NodePort', src: '2001:db8::9', dst: 'fc00::2', port: 30095, want: ep5, masq: true },
      { name: '::1 is not a NodePort', src: '::1', dst: '::1', port: 30095, want: 'NONE' },
    ],
    options,
  );
});

test('large-cluster mode drops per-endpoint comments, keeps the Service ones', () => {
  const p = plan([web, webSlice], { largeClusterEndpointsThreshold: 1 });
  assert.equal(p.largeClusterMode, true);
  assertRulesEqual(
    fullSyncRules({
      nat: `
      :KUBE-SEP-34ZZ2QFGO32YYXXO - [0:0]
      :KUBE-SEP-HKXOLWSZBDAEWUDR - [0:0]
      :KUBE-SVC-67NZLRHBNDSAWJRO - [0:0]
      -A KUBE-SERVICES -m comment --comment "shop/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-67NZLRHBNDSAWJRO
      -A KUBE-SEP-34ZZ2QFGO32YYXXO -s 10.244.1.5 -j KUBE-MARK-MASQ
      -A KUBE-SEP-34ZZ2QFGO32YYXXO -m tcp -p tcp -j DNAT --to-destination 10.244.1.5:8080
      -A KUBE-SEP-HKXOLWSZBDAEWUDR -s 10.244.0.7 -j KUBE-MARK-MASQ
      -A KUBE-SEP-HKXOLWSZBDAEWUDR -m tcp -p tcp -j DNAT --to-destination 10.244.0.7:8080
      -A KUBE-SVC-67NZLRHBNDSAWJRO -m comment --comment "shop/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
      -A KUBE-SVC-67NZLRHBNDSAWJRO -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-HKXOLWSZBDAEWUDR
      -A KUBE-SVC-67NZLRHBNDSAWJRO -j KUBE-SEP-34ZZ2QFGO32YYXXO
      `,
    }),
    p,
  );
});

test('terminating endpoints: serving ones take traffic only when no endpoint is ready', () => {
  const terminating = (ip: string, serving: boolean) =>
    ep(ip, { conditions: { ready: false, serving, terminating: true } });
  const draining = slice('shop/web', [
    terminating('10.244.1.1', true),
    terminating('10.244.1.2', true),
    terminating('10.244.1.3', false),
  ]);
  const withReady = slice('shop/web', [
    ep('10.244.1.4', { conditions: { ready: true } }),
    terminating('10.244.1.1', true),
  ]);
  const flow = { src: POD, dst: '10.96.0.20', port: 80 };
  assertFlows(
    plan([web, draining]),
    [{ ...flow, want: '10.244.1.1:8080, 10.244.1.2:8080' }],
    node(),
  );
  assertFlows(plan([web, withReady]), [{ ...flow, want: '10.244.1.4:8080' }], node());
});

test('partial sync writes only changed Services, deletes stale chains, and applies on top of the full sync', () => {
  const api = svc('shop/api', { clusterIP: '10.96.0.21' });
  const h = new Harness().add(web, webSlice, api, slice('shop/api', [ep('10.244.1.30')]));
  const full = h.sync(true);
  const ipt = assertApplies(full);
  const before = ipt.chainNames('nat').filter((c) => c.startsWith('KUBE-SEP-')).length;

  h.eps.update(undefined, slice('shop/api', [ep('10.244.1.31')]));
  const partial = h.sync(false);
  assert.equal(partial.fullSync, false);
  // KUBE-SERVICES is always complete; web's chains are not rewritten; api's old SEP goes.
  assertRulesEqual(
    fullSyncRules({
      nat: `
      :KUBE-SEP-4WH2YJML6FDPWV7A - [0:0]
      :KUBE-SEP-ZMSLWH5QQ3XRRUPH - [0:0]
      :KUBE-SVC-RUKNB3TURLFC6SGL - [0:0]
      -A KUBE-SERVICES -m comment --comment "shop/api:http cluster IP" -m tcp -p tcp -d 10.96.0.21 --dport 80 -j KUBE-SVC-RUKNB3TURLFC6SGL
      -A KUBE-SERVICES -m comment --comment "shop/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-67NZLRHBNDSAWJRO
      -A KUBE-SEP-ZMSLWH5QQ3XRRUPH -m comment --comment shop/api:http -s 10.244.1.31 -j KUBE-MARK-MASQ
      -A KUBE-SEP-ZMSLWH5QQ3XRRUPH -m comment --comment shop/api:http -m tcp -p tcp -j DNAT --to-destination 10.244.1.31:8080
      -A KUBE-SVC-RUKNB3TURLFC6SGL -m comment --comment "shop/api:http cluster IP" -m tcp -p tcp -d 10.96.0.21 --dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
      -A KUBE-SVC-RUKNB3TURLFC6SGL -m comment --comment "shop/api:http -> 10.244.1.31:8080" -j KUBE-SEP-ZMSLWH5QQ3XRRUPH
      -X KUBE-SEP-4WH2YJML6FDPWV7A
      `,
    }),
    partial,
    { checkJumps: false },
  );
  assert.equal(partial.counts.deletedChains, 1);
  assert.equal(partial.counts.natRulesTotal, full.counts.natRulesTotal);
  ipt.restoreSync(partial.text, { noflush: true });
  assert.equal(ipt.chainNames('nat').filter((c) => c.startsWith('KUBE-SEP-')).length, before);
  assertFlows(
    ipt.saveSync(),
    [
      {
        name: 'web untouched in the kernel',
        src: POD,
        dst: '10.96.0.20',
        port: 80,
        want: '10.244.0.7:8080, 10.244.1.5:8080',
      },
      {
        name: 'api moved',
        src: POD,
        dst: '10.96.0.21',
        port: 80,
        want: '10.244.1.31:8080',
      },
    ],
    node(),
  );

  const noChange = h.sync(false);
  assert.deepEqual(declared(noChange).filter(isServiceChainName), [], 'no service chain written');
  assert.equal(noChange.changes, '', 'nothing changed: nothing to restore');
  const warm = h.sync(true);
  assert.equal(warm.counts.deletedChains, 0, 'nothing stale after a clean partial');
  assert.deepEqual(deleted(warm), []);
  // A full sync rewrites every chain: exactly what a fresh proxier would write.
  const fresh = new Harness()
    .add(web, webSlice, api, slice('shop/api', [ep('10.244.1.31')]))
    .sync(true);
  assertRulesEqual(fresh.text, warm);
  assert.deepEqual(
    [...natChainsOf(warm.state)].sort(),
    ipt
      .chainNames('nat')
      .filter((c) => /^KUBE-(SVC|SEP)-/.test(c))
      .sort(),
  );
});

test('large-cluster mode deletes stale chains at most once per syncPeriod', () => {
  const h = new Harness({ ...OPTS, largeClusterEndpointsThreshold: 1, syncPeriodMs: 30_000 }).add(
    web,
    webSlice,
  );
  h.sync(true, 1_000);
  h.eps.update(
    undefined,
    slice('shop/web', [ep('10.244.1.5', { nodeName: 'node-b' }), ep('10.244.0.8')]),
  );
  const soon = h.sync(false, 2_000);
  assert.deepEqual(deleted(soon), [], 'within syncPeriod of the last cleanup');
  assert.deepEqual(
    [...soon.state.orphans],
    [endpointChainName('shop/web:http', 'TCP', '10.244.0.7:8080')],
  );
  const later = h.sync(false, 40_000);
  assert.deepEqual(deleted(later), [...soon.state.orphans]);
  assert.equal(later.state.orphans.size, 0);
});

test('jump rules are returned on full syncs only', () => {
  const h = new Harness().add(web, webSlice);
  const full = h.sync(true);
  assert.equal(full.jumps.length, 14);
  assert.deepEqual(
    full.jumps.find((j) => j.table === 'nat' && j.sourceChain === 'PREROUTING')?.args,
    ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'],
  );
  assert.equal(h.sync(false).jumps.length, 0);
  assert.deepEqual(
    full.canaryChains.map((c) => c.table),
    ['mangle', 'nat', 'filter'],
  );
});

test('partial syncs over many buckets leave the kernel exactly as a fresh full sync would', () => {
  const many = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => {
      const k = i + from;
      return [
        svc(`ns${k % 7}/s${k}`, { clusterIP: `10.96.${k >> 8}.${k & 255}` }),
        slice(`ns${k % 7}/s${k}`, [ep(`10.244.${k >> 8}.${k & 255}`)]),
      ];
    }).flat();
  const options = { ...OPTS, largeClusterEndpointsThreshold: 100_000 };
  const h = new Harness(options).add(...many(990));
  const ipt = new FakeIptables();
  // What the proxier applies: only the changes (plan.ts changesOnly).
  const onlyChanges = new FakeIptables();
  const apply = (p: IptablesPlan) => {
    ipt.restoreSync(p.text, { noflush: true });
    if (p.changes !== '') onlyChanges.restoreSync(p.changes, { noflush: true });
  };
  apply(h.sync(true));
  // Crossing 1000 ports changes the bucketing on a partial sync.
  h.add(...many(30, 990));
  apply(h.sync(false));
  // Change one endpoint, delete one Service, add one: each a partial sync.
  h.eps.update(undefined, slice('ns3/s3', [ep('10.244.99.3')]));
  apply(h.sync(false));
  const gone = many(1, 500)[0] as Service;
  h.svcs.update(gone, undefined);
  apply(h.sync(false));
  h.add(...many(1, 5000));
  const last = h.sync(false);
  assert.equal(last.fullSync, false);
  assert.ok(last.text.length < 200_000, 'a partial sync does not rewrite every chain');
  apply(last);

  const fresh = new Harness(options);
  fresh.add(
    ...many(1020).filter((o) => o.metadata?.name !== 's500' && o.metadata?.name !== 's500-1'),
  );
  fresh.eps.update(undefined, slice('ns3/s3', [ep('10.244.99.3')]));
  fresh.add(...many(1, 5000));
  const want = new FakeIptables();
  want.restoreSync(fresh.sync(true).text, { noflush: true });
  assertRulesEqual(want.saveSync('nat'), ipt.saveSync('nat'));
  assertRulesEqual(want.saveSync(), onlyChanges.saveSync());
  assert.equal(last.counts.natRulesTotal, fresh.sync(true).counts.natRulesTotal);
});

test('a partial sync applies only what changed: unchanged tables and dispatch chains are left out', () => {
  const api = svc('shop/api', { clusterIP: '10.96.0.21' });
  const h = new Harness().add(web, webSlice, api, slice('shop/api', [ep('10.244.1.30')]));
  const full = h.sync(true);
  assert.equal(full.changes, full.text, 'a full sync writes everything');
  const ipt = assertApplies(full);

  // New endpoints of a Service: its chains only (no filter, no KUBE-SERVICES, no fixed chains).
  h.eps.update(undefined, slice('shop/api', [ep('10.244.1.31')]));
  const moved = h.sync(false);
  const apiSvc = 'KUBE-SVC-RUKNB3TURLFC6SGL';
  assert.doesNotMatch(moved.changes, /^\*filter$/m);
  assert.doesNotMatch(moved.changes, /^:KUBE-(SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ) /m);
  assert.match(moved.changes, new RegExp(`^:${apiSvc} `, 'm'));
  assert.match(moved.changes, /^-X KUBE-SEP-4WH2YJML6FDPWV7A$/m);
  assert.match(moved.text, /^\*filter$/m, 'the plan text stays what kube-proxy writes');
  ipt.restoreSync(moved.changes, { noflush: true });

  // Endpoints gone: the REJECT rule (filter) and KUBE-SERVICES change.
  h.eps.update(undefined, slice('shop/api', []));
  const none = h.sync(false);
  assert.match(none.changes, /^\*filter$/m);
  assert.match(none.changes, /^:KUBE-SERVICES - \[0:0\]$/m);
  assert.match(none.changes, new RegExp(`^-X ${apiSvc}$`, 'm'));
  ipt.restoreSync(none.changes, { noflush: true });

  // The kernel is what a fresh full sync of the same objects leaves.
  const fresh = new Harness().add(web, webSlice, api, slice('shop/api', [])).sync(true);
  const want = new FakeIptables();
  want.restoreSync(fresh.text, { noflush: true });
  assertRulesEqual(want.saveSync(), ipt.saveSync());
});
