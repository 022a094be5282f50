// End to end: `svcnet apiserver` + `svcnet controller --fake-kubelet` as child processes on
// 127.0.0.1 free ports, driven by the real `kubectl` through the Service walkthrough (apply a
// Deployment and a Service, get all / svc,ep,endpointslice, describe, scale, create + expose,
// delete) and a StatefulSet behind a headless Service. Three Node objects with podCIDRs and
// InternalIPs are registered by the test. Needs only loopback; skipped when kubectl is absent.
// The daemons are killed by PID in after().

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { skipOrFail } from './lib/prereq.js';
import { freePort } from '../../src/util/free-port.js';

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
const skip = skipOrFail(
  hasKubectl ? false : 'kubectl not found on PATH; install: bash scripts/install-deps.sh',
);

const dir = mkdtempSync(join(tmpdir(), `svcnet-ctl-e2e-${process.pid}-`));
const kubeconfig = join(dir, 'kubeconfig');
const children: ChildProcess[] = [];
const logs = new Map<string, string[]>();

function startSvcnet(name: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: string[] = [];
  logs.set(name, lines);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    lines.push(d);
    if (lines.length > 2000) lines.splice(0, 1000);
  });
  children.push(child);
  return child;
}

function kubectl(args: string[], stdin?: string): string {
  const r = spawnSync(
    'kubectl',
    ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'kcache'), ...args],
    { encoding: 'utf8', input: stdin, timeout: 60_000 },
  );
  if (r.status !== 0)
    throw new Error(`kubectl ${args.join(' ')}: exit ${String(r.status)}: ${r.stderr}`);
  return r.stdout;
}

async function waitFor<T>(what: string, fn: () => T | undefined, timeoutMs = 90_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      const ctl = (logs.get('controller') ?? []).join('').slice(-3000);
      throw new Error(
        `timed out waiting for ${what}: ${String(last)}\ncontroller log tail:\n${ctl}`,
      );
    }
    await delay(250);
  }
}

interface PodJSON {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { nodeName?: string; hostname?: string };
  status: { podIP?: string; hostIP?: string; phase?: string };
}

function pods(selector: string): PodJSON[] {
  return (
    JSON.parse(kubectl(['get', 'pods', '-l', selector, '-o', 'json'])) as { items: PodJSON[] }
  ).items;
}

interface SliceJSON {
  metadata: {
    name: string;
    generateName?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  endpoints?: {
    addresses: string[];
    conditions?: { ready?: boolean };
    nodeName?: string;
    zone?: string;
    hostname?: string;
  }[];
  ports?: { port?: number }[];
}

function slices(service: string): SliceJSON[] {
  return (
    JSON.parse(
      kubectl([
        'get',
        'endpointslices',
        '-l',
        `kubernetes.io/service-name=${service}`,
        '-o',
        'json',
      ]),
    ) as { items: SliceJSON[] }
  ).items;
}

function endpointIPs(service: string): string[] {
  const out = kubectl([
    'get',
    'endpoints',
    service,
    '-o',
    'jsonpath={.subsets[*].addresses[*].ip}',
  ]);
  return out
    .split(/\s+/)
    .filter((s) => s !== '')
    .sort();
}

function describedEndpoints(service: string): string {
  const m = /^Endpoints:\s*(.*)$/m.exec(kubectl(['describe', 'service', service]));
  return (m?.[1] ?? '').trim();
}

const NODES = [1, 2, 3].map((i) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: `node-${i}`,
    labels: { 'kubernetes.io/hostname': `node-${i}`, 'topology.kubernetes.io/zone': `zone-${i}` },
  },
  spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
  status: {
    addresses: [{ type: 'InternalIP', address: `172.18.0.${i + 1}` }],
    conditions: [{ type: 'Ready', status: 'True' }],
  },
}));

const APP = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      run: my-nginx
  template:
    metadata:
      labels:
        run: my-nginx
    spec:
      containers:
      - name: my-nginx
        image: nginx
        ports:
        - containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: my-nginx
  labels:
    run: my-nginx
spec:
  ports:
  - port: 3000
    targetPort: 80
    protocol: TCP
  selector:
    run: my-nginx
`;

const STS = `apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  clusterIP: None
  selector:
    app: db
  ports:
  - name: tcp
    port: 5432
    targetPort: pg
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 3
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
      - name: pg
        image: postgres
        ports:
        - name: pg
          containerPort: 5432
