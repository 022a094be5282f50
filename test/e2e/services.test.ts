// Service data-plane scenarios over a real lab, each after a Kubernetes sig-network e2e test
// (test/e2e/network/service.go): endpoints and traffic following Pods as they come and go,
// named multiport targetPorts, one port over TCP and UDP, ClientIP session affinity and
// switching it, the client Pod's source IP kept through a ClusterIP, hairpin traffic, and
// refusing connections to a Service without endpoints. One lab; one namespace per scenario.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf, type ServiceSpecOptions } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject, Service } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod, type CurlResult } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());

type ServicePortSpec = {
  name?: string;
  port: number;
  targetPort: number | string;
  protocol?: 'TCP' | 'UDP';
};

function service(
  namespace: string,
  name: string,
  selector: Record<string, string>,
  ports: ServicePortSpec[],
  extra: Record<string, unknown> = {},
): KubeObject {
  return serviceOf(`${namespace}/${name}`, {
    selector,
    ports: ports.map((p) => ({ protocol: 'TCP', ...p })),
    ...(extra as ServiceSpecOptions),
  });
}

/** `pod@ip portName=port` for every ready endpoint of the Service's EndpointSlices, sorted. */
async function sliceView(lab: E2eLab, namespace: string, svc: string): Promise<string[]> {
  const slices: EndpointSlice[] = await lab.client.list('EndpointSlice', {
    namespace,
    labelSelector: `kubernetes.io/service-name=${svc}`,
  });
  return slices
    .flatMap((s) =>
      (s.endpoints ?? [])
        .filter((e) => e.conditions?.ready !== false)
        .map((e) => {
          const ports = (s.ports ?? [])
            .map((p) => `${p.name ?? ''}=${String(p.port ?? '')}`)
            .sort()
            .join(',');
          return `${e.targetRef?.name ?? '?'}@${e.addresses.join('|')} ${ports}`;
        }),
    )
    .sort();
}

async function clusterIP(lab: E2eLab, namespace: string, name: string): Promise<string> {
  const ip = (await lab.service(namespace, name))?.spec?.clusterIP ?? '';
  assert.match(ip, /^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/, `${namespace}/${name} ClusterIP`);
  return ip;
}

async function podIP(lab: E2eLab, namespace: string, name: string): Promise<string> {
  const ip = (await lab.pod(namespace, name))?.status?.podIP ?? '';
  assert.match(ip, /^10\.244\.\d+\.\d+$/, `${namespace}/${name} podIP`);
  return ip;
}

/** `n` sequential GETs from `from`; every one must succeed; returns the bodies in order. */
async function answers(lab: E2eLab, from: string, url: string, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r: CurlResult = await lab.curl(from, url);
    assert.equal(r.code, 0, `GET ${url} from ${from} failed: curl exit ${String(r.code)}`);
    out.push(r.body);
  }
  return out;
}

/**
 * GETs `url` from `from` until every one of `want` has answered. A failed request is retried
 * (the proxy may still be converging), but an answer outside `want` fails the test at once.
 */
async function untilAllAnswer(
  lab: E2eLab,
  from: string,
  url: string,
  want: readonly string[],
  timeoutMs = 60_000,
): Promise<void> {
  const seen = new Set<string>();
  const wrong: string[] = [];
  await eventually(
    `${want.join(', ')} to answer ${url} from ${from}`,
    async () => {
      const r = await lab.curl(from, url);
      if (r.code !== 0) return false;
      if (want.includes(r.body)) seen.add(r.body);
      else wrong.push(r.body);
      return wrong.length > 0 || seen.size === want.length;
    },
    timeoutMs,
    0,
  );
  assert.deepEqual(wrong, [], `${url} from ${from} answered outside ${want.join(', ')}`);
}

