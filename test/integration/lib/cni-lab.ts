// Helpers for the CNI integration tests and bench: a skip reason when the machine cannot
// run them, the plugin bundled into a temporary CNI_PATH, named network namespaces with a
// per-run prefix (`svcnet-cni-<pid>-…`, stale ones from dead runs swept first, all removed
// in cleanup), and reachability probes with ping from inside a namespace. Never touches the
// root namespace: every address, route and link lives in namespaces created here.

import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RealExecer, runChecked, type Execer } from '../../../src/os/exec.js';

export const REFERENCE_DIR = '/usr/lib/cni';
const PREFIX = 'svcnet-cni-';

function which(cmd: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, cmd)));
}

/** Why the namespace tests cannot run here, or undefined when they can. */
export function cniSkipReason(
  opts: { reference?: boolean; ping?: boolean; nft?: boolean } = {},
): string | undefined {
  if (process.platform !== 'linux') return 'CNI integration tests need Linux';
  if (process.getuid?.() !== 0)
    return 'CNI integration tests need root (CAP_NET_ADMIN) to create network namespaces';
  for (const [cmd, pkg] of [
    ['ip', 'iproute2'],
    ['nsenter', 'util-linux'],
    ...(opts.ping ? [['ping', 'iputils-ping']] : []),
    ...(opts.nft ? [['nft', 'nftables']] : []),
  ] as const)
    if (!which(cmd))
      return `missing ${cmd} (Debian package ${pkg}; install: bash scripts/install-deps.sh)`;
  if (opts.reference && !existsSync(join(REFERENCE_DIR, 'ptp')))
    return `reference plugins not installed in ${REFERENCE_DIR} (apt-get install containernetworking-plugins)`;
  return undefined;
}

/** Bundles src/cli/svcnet-cni.ts into `<dir>/svcnet-cni` (CommonJS, shebang, executable). */
export async function bundlePlugin(dir: string): Promise<string> {
  const esbuild = await import('esbuild');
  const out = join(dir, 'svcnet-cni');
  await esbuild.build({
    entryPoints: [resolve(import.meta.dirname, '../../../src/cli/svcnet-cni.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: out,
    logLevel: 'warning',
  });
  await chmod(out, 0o755);
  return out;
}

/** A temp dir holding the bundled plugin, for CNI_PATH. */
export async function pluginDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svcnet-cni-bin-'));
  await bundlePlugin(dir);
  return dir;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Named namespaces of one run: `svcnet-cni-<pid>-<tag>-<name>`. */
export class NetnsLab {
  readonly execer: Execer;
  readonly prefix: string;
  private readonly names: string[] = [];

  constructor(tag: string, execer: Execer = new RealExecer()) {
    this.execer = execer;
    this.prefix = `${PREFIX}${process.pid}-${tag}-`;
  }

  /** Removes namespaces left by earlier runs whose process is gone (never other prefixes). */
  async sweep(): Promise<void> {
    const res = await this.execer.run({ cmd: 'ip', args: ['netns', 'list'] });
    for (const line of res.stdout.split('\n')) {
      const name = line.split(' ')[0] ?? '';
      const m = /^svcnet-cni-(\d+)-/.exec(name);
      if (!m) continue;
      const pid = Number(m[1]);
      if (pid === process.pid || !pidAlive(pid))
        await this.execer.run({ cmd: 'ip', args: ['netns', 'del', name] });
    }
  }

  /** Creates `<prefix><name>` with lo up; returns its name. */
  async add(name: string): Promise<string> {
    const full = `${this.prefix}${name}`;
    await runChecked(this.execer, { cmd: 'ip', args: ['netns', 'add', full] });
    this.names.push(full);
    await runChecked(this.execer, { cmd: 'ip', args: ['-n', full, 'link', 'set', 'lo', 'up'] });
    return full;
  }

  /** Deletes one namespace (no error when gone). */
  async remove(full: string): Promise<void> {
    await this.execer.run({ cmd: 'ip', args: ['netns', 'del', full] });
  }

  /** Deletes every namespace of this run. */
  async cleanup(): Promise<void> {
    for (const n of this.names.splice(0))
      await this.execer.run({ cmd: 'ip', args: ['netns', 'del', n] });
  }

  /** `ip -n <ns> args…` output (checked). */
  async ip(ns: string, ...args: string[]): Promise<string> {
    return (await runChecked(this.execer, { cmd: 'ip', args: ['-n', ns, ...args] })).stdout;
  }

  /** True when one ping from `ns` to `addr` is answered within 2 s. */
  async ping(ns: string, addr: string): Promise<boolean> {
    const res = await this.execer.run({
      cmd: 'ip',
      args: ['netns', 'exec', ns, 'ping', '-c1', '-W2', '-q', addr],
      timeoutMs: 10_000,
    });
    return res.code === 0;
  }
}

/** Path of a named namespace. */
export function netnsPath(name: string): string {
  return `/run/netns/${name}`;
}

/** A temp directory removed by the returned function. */
export async function tempDir(tag: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `svcnet-cni-${tag}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
