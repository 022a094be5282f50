// The package as a user gets it: `npm pack` of this checkout (prepack builds dist/ and the
// bundles), `npm i -g --prefix TMP ./svcnet-*.tgz` with no network (the tarball carries its
// dependencies), then from another folder: `svcnet --help`, `svcnet render` and `svcnet
// trace` of an example, `svcnet-cni` VERSION, and `svcnet lab up` + `lab down` — all through
// the installed commands, and the lab writes nothing into the installed package. Needs root
// (the lab), npm, unshare, nsenter and ip; runs one one-node lab in a lab root of its own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';

const repo = join(import.meta.dirname, '..', '..');
const skip = skipOrFail(
  process.getuid?.() !== 0
    ? 'needs root (lab up)'
    : (missingToolsReason(['npm', 'unshare', 'nsenter', 'ip', 'iptables-restore', 'curl']) ??
        false),
);

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(
  cmd: string,
  args: readonly string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Run {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    input: opts.input ?? '',
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr + (r.error?.message ?? '') };
}

function ok(r: Run, what: string): Run {
  assert.equal(r.code, 0, `${what} exited ${String(r.code)}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/** path -> mtime of every file under dir: what "nothing written here" is checked against. */
function snapshot(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const p = join(e.parentPath, e.name);
    out.set(p, statSync(p).mtimeMs);
  }
  return out;
}

test(
  'npm pack, npm i -g into a prefix, then svcnet, svcnet-cni and lab up/down from another folder',
  { skip, timeout: 900_000 },
  (t) => {
    const tmp = mkdtempSync(join(tmpdir(), 'svcnet-install-'));
    const prefix = join(tmp, 'prefix');
    const work = join(tmp, 'work');
    const labRoot = join(tmp, 'lab');
    mkdirSync(work);
    const env = { ...process.env, SVCNET_LAB_ROOT: labRoot, npm_config_update_notifier: 'false' };
    const svcnet = join(prefix, 'bin', 'svcnet');
    t.after(() => {
      run(svcnet, ['lab', 'down', '--name', 'pkg'], { cwd: work, env });
      rmSync(tmp, { recursive: true, force: true });
    });

    // The test runs in a private network namespace: no registry. The tarball must carry
    // everything the install needs.
    const pack = ok(
      run('npm', ['pack', '--pack-destination', tmp, '--json', '--silent'], { cwd: repo, env }),
      'npm pack',
    );
    const [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    assert.ok(packed);
    const files = packed.files.map((f) => f.path);
    for (const want of [
      'bin/svcnet.mjs',
      'bin/svcnet-cni.cjs',
      'dist/cli/main.js',
      'build/lab/main.mjs',
      'build/cni/svcnet-cni',
    ])
      assert.ok(files.includes(want), `the tarball lacks ${want}`);
    assert.ok(!files.some((f) => f.startsWith('src/')), 'the tarball ships no TypeScript source');
    ok(
      run(
        'npm',
        ['i', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', packed.filename],
        { cwd: tmp, env },
      ),
      'npm i -g',
    );

    // From another folder, through the installed commands only.
    const help = ok(run(svcnet, ['--help'], { cwd: work, env }), 'svcnet --help');
    assert.match(help.stdout, /^Usage: svcnet \[options\] \[command\]/);
    assert.match(help.stdout, /\blab\b/);
    const pkg = join(prefix, 'lib', 'node_modules', 'svcnet');
    copyFileSync(join(pkg, 'examples', 'nginx.yaml'), join(work, 'nginx.yaml'));
    const render = ok(run(svcnet, ['render', '-f', 'nginx.yaml'], { cwd: work, env }), 'render');
    assert.equal(render.stdout.match(/-j DNAT --to-destination 10\.244\.\d+\.\d+:80/g)?.length, 3);
    const trace = ok(
      run(
        svcnet,
        ['trace', '-f', 'nginx.yaml', '--src', '10.244.1.5', '--dst', '10.96.45.12:3000'],
        { cwd: work, env },
      ),
      'trace',
    );
    assert.match(trace.stdout, /3 possible outcomes/);
    const cni = ok(
      run(join(prefix, 'bin', 'svcnet-cni'), [], {
        cwd: work,
        env: { ...env, CNI_COMMAND: 'VERSION' },
      }),
      'svcnet-cni VERSION',
    );
    assert.deepEqual(
      (JSON.parse(cni.stdout) as { supportedVersions: string[] }).supportedVersions.includes(
        '1.1.0',
      ),
      true,
    );

    const before = snapshot(pkg);
    const up = ok(
      run(svcnet, ['lab', 'up', '--name', 'pkg', '--nodes', '1'], { cwd: work, env }),
      'lab up',
    );
    assert.match(up.stdout + up.stderr, /lab pkg is up/);
    const status = ok(
      run(svcnet, ['lab', 'status', '--name', 'pkg'], { cwd: work, env }),
      'status',
    );
    assert.match(status.stdout, /pkg-control-plane/);
    ok(run(svcnet, ['lab', 'down', '--name', 'pkg'], { cwd: work, env }), 'lab down');
    assert.deepEqual(readdirSync(labRoot), [], 'lab down leaves no state behind');
    assert.deepEqual(snapshot(pkg), before, 'the lab wrote nothing into the installed package');
  },
);
