// Traffic policies and Service lifecycle corners, checked from where a user stands: an
// external client on the hub (kind's docker network) against externalTrafficPolicy Local and
// its health-check node port, Pods against internalTrafficPolicy Local, traffic to an endpoint
// that is terminating, a UDP flow that must follow its backend when the Pod is replaced, the
// service-proxy-name and headless labels that take a Service away from svcnet's proxy, and
// Services changing type between ExternalName, ClusterIP and NodePort. Each scenario follows
// a Kubernetes sig-network e2e test (named above it) and works in its own namespace; every
// Pod is created up front in before() so they start in parallel.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { service as serviceOf } from '../../src/kube/testing.js';
import type { EndpointSlice, KubeObject, Service, ServiceSpec } from '../../src/kube/types.js';
import { E2eLab, e2eSkipReason, eventually, netexecPod } from './lib/lab.js';
import { skipOrFail } from '../integration/lib/prereq.js';

const skip = skipOrFail(e2eSkipReason());
const HUB = 'hub';
const EXTERNAL_CLIENT = '172.18.0.1';

function service(
  namespace: string,
  name: string,
  spec: ServiceSpec,
  labels: Record<string, string> = {},
): KubeObject {
  return serviceOf(`${namespace}/${name}`, { ports: null, ...spec }, { metadata: { labels } });
}

interface HttpResult {
  readonly code: number;
  readonly status: number;
  readonly body: string;
}

const httpPort = (selector: Record<string, string>, extra: ServiceSpec = {}): ServiceSpec => ({
  selector,
  ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
  ...extra,
});

