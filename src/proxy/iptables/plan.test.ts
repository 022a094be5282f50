import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../kube/types.js';
import type { IPFamily } from '../../util/ip.js';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import { takeSnapshot } from '../model/snapshot.js';
import { endpoint as ep, service as svc, slice } from '../../kube/testing.js';
import { checkRuleJumps } from './compare.js';
import { DEFAULT_OPTIONS } from './options.js';
import type { IptablesProxierOptions } from './options.js';
import { natChainsOf, planIptables } from './plan.js';
import type { IptablesPlan, PlanState } from './plan.js';

const OPTS: IptablesProxierOptions = {
  ...DEFAULT_OPTIONS,
  nodeName: 'node-a',
  nodeIP: '172.18.0.2',
  localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
  localAddresses: ['127.0.0.1/8', '172.18.0.2/16', '::1/128', 'fc00::2/64'],
  hasRandomFully: false,
};

/** Trackers + plan, like one proxier; `sync()` returns the plan and keeps its state. */
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

function plan(objs: (Service | EndpointSlice)[], options: Partial<IptablesProxierOptions> = {}) {
  return new Harness({ ...OPTS, ...options }).add(...objs).sync();
}

function lines(p: IptablesPlan, chainPrefix: string): string[] {
  return p.text.split('\n').filter((l) => l.startsWith(`-A ${chainPrefix}`));
}

/** Every full plan must be self-consistent and accepted by the atomic fake. */
function assertApplies(p: IptablesPlan, family: IPFamily = 'IPv4'): FakeIptables {
  assert.deepEqual(checkRuleJumps(p.document), []);
  const ipt = new FakeIptables(family);
  ipt.restoreSync(p.text, { noflush: true });
  return ipt;
}

const web = svc('shop/web', { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }] });
const webSlice = slice('shop/web', [
  ep('10.244.1.5', { nodeName: 'node-b' }),
  ep('10.244.0.7', { nodeName: 'node-a' }),
]);

test('golden: a kitchen-sink full sync', () => {
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
  const file = join(import.meta.dirname, 'testdata', 'kitchen-sink.golden');
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, p.text);
  assert.equal(p.text, readFileSync(file, 'utf8'));
});

test('ClusterIP: capture, masquerade of off-cluster sources, probability split, hairpin', () => {
  const p = plan([web, webSlice]);
  assertApplies(p);
  const svcLines = lines(p, 'KUBE-SVC-');
  assert.equal(svcLines.length, 3);
  assert.match(svcLines[0] ?? '', /--dport 80 ! -s 10\.244\.0\.0\/16 -j KUBE-MARK-MASQ$/);
  assert.match(
    svcLines[1] ?? '',
    /"shop\/web:http -> 10\.244\.0\.7:8080" -m statistic --mode random --probability 0\.5000000000 -j KUBE-SEP-/,
  );
  assert.doesNotMatch(svcLines[2] ?? '', /statistic/, 'the last endpoint takes the rest');
  assert.equal(lines(p, 'KUBE-SEP-').filter((l) => l.includes('-j KUBE-MARK-MASQ')).length, 2);
  assert.equal(
    p.counts.natRulesTotal,
    p.text.split('\n').filter((l) => /^-A /.test(l)).length - p.counts.filterRules,
  );
});

test('no endpoints: REJECT for every way in, and no nat chains', () => {
  const s = svc('shop/empty', {
    type: 'NodePort',
    clusterIP: '10.96.0.40',
    externalIPs: ['192.0.2.40'],
    ports: [{ name: 'http', port: 80, nodePort: 30040 }],
  });
  const p = plan([s]);
  assertApplies(p);
  const filter = p.text.split('\n').filter((l) => l.includes('has no endpoints'));
  assert.deepEqual(
    filter.map((l) => l.split(' ')[1]),
    ['KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-EXTERNAL-SERVICES'],
  );
  assert.ok(filter.every((l) => l.endsWith('-j REJECT')));
  assert.equal(lines(p, 'KUBE-SVC-').length + lines(p, 'KUBE-EXT-').length, 0);
});

