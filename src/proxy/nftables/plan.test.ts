// Unit tests of the nftables planner: the rule text of small scenarios (rendered with the
// nft renderer and compared in the fixtures' sorted order), partial syncs that send only
// what changed, stale-chain aging, the restart case (elements already in the kernel are not
// re-added), element ownership shared between ports, and bad input that is skipped, warned
// and counted without touching the others.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointSlice, Service } from '../../kube/types.js';
import type { TableState } from '../../netfilter/nftables/model.js';
import { NftFake } from '../../netfilter/nftables/fake.js';
import { renderTransaction } from '../../netfilter/nftables/render.js';
import { endpoint as ep, service as svc, slice } from '../../kube/testing.js';
import { EndpointsChangeTracker } from '../model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../model/service-change-tracker.js';
import { takeSnapshot } from '../model/snapshot.js';
import { DEFAULT_NFTABLES_OPTIONS } from './options.js';
import type { NftablesProxierOptions } from './options.js';
import { planNftables } from './plan.js';
import type { NftablesPlan, NftPlanState } from './plan.js';
import { planNftablesFromObjects } from './plan-objects.js';

const OPTS: NftablesProxierOptions = {
  ...DEFAULT_NFTABLES_OPTIONS,
  nodeName: 'node-a',
  nodeIP: '172.18.0.2',
  localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
  localAddresses: ['127.0.0.1/8', '172.18.0.2/16'],
  serviceCIDRs: ['10.96.0.0/12', 'fd00:10:96::/112'],
};

const web = svc('default/web', { clusterIP: '10.96.0.10' });
const webSlice = (...ips: string[]) =>
  slice(
    'default/web',
    ips.map((ip) => ep(ip, { nodeName: 'node-a' })),
  );

