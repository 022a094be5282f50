// Unit tests of the daemon's nfacct wiring against Fakes: which objects it creates, which
// rules then count into them, that a host without nfacct keeps the proxy working, and that
// the two kube-proxy metrics report the objects' packet counts at scrape time; and the modes:
// nftables mode removes iptables leftovers and programs its table, iptables mode removes the
// nftables table, `/proxyMode` names the mode; nftables mode follows ServiceCIDRs (and runs on
// without them when the server answers 404), iptables mode never starts that informer.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { defaultProxyConfig } from './config.js';
import { FakeInformer } from '../kube/informer.js';
import type { EndpointSlice, Node, Service, ServiceCIDR } from '../kube/types.js';
import { FakeIptables } from '../netfilter/iptables/fake.js';
import type { IptablesTableName } from '../netfilter/iptables/model.js';
import { FakeExecer } from '../os/exec.js';
import { FakeNfacct } from '../os/nfacct.js';
import { FakeSysctl } from '../os/sysctl.js';
import { FakeClock } from '../util/clock.js';
import { ensureNfacctCounters, startProxyDaemon } from './daemon.js';
import { FakeNftBackend } from '../netfilter/nftables/backend.js';
import {
  NFACCT_CT_STATE_INVALID_DROPPED as CT_INVALID,
  NFACCT_LOCALHOST_NODEPORTS_ACCEPTED as LOCALHOST_NPS,
} from './iptables/names.js';

const NODE = 'node-a';

/** FakeIptables with the one IptablesBackend method it lacks. */
class BackendFake extends FakeIptables {
  ruleExists(table: IptablesTableName, chain: string, args: readonly string[]): Promise<boolean> {
    const line = `-A ${chain} ${args.join(' ')}`;
    return Promise.resolve(this.saveSync(table).split('\n').includes(line));
  }
}
const LOCALHOST_METRIC = 'kubeproxy_iptables_localhost_nodeports_accepted_packets_total';
const INVALID_METRIC = 'kubeproxy_iptables_ct_state_invalid_dropped_packets_total';

function nodePortService(): Service {
  return {
    metadata: { name: 'web', namespace: 'ns', resourceVersion: '1' },
    spec: {
      type: 'NodePort',
      clusterIP: '10.96.0.10',
      clusterIPs: ['10.96.0.10'],
      ports: [{ name: 'p', port: 80, targetPort: 8080, nodePort: 30080, protocol: 'TCP' }],
    },
  };
}

function slice(): EndpointSlice {
  return {
    addressType: 'IPv4',
    metadata: {
      name: 'web-1',
      namespace: 'ns',
      labels: { 'kubernetes.io/service-name': 'web' },
    },
    ports: [{ name: 'p', port: 8080, protocol: 'TCP' }],
    endpoints: [{ addresses: ['10.244.1.5'], conditions: { ready: true }, nodeName: NODE }],
  };
}

/** A log that records warn lines about nfacct (message and fields). */
function recordingLog(): { log: pino.Logger; warnings: { msg: string; obj: unknown }[] } {
  const warnings: { msg: string; obj: unknown }[] = [];
  const log = pino(
    { level: 'warn' },
    {
      write(line: string) {
        const o = JSON.parse(line) as { msg: string; level: number };
        if (o.level === 40 && /nfacct/.test(o.msg)) warnings.push({ msg: o.msg, obj: o });
      },
    },
  );
  return { log, warnings };
}

async function start(nfacct: FakeNfacct) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const ipt = new BackendFake('IPv4');
  const registry = new Registry();
  const services = new FakeInformer<Service>();
  const slices = new FakeInformer<EndpointSlice>();
  const nodes = new FakeInformer<Node>();
  const { log, warnings } = recordingLog();
  const daemon = await startProxyDaemon(
    {
      ...defaultProxyConfig(NODE),
      healthzBindAddress: '',
      metricsBindAddress: '',
      clusterCIDRs: ['10.244.0.0/16'],
    },
    {
      execer: new FakeExecer(),
      sysctl: new FakeSysctl(),
      clock,
      log,
      informers: { services, endpointSlices: slices, nodes },
      registry,
      localAddresses: () => ['127.0.0.1/8', '192.0.2.10/24'],
      iptables: () => ipt,
      nfacct,
    },
  );
  services.upsert(nodePortService());
  slices.upsert(slice());
  await clock.advance(0);
  return { daemon, ipt, registry, warnings, clock };
}

