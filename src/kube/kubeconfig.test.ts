import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

test('$KUBECONFIG files merge as kubectl merges them: the first to name an entry wins', async () => {
  const first = file(
    'first',
    `current-context: b
clusters: [{name: c, cluster: {server: "https://first:6443", certificate-authority: ca.pem}}]
users: [{name: u, user: {tokenFile: tok}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
`,
  );
  writeFileSync(join(dir, 'tok'), 'from-file\n');
  const second = file(
    'second',
    `current-context: a
clusters: [{name: c, cluster: {server: "https://second:6443"}}, {name: d, cluster: {server: "https://d:6443"}}]
users: [{name: v, user: {username: admin, password: pw}}]
contexts: [{name: b, context: {cluster: d, user: v, namespace: web}}, {name: a, context: {cluster: d, user: v}}]
`,
  );
  const kc = resolveKubeConfig(undefined, { KUBECONFIG: `${first}:${second}` });
  // current-context b (first file) names cluster d and user v (second file).
  assert.equal(kc.server, 'https://d:6443');
  assert.equal(kc.namespace, 'web');
  assert.equal(
    (await kc.transport()).headers.Authorization,
    `Basic ${Buffer.from('admin:pw').toString('base64')}`,
  );
  // The first file's context a: its cluster c wins over the second file's, and its relative
  // paths are read from the first file's folder.
  const a = resolveKubeConfig(first, {}, undefined, 'a');
  assert.equal(a.server, 'https://first:6443');
  assert.deepEqual(a.cluster.ca, { file: join(dir, 'ca.pem') });
  assert.equal(a.user.tokenFile, join(dir, 'tok'));
  assert.throws(
    () => resolveKubeConfig(first, {}, undefined, 'nope'),
    invalid(/first: not a usable kubeconfig \(no context "nope"\)$/),
  );
});

test('an exec credential plugin runs with KUBERNETES_EXEC_INFO; its token is kept until it expires', async (t) => {
  const count = join(dir, 'exec-count');
  const plugin = file(
    'plugin.sh',
    `#!/bin/sh
echo x >> "${count}"
n=$(wc -l < "${count}")
case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) ;; *) exit 3 ;; esac
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-%s-%s","expirationTimestamp":"%s"}}' "$n" "$GREETING" "$EXPIRES"
`,
  );
  chmodSync(plugin, 0o755);
  const at = (ms: number): string => new Date(ms).toISOString();
  const now = Date.now();
  const write = (expires: string): string =>
    file(
      'exec-kc',
      `current-context: x
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh, env: [{name: GREETING, value: hi}, {name: EXPIRES, value: "${expires}"}]}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`,
    );
  const kc = resolveKubeConfig(write(at(now + 3_600_000)), {});
  assert.equal((await kc.transport()).headers.Authorization, 'Bearer tok-1-hi');
  assert.equal((await kc.transport()).headers.Authorization, 'Bearer tok-1-hi', 'cached');
  // A credential about to expire is renewed.
  const soon = resolveKubeConfig(write(at(now + 1000)), {});
  assert.equal((await soon.transport()).headers.Authorization, 'Bearer tok-2-hi');
  assert.equal((await soon.transport()).headers.Authorization, 'Bearer tok-3-hi');
  t.after(() => {
    rmSync(count, { force: true });
  });
});

test('what svcnet cannot honour is refused by name: auth-provider, proxy-url, a failing plugin', async () => {
  const kcWith = (name: string, cluster: string, user: string): string =>
    file(
      name,
      `current-context: x
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"${cluster}}}]
users: [{name: u, user: {${user}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`,
    );
  assert.throws(
    () => resolveKubeConfig(kcWith('ap', '', 'auth-provider: {name: oidc}'), {}),
    invalid(/not a usable kubeconfig \(user u: auth-provider is not supported/),
  );
  assert.throws(
    () => resolveKubeConfig(kcWith('px', ', proxy-url: "http://p:3128"', 'token: t'), {}),
    invalid(/not a usable kubeconfig \(cluster c: proxy-url is not supported\)/),
  );
  const failing = resolveKubeConfig(kcWith('fx', '', 'exec: {command: /bin/false}'), {});
  await assert.rejects(
    failing.transport(),
    invalid(/user u in --kubeconfig \S+fx: exec plugin \/bin\/false failed/),
  );
});
