// Every field kubectl sends survives the API server, checked with the machine's real kubectl
// binaries against `svcnet apiserver` (loopback only). The `kubectl create` generators of the
// kinds served here send protobuf from kubectl 1.32 on (src/apiserver/protobuf.ts decodes a
// schema subset): each generator's object as kubectl prints it with `--dry-run=client -o json`
// must come back leaf for leaf from `kubectl get -o json` after the real create, which must
// have gone out as protobuf. A rich manifest applied with `apply --server-side -o json` must
// come back whole too (that path is YAML, decoded without a schema).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { findKubectls, KubectlRunner } from './lib/apiserver-kubectl.js';

/** Every scalar of `want` with its path, skipping nulls and empty objects (absent on the wire). */
function leaves(want: unknown, path = ''): [string, unknown][] {
  if (Array.isArray(want)) return want.flatMap((v, i) => leaves(v, `${path}[${String(i)}]`));
  if (typeof want === 'object' && want !== null)
    return Object.entries(want).flatMap(([k, v]) => leaves(v, `${path}.${k}`));
  return want === null ? [] : [[path, want]];
}

function at(obj: unknown, path: string): unknown {
  let o = obj;
  for (const [, key, index] of path.matchAll(/\.([^.[]+)|\[(\d+)\]/g)) {
    if (o === null || typeof o !== 'object') return undefined;
    o = (o as Record<string, unknown>)[key ?? Number(index)];
  }
  return o;
}

/** Leaves of `want` that `got` lacks or holds differently (status is the server's). */
function lost(want: unknown, got: unknown): string[] {
  return leaves(want)
    .filter(([p]) => !p.startsWith('.status'))
    .filter(([p, v]) => at(got, p) !== v)
    .map(([p, v]) => `${p}: sent ${JSON.stringify(v)}, stored ${JSON.stringify(at(got, p))}`);
}

/** kubectl create generators of the kinds svcnet serves: [args, object reference]. */
const GENERATORS: [string[], string][] = [
  [
    [
      'create',
      'deployment',
      'd1',
      '--image=nginx:1.25',
      '--replicas=0',
      '--port=8080',
      '--',
      'sh',
      '-c',
      'echo hi',
    ],
    'deployment/d1',
  ],
  [['create', 'deployment', 'd2', '--image=a:1', '--image=b:2', '--replicas=3'], 'deployment/d2'],
  [['create', 'service', 'clusterip', 's1', '--tcp=80:8080', '--tcp=443:https'], 'service/s1'],
  [['create', 'service', 'clusterip', 's2', '--clusterip=None', '--tcp=5678:8080'], 'service/s2'],
  [['create', 'service', 'nodeport', 's3', '--tcp=80:8080', '--node-port=NODEPORT'], 'service/s3'],
  [['create', 'service', 'loadbalancer', 's4', '--tcp=80:8080'], 'service/s4'],
  [['create', 'service', 'externalname', 's5', '--external-name=example.com'], 'service/s5'],
  [
    [
      'create',
      'configmap',
      'c1',
      '--from-literal=a=1',
      '--from-literal=b=two words',
      '--from-file=bin=BINFILE',
    ],
    'configmap/c1',
  ],
];

const RICH = `apiVersion: apps/v1
kind: Deployment
metadata: {name: rich, labels: {app: rich}, annotations: {note: "a b"}}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}}
  selector: {matchLabels: {app: rich}}
  template:
    metadata: {labels: {app: rich}}
    spec:
      terminationGracePeriodSeconds: 5
      nodeSelector: {disk: ssd}
      tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
      volumes: [{name: cfg, configMap: {name: c1, items: [{key: a, path: a.txt}]}}]
      initContainers: [{name: init, image: "busybox:1.36", command: [sh, -c, "true"]}]
      containers:
      - name: web
        image: nginx:1.25
        args: [--port, "8080"]
        env: [{name: A, value: "1"}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        ports: [{name: http, containerPort: 8080, protocol: TCP}]
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 2}
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: cfg, mountPath: /etc/cfg, readOnly: true}]
        securityContext: {runAsNonRoot: true, runAsUser: 1000, privileged: false}
---
apiVersion: v1
kind: Service
metadata: {name: rich, labels: {app: rich}}
spec:
  type: NodePort
  selector: {app: rich}
  externalTrafficPolicy: Local
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}
  ipFamilyPolicy: SingleStack
  ports:
  - {name: http, port: 80, targetPort: http, protocol: TCP, appProtocol: http}
  - {name: dns, port: 53, targetPort: 5353, protocol: UDP}
`;

const kubectls = findKubectls(32);

describe(
  'kubectl requests round-trip through svcnet apiserver',
  { skip: kubectls.length === 0 ? 'no kubectl 1.32+ installed' : false },
  () => {
    let server: RunningApiServer;
    let dir: string;
    let kubeconfig: string;
    let binFile: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'svcnet-kubectl-protobuf-'));
      server = await startApiServer({ listen: '127.0.0.1:0' });
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, server.kubeconfig());
      binFile = join(dir, 'bin');
      writeFileSync(binFile, Buffer.from([0, 1, 0x62, 0x69, 0x6e, 0xff]));
    });

    after(async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    kubectls.forEach((k, i) => {
      it(`${k.label}: every field of every create generator survives its protobuf request`, async () => {
        const kc = new KubectlRunner(k, kubeconfig);
        const ns = ['-n', `pb${String(i)}`];
        await kc.ok(['create', 'namespace', `pb${String(i)}`]);
        for (const [template, ref] of GENERATORS) {
          const args = template.map((a) =>
            a.replace('NODEPORT', String(30100 + i)).replace('BINFILE', binFile),
          );
          const dash = args.includes('--') ? args.indexOf('--') : args.length;
          const sent = JSON.parse(
            await kc.ok([
              ...ns,
              ...args.slice(0, dash),
              '--dry-run=client',
              '-o',
              'json',
              ...args.slice(dash),
            ]),
          ) as unknown;
          const created = await kc.run([...ns, '-v=8', ...args]);
          assert.equal(created.code, 0, `${args.join(' ')}: ${created.stderr.slice(-800)}`);
          assert.match(
            created.stderr,
            /Content-Type: application\/vnd\.kubernetes\.protobuf/,
            `${args.join(' ')} must send protobuf`,
          );
          const stored = JSON.parse(await kc.ok([...ns, 'get', ref, '-o', 'json'])) as unknown;
          assert.deepEqual(lost(sent, stored), [], args.join(' '));
        }
      });

      it(`${k.label}: apply --server-side -o json keeps a rich manifest whole`, async () => {
        const kc = new KubectlRunner(k, kubeconfig);
        const nsName = `ssa${String(i)}`;
        await kc.ok(['create', 'namespace', nsName]);
        const manifest = RICH.replace(/nodePort: \d+/, '');
        const printed = JSON.parse(
          await kc.ok(['apply', '--server-side', '-n', nsName, '-f', '-', '-o', 'json'], {
            stdin: manifest,
          }),
        ) as { items: unknown[] };
        const docs = parseAllDocuments(manifest).map((d) => d.toJS() as unknown);
        assert.equal(printed.items.length, 2);
        for (const [j, doc] of docs.entries()) {
          assert.deepEqual(lost(doc, printed.items[j]), [], `apply -o json, document ${String(j)}`);
          const ref = j === 0 ? 'deployment/rich' : 'service/rich';
          const stored = JSON.parse(
            await kc.ok(['get', '-n', nsName, ref, '-o', 'json']),
          ) as unknown;
          assert.deepEqual(lost(doc, stored), [], `get ${ref} -o json`);
        }
      });
    });
  },
);