test('externalTrafficPolicy Local: short-circuits, local endpoints only, DROP without them', () => {
  const s = svc('shop/np', {
    type: 'NodePort',
    clusterIP: '10.96.0.50',
    externalTrafficPolicy: 'Local',
    ports: [{ name: 'http', port: 80, nodePort: 30050 }],
  });
  const remoteOnly = slice('shop/np', [ep('10.244.1.1', { nodeName: 'node-b' })]);
  const p = plan([s, remoteOnly]);
  assertApplies(p);
  const ext = lines(p, 'KUBE-EXT-');
  assert.deepEqual(
    ext.map((l) => /--comment "(\w+)/.exec(l)?.[1]),
    ['pod', 'masquerade', 'route'],
    'no final jump: no local endpoints',
  );
  assert.match(ext[0] ?? '', / -s 10\.244\.0\.0\/16 -j KUBE-SVC-/);
  assert.match(
    p.text,
    /"shop\/np:http has no local endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30050 -j DROP/,
  );
  assert.equal(p.noLocalEndpointsExternal, 1);

  const withLocal = plan([
    s,
    slice('shop/np', [
      ep('10.244.1.1', { nodeName: 'node-b' }),
      ep('10.244.0.3', { nodeName: 'node-a' }),
    ]),
  ]);
  assertApplies(withLocal);
  assert.match(withLocal.text, /-A KUBE-EXT-\S+ -j KUBE-SVL-/);
  assert.equal(lines(withLocal, 'KUBE-SVL-').length, 1, 'SVL holds the one local endpoint');
  assert.doesNotMatch(withLocal.text, /has no local endpoints/);
});

test('internalTrafficPolicy Local: ClusterIP jumps to KUBE-SVL, DROP when nothing is local', () => {
  const s = svc('shop/itp', { clusterIP: '10.96.0.60', internalTrafficPolicy: 'Local' });
  const local = plan([
    s,
    slice('shop/itp', [ep('10.244.0.8', { nodeName: 'node-a' }), ep('10.244.1.8')]),
  ]);
  assertApplies(local);
  assert.match(local.text, /-A KUBE-SERVICES .*"shop\/itp:http cluster IP".* -j KUBE-SVL-/);
  assert.match(lines(local, 'KUBE-SVL-')[0] ?? '', /! -s 10\.244\.0\.0\/16 -j KUBE-MARK-MASQ/);
  const none = plan([s, slice('shop/itp', [ep('10.244.1.8')])]);
  assertApplies(none);
  assert.match(
    none.text,
    /-A KUBE-SERVICES -m comment --comment "shop\/itp:http has no local endpoints" .* -j DROP/,
  );
  assert.equal(none.noLocalEndpointsInternal, 1);
});

test('LoadBalancer: source ranges via KUBE-FW, node-IP loopback rule, firewall drop; ipMode Proxy is not captured', () => {
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
  const p = plan([s, slice('shop/lb', [ep('10.244.1.9')])]);
  assertApplies(p);
  const fw = lines(p, 'KUBE-FW-');
  assert.equal(fw.length, 4);
  assert.match(
    fw[2] ?? '',
    /-s 203\.0\.113\.70 -j KUBE-EXT-/,
    'the node IP is in a range: allow the LB IP as source',
  );
  assert.match(fw[3] ?? '', /will be dropped by KUBE-PROXY-FIREWALL"$/);
  assert.match(p.text, /-A KUBE-PROXY-FIREWALL .* -d 203\.0\.113\.70 --dport 80 -j DROP/);
  assert.doesNotMatch(p.text, /203\.0\.113\.71/);
  const outside = plan([s, slice('shop/lb', [ep('10.244.1.9')])], { nodeIP: '10.1.1.1' });
  assert.equal(lines(outside, 'KUBE-FW-').length, 3);
});

test('ClientIP affinity: recent checks first, then the split; SEP DNAT sets recent', () => {
  const s = svc('shop/sticky', { clusterIP: '10.96.0.80', sessionAffinity: 'ClientIP' });
  const p = plan([s, slice('shop/sticky', [ep('10.244.1.1'), ep('10.244.1.2')])]);
  assertApplies(p);
  const svcLines = lines(p, 'KUBE-SVC-');
  assert.equal(svcLines.filter((l) => / --rcheck --seconds 10800 --reap /.test(l)).length, 2);
  assert.ok(svcLines.findIndex((l) => l.includes('statistic')) > 2);
  assert.equal(
    lines(p, 'KUBE-SEP-').filter((l) => /-m recent --name KUBE-SEP-\S+ --set -m tcp/.test(l))
      .length,
    2,
  );
});

test('local-traffic detectors and masqueradeAll shape the masquerade and short-circuit rules', () => {
  const s = svc('shop/np', {
    type: 'NodePort',
    clusterIP: '10.96.0.90',
    externalTrafficPolicy: 'Local',
    ports: [{ name: 'http', port: 80, nodePort: 30090 }],
  });
  const objs = [s, slice('shop/np', [ep('10.244.0.2', { nodeName: 'node-a' })])];
  const cases: [string, Partial<IptablesProxierOptions>, string | undefined, string | undefined][] =
    [
      ['ClusterCIDR', {}, '! -s 10.244.0.0/16', '-s 10.244.0.0/16'],
      [
        'NodeCIDR',
        { localDetector: { mode: 'NodeCIDR', cidr: '10.244.0.0/24' } },
        '! -s 10.244.0.0/24',
        '-s 10.244.0.0/24',
      ],
      [
        'BridgeInterface',
        { localDetector: { mode: 'BridgeInterface', interfaceName: 'cbr0' } },
        '! -i cbr0',
        '-i cbr0',
      ],
      [
        'InterfaceNamePrefix',
        { localDetector: { mode: 'InterfaceNamePrefix', prefix: 'veth' } },
        '! -i veth+',
        '-i veth+',
      ],
      ['none', { localDetector: { mode: 'None' } }, undefined, undefined],
      ['masqueradeAll', { masqueradeAll: true }, '', '-s 10.244.0.0/16'],
    ];
  for (const [name, o, masq, pod] of cases) {
    const p = plan(objs, o);
    assertApplies(p);
    const masqRule = lines(p, 'KUBE-SVC-').find((l) => l.endsWith('-j KUBE-MARK-MASQ'));
    if (masq === undefined) assert.equal(masqRule, undefined, name);
    else
      assert.ok(
        masqRule?.endsWith(`--dport 80${masq === '' ? '' : ` ${masq}`} -j KUBE-MARK-MASQ`),
        `${name}: ${masqRule}`,
      );
    const podRule = lines(p, 'KUBE-EXT-').find((l) => l.includes('pod traffic'));
    if (pod === undefined) assert.equal(podRule, undefined, name);
    else assert.ok(podRule?.includes(` ${pod} -j KUBE-SVC-`), `${name}: ${podRule}`);
  }
});

test('NodePorts: localhost rules, nodePortAddresses, and the last KUBE-SERVICES rule', () => {
  const s = svc('shop/np', {
    type: 'NodePort',
    clusterIP: '10.96.0.91',
    ports: [{ name: 'http', port: 80, nodePort: 30091 }],
  });
  const objs = [s, slice('shop/np', [ep('10.244.1.2')])];
  const on = plan(objs);
  assert.match(
    on.text,
    /-A KUBE-NODEPORTS .* -d 127\.0\.0\.0\/8 --dport 30091 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-EXT-/,
  );
  assert.match(on.text, /-A KUBE-FIREWALL .*block incoming localnet connections/);
  assert.match(
    lines(on, 'KUBE-SERVICES').at(-1) ?? '',
    /-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS$/,
  );
  const off = plan(objs, { localhostNodePorts: false });
  assert.doesNotMatch(off.text, /127\.0\.0\.0\/8 --dport/);
  assert.doesNotMatch(off.text, /KUBE-FIREWALL/);
  assert.match(
    lines(off, 'KUBE-SERVICES').at(-1) ?? '',
    /LOCAL ! -d 127\.0\.0\.0\/8 -j KUBE-NODEPORTS$/,
  );
  const cidrs = plan(objs, {
    nodePortAddresses: ['172.18.0.0/16', '127.0.0.1/32', 'fc00::/64'],
    localhostNodePorts: false,
  });
  assert.deepEqual(
    lines(cidrs, 'KUBE-SERVICES')
      .filter((l) => l.includes('nodeports; NOTE'))
      .map((l) => l.split(' -d ')[1]),
    ['172.18.0.2 -j KUBE-NODEPORTS'],
  );
  assert.match(cidrs.warnings.join('\n'), /localhostNodePorts is false/);
});

test('IPv6: bracketed endpoints, ::1 excluded from NodePorts, no localhost NodePort rules', () => {
  const s = svc('shop/v6', {
    type: 'NodePort',
    clusterIP: 'fd00:96::5',
    clusterIPs: ['fd00:96::5'],
    ports: [{ name: 'http', port: 80, nodePort: 30095 }],
  });
  const h = new Harness(
    {
      ...OPTS,
      nodeIP: 'fc00::2',
      localDetector: { mode: 'ClusterCIDR', cidr: 'fd00:10:244::/56' },
    },
    'IPv6',
  );
  h.add(s, slice('shop/v6', [ep('fd00:10:244::0005')], { addressType: 'IPv6' }));
  const p = h.sync();
  assertApplies(p, 'IPv6');
  assert.match(p.text, /-j DNAT --to-destination \[fd00:10:244::5\]:8080/);
  assert.match(p.text, /"shop\/v6:http -> \[fd00:10:244::5\]:8080"/);
  assert.match(lines(p, 'KUBE-SERVICES').at(-1) ?? '', /LOCAL ! -d ::1\/128 -j KUBE-NODEPORTS$/);
  assert.doesNotMatch(p.text, /127\.0\.0\.0|KUBE-FIREWALL/);
});

test('large-cluster mode drops per-endpoint comments', () => {
  const p = plan([web, webSlice], { largeClusterEndpointsThreshold: 1 });
  assert.equal(p.largeClusterMode, true);
  assert.ok(lines(p, 'KUBE-SEP-').every((l) => !l.includes('--comment')));
  assert.ok(
    lines(p, 'KUBE-SVC-')
      .filter((l) => l.includes('-j KUBE-SEP-'))
      .every((l) => !l.includes('--comment')),
  );
  assert.match(p.text, /"shop\/web:http cluster IP"/, 'service-level comments stay');
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
  assert.match(partial.text, /"shop\/web:http cluster IP"/, 'KUBE-SERVICES is always complete');
  assert.doesNotMatch(partial.text, /shop\/web:http ->/, 'unchanged chains are not rewritten');
  assert.match(partial.text, /-X KUBE-SEP-/);
  assert.equal(partial.counts.deletedChains, 1);
  assert.equal(partial.counts.natRulesTotal, full.counts.natRulesTotal);
  ipt.restoreSync(partial.text, { noflush: true });
  assert.equal(ipt.chainNames('nat').filter((c) => c.startsWith('KUBE-SEP-')).length, before);
  assert.match(
    ipt.chainRules(
      'nat',
      lines(full, 'KUBE-SVC-')
        .find((l) => l.includes('shop/web'))
        ?.split(' ')[1] ?? '',
    ),
    /10\.244\.0\.7/,
    'web untouched in the kernel',
  );

  const noChange = h.sync(false);
  assert.doesNotMatch(noChange.text, /:KUBE-S(VC|EP)-/);
  const warm = h.sync(true);
  assert.equal(warm.counts.deletedChains, 0, 'nothing stale after a clean partial');
  assert.doesNotMatch(warm.text, /^-X /m);
  assert.match(warm.text, /shop\/web:http -> /, 'a full sync rewrites every chain');
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
  assert.doesNotMatch(soon.text, /-X /, 'within syncPeriod of the last cleanup');
  assert.equal(soon.state.orphans.size, 1);
  const later = h.sync(false, 40_000);
  assert.match(later.text, /-X KUBE-SEP-/);
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
  const apply = (p: IptablesPlan) => {
    ipt.restoreSync(p.text, { noflush: true });
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
  const canon = (f: FakeIptables) => f.saveSync('nat').split('\n').sort().join('\n');
  assert.equal(canon(ipt), canon(want));
  assert.equal(last.counts.natRulesTotal, fresh.sync(true).counts.natRulesTotal);
});
