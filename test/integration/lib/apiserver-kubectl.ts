// Helpers for driving the machine's real kubectl binaries against `svcnet apiserver`: find the
// installed versions (Google Cloud SDK's kubectl.1.NN and the default `kubectl`), and run one
// with the test's kubeconfig and a fresh --cache-dir so discovery is always fetched.

import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealExecer, type ExecResult } from '../../../src/os/exec.js';

const SDK_BIN = '/usr/lib/google-cloud-sdk/bin';

export interface Kubectl {
  readonly label: string;
  readonly path: string;
  /** Minor version when known from the binary name (the default kubectl picks its own). */
  readonly minor: number | undefined;
}

/** kubectl 1.29+ binaries present on this machine plus the default `kubectl`. */
export function findKubectls(minMinor = 29): Kubectl[] {
  const out: Kubectl[] = [];
  for (let minor = minMinor; minor <= 40; minor++) {
    const path = join(SDK_BIN, `kubectl.1.${minor}`);
    if (existsSync(path)) out.push({ label: `kubectl 1.${minor}`, path, minor });
  }
  for (const path of ['/usr/bin/kubectl', '/usr/local/bin/kubectl', join(SDK_BIN, 'kubectl')])
    if (existsSync(path)) {
      out.push({ label: 'default kubectl', path, minor: undefined });
      break;
    }
  return out;
}

/** Runs kubectl commands with one kubeconfig and a private cache dir. */
export class KubectlRunner {
  private readonly execer = new RealExecer();
  readonly cacheDir = mkdtempSync(join(tmpdir(), 'svcnet-kubectl-cache-'));
  readonly kubectl: Kubectl;
  readonly kubeconfig: string;

  constructor(kubectl: Kubectl, kubeconfig: string) {
    this.kubectl = kubectl;
    this.kubeconfig = kubeconfig;
  }

  run(
    args: readonly string[],
    opts: { stdin?: string; timeoutMs?: number } = {},
  ): Promise<ExecResult> {
    return this.execer.run({
      cmd: this.kubectl.path,
      args: ['--kubeconfig', this.kubeconfig, '--cache-dir', this.cacheDir, ...args],
      env: { KUBECONFIG: this.kubeconfig, HOME: this.cacheDir },
      timeoutMs: opts.timeoutMs ?? 60_000,
      ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
    });
  }

  /** Runs and fails with kubectl's stderr unless it exits 0. */
  async ok(args: readonly string[], opts: { stdin?: string } = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0)
      throw new Error(
        `${this.kubectl.label} ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`,
      );
    return r.stdout;
  }
}

/** Splits kubectl table output into rows of cells (columns separated by 2+ spaces). */
export function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.trim().split(/\s{2,}/));
}
