import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { readInClusterConfig } from './in-cluster.js';
import { inClusterKubeConfig, resolveKubeConfig, type KubeConfig } from './kubeconfig.js';

function serviceAccount(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-sa-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

async function bearer(kc: KubeConfig): Promise<string | undefined> {
  return (await kc.transport()).headers.Authorization;
}

test('in-cluster: server from the environment, CA, token and namespace from the directory', async () => {
  const dir = serviceAccount({ token: 'tok-1', 'ca.crt': 'CA', namespace: 'kube-system\n' });
  const cfg = readInClusterConfig(env, dir);
  assert.deepEqual(cfg, {
    server: 'https://10.96.0.1:443',
    caFile: join(dir, 'ca.crt'),
    tokenFile: join(dir, 'token'),
    namespace: 'kube-system',
  });
  const kc = resolveKubeConfig(undefined, env, dir);
  assert.equal(kc.getCurrentCluster().server, 'https://10.96.0.1:443');
  assert.deepEqual(kc.cluster.ca, { file: join(dir, 'ca.crt') });
  assert.equal(kc.namespace, 'kube-system');
  assert.equal(await bearer(kc), 'Bearer tok-1');
  assert.equal(
    readInClusterConfig({ ...env, KUBERNETES_SERVICE_HOST: 'fd00::1' }, dir).server,
    'https://[fd00::1]:443',
  );
  rmSync(dir, { recursive: true });
});

test('in-cluster: a rotated token is picked up within a minute', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const dir = serviceAccount({ token: 'old', 'ca.crt': 'CA' });
  const kc = inClusterKubeConfig(readInClusterConfig(env, dir));
  assert.equal(await bearer(kc), 'Bearer old');
  writeFileSync(join(dir, 'token'), 'new');
  t.mock.timers.tick(30_000);
  assert.equal(await bearer(kc), 'Bearer old', 'kept for up to a minute');
  t.mock.timers.tick(31_000);
  assert.equal(await bearer(kc), 'Bearer new');
  rmSync(dir, { recursive: true });
});

test('in-cluster: every missing piece is named in one INVALID_INPUT error', () => {
  const empty = serviceAccount({});
  assert.throws(
    () => readInClusterConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, empty),
    (e: unknown) =>
      e instanceof SvcnetError &&
      e.code === 'INVALID_INPUT' &&
      e.message ===
        `in-cluster config: not usable ($KUBERNETES_SERVICE_PORT is not set; cannot read ${join(empty, 'token')}; cannot read ${join(empty, 'ca.crt')})`,
  );
  // resolveKubeConfig passes it through as it is (CLI exit 2).
  assert.throws(
    () => resolveKubeConfig(undefined, env, empty),
    /^SvcnetError: in-cluster config: not usable/,
  );
  // Neither a kubeconfig nor the Pod's environment: say what would do.
  assert.throws(
    () => resolveKubeConfig(undefined, {}, empty),
    /no kubeconfig: give --kubeconfig FILE, set \$KUBECONFIG, or run in a Pod/,
  );
  rmSync(empty, { recursive: true });
});
