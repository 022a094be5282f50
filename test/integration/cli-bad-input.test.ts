// Bad files at every door of the CLI (issue 23): invalid YAML, a YAML alias bomb, nesting
// 100,000 deep, wrong types, unknown kinds and a 50 MB file, each given to `render -f`,
// `trace -f`, `lab up -f` (validated before any lab is built), `apiserver --data-dir`,
// `dns --config` and `proxy --config`. Every run must exit 2 with the file named on the first
// line of stderr, print nothing on stdout and no stack trace. Wall time and peak RSS of each
// run are printed (targets: 2 s and 200 MB) but not asserted: the machine is shared.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lines, runCli } from './lib/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-bad-input-'));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const bomb = [
  'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]',
  ...'bcdefghi'.split('').map(
    (c, i) =>
      `${c}: &${c} [${Array(9)
        .fill(`*${'abcdefghi'[i] ?? ''}`)
        .join(', ')}]`,
  ),
].join('\n');

function bigFile(): string {
  const p = join(dir, 'big.yaml');
  const fd = openSync(p, 'w');
  const chunk = `# ${'x'.repeat(1021)}\n`;
  for (let i = 0; i < 50 * 1024; i++) writeSync(fd, chunk);
  closeSync(fd);
  return p;
}

type Target = 'manifest' | 'proxy' | 'dns';

/** Each bad file, shaped per target where "wrong" depends on what the command reads. */
const FILES: { name: string; path: Record<Target, string> }[] = (() => {
  const same = (p: string): Record<Target, string> => ({ manifest: p, proxy: p, dns: p });
  return [
    { name: 'invalid YAML', path: same(file('invalid.yaml', 'a: 1\nb: c: d\n')) },
    { name: 'alias bomb', path: same(file('bomb.yaml', bomb)) },
    {
      name: 'deep nesting',
      path: same(file('deep.yaml', `${'['.repeat(100_000)}${']'.repeat(100_000)}\n`)),
    },
    {
      name: 'wrong types',
      path: {
        manifest: file(
          'types-svc.yaml',
          'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.9, ports: eighty}\n',
        ),
        proxy: file(
          'types-kp.yaml',
          'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\niptables: {masqueradeBit: fourteen}\n',
        ),
        dns: file('types-dns.yaml', 'ttl: five\ncache: [1]\n'),
      },
    },
    {
      name: 'unknown kind',
      path: {
        manifest: file('kind.yaml', 'apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n'),
        proxy: file('kind-kp.yaml', 'apiVersion: v1\nkind: Gadget\n'),
        dns: file('kind-dns.yaml', 'apiVersion: v1\nkind: Gadget\n'),
      },
    },
    { name: '50 MB file', path: same(bigFile()) },
  ];
})();

const KUBECONFIG = file(
  'kubeconfig',
  'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
);

const COMMANDS: { name: string; target: Target; args: (f: string) => string[] }[] = [
  { name: 'render', target: 'manifest', args: (f) => ['render', '-f', f] },
  {
    name: 'trace',
    target: 'manifest',
    args: (f) => ['trace', '-f', f, '--src', '10.244.1.5', '--dst', '10.96.0.9:80'],
  },
  // Validation comes before anything is built: none of these files may start a lab.
  {
    name: 'lab up',
    target: 'manifest',
    args: (f) => ['lab', 'up', '--name', 'svcnet-badin', '-f', f],
  },
  {
    name: 'apiserver',
    target: 'manifest',
    args: (f) => ['apiserver', '--listen', '127.0.0.1:0', '--data-dir', f],
  },
  {
    name: 'dns',
    target: 'dns',
    args: (f) => ['dns', '--config', f, '--kubeconfig', KUBECONFIG, '--listen', '127.0.0.1:0'],
  },
  {
    name: 'proxy',
    target: 'proxy',
    args: (f) => [
      'proxy',
      '--config',
      f,
      '--kubeconfig',
      KUBECONFIG,
      '--healthz-bind-address',
      '',
      '--metrics-bind-address',
      '',
    ],
  },
];

const figures: string[] = [];
after(() => {
  process.stdout.write(`# bad-input runs (seconds, peak RSS MiB):\n${figures.join('\n')}\n`);
});

for (const cmd of COMMANDS)
  test(`svcnet ${cmd.name}: every bad file exits 2 naming it, without a stack trace`, async () => {
    // One at a time: the figures mean something only when runs do not compete.
    const runs = [];
    for (const f of FILES) runs.push({ f, run: await runCli(cmd.args(f.path[cmd.target])) });
    for (const { f, run } of runs) {
      const path = f.path[cmd.target];
      const err = lines(run.stderr);
      figures.push(
        `#   ${cmd.name.padEnd(9)} ${f.name.padEnd(13)} ${run.seconds.toFixed(2)} s ${run.maxRssMiB ?? '?'} MiB  ${err[0] ?? ''}`.slice(
          0,
          200,
        ),
      );
      const what = `${cmd.name} / ${f.name}: ${run.stderr}`;
      assert.equal(run.code, 2, what);
      assert.equal(run.stdout, '', what);
      assert.ok(err[0]?.startsWith(`svcnet ${cmd.name}: `), what);
      assert.ok(err[0]?.includes(path), `the first line names ${path}: ${what}`);
      assert.ok(!err.some((l) => /^\s+at /.test(l)), `no stack trace: ${what}`);
    }
  });
