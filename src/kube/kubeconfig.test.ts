import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { resolveKubeConfig } from './client.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-kc-'));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
const good = file(
  'good',
  `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
);
const noServiceAccount = join(dir, 'no-serviceaccount');

function invalid(re: RegExp): (e: unknown) => boolean {
  return (e: unknown) =>
    e instanceof SvcnetError && e.code === 'INVALID_INPUT' && re.test(e.message);
}

test('--kubeconfig, then $KUBECONFIG, then in-cluster, as client-go', () => {
  assert.equal(resolveKubeConfig(good, {}).getCurrentCluster().server, 'https://127.0.0.1:6443');
  assert.equal(
    resolveKubeConfig(undefined, { KUBECONFIG: `${join(dir, 'absent')}:${good}` }).getCurrentUser()
      .name,
    'u',
  );
  assert.throws(
    () => resolveKubeConfig(undefined, { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, noServiceAccount),
    invalid(/^no kubeconfig: give --kubeconfig FILE, set \$KUBECONFIG, or run in a Pod/),
  );
});

test('a file that is not a usable kubeconfig is one INVALID_INPUT error naming it', () => {
  assert.throws(
    () => resolveKubeConfig(join(dir, 'absent'), {}),
    invalid(/^--kubeconfig \S+absent: not a usable kubeconfig \(no such file\)$/),
  );
  const notKc = file('not-kc', 'hello: world\n');
  assert.throws(
    () => resolveKubeConfig(notKc, {}),
    invalid(/^--kubeconfig \S+not-kc: not a usable kubeconfig \(no current-context\)$/),
  );
  const badYaml = file('bad-yaml', 'a: b: c\n');
  assert.throws(
    () => resolveKubeConfig(badYaml, {}),
    invalid(/bad-yaml: not a usable kubeconfig \(/),
  );
  assert.throws(
    () => resolveKubeConfig(undefined, { KUBECONFIG: notKc }),
    invalid(/^\$KUBECONFIG \S+not-kc: not a usable kubeconfig/),
  );
});