`;

describe('svcnet apiserver + svcnet controller --fake-kubelet, driven by kubectl', { skip }, () => {
  before(async () => {
    const port = await freePort();
    startSvcnet('apiserver', [
      'apiserver',
      '--listen',
      `127.0.0.1:${port}`,
      '--write-kubeconfig',
      kubeconfig,
    ]);
    await waitFor('the API server', () =>
      existsSync(kubeconfig) && kubectl(['get', 'ns', 'default', '-o', 'name']).trim() !== ''
        ? true
        : undefined,
    );
    kubectl(['apply', '-f', '-'], NODES.map((n) => JSON.stringify(n)).join('\n---\n'));
    startSvcnet('controller', ['controller', '--kubeconfig', kubeconfig, '--fake-kubelet']);
  });

  after(async () => {
    for (const c of children)
      if (c.exitCode === null && c.pid !== undefined) process.kill(c.pid, 'SIGTERM');
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) {
              resolve();
              return;
            }
            const t = setTimeout(() => {
              if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
              resolve();
            }, 5000);
            c.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  });

  let firstIPs: string[] = [];

  test('apply: a Deployment of 3 and a Service 3000→80 become 3 Running pods spread over the nodes', async () => {
    const out = kubectl(['apply', '-f', '-'], APP);
    assert.match(out, /deployment\.apps\/my-nginx created/);
    assert.match(out, /service\/my-nginx created/);
    await waitFor('3 ready replicas', () =>
      kubectl(['get', 'deploy', 'my-nginx', '-o', 'jsonpath={.status.readyReplicas}']).trim() ===
      '3'
        ? true
        : undefined,
    );
    const ps = pods('run=my-nginx');
    assert.equal(ps.length, 3);
    assert.deepEqual(ps.map((p) => p.spec.nodeName).sort(), ['node-1', 'node-2', 'node-3']);
    for (const p of ps) {
      const i = Number(p.spec.nodeName?.slice(-1));
      assert.equal(p.status.phase, 'Running');
      assert.ok(
        p.status.podIP?.startsWith(`10.244.${i}.`),
        `${p.metadata.name} IP ${p.status.podIP}`,
      );
      assert.equal(p.status.hostIP, `172.18.0.${i + 1}`);
    }
    firstIPs = ps.map((p) => p.status.podIP ?? '').sort();
    assert.equal(new Set(firstIPs).size, 3);
    const rs = kubectl([
      'get',
      'rs',
      '-l',
      'run=my-nginx',
      '-o',
      'jsonpath={.items[0].metadata.labels.pod-template-hash}',
    ]);
    assert.ok(ps.every((p) => p.metadata.name.startsWith(`my-nginx-${rs.trim()}-`)));
  });

  test('kubectl get all -o wide shows the pods, service, deployment and replicaset', () => {
    const out = kubectl(['get', 'all', '-o', 'wide']);
    for (const ip of firstIPs)
      assert.match(out, new RegExp(`Running .*${ip.replace(/\./g, '\\.')}`));
    assert.match(out, /service\/my-nginx\s+ClusterIP\s+\S+\s+<none>\s+3000\/TCP/);
    assert.match(out, /deployment\.apps\/my-nginx\s+3\/3\s+3\s+3/);
    assert.match(out, /replicaset\.apps\/my-nginx-\S+\s+3\s+3\s+3/);
  });

  test('kubectl get svc,ep,endpointslice and describe service list the three pod IPs', async () => {
    await waitFor('3 endpoints', () => (endpointIPs('my-nginx').length === 3 ? true : undefined));
    assert.deepEqual(endpointIPs('my-nginx'), firstIPs);
    const out = kubectl(['get', 'svc,ep,endpointslice']);
    assert.match(out, /endpoints\/my-nginx\s+\S*10\.244\./);
    assert.match(out, /endpointslice\.discovery\.k8s\.io\/my-nginx-\S+\s+IPv4\s+80\s+/);
    const described = describedEndpoints('my-nginx');
    for (const ip of firstIPs) assert.ok(described.includes(`${ip}:80`), described);
    const [slice, ...rest] = slices('my-nginx');
    assert.equal(rest.length, 0);
    assert.ok(slice !== undefined);
    assert.equal(slice.metadata.generateName, 'my-nginx-');
    assert.equal(
      slice.metadata.labels?.['endpointslice.kubernetes.io/managed-by'],
      'endpointslice-controller.k8s.io',
    );
    assert.equal(slice.metadata.ownerReferences?.[0]?.kind, 'Service');
    assert.ok(slice.metadata.annotations?.['endpoints.kubernetes.io/last-change-trigger-time']);
    assert.deepEqual(
      slice.ports?.map((p) => p.port),
      [80],
    );
    for (const ep of slice.endpoints ?? []) {
      assert.equal(ep.conditions?.ready, true);
      assert.equal(ep.zone, `zone-${ep.nodeName?.slice(-1) ?? ''}`);
    }
  });

  test('kubectl scale deploy --replicas=2 shrinks the endpoints', async () => {
    assert.match(kubectl(['scale', 'deploy', 'my-nginx', '--replicas=2']), /scaled/);
    await waitFor('2 endpoints', () => (endpointIPs('my-nginx').length === 2 ? true : undefined));
    await waitFor('2 pods', () => (pods('run=my-nginx').length === 2 ? true : undefined));
    const left = pods('run=my-nginx')
      .map((p) => p.status.podIP ?? '')
      .sort();
    assert.deepEqual(endpointIPs('my-nginx'), left);
    await waitFor('slice of 2', () =>
      slices('my-nginx')[0]?.endpoints?.length === 2 ? true : undefined,
    );
    const described = describedEndpoints('my-nginx');
    assert.equal(described.split(',').length, 2, described);
    await waitFor('deployment status 2/2', () =>
      kubectl([
        'get',
        'deploy',
        'my-nginx',
        '-o',
        'jsonpath={.status.replicas}/{.status.availableReplicas}',
      ]).trim() === '2/2'
        ? true
        : undefined,
    );
  });

  test('kubectl set image rolls over to a new ReplicaSet; rollout status completes', async () => {
    const before = new Set(endpointIPs('my-nginx'));
    kubectl(['set', 'image', 'deploy/my-nginx', 'my-nginx=nginx:1.27']);
    assert.match(
      kubectl(['rollout', 'status', 'deploy/my-nginx', '--timeout=90s']),
      /successfully rolled out/,
    );
    const rss = kubectl([
      'get',
      'rs',
      '-l',
      'run=my-nginx',
      '-o',
      'jsonpath={range .items[*]}{.spec.replicas}{" "}{end}',
    ]);
    assert.deepEqual(rss.trim().split(' ').sort(), ['0', '2']);
    await waitFor('endpoints of the new pods only', () => {
      const ips = endpointIPs('my-nginx');
      const live = pods('run=my-nginx').filter((p) => p.metadata.deletionTimestamp === undefined);
      return ips.length === 2 && live.length === 2 && ips.every((ip) => !before.has(ip))
        ? true
        : undefined;
    });
  });

  test('kubectl create deploy + kubectl expose get endpoints too', async () => {
    kubectl(['create', 'deploy', 'hello', '--image=nginx', '--replicas=2']);
    kubectl(['expose', 'deploy', 'hello', '--port=8080', '--target-port=80']);
    await waitFor('hello endpoints', () => (endpointIPs('hello').length === 2 ? true : undefined));
    const ports = kubectl([
      'get',
      'endpoints',
      'hello',
      '-o',
      'jsonpath={.subsets[0].ports[0].port}',
    ]);
    assert.equal(ports.trim(), '80');
  });

  test('hand-written Endpoints of a selector-less Service are mirrored into an EndpointSlice', async () => {
    kubectl(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Service
metadata:
  name: external
spec:
  ports:
  - name: http
    port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Endpoints
metadata:
  name: external
subsets:
- addresses:
  - ip: 192.0.2.10
  - ip: 192.0.2.11
  ports:
  - name: http
    port: 8080
`,
    );
    const mirrored = await waitFor('a mirrored slice', () => {
      const s = slices('external');
      return s.length === 1 && (s[0]?.endpoints?.length ?? 0) === 2 ? s[0] : undefined;
    });
    assert.equal(
      mirrored.metadata.labels?.['endpointslice.kubernetes.io/managed-by'],
      'endpointslicemirroring-controller.k8s.io',
    );
    assert.deepEqual(mirrored.endpoints?.map((e) => e.addresses[0]).sort(), [
      '192.0.2.10',
      '192.0.2.11',
    ]);
    assert.deepEqual(
      mirrored.ports?.map((p) => p.port),
      [8080],
    );
    assert.match(describedEndpoints('external'), /192\.0\.2\.10:8080/);
  });

  test('a StatefulSet behind a headless Service comes up in order with hostnames in the slices', async () => {
    kubectl(['apply', '-f', '-'], STS);
    await waitFor('3 ready db pods', () =>
      kubectl(['get', 'sts', 'db', '-o', 'jsonpath={.status.readyReplicas}']).trim() === '3'
        ? true
        : undefined,
    );
    const ps = pods('app=db');
    assert.deepEqual(ps.map((p) => p.metadata.name).sort(), ['db-0', 'db-1', 'db-2']);
    assert.ok(ps.every((p) => p.spec.hostname === p.metadata.name));
    await waitFor('3 db endpoints with hostnames', () => {
      const eps = slices('db').flatMap((s) => s.endpoints ?? []);
      return eps.length === 3 ? eps : undefined;
    }).then((eps) => {
      assert.deepEqual(eps.map((e) => e.hostname).sort(), ['db-0', 'db-1', 'db-2']);
    });
    assert.deepEqual(
      slices('db')[0]?.ports?.map((p) => p.port),
      [5432],
    );
    kubectl(['scale', 'sts', 'db', '--replicas=1']);
    await waitFor('db scaled to db-0', () => {
      const names = pods('app=db').map((p) => p.metadata.name);
      return names.length === 1 && names[0] === 'db-0' ? true : undefined;
    });
  });

  test('kubectl delete -f removes the pods, endpoints and slices of the app', async () => {
    const out = kubectl(['delete', '-f', '-'], APP);
    assert.match(out, /deployment\.apps "my-nginx" deleted/);
    await waitFor('my-nginx pods gone', () =>
      pods('run=my-nginx').length === 0 ? true : undefined,
    );
    await waitFor('my-nginx slices gone', () =>
      slices('my-nginx').length === 0 ? true : undefined,
    );
    const ep = spawnSync('kubectl', ['--kubeconfig', kubeconfig, 'get', 'endpoints', 'my-nginx'], {
      encoding: 'utf8',
    });
    assert.notEqual(ep.status, 0);
    assert.equal(endpointIPs('hello').length, 2, 'other services are untouched');
  });
});
