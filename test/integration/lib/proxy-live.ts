// Live setup for the proxy's integration tests: `svcnet apiserver` as a child process of the
// test (in the test's private namespace, reachable from the node namespace over a veth
// pair the test creates), and `svcnet proxy` as a child process inside the node namespace,
// exactly as an operator would run it. Writes go through @kubernetes/client-node.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { nsExec, sh, waitFor } from './proxy-lab.js';
import type { ProxyLab } from './proxy-lab.js';

export const API_HOST_IP = '172.31.0.1';
export const API_NODE_IP = '172.31.0.2';
const MAIN = resolve(import.meta.dirname, '../../../src/cli/main.ts');

/** Links the test's namespace with the node namespace (172.31.0.1 here, .2 in the node). */
export function linkApiNetwork(lab: ProxyLab): void {
  const hostIf = `svct-a${process.pid % 10000}`;
  sh('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'svct-api', 'netns', lab.node]);
  sh('ip', ['addr', 'add', `${API_HOST_IP}/30`, 'dev', hostIf]);
  sh('ip', ['link', 'set', hostIf, 'up']);
  nsExec(lab.node, 'ip', ['addr', 'add', `${API_NODE_IP}/30`, 'dev', 'svct-api']);
  nsExec(lab.node, 'ip', ['link', 'set', 'svct-api', 'up']);
}

function svcnet(args: string[], ns?: string): ChildProcess {
  const argv = [process.execPath, '--import', 'tsx', MAIN, ...args];
  const [cmd, ...rest] = ns === undefined ? argv : ['ip', 'netns', 'exec', ns, ...argv];
  return spawn(cmd!, rest, {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: resolve(import.meta.dirname, '../../..'),
  });
}

/** A running `svcnet apiserver` that can be stopped and started again on the same data. */
export class LiveApiServer {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly port: number;
  private readonly host: string;
  private readonly args: readonly string[];
  private proc: ChildProcess | undefined;
  log = '';

  /**
   * Listens on `opts.host` (default API_HOST_IP, the test's end of linkApiNetwork); `opts.args`
   * are more `svcnet apiserver` flags (e.g. --advertise-address).
   */
  constructor(port: number, opts: { host?: string; args?: readonly string[] } = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'svcnet-proxy-api-'));
    this.kubeconfig = join(this.dir, 'kubeconfig');
    this.port = port;
    this.host = opts.host ?? API_HOST_IP;
    this.args = opts.args ?? [];
  }

  async start(timeoutMs = 60_000): Promise<void> {
    this.log = '';
    this.proc = svcnet([
      'apiserver',
      '--listen',
      `${this.host}:${this.port}`,
      '--write-kubeconfig',
      this.kubeconfig,
      '--data-dir',
      join(this.dir, 'data'),
      ...this.args,
    ]);
    this.proc.stderr?.on('data', (d: Buffer) => {
      this.log += d.toString();
    });
    await waitFor(
      () => this.log.includes('API server listening') && existsSync(this.kubeconfig),
      timeoutMs,
      'apiserver',
    );
  }

  /**
   * SIGTERM, then SIGKILL after 5 s. Resolves with the exit code of a process that exited by
   * itself in time, undefined when it was already gone, not running or had to be killed.
   */
  async stop(): Promise<number | undefined> {
    const p = this.proc;
    this.proc = undefined;
    if (p?.exitCode !== null || p.pid === undefined) return undefined;
    const exited = new Promise<number | undefined>((r) => {
      p.once('exit', (code) => {
        r(code ?? undefined);
      });
    });
    p.kill('SIGTERM');
    const timedOut = Symbol('timeout');
    const timeout = new Promise<symbol>((r) =>
      setTimeout(() => {
        r(timedOut);
      }, 5000),
    );
    const res = await Promise.race([exited, timeout]);
    if (res !== timedOut) return res as number | undefined;
    p.kill('SIGKILL');
    return undefined;
  }

  client(): { core: k8s.CoreV1Api; discovery: k8s.DiscoveryV1Api } {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    return {
      core: kc.makeApiClient(k8s.CoreV1Api),
      discovery: kc.makeApiClient(k8s.DiscoveryV1Api),
    };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A running `svcnet proxy` inside the node namespace. */
export class LiveProxy {
  private proc: ChildProcess | undefined;
  log = '';

  start(lab: ProxyLab, kubeconfig: string, nodeName: string, extra: string[] = []): void {
    // The kubeconfig names the API server by the address it listens on (the veth link).
    this.proc = svcnet(
      [
        'proxy',
        '--kubeconfig',
        kubeconfig,
        '--hostname-override',
        nodeName,
        '--cluster-cidr',
        '10.244.0.0/16',
        '--iptables-min-sync-period',
        '0s',
        '--healthz-bind-address',
        '0.0.0.0:10256',
        '--metrics-bind-address',
        '0.0.0.0:10249',
        ...extra,
      ],
      lab.node,
    );
    this.proc.stderr?.on('data', (d: Buffer) => {
      this.log += d.toString();
    });
  }

  /**
   * SIGTERM, then SIGKILL after 5 s. Resolves with the exit code of a process that exited by
   * itself in time, undefined when it was already gone, not running or had to be killed.
   */
  async stop(): Promise<number | undefined> {
    const p = this.proc;
    this.proc = undefined;
    if (p?.exitCode !== null || p.pid === undefined) return undefined;
    const exited = new Promise<number | undefined>((r) => {
      p.once('exit', (code) => {
        r(code ?? undefined);
      });
    });
    p.kill('SIGTERM');
    const timedOut = Symbol('timeout');
    const timeout = new Promise<symbol>((r) =>
      setTimeout(() => {
        r(timedOut);
      }, 5000),
    );
    const res = await Promise.race([exited, timeout]);
    if (res !== timedOut) return res as number | undefined;
    p.kill('SIGKILL');
    return undefined;
  }

  /** Number of "SyncProxyRules complete" lines logged so far. */
  syncs(): number {
    return this.log.split('SyncProxyRules complete').length - 1;
  }
}