/** netexec's /dial from a Pod, keeping the errors (lab.dial() keeps only the answers). */
async function dialFull(
  lab: E2eLab,
  fromIP: string,
  protocol: 'http' | 'udp',
  host: string,
  port: number,
): Promise<{ responses: string[]; errors: string[] }> {
  const url = `http://${fromIP}:8080/dial?request=hostname&protocol=${protocol}&host=${host}&port=${String(port)}&tries=1`;
  const r = await lab.exec(lab.nodes[0]?.name ?? '', ['curl', '-sS', '-m', '20', url]);
  const parsed = JSON.parse(r.stdout || '{}') as { responses?: string[]; errors?: string[] };
  return { responses: parsed.responses ?? [], errors: parsed.errors ?? [] };
}

describe('Services (sig-network service.go)', { skip }, () => {
  let lab: E2eLab;
  let cp = '';
  let w1 = '';
  let w2 = '';

  before(async () => {
    lab = await E2eLab.up('s');
    [cp, w1, w2] = lab.nodes.map((n) => n.name) as [string, string, string];
    const namespaces = ['s-basic', 's-multi', 's-proto', 's-aff', 's-src', 's-hair', 's-reject'];
    for (const ns of namespaces) await lab.createNamespace(ns);
    await lab.apply([
      // 1. basic endpoints: the Service and a client, no backends yet.
      service('s-basic', 'basic', { app: 'basic' }, [{ name: 'http', port: 80, targetPort: 8080 }]),
      netexecPod('s-basic', 'client', { node: cp }),
      // 2. multiport with named targetPorts at different numbers on each Pod.
      netexecPod('s-multi', 'mp1', {
        labels: { app: 'multi' },
        node: w1,
        httpPort: 8080,
        ports: [
          { name: 'http', containerPort: 8080 },
          { name: 'http-alt', containerPort: 8090 },
        ],
      }),
      netexecPod('s-multi', 'mp2', {
        labels: { app: 'multi' },
        node: w2,
        httpPort: 9080,
        ports: [
          { name: 'http', containerPort: 9080 },
          { name: 'http-alt', containerPort: 9090 },
        ],
      }),
      service('s-multi', 'multi', { app: 'multi' }, [
        { name: 'portname1', port: 80, targetPort: 'http' },
        { name: 'portname2', port: 81, targetPort: 'http-alt' },
      ]),
      netexecPod('s-multi', 'client', { node: cp }),
      // 3. port 80 over TCP and UDP.
      netexecPod('s-proto', 'pp', { labels: { app: 'proto' }, node: w1 }),
      service('s-proto', 'proto', { app: 'proto' }, [
        { name: 'tcp', port: 80, targetPort: 8080, protocol: 'TCP' },
        { name: 'udp', port: 80, targetPort: 8081, protocol: 'UDP' },
      ]),
      netexecPod('s-proto', 'client', { node: w2 }),
      // 4. session affinity, 3 backends.
      ...[w1, w2, cp].map((node, i) =>
        netexecPod('s-aff', `aff-${String(i)}`, { labels: { app: 'aff' }, node }),
      ),
      service('s-aff', 'aff', { app: 'aff' }, [{ port: 80, targetPort: 8080 }]),
      netexecPod('s-aff', 'client', { node: w1 }),
      // 5. source IP: backend on w1, one client beside it, one on w2.
      netexecPod('s-src', 'srv', { labels: { app: 'src' }, node: w1 }),
      service('s-src', 'src', { app: 'src' }, [{ port: 80, targetPort: 8080 }]),
      netexecPod('s-src', 'same-node', { node: w1 }),
      netexecPod('s-src', 'other-node', { node: w2 }),
      // 6. hairpin.
      netexecPod('s-hair', 'hp', { labels: { app: 'hair' }, node: w2 }),
      service('s-hair', 'hairpin', { app: 'hair' }, [{ port: 8080, targetPort: 8080 }]),
      // 7. no endpoints.
      service('s-reject', 'nothing', { app: 'nobody' }, [
        { name: 'tcp', port: 80, targetPort: 8080, protocol: 'TCP' },
        { name: 'udp', port: 80, targetPort: 8081, protocol: 'UDP' },
      ]),
      netexecPod('s-reject', 'client', { node: w1 }),
    ]);
    await Promise.all([
      lab.podsReady('s-basic', ['client'], 120_000),
      lab.podsReady('s-multi', ['mp1', 'mp2', 'client'], 120_000),
      lab.podsReady('s-proto', ['pp', 'client'], 120_000),
      lab.podsReady('s-aff', ['aff-0', 'aff-1', 'aff-2', 'client'], 120_000),
      lab.podsReady('s-src', ['srv', 'same-node', 'other-node'], 120_000),
      lab.podsReady('s-hair', ['hp'], 120_000),
      lab.podsReady('s-reject', ['client'], 120_000),
    ]);
  });
  after(async () => {
    await lab.down();
  });

  // Upstream: "Services should serve a basic endpoint from pods" (endpoints follow 0 -> 1 ->
  // 2 -> 1 -> 0 Pods; the test there checks Endpoints/EndpointSlices, we also check traffic).
  test('endpoints and traffic follow the Pods 0 -> 1 -> 2 -> 1 -> 0', async () => {
    const ip = await clusterIP(lab, 's-basic', 'basic');
    const url = `http://${ip}/hostname`;
    const from = 's-basic/client';
    const sliceCount = async (): Promise<number> =>
      (
        await lab.client.list('EndpointSlice', {
          namespace: 's-basic',
          labelSelector: 'kubernetes.io/service-name=basic',
        })
      ).length;

    // 0 Pods: an (empty) EndpointSlice, and the ClusterIP refuses.
    await eventually('an EndpointSlice for basic', async () => (await sliceCount()) >= 1);
    assert.deepEqual(await sliceView(lab, 's-basic', 'basic'), []);
    await eventually('basic to refuse with no endpoints', async () => {
      const r = await lab.curl(from, url);
      return r.code === 7;
    });

    // 1 Pod.
    await lab.apply([netexecPod('s-basic', 'pod1', { labels: { app: 'basic' }, node: w1 })]);
    await lab.podsReady('s-basic', ['pod1']);
    const ip1 = await podIP(lab, 's-basic', 'pod1');
    await eventually('the slice to list pod1 only', async () => {
      const v = await sliceView(lab, 's-basic', 'basic');
      return v.length === 1 && v[0] === `pod1@${ip1} http=8080`;
    });
    await eventually('pod1 to answer', async () => (await lab.curl(from, url)).body === 'pod1');
    assert.deepEqual(new Set(await answers(lab, from, url, 5)), new Set(['pod1']));

    // 2 Pods: both answer.
    await lab.apply([netexecPod('s-basic', 'pod2', { labels: { app: 'basic' }, node: w2 })]);
    await lab.podsReady('s-basic', ['pod2']);
    const ip2 = await podIP(lab, 's-basic', 'pod2');
    await eventually('the slice to list pod1 and pod2', async () => {
      const v = await sliceView(lab, 's-basic', 'basic');
      return (
        JSON.stringify(v) === JSON.stringify([`pod1@${ip1} http=8080`, `pod2@${ip2} http=8080`])
      );
    });
    await untilAllAnswer(lab, from, url, ['pod1', 'pod2']);

    // Back to 1 Pod: only pod2. A few pod2 answers in a row prove nothing while pod1 is still
    // programmed (a coin lands pod2 three times in eight), so wait until every proxy has
    // programmed what changed since the delete; from then on every request must reach pod2.
    const deletedAt = Date.now();
    await lab.deleteObject('Pod', 's-basic', 'pod1', 0);
    await eventually('the slice to list pod2 only', async () => {
      const v = await sliceView(lab, 's-basic', 'basic');
      return v.length === 1 && v[0] === `pod2@${ip2} http=8080`;
    });
    await lab.proxiesSynced(deletedAt);
    assert.deepEqual(new Set(await answers(lab, from, url, 10)), new Set(['pod2']));

    // 0 Pods again: refused.
    await lab.deleteObject('Pod', 's-basic', 'pod2', 0);
    await eventually('the slice to be empty', async () =>
      (await sliceView(lab, 's-basic', 'basic')).length === 0 ? true : undefined,
    );
    await eventually('basic to refuse again', async () => (await lab.curl(from, url)).code === 7);
  });

  // Upstream: "Services should serve multiport endpoints from pods" (named targetPorts resolve
  // per Pod to different container port numbers).
  test('named targetPorts reach each Pod on its own container port', async () => {
    const ip = await clusterIP(lab, 's-multi', 'multi');
    const [ip1, ip2] = [await podIP(lab, 's-multi', 'mp1'), await podIP(lab, 's-multi', 'mp2')];
    await eventually('slices to map the port names per Pod', async () => {
      const v = await sliceView(lab, 's-multi', 'multi');
      return (
        JSON.stringify(v) ===
        JSON.stringify([
          `mp1@${ip1} portname1=8080,portname2=8090`,
          `mp2@${ip2} portname1=9080,portname2=9090`,
        ])
      );
    });
    const from = 's-multi/client';
    // /serverport names the container port that answered: 80 must only ever reach the `http`
    // ports (8080 on mp1, 9080 on mp2), 81 only the `http-alt` ones.
    await untilAllAnswer(lab, from, `http://${ip}:80/serverport`, ['8080', '9080']);
    await untilAllAnswer(lab, from, `http://${ip}:81/serverport`, ['8090', '9090']);
    // /hostname answers on the extra port too, from both Pods.
    await untilAllAnswer(lab, from, `http://${ip}:81/hostname`, ['mp1', 'mp2']);
  });

  // Upstream: "Services should serve endpoints on same port and different protocols" (and the
  // reachability checks of "should be able to create a functioning NodePort service").
  test('port 80 answers over TCP and over UDP; dropping UDP stops only UDP', async () => {
    const ip = await clusterIP(lab, 's-proto', 'proto');
    const clientIP = await podIP(lab, 's-proto', 'client');
    await eventually('TCP 80 to answer', async () => {
      const r = await lab.curl('s-proto/client', `http://${ip}:80/hostname`);
      return r.code === 0 && r.body === 'pp';
    });
    await eventually('UDP 80 to answer', async () => {
      const r = await dialFull(lab, clientIP, 'udp', ip, 80);
      return r.responses.length === 1 && r.responses[0] === 'pp';
    });
    await lab.apply([
      service('s-proto', 'proto', { app: 'proto' }, [
        { name: 'tcp', port: 80, targetPort: 8080, protocol: 'TCP' },
      ]),
    ]);
    await eventually(
      'UDP 80 to stop answering',
      async () => (await dialFull(lab, clientIP, 'udp', ip, 80)).responses.length === 0,
      30_000,
    );
    assert.deepEqual(await answers(lab, 's-proto/client', `http://${ip}:80/hostname`, 3), [
      'pp',
      'pp',
      'pp',
    ]);
  });

  // Upstream: "Services should have session affinity work for service with type clusterIP" and
  // "Services should be able to switch session affinity for service with type clusterIP".
  test('ClientIP affinity sticks to one of 3 backends; None spreads; ClientIP sticks again', async () => {
    const ip = await clusterIP(lab, 's-aff', 'aff');
    const url = `http://${ip}/hostname`;
    const from = 's-aff/client';
    const backends = ['aff-0', 'aff-1', 'aff-2'];
    await eventually('3 endpoints for aff', async () =>
      (await lab.endpoints('s-aff', 'aff')).length === 3 ? true : undefined,
    );
    // Under None all 3 answer (over a few dozen requests).
    const spreads = (): Promise<void> => untilAllAnswer(lab, from, url, backends);
    // 15 consecutive identical answers, as upstream's AffinityConfirmCount.
    const sticks = async (what: string): Promise<string> =>
      eventually(
        what,
        async () => {
          const got = await answers(lab, from, url, 15);
          return got.every((b) => b === got[0]) && backends.includes(got[0] ?? '')
            ? got[0]
            : undefined;
        },
        90_000,
        0,
      );
    const setAffinity = async (affinity: 'ClientIP' | 'None'): Promise<void> => {
      await lab.apply([
        service('s-aff', 'aff', { app: 'aff' }, [{ port: 80, targetPort: 8080 }], {
          sessionAffinity: affinity,
          ...(affinity === 'ClientIP'
            ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } }
            : {}),
        }),
      ]);
      const live: Service | undefined = await lab.service('s-aff', 'aff');
      assert.equal(live?.spec?.sessionAffinity, affinity);
    };

    // Without affinity first: proves all 3 backends are programmed, so stickiness means
    // affinity, not a single endpoint.
    await spreads();
    // netexec's /dial as upstream's e2e framework uses it: one new connection per try, so 30
    // tries through the ClusterIP spread over all 3 backends (one kept-alive connection would
    // pin them all to one; a miss by chance is 3 x (2/3)^30, about 1 in 60,000).
    const clientIP = await podIP(lab, 's-aff', 'client');
    const dialed = await lab.dial({ ip: clientIP, port: 8080 }, 'http', ip, 80, 30);
    assert.equal(dialed.length, 30, `30 answers through /dial, got ${dialed.join(',')}`);
    assert.deepEqual([...new Set(dialed)].sort(), backends);
    await setAffinity('ClientIP');
    const stuck = await sticks('15 consecutive answers from one backend under ClientIP');
    // /dial from the same client Pod (same source IP), 30 new connections: all to that backend.
    const dialedSticky = await lab.dial({ ip: clientIP, port: 8080 }, 'http', ip, 80, 30);
    assert.deepEqual(dialedSticky, Array<string>(30).fill(stuck), '/dial under ClientIP');
    await setAffinity('None');
    await spreads();
    await setAffinity('ClientIP');
    await sticks('15 consecutive answers from one backend after switching back to ClientIP');
  });

  // Upstream: "Services should preserve source pod IP for traffic thru service cluster IP".
  test('the backend sees the client Pod IP, from its own node and from another', async () => {
    const ip = await clusterIP(lab, 's-src', 'src');
    for (const client of ['same-node', 'other-node']) {
      const want = await podIP(lab, 's-src', client);
      const r = await eventually(`/clientip from ${client}`, async () => {
        const c = await lab.curl(`s-src/${client}`, `http://${ip}/clientip`);
        return c.code === 0 ? c : undefined;
      });
      const seenIP = r.body.replace(/:\d+$/, '');
      assert.equal(seenIP, want, `${client}: backend saw ${r.body}, client is ${want}`);
    }
  });

  // Upstream: "Services should allow pods to hairpin back to themselves through services".
  test('a Pod reaches itself through its own Service', async () => {
    const ip = await clusterIP(lab, 's-hair', 'hairpin');
    await eventually('hp to reach itself via the ClusterIP', async () => {
      const r = await lab.curl('s-hair/hp', `http://${ip}:8080/hostname`);
      return r.code === 0 && r.body === 'hp';
    });
    const byName = await lab.curl('s-hair/hp', 'http://hairpin:8080/hostname');
    assert.deepEqual(byName, { code: 0, body: 'hp' });
  });

  // Upstream: "Services should be rejected when no endpoints exist" (agnhost connect must fail
  // with REFUSED, not time out), for TCP and, through the ICMP port unreachable, UDP.
  test('a Service without endpoints refuses TCP and UDP at once', async () => {
    const ip = await clusterIP(lab, 's-reject', 'nothing');
    assert.deepEqual(await sliceView(lab, 's-reject', 'nothing'), []);
    const r = await eventually('TCP 80 to be refused', async () => {
      const started = Date.now();
      const c = await lab.curl('s-reject/client', `http://${ip}/hostname`, 10);
      return c.code === 7 ? { ...c, ms: Date.now() - started } : undefined;
    });
    assert.ok(r.ms < 5000, `refusal took ${String(r.ms)} ms`);
    const clientIP = await podIP(lab, 's-reject', 'client');
    const udp = await eventually('UDP 80 to be refused', async () => {
      const d = await dialFull(lab, clientIP, 'udp', ip, 80);
      return d.errors.some((e) => /refused/i.test(e)) ? d : undefined;
    });
    assert.deepEqual(udp.responses, []);
  });
});
