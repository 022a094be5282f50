// Cluster DNS as a Pod sees it, through its resolv.conf search path: Service, headless,
// StatefulSet, hostname/subdomain, Pod, ExternalName, SRV and PTR records served by the
// lab's `svcnet dns` Pods behind kube-dns (10.96.0.10). Each scenario has its own Kubernetes
// namespace and queries from a Pod in it with dig (UDP and TCP), getent and curl. Modelled
// on sig-network's test/e2e/network/dns.go. Last, a DNS Pod is deleted under a dig loop: its
// lameduck must lose no query.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf, type ServiceSpecOptions } from '../../src/kube/testing.js';
import type { KubeObject, Pod } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod, sleep } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const ZONE = 'cluster.local';
const DNS_SERVICE_IP = '10.96.0.10';

/** Namespaces of the scenarios. */
const NS = {
  cluster: 'dns-cluster',
  svc: 'dns-svc',
  headless: 'dns-headless',
  sub: 'dns-sub',
  ext: 'dns-ext',
  config: 'dns-config',
} as const;

/** 7 search domains of 45 characters each (321 in all, with the separators). */
const LONG_SEARCHES = Array.from(
  { length: 7 },
  (_, i) => `${String(i + 1).padStart(38, '0')}.k8s.io`,
);

/** A Service with exactly `spec` (no ports unless given). */
function service(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return serviceOf(`${namespace}/${name}`, { ports: null, ...(spec as ServiceSpecOptions) });
}