/** Long-lived trackers over several syncs, as the proxier keeps them. */
class Harness {
  readonly svcs = new ServiceChangeTracker('IPv4');
  readonly eps = new EndpointsChangeTracker('IPv4', OPTS.nodeName);
  state: NftPlanState | undefined;
  nowMs = 1_000_000;
  private readonly seen = new Map<string, Service | EndpointSlice>();
  put(...objs: (Service | EndpointSlice)[]): this {
    for (const o of objs) {
      const key = `${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
      const prev = this.seen.get(key);
      if (o.kind === 'Service') this.svcs.update(prev as Service | undefined, o);
      else this.eps.update(prev as EndpointSlice | undefined, o as EndpointSlice);
      this.seen.set(key, o);
    }
    return this;
  }
  remove(o: Service): this {
    const key = `Service/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
    this.svcs.update(this.seen.get(key) as Service, undefined);
    this.seen.delete(key);
    return this;
  }
  sync(extra: { current?: TableState; full?: boolean } = {}): NftablesPlan {
    const s = takeSnapshot(this.svcs, this.eps);
    const plan = planNftables(
      {
        family: 'IPv4',
        services: s.services,
        endpoints: s.endpoints,
        options: OPTS,
        changedServices: extra.full === true ? 'all' : s.changedServices,
        nowMs: this.nowMs,
        ...(extra.current ? { current: extra.current } : {}),
      },
      this.state,
    );
    this.state = plan.state;
    return plan;
  }
}

function lines(plan: NftablesPlan): string[] {
  return renderTransaction(plan.transaction)
    .trimEnd()
    .split('\n')
    .filter((l) => l !== '');
}

test('full sync: the fixed objects, then the Service port chain, its elements and hairpin entry', () => {
  const { plan } = planNftablesFromObjects([web], [webSlice('10.244.0.5')], OPTS, 'IPv4', {
    recreateBaseChains: false,
  });
  const text = lines(plan);
  assert.equal(text[0], 'add table ip kube-proxy { comment "rules for kube-proxy" ; }');
  assert.ok(plan.fullSync);
  for (const want of [
    'add rule ip kube-proxy cluster-ips-check ip daddr { 10.96.0.0/12 } drop comment "Drop traffic to unallocated ClusterIPs"',
    'add rule ip kube-proxy services ip daddr @cluster-ips ip saddr != 10.244.0.0/16 mark set mark or 0x4000 comment "masquerade clusterIP traffic from outside cluster"',
    'add element ip kube-proxy nodeport-ips { 172.18.0.2 }',
    'add rule ip kube-proxy services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports',
    'add element ip kube-proxy cluster-ips { 10.96.0.10 }',
    'add element ip kube-proxy hairpin-connections { 10.244.0.5 . 10.244.0.5 . tcp . 8080 }',
  ])
    assert.ok(text.includes(want), want);
  const chain = text.find(
    (l) => l.startsWith('add chain ip kube-proxy service-') && l.includes('/'),
  );
  assert.match(
    chain ?? '',
    /^add chain ip kube-proxy service-[A-Z2-7]{8}-default\/web\/tcp\/http$/,
  );
  assert.ok(
    text.some((l) =>
      l.endsWith(
        'meta l4proto tcp dnat ip addr . port to numgen random mod 1 map { 0 : 10.244.0.5 . 8080 }',
      ),
    ),
  );
  // The chain exists before the map element that jumps to it.
  const chainAt = text.indexOf(chain ?? '');
  const elementAt = text.findIndex((l) => l.startsWith('add element ip kube-proxy service-ips'));
  assert.ok(chainAt >= 0 && chainAt < elementAt);
});

test('first sync of a process recreates the base chains; nodePortAddresses all uses fib and drops nodeport-ips', () => {
  const { plan } = planNftablesFromObjects(
    [web],
    [],
    { ...OPTS, nodePortAddresses: ['all'] },
    'IPv4',
  );
  const text = lines(plan);
  assert.deepEqual(text.slice(1, 4), [
    'add chain ip kube-proxy filter-prerouting-pre-dnat',
    'flush chain ip kube-proxy filter-prerouting-pre-dnat',
    'delete chain ip kube-proxy filter-prerouting-pre-dnat',
  ]);
  assert.ok(text.includes('delete set ip kube-proxy nodeport-ips'));
  assert.ok(
    text.includes(
      'add rule ip kube-proxy nodeport-endpoints-check fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports',
    ),
  );
  // No endpoints: reject through no-endpoint-services, with the port name as comment.
  assert.ok(
    text.includes(
      'add element ip kube-proxy no-endpoint-services { 10.96.0.10 . tcp . 80 comment "default/web:http" : goto reject-chain }',
    ),
  );
});

test('partial syncs send only what changed; an unchanged sync is empty', () => {
  const h = new Harness().put(web, webSlice('10.244.0.5'));
  assert.ok(h.sync().fullSync);
  assert.deepEqual(lines(h.sync()), []);

  const other = svc('default/other', { clusterIP: '10.96.0.11' });
  const p = h.put(other).sync();
  assert.equal(p.fullSync, false);
  assert.deepEqual(lines(p), [
    'add element ip kube-proxy cluster-ips { 10.96.0.11 }',
    'add element ip kube-proxy no-endpoint-services { 10.96.0.11 . tcp . 80 comment "default/other:http" : goto reject-chain }',
  ]);

  // An endpoint moves: the hairpin entry is replaced and the chain rewritten; service-ips stays.
  const moved = lines(h.put(webSlice('10.244.0.6')).sync());
  assert.equal(moved.length, 5);
  assert.ok(
    moved.includes(
      'add element ip kube-proxy hairpin-connections { 10.244.0.6 . 10.244.0.6 . tcp . 8080 }',
    ),
  );
  assert.ok(
    moved.includes(
      'delete element ip kube-proxy hairpin-connections { 10.244.0.5 . 10.244.0.5 . tcp . 8080 }',
    ),
  );
  assert.ok(!moved.some((l) => l.includes('service-ips')));
});

test('stale chains are flushed at once and deleted in a separate transaction after 1 s', () => {
  const h = new Harness().put(web, webSlice('10.244.0.5'));
  h.sync();
  const gone = h.remove(web).sync();
  const chain = [...(h.state?.staleChains.keys() ?? [])];
  assert.equal(chain.length, 1);
  assert.ok(lines(gone).includes(`flush chain ip kube-proxy ${chain[0] ?? ''}`));
  assert.deepEqual(gone.cleanup, []);
  h.nowMs += 500;
  assert.deepEqual(h.sync().cleanup, [], 'not aged yet');
  h.nowMs += 600;
  const aged = h.sync();
  assert.deepEqual(
    renderTransaction(aged.cleanup),
    `delete chain ip kube-proxy ${chain[0] ?? ''}\n`,
  );
  assert.equal(aged.transaction.length, 0);
  assert.equal(h.state?.staleChains.size, 0);
});

test('a stale chain that becomes active again is rewritten, not deleted', () => {
  const h = new Harness().put(web, webSlice('10.244.0.5'));
  h.sync();
  h.put(webSlice()).sync();
  assert.equal(h.state?.staleChains.size, 1);
  h.nowMs += 5000;
  const back = h.put(webSlice('10.244.0.5')).sync();
  assert.deepEqual(back.cleanup, []);
  assert.equal(back.state.staleChains.size, 0);
  assert.ok(lines(back).some((l) => l.startsWith('add chain ip kube-proxy service-')));
});

test('restart: elements the kernel already holds are not re-added; leftovers are deleted', () => {
  const first = new Harness().put(web, webSlice('10.244.0.5'));
  const before = first.sync();
  // Kernel state after that sync, plus one element nobody wants any more.
  const sets = new Map<string, TableState['sets'] extends Map<string, infer S> ? S : never>();
  const chains: TableState['chains'] = new Map();
  for (const op of before.transaction) {
    const o = op.object;
    if (op.verb !== 'add') continue;
    if (o.kind === 'set' || o.kind === 'map') sets.set(o.name, { set: o, elements: new Map() });
    if (o.kind === 'chain') chains.set(o.name, { chain: o, rules: [] });
    if (o.kind === 'element') sets.get(o.set)?.elements.set(o.key.join(' . '), o);
  }
  const stale = {
    family: 'ip',
    table: 'kube-proxy',
    kind: 'element',
    set: 'cluster-ips',
    key: ['10.96.9.9'],
  } as const;
  sets.get('cluster-ips')?.elements.set('10.96.9.9', stale);
  const current: TableState = {
    table: { family: 'ip', table: 'kube-proxy', kind: 'table' },
    chains,
    sets,
  };
  const restarted = new Harness().put(web, webSlice('10.244.0.5')).sync({ current });
  const text = lines(restarted);
  assert.ok(!text.includes('add element ip kube-proxy cluster-ips { 10.96.0.10 }'));
  assert.ok(!text.some((l) => l.startsWith('add element ip kube-proxy hairpin-connections')));
  assert.ok(text.includes('delete element ip kube-proxy cluster-ips { 10.96.9.9 }'));
});

test('a shared element stays while another port still wants it', () => {
  const twoPorts = svc('default/web', {
    clusterIP: '10.96.0.10',
    ports: [
      { name: 'a', port: 80, protocol: 'TCP' },
      { name: 'b', port: 81, protocol: 'TCP' },
    ],
  });
  const h = new Harness().put(twoPorts);
  h.sync();
  const onePort = svc('default/web', {
    clusterIP: '10.96.0.10',
    ports: [{ name: 'a', port: 80, protocol: 'TCP' }],
  });
  const text = lines(h.put(onePort).sync());
  assert.deepEqual(text, [
    'delete element ip kube-proxy no-endpoint-services { 10.96.0.10 . tcp . 81 }',
  ]);
});

test('ClientIP affinity: per-endpoint sets and chains; a changed timeout recreates the set', () => {
  const sticky = (timeoutSeconds: number) =>
    svc('default/web', {
      clusterIP: '10.96.0.10',
      sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds } },
    });
  const h = new Harness().put(sticky(60), webSlice('10.244.0.5'));
  const text = lines(h.sync());
  assert.ok(
    text.some((l) =>
      /^add set ip kube-proxy affinity-[A-Z2-7]{8}-default\/web\/tcp\/http__10\.244\.0\.5\/8080 \{ type ipv4_addr ; flags dynamic,timeout ; timeout 60s ; \}$/.test(
        l,
      ),
    ),
  );
  assert.ok(text.some((l) => / update @affinity-\S+ \{ ip saddr \}$/.test(l)));
  assert.ok(text.some((l) => / meta l4proto tcp dnat to 10\.244\.0\.5:8080$/.test(l)));
  assert.ok(text.some((l) => / numgen random mod 1 vmap \{ 0 : goto endpoint-\S+ \}$/.test(l)));
  const changed = lines(h.put(sticky(90)).sync());
  const del = changed.findIndex((l) => l.startsWith('delete set ip kube-proxy affinity-'));
  const add = changed.findIndex(
    (l) => l.startsWith('add set ip kube-proxy affinity-') && l.includes('timeout 90s'),
  );
  assert.ok(del >= 0 && add > del, changed.join('\n'));
});

