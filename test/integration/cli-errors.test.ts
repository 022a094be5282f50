// Errors for people (issue 24): a table of the mistakes users make — a misspelt flag, bad
// YAML, a missing file, a file that is not a kubeconfig, a wrong token, an unreachable API
// server — each answered with one clear line (the API failures: one line per failure, with
// the count and the backoff, the first also saying what to check), no help dump and no stack
// trace. The wrong-token case runs against a real `svcnet apiserver` started by the test.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiServer, type RunningApiServer } from '../../src/apiserver/daemon.js';
import { lines, runCli } from './lib/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-cli-errors-'));
let api: RunningApiServer;

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function kubeconfig(name: string, server: string, token: string): string {
  return file(
    name,
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]\nusers: [{name: tester, user: {token: ${token}}}]\ncontexts: [{name: x, context: {cluster: c, user: tester}}]\ncurrent-context: x\n`,
  );
}

before(async () => {
  api = await startApiServer({ listen: '127.0.0.1:0', token: 'the-right-token' });
});
after(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

const BAD_YAML = file('bad.yaml', 'apiVersion: v1\nkind: Service\nmetadata: name: web\n');
const NOT_KUBECONFIG = file('not-kc.yaml', 'hello: world\n');

const ONE_LINE: { name: string; args: () => string[]; line: RegExp | string }[] = [
  {
    name: 'unknown flag',
    args: () => [
      'trace',
      '--source',
      '10.0.0.1',
      '--dst',
      '10.96.0.1:80',
      '-f',
      'examples/nginx.yaml',
    ],
    line: "svcnet trace: unknown option '--source' (did you mean --src?)",
  },
  {
    name: 'bad YAML',
    args: () => ['render', '-f', BAD_YAML],
    line: `svcnet render: ${BAD_YAML}:3:11: invalid YAML: Nested mappings are not allowed in compact mappings: "metadata: name: web"`,
  },
  {
    name: 'missing file',
    args: () => ['render', '-f', join(dir, 'absent.yaml')],
    line: `svcnet render: ${join(dir, 'absent.yaml')}: cannot read file (no such file or directory)`,
  },
  {
    name: 'not a kubeconfig',
    args: () => ['dns', '--kubeconfig', NOT_KUBECONFIG, '--listen', '127.0.0.1:0'],
    line: `svcnet dns: --kubeconfig ${NOT_KUBECONFIG}: not a usable kubeconfig (no current-context)`,
  },
  {
    // Refused before anything is built: a node's /24 podCIDR holds at most 250 Pods.
    name: 'lab up --pods-per-node out of range',
    args: () => ['lab', 'up', '--name', 'svcnet-badppn', '--pods-per-node', '300'],
    line: "svcnet lab up: --pods-per-node: must be 1-250 (a node's /24 podCIDR), got 300",
  },
];

for (const c of ONE_LINE)
  test(`${c.name}: exit 2 with one clear line`, async () => {
    const run = await runCli(c.args(), { timeoutMs: 60_000 });
    assert.equal(run.code, 2, run.stderr);
    assert.deepEqual(lines(run.stderr), [c.line]);
    assert.equal(run.stdout, '');
  });

/** Runs a daemon until it has logged `n` failures to list/watch services; returns every failure line. */
async function failures(args: string[], n: number): Promise<string[]> {
  const re = new RegExp(`(list/watch services:[^\\n]*\\n[^]*){${n}}`);
  const run = await runCli([...args, '--logging-format', 'text'], { until: re, timeoutMs: 60_000 });
  const all = lines(run.stderr);
  assert.ok(
    !all.some((l) => /^\s+at |Headers:|HTTP-Code/.test(l)),
    `no stacks or headers:\n${run.stderr}`,
  );
  return all.filter((l) => l.includes('List/watch failed'));
}

test('wrong token: one line per failure with count and backoff; the first says to check the token', async () => {
  const kc = kubeconfig('wrong-token', api.url, 'a-wrong-token');
  const got = await failures(['controller', '--kubeconfig', kc], 3);
  const all = got.join('\n');
  assert.match(
    got[0] ?? '',
    /HTTP 401 Unauthorized.*\(failure 1, retrying in 500ms\); check the token or client certificate of user tester in --kubeconfig \S+wrong-token/,
    all,
  );
  assert.ok(
    got.slice(1).every((l) => !l.includes('check the token')),
    'the hint comes once',
  );
  const services = got.filter((l) => l.includes('list/watch services:'));
  assert.match(services[1] ?? '', /\(failure 2, retrying in 1s\)/, all);
  assert.match(services[2] ?? '', /\(failure 3, retrying in 2s\)/, all);
});

test('unreachable server: one line per failure; the first names the server address to check', async () => {
  const kc = kubeconfig('unreachable', 'https://127.0.0.1:1', 't');
  const got = await failures(
    [
      'dns',
      '--kubeconfig',
      kc,
      '--listen',
      '127.0.0.1:0',
      '--health-listen',
      '',
      '--ready-listen',
      '',
      '--metrics-listen',
      '',
      '--upstream',
      '127.0.0.1:53',
    ],
    2,
  );
  assert.match(
    got[0] ?? '',
    /connection refused \(ECONNREFUSED\) \(failure 1, retrying in 500ms\); check that the API server runs at https:\/\/127\.0\.0\.1:1 \(the server address in --kubeconfig \S+unreachable\)/,
  );
  assert.ok(
    got.slice(1).every((l) => !l.includes('check that')),
    'the hint comes once',
  );
});