function statefulSet(namespace: string, replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace },
    spec: {
      serviceName: 'web',
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'agnhost',
              image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
              args: ['netexec', '--http-port=8080', '--udp-port=8081'],
              ports: [{ name: 'http', containerPort: 8080 }],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

/** The object with fields added to its spec. */
function withSpec(obj: KubeObject, extra: Record<string, unknown>): KubeObject {
  const o = obj as KubeObject & { spec?: Record<string, unknown> };
  return { ...o, spec: { ...o.spec, ...extra } } as KubeObject;
}

/** `a-b-c-d.<ns>.pod.<zone>`: the Pod A record name of an IPv4 address. */
function podRecord(ip: string, namespace: string): string {
  return `${ip.replaceAll('.', '-')}.${namespace}.pod.${ZONE}`;
}

function ipOf(p: Pod | undefined): string {
  const ip = p?.status?.podIP ?? '';
  assert.match(ip, /^10\.244\.\d+\.\d+$/, `pod ${p?.metadata?.name ?? '?'} has no IP`);
  return ip;
}

describe('DNS (test/e2e/network/dns.go)', { skip }, () => {
  let lab: E2eLab;
  const client = (ns: string): string => `${ns}/client`;

  /** dig from a Pod, retried until the answer equals `want` (sorted) or 20 s pass. */
  async function digIs(
    from: string,
    args: readonly string[],
    want: readonly string[],
    search = false,
  ): Promise<void> {
    const sorted = [...want].sort();
    await eventually(
      `dig ${args.join(' ')} from ${from} to give ${sorted.join(', ') || 'nothing'}`,
      async () => {
        const got = (await lab.dig(from, args, search)).sort();
        assert.deepEqual(got, sorted, `dig ${args.join(' ')}${search ? ' +search' : ''}`);
        return true;
      },
      20_000,
      500,
    );
  }

  /**
   * The address a program gets for NAME in a Pod: glibc's getaddrinfo (`getent ahosts`, A and
   * AAAA together down the search path, /etc/hosts first), as curl and most clients resolve.
   * (`getent hosts` asks AAAA alone first; for a short name that walks the whole search path
   * and ends with the bare name, which the lab has no upstream to answer, so it waits out the
   * forwarder's timeout.)
   */
  async function getent(from: string, name: string): Promise<string | undefined> {
    const r = await lab.exec(from, ['getent', 'ahosts', name]);
    return r.code === 0 ? r.stdout.trim().split(/\s+/)[0] : undefined;
  }

  before(async () => {
    lab = await E2eLab.up('d');
    for (const ns of Object.values(NS)) await lab.createNamespace(ns);
    await lab.apply([
      netexecPod(NS.cluster, 'client'),
      // ClusterIP Service with two backends, and a client in the same namespace.
      netexecPod(NS.svc, 'client'),
      netexecPod(NS.svc, 'backend-1', {
        labels: { app: 'backend' },
        ports: [{ name: 'http', containerPort: 8080 }],
      }),
      netexecPod(NS.svc, 'backend-2', {
        labels: { app: 'backend' },
        ports: [{ name: 'http', containerPort: 8080 }],
      }),
      service(NS.svc, 'nginx-svc', {
        selector: { app: 'backend' },
        ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
      }),
      // Headless Service governing a StatefulSet.
      netexecPod(NS.headless, 'client'),
      service(NS.headless, 'web', {
        clusterIP: 'None',
        selector: { app: 'web' },
        ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
      }),
      statefulSet(NS.headless, 2),
      // Headless Services over a ready and a never-ready Pod (its probe asks /echo for a 503:
      // agnhost's netexec answers an unknown path as `/`, 200), one of them publishing
      // not-ready addresses.
      netexecPod(NS.headless, 'hl-ready', { labels: { app: 'hl' }, readinessPath: '/readyz' }),
      netexecPod(NS.headless, 'hl-unready', {
        labels: { app: 'hl' },
        readinessPath: '/echo?msg=no&code=503',
      }),
      service(NS.headless, 'hl', {
        clusterIP: 'None',
        selector: { app: 'hl' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      service(NS.headless, 'hl-all', {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: { app: 'hl' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      // A Pod with hostname + subdomain and the headless Service named like the subdomain.
      withSpec(netexecPod(NS.sub, 'querier', { labels: { app: 'querier' } }), {
        hostname: 'dns-querier-2',
        subdomain: 'dns-test-service-2',
      }),
      service(NS.sub, 'dns-test-service-2', {
        clusterIP: 'None',
        selector: { app: 'querier' },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      }),
      service(NS.ext, 'ext', { type: 'ExternalName', externalName: 'foo.example.com' }),
      // dnsPolicy None: the Pod's resolv.conf is its dnsConfig alone.
      withSpec(netexecPod(NS.config, 'custom'), {
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['10.96.0.10'],
          searches: ['svc.cluster.local', 'resolv.conf.local'],
          options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
        },
      }),
      // More than 6 search paths and more than 256 characters of them (ExpandedDNSConfig).
      withSpec(netexecPod(NS.config, 'long-search'), {
        dnsConfig: { searches: LONG_SEARCHES },
      }),
    ]);
    await Promise.all([
      lab.podsReady(NS.cluster, ['client'], 120_000),
      lab.podsReady(NS.svc, ['client', 'backend-1', 'backend-2'], 120_000),
      lab.podsReady(NS.headless, ['client', 'web-0', 'web-1', 'hl-ready'], 120_000),
      lab.podsReady(NS.sub, ['querier'], 120_000),
      lab.podsReady(NS.config, ['custom', 'long-search'], 120_000),
    ]);
    for (const [ns, svc, n] of [
      [NS.svc, 'nginx-svc', 2],
      [NS.headless, 'web', 2],
      [NS.sub, 'dns-test-service-2', 1],
    ] as const)
      await eventually(`${ns}/${svc} to have ${String(n)} endpoints`, async () =>
        (await lab.endpoints(ns, svc)).length === n ? true : undefined,
      );
  });
  after(async () => {
    await lab.down();
  });

  // [sig-network] DNS should provide DNS for the cluster [Conformance]
  test('kubernetes.default resolves to 10.96.0.1 over UDP and TCP; a Pod has its A record', async () => {
    const from = client(NS.cluster);
    for (const name of ['kubernetes.default', 'kubernetes.default.svc'])
      for (const proto of ['+notcp', '+tcp']) await digIs(from, [proto, name], ['10.96.0.1'], true);
    await digIs(from, [`kubernetes.default.svc.${ZONE}`], ['10.96.0.1']);
    await digIs(from, ['-x', '10.96.0.1'], [`kubernetes.default.svc.${ZONE}.`]);
    // The answer as a client sees it: authoritative, with the TTL of kubeadm's Corefile
    // (`ttl 30`), which the lab's DNS Pods read from the coredns ConfigMap.
    const full = await lab.exec(from, [
      'dig',
      '+noall',
      '+answer',
      '+comments',
      `kubernetes.default.svc.${ZONE}`,
    ]);
    assert.match(full.stdout, /flags: qr aa rd ra;/);
    assert.match(
      full.stdout,
      /^kubernetes\.default\.svc\.cluster\.local\.\s+30\s+IN\s+A\s+10\.96\.0\.1$/m,
    );
    assert.equal(await getent(from, 'kubernetes.default'), '10.96.0.1');
    const ip = ipOf(await lab.pod(NS.cluster, 'client'));
    for (const proto of ['+notcp', '+tcp'])
      await digIs(from, [proto, podRecord(ip, NS.cluster)], [ip]);
    // A name in no namespace that exists is NXDOMAIN, not some address.
    const r = await lab.exec(from, ['dig', '+time=3', `nosuch.${NS.cluster}.svc.${ZONE}`]);
    assert.match(r.stdout, /status: NXDOMAIN/);
  });

  // [sig-network] DNS should provide DNS for services [Conformance]
  // [sig-network] DNS should resolve DNS of partial qualified names for services [LinuxOnly] [Conformance]
  test('nginx-svc, nginx-svc.<ns>, nginx-svc.<ns>.svc and the full name give the ClusterIP', async () => {
    const from = client(NS.svc);
    const ip = (await lab.service(NS.svc, 'nginx-svc'))?.spec?.clusterIP ?? '';
    assert.match(ip, /^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/);
    for (const name of ['nginx-svc', `nginx-svc.${NS.svc}`, `nginx-svc.${NS.svc}.svc`])
      for (const proto of ['+notcp', '+tcp']) await digIs(from, [proto, name], [ip], true);
    await digIs(from, [`nginx-svc.${NS.svc}.svc.${ZONE}`], [ip]);
    // The libc resolver (ndots:5 + search) and a client program by short name.
    assert.equal(await getent(from, 'nginx-svc'), ip);
    assert.equal(await getent(from, `nginx-svc.${NS.svc}`), ip);
    const seen = new Set<string>();
    await eventually(
      'curl nginx-svc/hostname to reach both backends',
      async () => {
        const r = await lab.curl(from, 'http://nginx-svc/hostname');
        assert.equal(r.code, 0, `curl http://nginx-svc/hostname exited ${String(r.code)}`);
        assert.match(r.body, /^backend-[12]$/);
        seen.add(r.body);
        return seen.size === 2;
      },
      30_000,
      0,
    );
    // From another namespace, the short name is not that Service (the first search domain
    // has no nginx-svc), but <svc>.<ns> is.
    const other = await lab.exec(client(NS.cluster), [
      'dig',
      '+time=3',
      `nginx-svc.${NS.cluster}.svc.${ZONE}`,
    ]);
    assert.match(other.stdout, /status: NXDOMAIN/);
    await digIs(client(NS.cluster), [`nginx-svc.${NS.svc}`], [ip], true);
  });

  // [sig-network] DNS should provide DNS for services [Conformance] (SRV, PTR)
  test('SRV _http._tcp for the ClusterIP Service and PTR of its ClusterIP', async () => {
    const from = client(NS.svc);
    const ip = (await lab.service(NS.svc, 'nginx-svc'))?.spec?.clusterIP ?? '';
    const fqdn = `nginx-svc.${NS.svc}.svc.${ZONE}.`;
    await digIs(from, ['SRV', `_http._tcp.nginx-svc.${NS.svc}.svc.${ZONE}`], [`0 100 80 ${fqdn}`]);
    await digIs(from, ['SRV', '_http._tcp.nginx-svc'], [`0 100 80 ${fqdn}`], true);
    await digIs(from, ['SRV', `_http._tcp.nginx-svc.${NS.svc}`], [`0 100 80 ${fqdn}`], true);
    // A port name the Service does not have answers nothing.
    assert.deepEqual(
      await lab.dig(from, ['SRV', `_https._tcp.nginx-svc.${NS.svc}.svc.${ZONE}`]),
      [],
    );
    await digIs(from, ['-x', ip], [fqdn]);
  });

  // [sig-network] DNS should provide DNS for services [Conformance] (headless)
  test('headless web: A records are the ready Pods, web-0.web.<ns>.svc names, SRV and PTR', async () => {
    const from = client(NS.headless);
    const ns = NS.headless;
    const ip0 = ipOf(await lab.pod(ns, 'web-0'));
    const ip1 = ipOf(await lab.pod(ns, 'web-1'));
    for (const proto of ['+notcp', '+tcp']) await digIs(from, [proto, 'web'], [ip0, ip1], true);
    await digIs(from, [`web.${ns}.svc.${ZONE}`], [ip0, ip1]);
    await digIs(from, [`web-0.web.${ns}.svc.${ZONE}`], [ip0]);
    await digIs(from, [`web-1.web.${ns}.svc.${ZONE}`], [ip1]);
    await digIs(from, ['web-0.web'], [ip0], true);
    assert.equal(await getent(from, 'web-1.web'), ip1);
    // SRV: one record per endpoint, named by its hostname, with the endpoint (target) port.
    await digIs(
      from,
      ['SRV', `_http._tcp.web.${ns}.svc.${ZONE}`],
      [`0 50 8080 web-0.web.${ns}.svc.${ZONE}.`, `0 50 8080 web-1.web.${ns}.svc.${ZONE}.`],
    );
    await digIs(from, ['-x', ip0], [`web-0.web.${ns}.svc.${ZONE}.`]);
    await digIs(from, ['-x', ip1], [`web-1.web.${ns}.svc.${ZONE}.`]);
    // The Pods answer on the addresses DNS gave.
    const r = await lab.curl(from, `http://web-0.web:8080/hostname`);
    assert.deepEqual(r, { code: 0, body: 'web-0' });
  });

  // [sig-network] DNS should provide DNS for services [Conformance] (headless, readiness): a
  // headless name lists the ready endpoints only, unless publishNotReadyAddresses.
  test('headless A records leave out a not-ready Pod unless publishNotReadyAddresses', async () => {
    const from = client(NS.headless);
    const ns = NS.headless;
    const ready = ipOf(await lab.pod(ns, 'hl-ready'));
    const unready = await eventually('hl-unready to run, not ready', async () => {
      const p = await lab.pod(ns, 'hl-unready');
      const notReady = p?.status?.conditions?.some(
        (c) => c.type === 'Ready' && c.status === 'False',
      );
      return p?.status?.phase === 'Running' && notReady === true ? ipOf(p) : undefined;
    });
    await digIs(from, ['hl'], [ready], true);
    await digIs(from, [`hl-all.${ns}.svc.${ZONE}`], [ready, unready]);
    const srv = await lab.dig(from, ['SRV', `_http._tcp.hl.${ns}.svc.${ZONE}`]);
    assert.deepEqual(srv, [`0 100 8080 ${ready.replaceAll('.', '-')}.hl.${ns}.svc.${ZONE}.`]);
  });

  // [sig-network] DNS should provide DNS for services [Conformance] (headless, after a scale)
  test('headless A records follow a StatefulSet scale up and down', async () => {
    const from = client(NS.headless);
    const ns = NS.headless;
    await lab.apply([statefulSet(ns, 3)]);
    const pods = await lab.podsReady(ns, ['web-0', 'web-1', 'web-2'], 90_000);
    await digIs(from, ['web'], pods.map(ipOf), true);
    await digIs(from, [`web-2.web.${ns}.svc.${ZONE}`], [ipOf(pods[2])]);
    await lab.apply([statefulSet(ns, 1)]);
    await eventually(
      'web-1 and web-2 to be gone',
      async () =>
        (await lab.pod(ns, 'web-1')) === undefined && (await lab.pod(ns, 'web-2')) === undefined,
      90_000,
      500,
    );
    await digIs(from, ['web'], [ipOf(pods[0])], true);
    const gone = await lab.exec(from, ['dig', '+time=3', `web-2.web.${ns}.svc.${ZONE}`]);
    assert.match(gone.stdout, /status: NXDOMAIN/);
  });

  // [sig-network] DNS should provide DNS for pods for Hostname [Conformance]
  // [sig-network] DNS should provide DNS for pods for Subdomain [Conformance]
  test('hostname + subdomain: dns-querier-2.dns-test-service-2.<ns>.svc resolves to the Pod', async () => {
    const ns = NS.sub;
    const from = `${ns}/querier`;
    const ip = ipOf(await lab.pod(ns, 'querier'));
    const fqdn = `dns-querier-2.dns-test-service-2.${ns}.svc.${ZONE}`;
    for (const proto of ['+notcp', '+tcp']) await digIs(from, [proto, fqdn], [ip]);
    await digIs(from, ['dns-querier-2.dns-test-service-2'], [ip], true);
    await digIs(from, [`dns-querier-2.dns-test-service-2.${ns}`], [ip], true);
    // From another namespace, the full name works too.
    await digIs(client(NS.cluster), [fqdn], [ip]);
    // The Pod knows its own FQDN (/etc/hosts, as the kubelet writes it: a line per Pod IP,
    // and getent prefers the IPv6 one in a dual-stack lab).
    const own = ((await lab.pod(ns, 'querier'))?.status?.podIPs ?? []).map((p) => p.ip);
    const hosts = await lab.exec(from, ['getent', 'hosts', fqdn]);
    assert.ok(
      own.includes(hosts.stdout.trim().split(/\s+/)[0] ?? ''),
      `getent hosts ${fqdn}: ${hosts.stdout} (Pod IPs ${own.join(', ')})`,
    );
    assert.ok(own.includes((await getent(from, 'dns-querier-2.dns-test-service-2')) ?? ''));
    // ... and its hostname (upstream checks both entries from the Pod itself).
    assert.ok(own.includes((await getent(from, 'dns-querier-2')) ?? ''));
    await digIs(from, ['-x', ip], [`${fqdn}.`]);
    await digIs(from, [podRecord(ip, ns)], [ip]);
  });

  // [sig-network] DNS should provide DNS for ExternalName services [Conformance]
  test('ExternalName: CNAME to the target, follows a change, then A once it is a ClusterIP Service', async () => {
    const from = client(NS.svc);
    const fqdn = `ext.${NS.ext}.svc.${ZONE}`;
    await digIs(from, ['CNAME', fqdn], ['foo.example.com.']);
    await digIs(from, ['CNAME', `ext.${NS.ext}`], ['foo.example.com.'], true);
    // No proxy rule and no ClusterIP exist for it.
    assert.equal((await lab.service(NS.ext, 'ext'))?.spec?.clusterIP, undefined);
    await lab.apply([
      service(NS.ext, 'ext', { type: 'ExternalName', externalName: 'bar.example.com' }),
    ]);
    await digIs(from, ['CNAME', fqdn], ['bar.example.com.']);
    await lab.apply([
      service(NS.ext, 'ext', {
        type: 'ClusterIP',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
      }),
    ]);
    const ip = await eventually('ext to get a ClusterIP', async () => {
      const c = (await lab.service(NS.ext, 'ext'))?.spec?.clusterIP;
      return c !== undefined && c !== '' && c !== 'None' ? c : undefined;
    });
    await digIs(from, [fqdn], [ip]);
    await digIs(from, ['CNAME', fqdn], []);
  });

  // [sig-network] DNS should support configurable pod DNS nameservers [Conformance]
  // [sig-network] DNS should support configurable pod resolv.conf
  test('dnsPolicy None: the Pod resolves with its dnsConfig nameservers, searches and options', async () => {
    const from = `${NS.config}/custom`;
    const conf = await lab.exec(from, ['cat', '/etc/resolv.conf']);
    assert.equal(
      conf.stdout,
      'nameserver 10.96.0.10\nsearch svc.cluster.local resolv.conf.local\noptions ndots:2 edns0\n',
    );
    // Its own search path, not the namespace's: <svc>.<ns> resolves through svc.cluster.local.
    const ip = (await lab.service(NS.svc, 'nginx-svc'))?.spec?.clusterIP ?? '';
    await digIs(from, [`nginx-svc.${NS.svc}`], [ip], true);
    assert.equal(await getent(from, `nginx-svc.${NS.svc}`), ip);
    const r = await lab.curl(from, `http://nginx-svc.${NS.svc}/hostname`);
    assert.equal(r.code, 0, `curl nginx-svc.${NS.svc} exited ${String(r.code)}`);
    assert.match(r.body, /^backend-[12]$/);
  });

  // [sig-network] DNS should work with the pod containing more than 6 DNS search paths and
  // longer than 256 search list characters
  test('ClusterFirst + dnsConfig: 10 search paths of more than 256 characters, and cluster names still resolve', async () => {
    const from = `${NS.config}/long-search`;
    const conf = await lab.exec(from, ['cat', '/etc/resolv.conf']);
    const search = /^search (.*)$/m.exec(conf.stdout)?.[1] ?? '';
    const paths = [`${NS.config}.svc.${ZONE}`, `svc.${ZONE}`, ZONE, ...LONG_SEARCHES];
    assert.deepEqual(search.split(' '), paths, conf.stdout);
    assert.ok(search.length > 256);
    assert.match(conf.stdout, /^nameserver 10\.96\.0\.10$/m);
    assert.match(conf.stdout, /^options ndots:5$/m);
    const ip = (await lab.service(NS.svc, 'nginx-svc'))?.spec?.clusterIP ?? '';
    assert.equal(await getent(from, 'kubernetes.default'), '10.96.0.1');
    assert.equal(await getent(from, `nginx-svc.${NS.svc}`), ip);
    await digIs(from, ['kubernetes.default.svc'], ['10.96.0.1'], true);
  });

  // Issue 28: without lameduck a deleted DNS Pod stopped at SIGTERM, and the queries the
  // proxies still sent it before its endpoint was withdrawn (~0.75 s) were lost. CoreDNS as
  // kubeadm ships it (`health { lameduck 5s }`) loses none; neither may we.
  test('deleting a DNS Pod under a 20 q/s dig loop loses no query (lameduck)', async (t) => {
    const from = client(NS.cluster);
    const dnsPods = await lab.client.list('Pod', {
      namespace: 'kube-system',
      labelSelector: 'k8s-app=kube-dns',
    });
    const victim = dnsPods.find((p) => p.metadata?.deletionTimestamp === undefined)?.metadata?.name;
    assert.ok(victim !== undefined && dnsPods.length >= 2, 'two DNS Pods to spread over');
    // 240 queries, two every 100 ms (20 q/s; fewer `sleep` forks than one every 50 ms), each
    // on its own source port (a new flow through the proxies), each waiting up to 3 s for its
    // answer (as lab.dig). The script prints when it started and stopped sending.
    const n = 240;
    const dig = `dig +short +time=3 +tries=1 @${DNS_SERVICE_IP} kubernetes.default.svc.${ZONE}`;
    const script = [
      'echo "start $(date +%s%N)"',
      'i=0',
      `while [ $i -lt ${String(n)} ]; do`,
      `  for k in 1 2; do i=$((i+1)); ( r=$(${dig} 2>&1 | tr '\\n' ' '); echo "q$i $r" ) & done`,
      '  sleep 0.1',
      'done',
      'echo "sent $(date +%s%N)"',
      'wait',
    ].join('\n');
    const loop = lab.exec(from, ['sh', '-c', script]);
    await sleep(2000);
    const deletedAt = Date.now();
    await lab.deleteObject('Pod', 'kube-system', victim);
    // The Pod goes only after its lameduck, and well before the 30 s grace period's SIGKILL.
    const goneAfterMs = await eventually(
      `DNS Pod ${victim} to be gone`,
      async () =>
        (await lab.pod('kube-system', victim)) === undefined ? Date.now() - deletedAt : undefined,
      60_000,
      250,
    );
    const r = await loop;
    const stamp = (what: string): number =>
      Number(new RegExp(`^${what} (\\d+)$`, 'm').exec(r.stdout)?.[1]) / 1e9;
    const sendingS = stamp('sent') - stamp('start');
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('q'));
    const lost = lines.filter((l) => !/^q\d+ 10\.96\.0\.1 $/.test(l));
    t.diagnostic(
      `sent ${String(lines.length)} queries in ${sendingS.toFixed(1)} s ` +
        `(${(lines.length / sendingS).toFixed(1)} q/s), lost ${String(lost.length)}; ` +
        `${victim} gone ${String(goneAfterMs)} ms after its delete`,
    );
    assert.equal(lines.length, n, `every query reported: ${r.stderr}`);
    assert.deepEqual(lost, [], 'queries lost while a DNS Pod terminated');
    assert.ok(goneAfterMs >= 5000, `the Pod went after its 5 s lameduck, not at once`);
    assert.ok(goneAfterMs < 30_000, `the lameduck ended the Pod, not the grace period's SIGKILL`);
    await eventually(
      'kube-dns to have two ready endpoints again',
      async () => ((await lab.endpoints('kube-system', 'kube-dns')).length >= 2 ? true : undefined),
      120_000,
      500,
    );
  });
});