test('bad input: a port the kernel would refuse is skipped, warned and counted; the others are written', () => {
  const bad = svc('default/bad', {
    clusterIP: '10.96.0.12',
    ports: [{ name: 'http', port: 70000, protocol: 'TCP' }],
  });
  const weird = svc('default/we ird', { clusterIP: '10.96.0.13' });
  const { plan } = planNftablesFromObjects(
    [web, bad, weird],
    [webSlice('10.244.0.5')],
    OPTS,
    'IPv4',
  );
  assert.equal(plan.skippedServicePorts, 2);
  assert.ok(
    plan.warnings.some((w) => w.includes('default/bad:http') && w.includes('port must be 1-65535')),
  );
  assert.ok(plan.warnings.some((w) => w.includes('is not a valid name')));
  const text = lines(plan).join('\n');
  assert.doesNotMatch(text, /10\.96\.0\.1[23]/);
  assert.match(text, /cluster-ips \{ 10\.96\.0\.10 \}/);
});

test('two Services claiming one IP:port: one deterministic element and a warning', () => {
  const a = svc('default/a', { clusterIP: '10.96.0.20', externalIPs: ['192.168.9.9'] });
  const b = svc('default/b', { clusterIP: '10.96.0.21', externalIPs: ['192.168.9.9'] });
  const { plan } = planNftablesFromObjects([b, a], [], OPTS, 'IPv4');
  const els = lines(plan).filter((l) => l.includes('{ 192.168.9.9 . tcp . 80'));
  assert.equal(els.length, 1);
  assert.match(els[0] ?? '', /comment "default\/a:http"/);
  assert.ok(plan.warnings.some((w) => w.includes('with different values')));
});

