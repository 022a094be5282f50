// deploy/ against a plain `svcnet apiserver` (a child process on loopback) and the machine's
// real kubectl: `apply --dry-run=client` and `--dry-run=server` of the whole folder succeed
// (kubectl reads only its .yaml files, so the Containerfile and README are skipped), then
// `apply -f deploy/` creates every object, and `kubectl get` of each one shows every field as
// the file wrote it (the server may add defaults, never change or drop a written field).

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { startApiServerChild, type ApiServerChild } from './lib/apiserver-child.js';
import { findKubectls, KubectlRunner, tableRows } from './lib/apiserver-kubectl.js';
import { skipOrFail } from './lib/prereq.js';

const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;

interface Doc {
  readonly file: string;
  readonly object: { kind: string; metadata: { name: string; namespace?: string } };
}

function manifests(): Doc[] {
  const out: Doc[] = [];
  for (const file of readdirSync(DEPLOY)
    .filter((f) => f.endsWith('.yaml'))
    .sort())
    for (const d of parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))) {
      const object = d.toJS() as Doc['object'] | null;
      if (object !== null) out.push({ file, object });
    }
  return out;
}

/** Paths where `written` has a value `got` does not hold (objects compared field by field). */
function differences(written: unknown, got: unknown, path = ''): string[] {
  if (Array.isArray(written)) {
    if (!Array.isArray(got) || got.length !== written.length)
      return [`${path}: wrote ${JSON.stringify(written)}, got ${JSON.stringify(got)}`];
    return written.flatMap((w: unknown, i) => differences(w, got[i], `${path}[${i}]`));
  }
  if (typeof written === 'object' && written !== null) {
    if (typeof got !== 'object' || got === null)
      return [`${path}: wrote an object, got ${JSON.stringify(got)}`];
    return Object.entries(written).flatMap(([k, w]) =>
      differences(w, (got as Record<string, unknown>)[k], path === '' ? k : `${path}.${k}`),
    );
  }
  return written === got
    ? []
    : [`${path}: wrote ${JSON.stringify(written)}, got ${JSON.stringify(got)}`];
}

const kubectl = findKubectls(29).at(-1);

describe(
  'deploy/ applied to svcnet apiserver',
  {
    skip: skipOrFail(
      kubectl === undefined ? 'no kubectl installed; install: bash scripts/install-deps.sh' : false,
    ),
  },
  () => {
    let server: ApiServerChild;
    let kc: KubectlRunner;

    before(async () => {
      server = await startApiServerChild();
      kc = new KubectlRunner(kubectl!, server.kubeconfig);
    });

    after(async () => {
      await server.stop();
    });

    it('apply --dry-run=client and --dry-run=server of deploy/ succeed and create nothing', async () => {
      const client = await kc.ok(['apply', '--dry-run=client', '-f', DEPLOY]);
      assert.match(client, /daemonset\.apps\/kube-proxy created \(dry run\)/);
      assert.match(
        client,
        /clusterrole\.rbac\.authorization\.k8s\.io\/svcnet:kube-proxy created \(dry run\)/,
      );
      const serverSide = await kc.ok(['apply', '--dry-run=server', '-f', DEPLOY]);
      assert.match(serverSide, /deployment\.apps\/coredns created \(server dry run\)/);
      const ds = await kc.run(['get', '-n', 'kube-system', 'ds', 'kube-proxy']);
      assert.notEqual(ds.code, 0);
      assert.match(ds.stderr, /NotFound|not found/);
    });

    it('apply -f deploy/ creates every object as written', async () => {
      const out = await kc.ok(['apply', '-f', DEPLOY]);
      const docs = manifests();
      assert.equal(out.trim().split('\n').length, docs.length, out);
      for (const { file, object } of docs) {
        const ns = object.metadata.namespace;
        const got = JSON.parse(
          await kc.ok([
            'get',
            ...(ns !== undefined ? ['-n', ns] : []),
            `${object.kind}/${object.metadata.name}`,
            '-o',
            'json',
          ]),
        ) as unknown;
        assert.deepEqual(
          differences(object, got),
          [],
          `${file}: ${object.kind} ${object.metadata.name}`,
        );
      }
    });

    it('kubectl get prints the new kinds with their columns and short names', async () => {
      const ds = tableRows(await kc.ok(['get', '-n', 'kube-system', 'ds']));
      assert.deepEqual(ds[0]?.slice(0, 7), [
        'NAME',
        'DESIRED',
        'CURRENT',
        'READY',
        'UP-TO-DATE',
        'AVAILABLE',
        'NODE SELECTOR',
      ]);
      assert.deepEqual(
        ds
          .map((r) => r[0])
          .slice(1)
          .sort(),
        ['kube-flannel', 'kube-proxy'],
      );
      assert.equal(ds.find((r) => r[0] === 'kube-proxy')?.[6], 'kubernetes.io/os=linux');
      const sa = tableRows(await kc.ok(['get', '-n', 'kube-system', 'sa']));
      assert.deepEqual(
        sa
          .map((r) => r[0])
          .slice(1)
          .sort(),
        ['coredns', 'flannel', 'kube-proxy'],
      );
      const crb = tableRows(
        await kc.ok(['get', 'clusterrolebinding', 'svcnet:kube-proxy', '-o', 'wide']),
      );
      assert.deepEqual(crb[0]?.slice(0, 3), ['NAME', 'ROLE', 'AGE']);
      const row = crb[1] ?? [];
      assert.equal(row[1], 'ClusterRole/svcnet:kube-proxy');
      assert.ok(row.includes('kube-system/kube-proxy'), row.join(' | '));
      const roles = await kc.ok(['get', '-n', 'kube-system', 'roles,rolebindings']);
      assert.match(roles, /role\.rbac\.authorization\.k8s\.io\/svcnet:flannel/);
      assert.match(
        roles,
        /rolebinding\.rbac\.authorization\.k8s\.io\/svcnet:flannel\s+Role\/svcnet:flannel/,
      );
    });

    it('refuses a DaemonSet with an unknown update strategy, naming the field', async () => {
      const r = await kc.run(['apply', '-f', '-'], {
        stdin: readFileSync(join(DEPLOY, 'kube-proxy.yaml'), 'utf8').replace(
          'type: RollingUpdate',
          'type: Sometimes',
        ),
      });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /spec\.updateStrategy\.type: Unsupported value: "Sometimes"/);
    });
  },
);