async function metricValue(registry: Registry, name: string): Promise<number | undefined> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values as { value: number }[] | undefined)?.[0]?.value;
}

/** Runs `body` against a started daemon and stops the daemon afterwards, whatever happens. */
async function withDaemon(
  nfacct: FakeNfacct,
  body: (s: Awaited<ReturnType<typeof start>>) => void | Promise<void>,
): Promise<void> {
  const s = await start(nfacct);
  try {
    await body(s);
  } finally {
    await s.daemon.stop();
  }
}

test('the daemon creates both nfacct objects and the localhost NodePort and INVALID drop rules count into them', async () => {
  const nfacct = new FakeNfacct();
  await withDaemon(nfacct, (s) => {
    assert.deepEqual([...nfacct.objects.keys()].sort(), [CT_INVALID, LOCALHOST_NPS]);
    assert.deepEqual(s.daemon.nfacct, {
      ctStateInvalidDropped: true,
      localhostNodePortsAccepted: true,
    });
    assert.match(
      s.ipt.saveSync('nat'),
      /-A KUBE-NODEPORTS .*-d 127\.0\.0\.0\/8 --dport 30080 -m nfacct --nfacct-name localhost_nps_accepted_pkts -j KUBE-EXT-/,
    );
    assert.match(
      s.ipt.saveSync('filter'),
      /-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP/,
    );
    assert.equal(s.warnings.length, 0);
  });
});

test('existing nfacct objects are kept with their counts', async () => {
  const nfacct = new FakeNfacct();
  nfacct.objects.set(LOCALHOST_NPS, { packets: 7, bytes: 420 });
  await withDaemon(nfacct, async (s) => {
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 7);
  });
});

test('the metrics report the kernel counts at each scrape', async () => {
  const nfacct = new FakeNfacct();
  await withDaemon(nfacct, async (s) => {
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 0);
    assert.equal(await metricValue(s.registry, INVALID_METRIC), 0);
    nfacct.count(LOCALHOST_NPS, 5);
    nfacct.count(CT_INVALID, 2);
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 5);
    assert.equal(await metricValue(s.registry, INVALID_METRIC), 2);
    nfacct.count(LOCALHOST_NPS, 3);
    const text = await s.registry.metrics();
    assert.match(text, /^kubeproxy_iptables_localhost_nodeports_accepted_packets_total 8$/m);
    assert.match(
      text,
      /^# TYPE kubeproxy_iptables_localhost_nodeports_accepted_packets_total counter$/m,
    );
    assert.match(text, /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total 2$/m);
  });
});

test('a read failure at scrape keeps the last value and is logged', async () => {
  const nfacct = new FakeNfacct();
  await withDaemon(nfacct, async (s) => {
    nfacct.count(LOCALHOST_NPS, 4);
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 4);
    nfacct.objects.delete(LOCALHOST_NPS);
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 4);
    assert.ok(
      s.warnings.some((w) => w.msg === 'Cannot read nfacct object'),
      JSON.stringify(s.warnings),
    );
  });
});

test('without nfacct support the proxy still programs rules, without nfacct matches or metrics, and says so once', async () => {
  const nfacct = new FakeNfacct({ unsupported: 'cannot start: spawn nfacct ENOENT' });
  await withDaemon(nfacct, async (s) => {
    assert.deepEqual(s.daemon.nfacct, {
      ctStateInvalidDropped: false,
      localhostNodePortsAccepted: false,
    });
    const nat = s.ipt.saveSync('nat');
    assert.match(nat, /-A KUBE-NODEPORTS .*--dport 30080 -j KUBE-EXT-/);
    assert.doesNotMatch(nat + s.ipt.saveSync('filter'), /nfacct/);
    assert.match(
      s.ipt.saveSync('filter'),
      /-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP/,
    );
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), undefined);
    assert.equal(await metricValue(s.registry, INVALID_METRIC), undefined);
    assert.equal(s.warnings.length, 1, JSON.stringify(s.warnings));
    assert.match(s.warnings[0]?.msg ?? '', /Cannot create nfacct objects/);
  });
});

