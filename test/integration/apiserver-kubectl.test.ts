// The machine's real kubectl (1.29+ and the default `kubectl`) against `svcnet apiserver`:
// apply, get with kube-apiserver's printed columns, -o wide, describe, get -w, create
// (protobuf on 1.32+), expose, scale, 422 and 409 errors, get all, delete, Service type
// changes by patch and replace, and create and apply of a `kind: List` with validation on.
// Loopback only.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import {
  DEPLOYMENTS,
  ENDPOINTS,
  ENDPOINTSLICES,
  PODS,
  SERVICES,
} from '../../src/apiserver/resources.js';
import { findKubectls, KubectlRunner, tableRows } from './lib/apiserver-kubectl.js';
import { skipOrFail } from './lib/prereq.js';

const MANIFEST = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 8080}]
`;

const BAD = `apiVersion: v1
kind: Service
metadata: {name: bad}
spec:
  type: NodePort
  ports: [{port: 0, name: a}, {port: 81, name: a, nodePort: 99}]
`;

/** MANIFEST as one v1 List (kubectl validates a List against /openapi/v2). */
const LIST = `apiVersion: v1
kind: List
items:
${MANIFEST.split('---\n')
  .map((doc) =>
    doc
      .trimEnd()
      .split('\n')
      .map((line, i) => (i === 0 ? `- ${line}` : `  ${line}`))
      .join('\n'),
  )
  .join('\n')}