test('IPv6: ip6 table, ip6 matches and ::1 in the fib NodePort rule', () => {
  const s6 = svc('default/web6', {
    clusterIP: 'fd00:10:96::10',
    type: 'NodePort',
    ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }],
  });
  const sl = slice('default/web6', [ep('fd00:10:244::5', { nodeName: 'node-a' })], {
    addressType: 'IPv6',
    ports: [{ port: 8080, protocol: 'TCP' }],
  });
  const { plan } = planNftablesFromObjects(
    [s6],
    [sl],
    { ...OPTS, nodePortAddresses: ['all'], localDetector: { mode: 'None' } },
    'IPv6',
  );
  const text = lines(plan);
  assert.ok(text.includes('add table ip6 kube-proxy { comment "rules for kube-proxy" ; }'));
  assert.ok(
    text.some((l) =>
      l.endsWith('dnat ip6 addr . port to numgen random mod 1 map { 0 : fd00:10:244::5 . 8080 }'),
    ),
  );
  assert.ok(
    text.includes(
      'add rule ip6 kube-proxy cluster-ips-check ip6 daddr { fd00:10:96::/112 } drop comment "Drop traffic to unallocated ClusterIPs"',
    ),
  );
  assert.ok(
    text.some((l) =>
      l.includes(
        'fib daddr type local ip6 daddr != ::1 meta l4proto . th dport vmap @service-nodeports',
      ),
    ),
  );
  assert.ok(
    !text.some((l) => l.includes('masquerade clusterIP traffic')),
    'no detector, no masqueradeAll',
  );
});

test('affinity lifecycle through the reference-checking Fake: nothing refused, nothing left behind', () => {
  const sticky = (timeoutSeconds: number) =>
    svc(
      'default/web',
      {
        clusterIP: '10.96.0.10',
        type: 'LoadBalancer',
        ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }],
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds } },
        loadBalancerSourceRanges: ['203.0.113.0/25'],
      },
      { status: { loadBalancer: { ingress: [{ ip: '5.6.7.8' }] } } },
    );
  const fake = new NftFake();
  const h = new Harness();
  const run = (p: NftablesPlan) => {
    fake.run(p.cleanup);
    fake.run(p.transaction);
  };
  run(h.put(sticky(60), webSlice('10.244.0.5', '10.244.0.6')).sync());
  run(h.put(webSlice('10.244.0.5')).sync());
  run(h.put(sticky(90)).sync());
  h.nowMs += 2000;
  run(h.sync());
  run(h.remove(sticky(90)).sync());
  h.nowMs += 2000;
  run(h.sync());
  const table = fake.ruleset().tables.get('ip kube-proxy');
  assert.deepEqual(
    [...(table?.chains.keys() ?? [])].filter((c) => c.includes('/')),
    [],
  );
  assert.deepEqual(
    [...(table?.sets.keys() ?? [])].filter((s) => s.startsWith('affinity-')),
    [],
  );
  for (const s of table?.sets.values() ?? [])
    if (s.set.name !== 'nodeport-ips') assert.equal(s.elements.size, 0, s.set.name);
});