test('only the objects that could be created are used', async () => {
  const nfacct = new FakeNfacct();
  nfacct.refuse.add(CT_INVALID);
  const { log, warnings } = recordingLog();
  assert.deepEqual(await ensureNfacctCounters(nfacct, log), {
    ctStateInvalidDropped: false,
    localhostNodePortsAccepted: true,
  });
  assert.equal(warnings.length, 1);
  assert.deepEqual(Object.keys((warnings[0]?.obj as { failed: object }).failed), [CT_INVALID]);

  await withDaemon(nfacct, async (s) => {
    assert.match(s.ipt.saveSync('nat'), /--nfacct-name localhost_nps_accepted_pkts/);
    assert.doesNotMatch(s.ipt.saveSync('filter'), /nfacct/);
    assert.equal(await metricValue(s.registry, INVALID_METRIC), undefined);
    assert.equal(await metricValue(s.registry, LOCALHOST_METRIC), 0);
  });
});

/** iptables mode's leftovers in a FakeIptables: KUBE-SERVICES hooked from OUTPUT. */
function iptablesLeftovers(): BackendFake {
  const ipt = new BackendFake('IPv4');
  const hook = '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES';
  ipt.restoreSync(`*nat\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n${hook}\nCOMMIT\n`, {
    noflush: true,
  });
  return ipt;
}

test('nftables mode: the iptables leftovers go at start, the table is programmed, /proxyMode says nftables', async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const ipt = iptablesLeftovers();
  const nft = new FakeNftBackend('IPv4');
  const services = new FakeInformer<Service>();
  const slices = new FakeInformer<EndpointSlice>();
  const nodes = new FakeInformer<Node>();
  const nfacct = new FakeNfacct();
  const daemon = await startProxyDaemon(
    {
      ...defaultProxyConfig(NODE),
      mode: 'nftables',
      healthzBindAddress: '',
      metricsBindAddress: '127.0.0.1:0',
      clusterCIDRs: ['10.244.0.0/16'],
    },
    {
      execer: new FakeExecer(),
      sysctl: new FakeSysctl(),
      clock,
      log: pino({ level: 'silent' }),
      informers: { services, endpointSlices: slices, nodes },
      localAddresses: () => ['127.0.0.1/8', '192.0.2.10/24'],
      iptables: () => ipt,
      nftables: () => nft,
      nfacct,
    },
  );
  try {
    assert.doesNotMatch(ipt.saveSync('nat'), /KUBE-/);
    assert.equal(nfacct.objects.size, 0, 'no nfacct objects in nftables mode');
    services.upsert(nodePortService());
    slices.upsert(slice());
    await services.start();
    await slices.start();
    await clock.advance(0);
    const table = nft.kernel.ruleset().tables.get('ip kube-proxy');
    assert.ok(table?.sets.get('service-ips')?.elements.has('10.96.0.10 . tcp . 80'));
    assert.ok(table?.sets.get('service-nodeports')?.elements.has('tcp . 30080'));
    assert.doesNotMatch(ipt.saveSync('nat'), /KUBE-/, 'nothing written to iptables');
    const base = `http://127.0.0.1:${String(daemon.metricsPort)}`;
    assert.equal(await (await fetch(`${base}/proxyMode`)).text(), 'nftables');
    const text = await (await fetch(`${base}/metrics`)).text();
    assert.match(text, /^kubeproxy_sync_proxy_rules_nftables_sync_failures_total 0$/m);
    assert.match(text, /^kubeproxy_sync_proxy_rules_last_timestamp_seconds \d/m);
    assert.doesNotMatch(text, /iptables/, 'no iptables metric in nftables mode');
  } finally {
    await daemon.stop();
  }
});