`;

const kubectls = findKubectls(29);

describe(
  'kubectl against svcnet apiserver',
  {
    skip: skipOrFail(
      kubectls.length === 0 ? 'no kubectl installed; install: bash scripts/install-deps.sh' : false,
    ),
  },
  () => {
    let server: RunningApiServer;
    let dir: string;
    let kubeconfig: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'svcnet-apiserver-kubectl-'));
      server = await startApiServer({ listen: '127.0.0.1:0', dataDir: join(dir, 'data') });
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, server.kubeconfig());
    });

    after(async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    for (const k of kubectls)
      it(`${k.label}: create -f and apply -f of a kind: List, validation on`, async () => {
        const kc = new KubectlRunner(k, kubeconfig);
        const ns = `list-${k.minor ?? 'default'}`;
        const n = ['-n', ns];
        await kc.ok(['create', 'namespace', ns]);
        const created = await kc.ok(['create', ...n, '-f', '-'], { stdin: LIST });
        assert.match(created, /service\/web created/);
        assert.match(created, /deployment.apps\/web created/);
        assert.equal(server.store.get(SERVICES, ns, 'web').metadata.name, 'web');
        const applied = await kc.ok(['apply', ...n, '-f', '-'], {
          stdin: LIST.replace('replicas: 1', 'replicas: 2'),
        });
        assert.match(applied, /deployment.apps\/web configured/);
        const spec = server.store.get(DEPLOYMENTS, ns, 'web').spec as { replicas: number };
        assert.equal(spec.replicas, 2);
        // The items are still validated strictly, by the server.
        const bad = await kc.run(['apply', ...n, '-f', '-'], {
          stdin: LIST.replace('targetPort: 8080', 'targetPort: 8080\n      bogus: 1'),
        });
        assert.notEqual(bad.code, 0);
        assert.match(bad.stderr, /unknown field "spec\.ports\[0\]\.bogus"/);
      });

    for (const k of kubectls) {
      it(`${k.label}: the tutorial workflows`, async () => {
        const kc = new KubectlRunner(k, kubeconfig);
        const ns = `t-${k.minor ?? 'default'}`;
        const n = ['-n', ns];
        const store = server.store;

        // create namespace (protobuf on 1.32+)
        assert.match(
          await kc.ok(['create', 'namespace', ns]),
          new RegExp(`namespace/${ns} created`),
        );

        // apply -f: Service + Deployment
        const applied = await kc.ok(['apply', ...n, '-f', '-'], { stdin: MANIFEST });
        assert.match(applied, /service\/web created/);
        assert.match(applied, /deployment.apps\/web created/);
        assert.equal((store.get(DEPLOYMENTS, ns, 'web').spec as { replicas: number }).replicas, 1);
        const svc = store.get(SERVICES, ns, 'web');
        const clusterIP = (svc.spec as { clusterIP: string }).clusterIP;
        assert.match(clusterIP, /^10\.\d+\.\d+\.\d+$/);
        // re-apply unchanged, then changed (strategic merge patch)
        assert.match(
          await kc.ok(['apply', ...n, '-f', '-'], { stdin: MANIFEST }),
          /service\/web unchanged/,
        );
        const changed = await kc.ok(['apply', ...n, '-f', '-'], {
          stdin: MANIFEST.replace('replicas: 1', 'replicas: 3'),
        });
        assert.match(changed, /deployment.apps\/web configured/);
        assert.equal((store.get(DEPLOYMENTS, ns, 'web').spec as { replicas: number }).replicas, 3);

        // endpoints and a slice as the controllers would write them
        const svcUid = svc.metadata.uid ?? '';
        store.create(ENDPOINTS, ns, {
          metadata: { name: 'web' },
          subsets: [
            { addresses: [{ ip: '10.244.1.5' }], ports: [{ port: 8080, protocol: 'TCP' }] },
          ],
        });
        store.create(ENDPOINTSLICES, ns, {
          metadata: {
            name: 'web-abcde',
            labels: { 'kubernetes.io/service-name': 'web' },
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Service', name: 'web', uid: svcUid, controller: true },
            ],
          },
          addressType: 'IPv4',
          endpoints: [{ addresses: ['10.244.1.5'], conditions: { ready: true } }],
          ports: [{ port: 8080, protocol: 'TCP' }],
        });

        // get svc,ep,endpointslice with kube-apiserver's columns
        const rows = tableRows(await kc.ok(['get', ...n, 'svc,ep,endpointslice']));
        assert.deepEqual(rows[0], ['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORT(S)', 'AGE']);
        assert.deepEqual(rows[1]?.slice(0, 5), [
          'service/web',
          'ClusterIP',
          clusterIP,
          '<none>',
          '80/TCP',
        ]);
        assert.ok(
          rows.some((r) => r[0] === 'endpoints/web' && r[1] === '10.244.1.5:8080'),
          JSON.stringify(rows),
        );
        assert.ok(
          rows.some(
            (r) =>
              r[0] === 'endpointslice.discovery.k8s.io/web-abcde' &&
              r[1] === 'IPv4' &&
              r[2] === '8080' &&
              r[3] === '10.244.1.5',
          ),
          JSON.stringify(rows),
        );
        const endpointsHeader = rows.find((r) => r[0] === 'NAME' && r[1] === 'ENDPOINTS');
        assert.deepEqual(endpointsHeader, ['NAME', 'ENDPOINTS', 'AGE']);
        assert.ok(rows.some((r) => r.join(' ') === 'NAME ADDRESSTYPE PORTS ENDPOINTS AGE'));

        // -o wide adds SELECTOR
        const wide = tableRows(await kc.ok(['get', ...n, 'svc', '-o', 'wide']));
        assert.deepEqual(wide[0], [
          'NAME',
          'TYPE',
          'CLUSTER-IP',
          'EXTERNAL-IP',
          'PORT(S)',
          'AGE',
          'SELECTOR',
        ]);
        assert.equal(wide[1]?.[6], 'app=web');

        // describe service
        const described = await kc.ok(['describe', ...n, 'service', 'web']);
        assert.match(described, /IP Family Policy:\s+SingleStack/);
        assert.match(described, /IP Families:\s+IPv4/);
        assert.match(described, new RegExp(`IPs:\\s+${clusterIP.replace(/\./g, '\\.')}`));
        assert.match(described, /TargetPort:\s+8080\/TCP/);
        assert.match(described, /Endpoints:\s+10\.244\.1\.5:8080/);
        assert.match(described, /Session Affinity:\s+None/);

        // get pods -w receives pods created through the API
        const watching = kc.run(['get', ...n, 'pods', '-w', '--request-timeout=5s'], {
          timeoutMs: 20_000,
        });
        await new Promise((r) => setTimeout(r, 1500));
        for (const p of ['watched-a', 'watched-b'])
          store.create(PODS, ns, {
            metadata: { name: p },
            spec: { containers: [{ name: 'c', image: 'busybox' }] },
          });
        const watched = (await watching).stdout;
        assert.match(watched, /watched-a\s+0\/1\s+Pending\s+0/);
        assert.match(watched, /watched-b\s+0\/1\s+Pending\s+0/);

        // create deploy (protobuf on 1.32+), expose, scale
        assert.match(
          await kc.ok(['create', ...n, 'deploy', 'nginx', '--image=nginx']),
          /deployment.apps\/nginx created/,
        );
        assert.match(
          await kc.ok(['expose', ...n, 'deploy', 'nginx', '--port=80', '--type=NodePort']),
          /service\/nginx exposed/,
        );
        const exposed = store.get(SERVICES, ns, 'nginx').spec as {
          selector: object;
          ports: { nodePort: number; targetPort: number }[];
        };
        assert.deepEqual(exposed.selector, { app: 'nginx' });
        assert.ok(
          exposed.ports[0] &&
            exposed.ports[0].nodePort >= 30000 &&
            exposed.ports[0].nodePort <= 32767,
        );
        assert.match(
          await kc.ok(['scale', ...n, 'deploy', 'nginx', '--replicas=2']),
          /deployment.apps\/nginx scaled/,
        );
        assert.equal(
          (store.get(DEPLOYMENTS, ns, 'nginx').spec as { replicas: number }).replicas,
          2,
        );
        const deploys = tableRows(await kc.ok(['get', ...n, 'deploy', '-o', 'wide']));
        assert.deepEqual(deploys[0], [
          'NAME',
          'READY',
          'UP-TO-DATE',
          'AVAILABLE',
          'AGE',
          'CONTAINERS',
          'IMAGES',
          'SELECTOR',
        ]);
        assert.ok(deploys.some((r) => r[0] === 'nginx' && r[1] === '0/2' && r[7] === 'app=nginx'));

        // 422 with the field causes; nothing stored
        const bad = await kc.run(['apply', ...n, '-f', '-'], { stdin: BAD });
        assert.notEqual(bad.code, 0);
        assert.match(bad.stderr, /The Service "bad" is invalid/);
        assert.match(bad.stderr, /spec\.ports\[0\]\.port: Invalid value: 0/);
        assert.match(bad.stderr, /spec\.ports\[1\]\.name: Duplicate value: "a"\n/);
        assert.equal(store.tryGet(SERVICES, ns, 'bad'), undefined);

        // 409 on a stale replace
        const stale = await kc.ok(['get', ...n, 'svc', 'web', '-o', 'json']);
        await kc.ok(['label', ...n, 'svc', 'web', 'touched=yes']);
        const conflict = await kc.run(['replace', ...n, '-f', '-'], { stdin: stale });
        assert.notEqual(conflict.code, 0);
        assert.match(
          conflict.stderr,
          /Operation cannot be fulfilled on services "web": the object has been modified/,
        );

        // get all resolves the "all" category
        const all = await kc.ok(['get', ...n, 'all']);
        for (const want of [
          'pod/watched-a',
          'service/web',
          'service/nginx',
          'deployment.apps/web',
          'deployment.apps/nginx',
        ])
          assert.match(all, new RegExp(want.replace(/\./g, '\\.')));

        // delete -f
        const deleted = await kc.ok(['delete', ...n, '-f', '-'], { stdin: MANIFEST });
        assert.match(deleted, /service "web" deleted/);
        assert.match(deleted, /deployment.apps "web" deleted/);
        assert.equal(store.tryGet(SERVICES, ns, 'web'), undefined);
        assert.equal(
          store.tryGet(ENDPOINTSLICES, ns, 'web-abcde'),
          undefined,
          'the slice is garbage-collected with its Service',
        );
        const gone = await kc.run(['get', ...n, 'svc', 'web']);
        assert.match(gone.stderr, /services "web" not found/);
      });

      it(`${k.label}: patch and edit-style replace change a Service's type (issue 29)`, async () => {
        const kc = new KubectlRunner(k, kubeconfig);
        const ns = `types-${k.minor ?? 'default'}`;
        const n = ['-n', ns];
        const { store, services } = server;
        await kc.ok(['create', 'namespace', ns]);
        await kc.ok(['create', ...n, 'service', 'nodeport', 'np2', '--tcp=80:8080']);
        const nodePortOf = () =>
          (store.get(SERVICES, ns, 'np2').spec as { ports: { nodePort?: number }[] }).ports[0]
            ?.nodePort;
        const port = nodePortOf();
        assert.ok(port !== undefined && services.nodePorts.has(port));

        // NodePort -> ClusterIP by strategic merge patch: the node port is released.
        assert.match(
          await kc.ok(['patch', ...n, 'svc', 'np2', '-p', '{"spec":{"type":"ClusterIP"}}']),
          /service\/np2 patched/,
        );
        const spec = store.get(SERVICES, ns, 'np2').spec as Record<string, unknown>;
        assert.equal(spec.type, 'ClusterIP');
        assert.equal(spec.externalTrafficPolicy, undefined);
        assert.equal(nodePortOf(), undefined);
        assert.ok(!services.nodePorts.has(port), 'the node port is free again');

        // ClusterIP -> ExternalName by JSON merge patch, back by GET-modify-replace.
        await kc.ok([
          'patch',
          ...n,
          'svc',
          'np2',
          '--type=merge',
          '-p',
          '{"spec":{"type":"ExternalName","externalName":"example.com"}}',
        ]);
        const ext = store.get(SERVICES, ns, 'np2').spec as Record<string, unknown>;
        assert.equal(ext.clusterIP, undefined);
        const got = JSON.parse(await kc.ok(['get', ...n, 'svc', 'np2', '-o', 'json'])) as {
          spec: Record<string, unknown>;
        };
        got.spec.type = 'ClusterIP';
        delete got.spec.externalName;
        assert.match(
          await kc.ok(['replace', ...n, '-f', '-'], { stdin: JSON.stringify(got) }),
          /service\/np2 replaced/,
        );
        const back = store.get(SERVICES, ns, 'np2').spec as { clusterIP?: string };
        assert.ok(services.ipAllocators[0]?.has(back.clusterIP ?? ''), back.clusterIP);

        // A policy set anew on a ClusterIP Service is still refused, naming object and field.
        const bad = await kc.run([
          'patch',
          ...n,
          'svc',
          'np2',
          '-p',
          '{"spec":{"externalTrafficPolicy":"Local"}}',
        ]);
        assert.notEqual(bad.code, 0);
        assert.match(
          bad.stderr,
          /Service "np2" is invalid: spec\.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services/,
        );
      });
    }
  },
);