describe(
  'traffic policies, terminating endpoints, UDP, proxy labels, type changes',
  { skip },
  () => {
    let lab: E2eLab;
    /** control-plane, worker, worker2 */
    let n0: string, n1: string, n2: string;
    let ip0: string, ip1: string, ip2: string;

    const clusterIP = async (ns: string, name: string): Promise<string> => {
      const s = await lab.service(ns, name);
      const ip = s?.spec?.clusterIP ?? '';
      assert.match(ip, /^10\./, `${ns}/${name} has no ClusterIP`);
      return ip;
    };
    const nodePortOf = async (ns: string, name: string): Promise<number> => {
      const p = (await lab.service(ns, name))?.spec?.ports?.[0]?.nodePort;
      assert.ok(p !== undefined && p >= 30000 && p <= 32767, `${ns}/${name} has no nodePort`);
      return p;
    };
    const slices = async (ns: string, svc: string): Promise<EndpointSlice[]> =>
      lab.client.list('EndpointSlice', {
        namespace: ns,
        labelSelector: `kubernetes.io/service-name=${svc}`,
      });
    const waitEndpoints = async (ns: string, svc: string, n: number): Promise<void> => {
      await eventually(`${ns}/${svc} to have ${String(n)} ready endpoints`, async () =>
        (await lab.endpoints(ns, svc)).length === n ? true : undefined,
      );
    };
    /** HTTP status and body of a GET, from a node, Pod or the hub. */
    const httpGet = async (from: string, url: string): Promise<HttpResult> => {
      const r = await lab.exec(from, ['curl', '-sS', '-m', '3', '-w', '\n%{http_code}', url]);
      const lines = r.stdout.trimEnd().split('\n');
      const status = Number(lines.pop() ?? '0');
      return { code: r.code, status, body: lines.join('\n') };
    };

    before(async () => {
      lab = await E2eLab.up('p');
      [n0, n1, n2] = lab.nodes.map((n) => n.name) as [string, string, string];
      [ip0, ip1, ip2] = lab.nodes.map((n) => n.ip) as [string, string, string];
      for (const ns of ['etp', 'itp', 'term', 'udp', 'lbl', 'types']) await lab.createNamespace(ns);
      await lab.apply([
        // 1. externalTrafficPolicy Local: one backend on worker.
        netexecPod('etp', 'etp-backend', { labels: { app: 'etp' }, node: n1 }),
        // 2. internalTrafficPolicy Local: backends on control-plane and worker, clients on worker
        //    (has a local endpoint) and worker2 (has none).
        netexecPod('itp', 'itp-backend-0', { labels: { app: 'itp' }, node: n0 }),
        netexecPod('itp', 'itp-backend-1', { labels: { app: 'itp' }, node: n1 }),
        netexecPod('itp', 'itp-client-1', { node: n1 }),
        netexecPod('itp', 'itp-client-2', { node: n2 }),
        // 3. Terminating endpoints: a backend that keeps serving 60 s after SIGTERM.
        netexecPod('term', 'term-backend', {
          labels: { app: 'term' },
          node: n1,
          delayShutdown: 60,
          terminationGracePeriodSeconds: 90,
        }),
        netexecPod('term', 'term-client', { node: n2 }),
        // 3b. Terminating and unready (their /readyz fails after SIGTERM), with and without
        //     publishNotReadyAddresses.
        ...(['pub-backend', 'nopub-backend'] as const).map((name) =>
          netexecPod('term', name, {
            labels: { app: name },
            node: n1,
            delayShutdown: 60,
            terminationGracePeriodSeconds: 90,
            readinessPath: '/readyz',
          }),
        ),
        // 4. UDP: the first server and the client, on different nodes.
        netexecPod('udp', 'udp-server-1', { labels: { app: 'udp' }, node: n1 }),
        netexecPod('udp', 'udp-client', { node: n2 }),
        // 5. Labels: one backend, one client.
        netexecPod('lbl', 'lbl-backend', { labels: { app: 'lbl' }, node: n1 }),
        netexecPod('lbl', 'lbl-client', { node: n2 }),
        // 6. Type changes: one backend, one client.
        netexecPod('types', 'types-backend', { labels: { app: 'types' }, node: n1 }),
        netexecPod('types', 'types-client', { node: n2 }),
      ]);
      await Promise.all([
        lab.podsReady('etp', ['etp-backend'], 90_000),
        lab.podsReady(
          'itp',
          ['itp-backend-0', 'itp-backend-1', 'itp-client-1', 'itp-client-2'],
          90_000,
        ),
        lab.podsReady(
          'term',
          ['term-backend', 'term-client', 'pub-backend', 'nopub-backend'],
          90_000,
        ),
        lab.podsReady('udp', ['udp-server-1', 'udp-client'], 90_000),
        lab.podsReady('lbl', ['lbl-backend', 'lbl-client'], 90_000),
        lab.podsReady('types', ['types-backend', 'types-client'], 90_000),
      ]);
    });
    after(async () => {
      await lab.down();
    });

    // "[sig-network] LoadBalancers ESIPP ... should work for type=NodePort" and "should only
    // target nodes with endpoints" (health check node port), with "Services should preserve
    // source IP with externalTrafficPolicy Local" style /clientip checks.
    test('externalTrafficPolicy Local: only the node with the endpoint answers, with the client IP kept', async () => {
      await lab.apply([
        service(
          'etp',
          'etp-nodeport',
          httpPort({ app: 'etp' }, { type: 'NodePort', externalTrafficPolicy: 'Local' }),
        ),
        service(
          'etp',
          'etp-lb',
          httpPort({ app: 'etp' }, { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
        ),
        service(
          'etp',
          'etp-cluster',
          httpPort({ app: 'etp' }, { type: 'NodePort', externalTrafficPolicy: 'Cluster' }),
        ),
      ]);
      await waitEndpoints('etp', 'etp-nodeport', 1);
      const np = await nodePortOf('etp', 'etp-nodeport');
      // The node with the endpoint answers and the backend sees the external client's address.
      const seen = await eventually(`${ip1}:${String(np)} to answer the hub`, async () => {
        const r = await lab.curl(HUB, `http://${ip1}:${String(np)}/clientip`);
        return r.code === 0 ? r.body : undefined;
      });
      assert.equal(seen.split(':')[0], EXTERNAL_CLIENT, `source IP not preserved: ${seen}`);
      // Nodes without a local endpoint drop (time out), they do not refuse or forward.
      for (const ip of [ip0, ip2]) {
        const r = await eventually(`${ip}:${String(np)} to drop`, async () => {
          const c = await lab.curl(HUB, `http://${ip}:${String(np)}/hostname`, 2);
          return c.code === 28 ? c : undefined;
        });
        assert.equal(r.code, 28);
      }
      // Contrast: externalTrafficPolicy Cluster forwards from any node, SNATed to that node.
      const cnp = await nodePortOf('etp', 'etp-cluster');
      const viaOther = await eventually(`${ip2}:${String(cnp)} (Cluster) to answer`, async () => {
        const r = await lab.curl(HUB, `http://${ip2}:${String(cnp)}/clientip`);
        return r.code === 0 ? r.body : undefined;
      });
      assert.notEqual(viaOther.split(':')[0], EXTERNAL_CLIENT, 'eTP Cluster kept the client IP');

      // The health-check node port: allocated for LoadBalancer + Local; 200 only where the endpoint is.
      const lb = await lab.service('etp', 'etp-lb');
      const hc = lb?.spec?.healthCheckNodePort;
      assert.ok(hc !== undefined && hc >= 30000 && hc <= 32767, 'no healthCheckNodePort allocated');
      const local = await eventually(
        `health check on ${ip1}:${String(hc)} to say 200`,
        async () => {
          const r = await httpGet(HUB, `http://${ip1}:${String(hc)}/healthz`);
          return r.status === 200 ? r : undefined;
        },
      );
      const body = JSON.parse(local.body) as {
        service?: { namespace?: string; name?: string };
        localEndpoints?: number;
      };
      assert.deepEqual(body.service, { namespace: 'etp', name: 'etp-lb' });
      assert.equal(body.localEndpoints, 1);
      for (const ip of [ip0, ip2]) {
        const r: HttpResult = await eventually(
          `health check on ${ip}:${String(hc)} to say 503`,
          async () => {
            const x = await httpGet(HUB, `http://${ip}:${String(hc)}/healthz`);
            return x.code === 0 ? x : undefined;
          },
        );
        assert.equal(r.status, 503, `${ip}: ${r.body}`);
        assert.equal((JSON.parse(r.body) as { localEndpoints?: number }).localEndpoints, 0);
      }
    });

    // "[sig-network] Services should respect internalTrafficPolicy=Local Pod to Pod".
    test('internalTrafficPolicy Local: a client reaches only its node-local backend; without one it fails', async () => {
      const appliedAt = Date.now();
      await lab.apply([
        service('itp', 'itp-svc', httpPort({ app: 'itp' }, { internalTrafficPolicy: 'Local' })),
      ]);
      await waitEndpoints('itp', 'itp-svc', 2);
      await lab.proxiesSynced(appliedAt);
      const ip = await clusterIP('itp', 'itp-svc');
      await eventually(
        'itp-client-1 to reach the Service',
        async () => (await lab.curl('itp/itp-client-1', `http://${ip}/hostname`)).code === 0,
      );
      const answers = new Set<string>();
      for (let i = 0; i < 10; i++) {
        const r = await lab.curl('itp/itp-client-1', `http://${ip}/hostname`);
        assert.equal(r.code, 0, `try ${String(i)}: curl failed (${String(r.code)})`);
        answers.add(r.body);
      }
      assert.deepEqual([...answers], ['itp-backend-1']);
      // worker2 has no local endpoint: traffic is dropped there, not sent to another node.
      const r = await lab.curl('itp/itp-client-2', `http://${ip}/hostname`, 2);
      assert.equal(r.code, 28, `client on ${n2} got ${String(r.code)} ${r.body}`);
    });

    // "[sig-network] Services should fallback to terminating endpoints when there are no ready
    // endpoints with internalTrafficPolicy=Cluster" and "... with externalTrafficPolicy=Local",
    // plus "should fail health check node port if there are only terminating endpoints".
    test('terminating endpoints still get traffic while no ready endpoint exists', async () => {
      await lab.apply([
        service('term', 'term-svc', httpPort({ app: 'term' })),
        service(
          'term',
          'term-local',
          httpPort({ app: 'term' }, { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
        ),
      ]);
      await waitEndpoints('term', 'term-svc', 1);
      await waitEndpoints('term', 'term-local', 1);
      const ip = await clusterIP('term', 'term-svc');
      const np = await nodePortOf('term', 'term-local');
      const hc = (await lab.service('term', 'term-local'))?.spec?.healthCheckNodePort ?? 0;
      await eventually(
        'term-client to reach term-svc',
        async () =>
          (await lab.curl('term/term-client', `http://${ip}/hostname`)).body === 'term-backend',
      );
      await eventually(
        'the NodePort on the endpoint node to answer',
        async () =>
          (await lab.curl(HUB, `http://${ip1}:${String(np)}/hostname`)).body === 'term-backend',
      );
      await eventually(
        'the health check to say 200',
        async () => (await httpGet(HUB, `http://${ip1}:${String(hc)}/healthz`)).status === 200,
      );

      const deletedAt = Date.now();
      await lab.deleteObject('Pod', 'term', 'term-backend');
      await eventually('the endpoint to be serving and terminating', async () => {
        const eps = (await slices('term', 'term-svc')).flatMap((s) => s.endpoints ?? []);
        const c = eps[0]?.conditions;
        return (
          eps.length === 1 && c?.ready === false && c.serving === true && c.terminating === true
        );
      });
      assert.deepEqual(await lab.endpoints('term', 'term-svc'), [], 'no ready endpoint expected');
      // Every check from here on must see the proxies' reaction to the endpoint terminating.
      await lab.proxiesSynced(deletedAt);
      // ITP=Cluster: the only endpoint is terminating, so it is used, every time.
      for (let i = 0; i < 5; i++) {
        const r = await lab.curl('term/term-client', `http://${ip}/hostname`);
        assert.equal(
          r.code,
          0,
          `try ${String(i)}: ClusterIP failed while terminating (${String(r.code)})`,
        );
        assert.equal(r.body, 'term-backend');
      }
      // ETP=Local: the node with the terminating endpoint still serves it; the others drop.
      const viaLocal = await lab.curl(HUB, `http://${ip1}:${String(np)}/hostname`);
      assert.equal(
        viaLocal.code,
        0,
        `the NodePort on ${n1} failed while terminating (${String(viaLocal.code)})`,
      );
      assert.equal(viaLocal.body, 'term-backend');
      assert.equal((await lab.curl(HUB, `http://${ip2}:${String(np)}/hostname`, 2)).code, 28);
      // ...while the health check tells load balancers to stop sending new traffic there.
      const health = await eventually('the health check to say 503', async () => {
        const r = await httpGet(HUB, `http://${ip1}:${String(hc)}/healthz`);
        return r.status === 503 ? r : undefined;
      });
      assert.equal((JSON.parse(health.body) as { localEndpoints?: number }).localEndpoints, 0);
    });

    // "[sig-network] Services should be able to connect to terminating and unready endpoints if
    // PublishNotReadyAddresses is true" and "should not be able to connect to terminating and
    // unready endpoints if PublishNotReadyAddresses is false".
    test('terminating endpoints that fail readiness get traffic only with publishNotReadyAddresses', async () => {
      const nodePort = (name: string, publish: boolean): KubeObject =>
        service(
          'term',
          name,
          httpPort(
            { app: `${name}-backend` },
            { type: 'NodePort', publishNotReadyAddresses: publish },
          ),
        );
      await lab.apply([nodePort('pub', true), nodePort('nopub', false)]);
      await waitEndpoints('term', 'pub', 1);
      await waitEndpoints('term', 'nopub', 1);
      const target = {
        pub: { ip: await clusterIP('term', 'pub'), np: await nodePortOf('term', 'pub') },
        nopub: { ip: await clusterIP('term', 'nopub'), np: await nodePortOf('term', 'nopub') },
      };
      for (const name of ['pub', 'nopub'] as const)
        await eventually(
          `${name} to answer before deletion`,
          async () =>
            (await lab.curl('term/term-client', `http://${target[name].ip}/hostname`)).body ===
            `${name}-backend`,
        );

      const deletedAt = Date.now();
      await lab.deleteObject('Pod', 'term', 'pub-backend');
      await lab.deleteObject('Pod', 'term', 'nopub-backend');
      // After SIGTERM their /readyz fails: the kubelet's probe makes them unready (not serving).
      for (const [name, ready] of [
        ['pub', true],
        ['nopub', false],
      ] as const)
        await eventually(
          `${name}'s endpoint to be terminating, not serving, ready=${String(ready)}`,
          async () => {
            const eps = (await slices('term', name)).flatMap((s) => s.endpoints ?? []);
            const c = eps[0]?.conditions;
            return (
              eps.length === 1 &&
              c?.terminating === true &&
              c.serving === false &&
              c.ready === ready
            );
          },
        );
      await lab.proxiesSynced(deletedAt);
      for (let i = 0; i < 5; i++) {
        const pub = await lab.curl('term/term-client', `http://${target.pub.ip}/hostname`);
        assert.equal(
          pub.body,
          'pub-backend',
          `try ${String(i)}: pub ClusterIP (${String(pub.code)})`,
        );
        const nopub = await lab.curl('term/term-client', `http://${target.nopub.ip}/hostname`, 2);
        assert.notEqual(nopub.code, 0, `try ${String(i)}: nopub ClusterIP answered: ${nopub.body}`);
      }
      for (const nodeIP of [ip0, ip1, ip2]) {
        const pub = await lab.curl(HUB, `http://${nodeIP}:${String(target.pub.np)}/hostname`);
        assert.equal(pub.body, 'pub-backend', `pub NodePort on ${nodeIP} (${String(pub.code)})`);
        const nopub = await lab.curl(
          HUB,
          `http://${nodeIP}:${String(target.nopub.np)}/hostname`,
          2,
        );
        assert.notEqual(nopub.code, 0, `nopub NodePort on ${nodeIP} answered: ${nopub.body}`);
      }
    });

    // "[sig-network] Conntrack should be able to preserve UDP traffic when server pod cycles for
    // a ClusterIP service".
    test('a UDP flow from a fixed source port follows the backend when the server Pod is replaced', async () => {
      await lab.apply([
        service('udp', 'udp-svc', {
          selector: { app: 'udp' },
          ports: [{ name: 'udp', protocol: 'UDP', port: 80, targetPort: 8081 }],
        }),
      ]);
      await waitEndpoints('udp', 'udp-svc', 1);
      const ip = await clusterIP('udp', 'udp-svc');
      const pod1 = await lab.pod('udp', 'udp-server-1');
      const pod1IP = pod1?.status?.podIP ?? '';
      const sourcePort = 54321;
      // The client: one socket bound to a fixed source port sending `hostname` every 500 ms, so
      // every datagram has the same conntrack tuple; it prints who answered, and when (epoch
      // ms), and gives up after 45 s.
      const script = `
      const [host, port, want, ms] = process.argv.slice(1);
      const sock = require('node:dgram').createSocket('udp4');
      const seen = [];
      const done = () => { console.log(JSON.stringify(seen)); process.exit(0); };
      sock.on('error', () => undefined);
      sock.on('message', (m) => { seen.push([Date.now(), m.toString()]); if (m.toString() === want) done(); });
      sock.bind(${String(sourcePort)}, () => setInterval(() => sock.send('hostname', Number(port), host), 500));
      setTimeout(done, Number(ms));`;
      const client = lab.exec('udp/udp-client', [
        'node',
        '-e',
        script,
        ip,
        '80',
        'udp-server-2',
        '45000',
      ]);
      // Failures are reported by the assertions below; never leave the promise unhandled.
      void client.catch(() => undefined);
      // The flow is established to pod1 (the client node's conntrack shows it DNATed there).
      await eventually('a conntrack entry from the client to udp-server-1', async () => {
        const r = await lab.exec(n2, [
          'conntrack',
          '-L',
          '-p',
          'udp',
          '--sport',
          String(sourcePort),
        ]);
        // ...and pod1 has answered on it (no [UNREPLIED]).
        return (
          r.stdout.includes(`dst=${ip} `) &&
          r.stdout.includes(`src=${pod1IP} `) &&
          !r.stdout.includes('[UNREPLIED]')
        );
      });
      await lab.deleteObject('Pod', 'udp', 'udp-server-1', 0);
      await eventually(
        'udp-server-1 to be gone',
        async () => (await lab.pod('udp', 'udp-server-1')) === undefined,
      );
      await lab.apply([netexecPod('udp', 'udp-server-2', { labels: { app: 'udp' }, node: n1 })]);
      await lab.podsReady('udp', ['udp-server-2']);
      const readyAt = Date.now();
      const r = await client;
      const seen = JSON.parse(r.stdout || '[]') as [number, string][];
      assert.equal(seen[0]?.[1], 'udp-server-1', `first answers: ${r.stdout}`);
      const last = seen.at(-1);
      assert.equal(last?.[1], 'udp-server-2', `udp-server-2 never answered the flow: ${r.stdout}`);
      // Bounded: kube-proxy clears the stale entry when the endpoint goes; within 30 s of pod2
      // being ready (the flow never idles, so without that it would never recover).
      assert.ok(
        last[0] - readyAt < 30_000,
        `udp-server-2 answered ${String(last[0] - readyAt)} ms after it was ready`,
      );
    });

    // "[sig-network] Services should implement service.kubernetes.io/service-proxy-name" and
    // "should implement service.kubernetes.io/headless".
    test('Services labelled service-proxy-name or headless are not served until the label goes', async () => {
      const spec = httpPort({ app: 'lbl' });
      const proxyName = { 'service.kubernetes.io/service-proxy-name': 'foo-bar' };
      const headless = { 'service.kubernetes.io/headless': '' };
      await lab.apply([
        service('lbl', 'plain', spec),
        service('lbl', 'proxy-name', spec, proxyName),
        service('lbl', 'headless-label', spec, headless),
      ]);
      for (const s of ['plain', 'proxy-name', 'headless-label']) await waitEndpoints('lbl', s, 1);
      const [plain, named, hl] = await Promise.all(
        ['plain', 'proxy-name', 'headless-label'].map((s) => clusterIP('lbl', s)),
      );
      await eventually(
        'the unlabelled Service to answer',
        async () =>
          (await lab.curl('lbl/lbl-client', `http://${plain}/hostname`)).body === 'lbl-backend',
      );
      for (const [what, addr] of [
        ['proxy-name', named],
        ['headless-label', hl],
      ] as const) {
        const r = await lab.curl('lbl/lbl-client', `http://${addr}/hostname`, 2);
        assert.notEqual(r.code, 0, `${what} (${addr}) answered though labelled: ${r.body}`);
      }
      // The EndpointSlice controller still publishes them: it copies the proxy-name label (so
      // every proxy can filter on it) and, as upstream, sets headless only for clusterIP None.
      const namedSlices = await slices('lbl', 'proxy-name');
      assert.equal(
        namedSlices[0]?.metadata?.labels?.['service.kubernetes.io/service-proxy-name'],
        'foo-bar',
      );
      const hlSlices = await slices('lbl', 'headless-label');
      assert.equal(hlSlices.length, 1);
      assert.equal(hlSlices[0]?.metadata?.labels?.['service.kubernetes.io/headless'], undefined);

      // Removing the labels hands the Services to svcnet's proxy.
      await lab.apply([service('lbl', 'proxy-name', spec), service('lbl', 'headless-label', spec)]);
      for (const [what, addr] of [
        ['proxy-name', named],
        ['headless-label', hl],
      ] as const)
        await eventually(
          `${what} to answer once unlabelled`,
          async () =>
            (await lab.curl('lbl/lbl-client', `http://${addr}/hostname`)).body === 'lbl-backend',
        );
      // ...and labelling again takes it away.
      await lab.apply([service('lbl', 'proxy-name', spec, proxyName)]);
      await eventually(
        'proxy-name to stop answering once relabelled',
        async () => (await lab.curl('lbl/lbl-client', `http://${named}/hostname`, 2)).code !== 0,
      );
    });

    // "[sig-network] Services should be able to change the type from ExternalName to ClusterIP",
    // "... from ClusterIP to NodePort", "... from NodePort to ExternalName" and "... from
    // ExternalName to NodePort", "... from NodePort to ClusterIP", "... from ClusterIP to
    // ExternalName".
    test('type changes ExternalName -> ClusterIP -> NodePort -> ExternalName -> NodePort -> ClusterIP -> ExternalName', async () => {
      const fqdn = 'types-target.types.svc.cluster.local';
      const name = 'changing';
      const full = `${name}.types.svc.cluster.local`;
      const sel = { app: 'types' };
      const external: ServiceSpec = { type: 'ExternalName', externalName: fqdn };
      await lab.apply([
        service('types', 'types-target', httpPort(sel)),
        service('types', name, external),
      ]);
      await waitEndpoints('types', 'types-target', 1);
      const targetIP = await clusterIP('types', 'types-target');
      const client = 'types/types-client';
      const cname = (): Promise<string[]> => lab.dig(client, [full, 'CNAME']);
      // A rule of the Service: its comment (iptables; nftables' no-endpoint elements) or a
      // map element or rule naming its chains (nftables; a stale chain may stay, flushed, until
      // a later sync deletes it: its header line is not a rule).
      const hasRule = async (): Promise<boolean> =>
        (await lab.proxyRules(n2))
          .split('\n')
          .some(
            (l) =>
              l.includes(`"types/${name}:http`) ||
              (l.includes(`types/${name}/`) && !/^\s*chain /.test(l)),
          );

      // ExternalName: a CNAME to the target, resolving on to its ClusterIP; no ClusterIP.
      await eventually('the ExternalName CNAME', async () => (await cname()).join() === `${fqdn}.`);
      assert.deepEqual(await lab.dig(client, [full]), [`${fqdn}.`, targetIP]);
      assert.equal((await lab.service('types', name))?.spec?.clusterIP, undefined);

      // -> ClusterIP: an address is allocated and reaches the backend; no more CNAME.
      await lab.apply([service('types', name, httpPort(sel, { type: 'ClusterIP' }))]);
      const ip = await clusterIP('types', name);
      await waitEndpoints('types', name, 1);
      await eventually(
        'the new ClusterIP to answer',
        async () => (await lab.curl(client, `http://${ip}/hostname`)).body === 'types-backend',
      );
      await eventually(
        'DNS to answer A, not CNAME',
        async () => (await cname()).length === 0 && (await lab.dig(client, [full])).join() === ip,
      );

      // -> NodePort: same ClusterIP, a node port answering on every node from outside.
      await lab.apply([service('types', name, httpPort(sel, { type: 'NodePort' }))]);
      assert.equal(await clusterIP('types', name), ip, 'ClusterIP changed with the type');
      const np = await nodePortOf('types', name);
      for (const nodeIP of [ip0, ip1, ip2])
        await eventually(
          `${nodeIP}:${String(np)} to answer the hub`,
          async () =>
            (await lab.curl(HUB, `http://${nodeIP}:${String(np)}/hostname`)).body ===
            'types-backend',
        );

      // -> ExternalName: CNAME again; the ClusterIP and node port are released and unserved.
      const toExternalAt = Date.now();
      await lab.apply([
        service('types', name, {
          ...external,
          ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        }),
      ]);
      const svc: Service | undefined = await lab.service('types', name);
      assert.equal(svc?.spec?.clusterIP, undefined, 'ExternalName kept its ClusterIP');
      assert.equal(svc?.spec?.ports?.[0]?.nodePort, undefined, 'ExternalName kept its nodePort');
      await eventually('the CNAME to come back', async () => (await cname()).join() === `${fqdn}.`);
      // Every proxy, not only the one whose rules are read, must be past the change before the
      // old addresses are tried on other nodes.
      await lab.proxiesSynced(toExternalAt);
      assert.ok(!(await hasRule()), 'a proxy rule is left');
      const old = await lab.curl(client, `http://${ip}/hostname`, 2);
      assert.notEqual(old.code, 0, `the old ClusterIP still answers: ${old.body}`);
      const oldNp = await lab.curl(HUB, `http://${ip1}:${String(np)}/hostname`, 2);
      assert.notEqual(oldNp.code, 0, `the old node port still answers: ${oldNp.body}`);

      // -> NodePort again: a fresh ClusterIP and node port that work.
      await lab.apply([service('types', name, httpPort(sel, { type: 'NodePort' }))]);
      const ip2nd = await clusterIP('types', name);
      const np2nd = await nodePortOf('types', name);
      await eventually(
        'the NodePort to answer after ExternalName',
        async () =>
          (await lab.curl(HUB, `http://${ip2}:${String(np2nd)}/hostname`)).body === 'types-backend',
      );
      await eventually(
        'the ClusterIP to answer after ExternalName',
        async () => (await lab.curl(client, `http://${ip2nd}/hostname`)).body === 'types-backend',
      );
      assert.equal((await cname()).length, 0);

      // -> ClusterIP: the node port is released and stops answering; the ClusterIP stays.
      const demotedAt = Date.now();
      await lab.apply([service('types', name, httpPort(sel, { type: 'ClusterIP' }))]);
      assert.equal((await lab.service('types', name))?.spec?.ports?.[0]?.nodePort, undefined);
      assert.equal(await clusterIP('types', name), ip2nd, 'ClusterIP changed with the type');
      await lab.proxiesSynced(demotedAt);
      for (const nodeIP of [ip0, ip1, ip2]) {
        const r = await lab.curl(HUB, `http://${nodeIP}:${String(np2nd)}/hostname`, 2);
        assert.notEqual(r.code, 0, `${nodeIP}:${String(np2nd)} still answers after -> ClusterIP`);
      }
      assert.equal((await lab.curl(client, `http://${ip2nd}/hostname`)).body, 'types-backend');

      // -> ExternalName straight from ClusterIP: CNAME, and the ClusterIP goes.
      await lab.apply([service('types', name, external)]);
      await eventually(
        'the CNAME after ClusterIP -> ExternalName',
        async () => (await cname()).join() === `${fqdn}.`,
      );
      await eventually(
        'the ClusterIP to stop answering',
        async () => (await lab.curl(client, `http://${ip2nd}/hostname`, 2)).code !== 0,
      );
    });
  },
);