test('iptables mode: an nftables table left by nftables mode goes at start', async () => {
  const nft = new FakeNftBackend('IPv4');
  nft.kernel.load('add table ip kube-proxy\nadd chain ip kube-proxy services\n');
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const daemon = await startProxyDaemon(
    { ...defaultProxyConfig(NODE), healthzBindAddress: '', metricsBindAddress: '' },
    {
      execer: new FakeExecer(),
      sysctl: new FakeSysctl(),
      clock,
      log: pino({ level: 'silent' }),
      informers: {
        services: new FakeInformer<Service>(),
        endpointSlices: new FakeInformer<EndpointSlice>(),
        nodes: new FakeInformer<Node>(),
      },
      iptables: () => new BackendFake('IPv4'),
      nftables: () => nft,
      nfacct: new FakeNfacct(),
    },
  );
  await daemon.stop();
  assert.equal(nft.kernel.ruleset().tables.size, 0);
});

/** Starts a daemon in `mode` with Fake informers and backends, ServiceCIDRs included. */
async function startWithServiceCIDRs(mode: 'iptables' | 'nftables') {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const nft = new FakeNftBackend('IPv4');
  const lines: { msg: string }[] = [];
  const log = pino(
    { level: 'info' },
    {
      write(line: string) {
        lines.push(JSON.parse(line) as { msg: string });
      },
    },
  );
  let started = 0;
  let stopped = 0;
  const serviceCIDRs = new (class extends FakeInformer<ServiceCIDR> {
    override start(): Promise<void> {
      started++;
      return super.start();
    }
    override stop(): Promise<void> {
      stopped++;
      return super.stop();
    }
  })();
  const services = new FakeInformer<Service>([nodePortService()]);
  const slices = new FakeInformer<EndpointSlice>([slice()]);
  const daemon = await startProxyDaemon(
    {
      ...defaultProxyConfig(NODE),
      mode,
      healthzBindAddress: '',
      metricsBindAddress: '',
    },
    {
      execer: new FakeExecer(),
      sysctl: new FakeSysctl(),
      clock,
      log,
      informers: {
        services,
        endpointSlices: slices,
        nodes: new FakeInformer<Node>(),
        serviceCIDRs,
      },
      localAddresses: () => ['127.0.0.1/8', '192.0.2.10/24'],
      iptables: () => new BackendFake('IPv4'),
      nftables: () => nft,
      nfacct: new FakeNfacct(),
    },
  );
  await clock.advance(0);
  const dropRule = (): string | undefined =>
    nft.kernel
      .ruleset()
      .tables.get('ip kube-proxy')
      ?.chains.get('cluster-ips-check')
      ?.rules.map((r) => r.comment)
      .find((c) => c === 'Drop traffic to unallocated ClusterIPs');
  return {
    clock,
    nft,
    lines,
    serviceCIDRs,
    daemon,
    dropRule,
    counts: () => ({ started, stopped }),
  };
}

test('nftables mode: the ServiceCIDR informer feeds the drop rule for unallocated ClusterIPs', async () => {
  const s = await startWithServiceCIDRs('nftables');
  try {
    assert.equal(s.counts().started, 1);
    assert.equal(s.dropRule(), undefined);
    s.serviceCIDRs.upsert({
      kind: 'ServiceCIDR',
      metadata: { name: 'kubernetes' },
      spec: { cidrs: ['10.96.0.0/12'] },
    });
    await s.clock.advance(1000);
    assert.equal(s.dropRule(), 'Drop traffic to unallocated ClusterIPs');
  } finally {
    await s.daemon.stop();
  }
});

test('nftables mode: a 404 for ServiceCIDRs is logged once and the informer stopped; the proxy runs on', async () => {
  const s = await startWithServiceCIDRs('nftables');
  try {
    const notFound = Object.assign(new Error('HTTP 404'), { statusCode: 404 });
    s.serviceCIDRs.fail(notFound);
    s.serviceCIDRs.fail(notFound);
    const said = s.lines.filter((l) => /does not serve ServiceCIDRs/.test(l.msg));
    assert.equal(said.length, 1);
    assert.equal(s.counts().stopped, 1);
    assert.ok(s.nft.kernel.ruleset().tables.get('ip kube-proxy')?.chains.has('services'));
  } finally {
    await s.daemon.stop();
  }
});

test('iptables mode: ServiceCIDRs are not watched', async () => {
  const s = await startWithServiceCIDRs('iptables');
  try {
    assert.equal(s.counts().started, 0);
  } finally {
    await s.daemon.stop();
  }
});
