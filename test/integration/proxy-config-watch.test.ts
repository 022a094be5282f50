// kube-proxy's config file watch, for real (issue 16): `svcnet proxy --config FILE` runs as a
// child process inside a node namespace against a `svcnet apiserver` child. A `touch` or a
// rewrite with the same bytes leaves it running; new content (written in place, or swapped in
// the way a ConfigMap volume is updated: a new `..<timestamp>` directory and `..data` renamed
// over) makes it exit 1 within 5 s with a log line naming the file, leaving its rules in the
// kernel as any proxy restart does; content that is not a valid configuration (bad YAML, a bad
// field) makes it exit 2 naming the file and the error. Run the way the lab's supervisor runs
// it (src/lab/keeper.ts), the exited proxy is started again and loads the new file, as
// kube-proxy's DaemonSet restarts it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ComponentKeeper } from '../../src/lab/keeper.js';
import { startComponents, stopComponents } from '../../src/lab/run-components.js';
import { realClock } from '../../src/util/clock.js';
import { ProxyLab, nsExec, skipReason, waitFor } from './lib/proxy-lab.js';
import { LiveApiServer, linkApiNetwork } from './lib/proxy-live.js';
import { skipOrFail } from './lib/prereq.js';

const NODE = 'node-cfgwatch';
const MAIN = resolve(import.meta.dirname, '../../src/cli/main.ts');
const skip = skipOrFail(skipReason(['ip', 'iptables-restore', 'iptables-save']));

/** A KubeProxyConfiguration; `cidr` makes two contents differ while both stay valid. */
function config(cidr: string): string {
  return [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
    'kind: KubeProxyConfiguration',
    'mode: iptables',
    `clusterCIDR: ${cidr}`,
    'iptables:',
    '  minSyncPeriod: 0s',
    '',
  ].join('\n');
}
const V1 = config('10.244.0.0/16');
const V2 = config('10.245.0.0/16');

/** `svcnet proxy --config FILE` in the node namespace, its stderr and exit kept. */
class ConfigProxy {
  readonly proc: ChildProcess;
  log = '';
  exit: number | string | undefined;
  private readonly exited: Promise<void>;

  constructor(lab: ProxyLab, kubeconfig: string, configFile: string) {
    this.proc = spawn(
      'ip',
      [
        ...['netns', 'exec', lab.node, process.execPath, '--import', 'tsx', MAIN, 'proxy'],
        ...['--kubeconfig', kubeconfig, '--hostname-override', NODE, '--config', configFile],
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], cwd: resolve(import.meta.dirname, '../..') },
    );
    this.proc.stderr?.on('data', (d: Buffer) => {
      this.log += d.toString();
    });
    this.exited = new Promise((r) => {
      this.proc.once('exit', (code, signal) => {
        this.exit = code ?? signal ?? undefined;
        r();
      });
    });
  }

  /** Waits for "Proxy started" (and, with `sync`, for the first rules in the kernel). */
  async started(sync = false): Promise<void> {
    const what = sync ? 'SyncProxyRules complete' : 'Proxy started';
    await waitFor(
      () => {
        if (this.exit !== undefined) throw new Error(`proxy exited ${this.exit}:\n${this.log}`);
        return this.log.includes(what);
      },
      60_000,
      what,
    );
  }

  /** Milliseconds until the process exits (throws after `timeoutMs`). */
  async exitWithin(timeoutMs: number): Promise<number> {
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>(
      (r) =>
        (timer = setTimeout(() => {
          r(true);
        }, timeoutMs)),
    );
    const late = await Promise.race([this.exited.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late) throw new Error(`proxy still running ${timeoutMs} ms later:\n${this.log}`);
    return Date.now() - t0;
  }

  async stop(): Promise<void> {
    if (this.exit !== undefined) return;
    this.proc.kill('SIGTERM');
    await this.exitWithin(10_000).catch(() => this.proc.kill('SIGKILL'));
  }
}

/** The proxy's JSON log lines that name `file`. */
function linesNaming(log: string, file: string): string[] {
  return log.split('\n').filter((l) => l.includes(file));
}

describe('svcnet proxy --config: a changed file ends the proxy', { skip }, () => {
  let lab: ProxyLab;
  let api: LiveApiServer;
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-cfgwatch-'));
  const proxies: ConfigProxy[] = [];
  const startProxy = (file: string): ConfigProxy => {
    const p = new ConfigProxy(lab, api.kubeconfig, file);
    proxies.push(p);
    return p;
  };

  before(async () => {
    lab = ProxyLab.create('svcnet-pcw');
    linkApiNetwork(lab);
    api = new LiveApiServer(20_000 + ((process.pid + 7) % 20_000));
    await api.start();
  });

  after(async () => {
    for (const p of proxies) await p.stop();
    await api.stop();
    api.remove();
    lab.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test('touch and an identical rewrite leave it running; new content ends it (exit 1, file named, rules kept)', async () => {
    const file = join(dir, 'plain.conf');
    writeFileSync(file, V1);
    const proxy = startProxy(file);
    await proxy.started(true);
    const later = new Date(Date.now() + 60_000);
    utimesSync(file, later, later);
    writeFileSync(file, V1);
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(proxy.exit, undefined, `still running 3 s after touch:\n${proxy.log}`);
    assert.deepEqual(linesNaming(proxy.log, file), []);

    writeFileSync(file, V2);
    const ms = await proxy.exitWithin(5000);
    console.error('LOG1', proxy.log.split('\n').slice(-4).join('\n'));
    assert.equal(proxy.exit, 1, proxy.log);
    const named = linesNaming(proxy.log, file);
    assert.ok(
      named.some((l) => l.includes('Configuration file changed')),
      `a log line names ${file}:\n${proxy.log}`,
    );
    assert.ok(named.some((l) => l.includes(`svcnet proxy: ${file}: content changed`)));
    // The normal shutdown path: the rules stay in the kernel, as over any proxy restart.
    assert.match(nsExec(lab.node, 'iptables-save', ['-t', 'nat']), /^:KUBE-SERVICES /m);
    assert.ok(ms < 5000);
  });

  test('a ConfigMap-style update (..data renamed over to a new directory) ends it', async () => {
    const cm = join(dir, 'configmap');
    mkdirSync(join(cm, '..2026_11_25_06_00_00.1'), { recursive: true });
    writeFileSync(join(cm, '..2026_11_25_06_00_00.1', 'config.conf'), V1);
    symlinkSync('..2026_11_25_06_00_00.1', join(cm, '..data'));
    symlinkSync('..data/config.conf', join(cm, 'config.conf'));
    const file = join(cm, 'config.conf');
    const proxy = startProxy(file);
    await proxy.started();

    // The kubelet's atomic writer: new timestamped directory, new ..data, old directory gone.
    mkdirSync(join(cm, '..2026_11_25_06_01_00.2'));
    writeFileSync(join(cm, '..2026_11_25_06_01_00.2', 'config.conf'), V2);
    symlinkSync('..2026_11_25_06_01_00.2', join(cm, '..data_tmp'));
    renameSync(join(cm, '..data_tmp'), join(cm, '..data'));
    rmSync(join(cm, '..2026_11_25_06_00_00.1'), { recursive: true });
    await proxy.exitWithin(5000);
    assert.equal(proxy.exit, 1, proxy.log);
    assert.ok(
      linesNaming(proxy.log, file).some((l) => l.includes('Configuration file changed')),
      proxy.log,
    );
  });

  test('content that is not valid YAML ends it with exit 2, naming the file and the error', async () => {
    const file = join(dir, 'yaml.conf');
    writeFileSync(file, V1);
    const proxy = startProxy(file);
    await proxy.started();
    writeFileSync(file, 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nmode: [iptables\n');
    await proxy.exitWithin(5000);
    console.error('LOG2', proxy.log.split('\n').slice(-4).join('\n'));
    assert.equal(proxy.exit, 2, proxy.log);
    const last = proxy.log.trimEnd().split('\n').at(-1) ?? '';
    assert.ok(last.startsWith(`svcnet proxy: ${file}: changed and is no longer a valid`), last);
    assert.match(last, /invalid YAML/);
    assert.ok(
      linesNaming(proxy.log, file).some((l) => l.includes('Configuration file is no longer valid')),
    );
  });

  test('a field that fails validation ends it with exit 2, naming the file and the field', async () => {
    const file = join(dir, 'field.conf');
    writeFileSync(file, V1);
    const proxy = startProxy(file);
    await proxy.started();
    writeFileSync(file, V1.replace('minSyncPeriod: 0s', 'masqueradeBit: 99'));
    await proxy.exitWithin(5000);
    assert.equal(proxy.exit, 2, proxy.log);
    const last = proxy.log.trimEnd().split('\n').at(-1) ?? '';
    assert.ok(last.startsWith(`svcnet proxy: ${file}: changed and is no longer a valid`), last);
    assert.match(last, /iptables\.masqueradeBit/);
  });

  test("under the lab supervisor's keeper, the exited proxy is started again with the new file", async () => {
    const file = join(dir, 'kept.conf');
    writeFileSync(file, V1);
    const spec = {
      name: 'proxy-kept',
      netns: lab.node,
      args: [
        'proxy',
        '--kubeconfig',
        api.kubeconfig,
        '--hostname-override',
        NODE,
        '--config',
        file,
      ],
      ready: { kind: 'none' as const },
    };
    const self = [process.execPath, '--import', 'tsx', MAIN];
    const logs: string[] = [];
    const keeper = new ComponentKeeper([spec], await startComponents([spec], self, dir), {
      start: async (s) => {
        const [c] = await startComponents([s], self, dir);
        if (c === undefined) throw new Error('not started');
        return c;
      },
      stop: (cs) => stopComponents(cs),
      clock: realClock,
      log: (m) => logs.push(m),
    });
    const log = (): string => readFileSync(join(dir, 'proxy-kept.log'), 'utf8');
    const starts = (): number => log().split('"Proxy started"').length - 1;
    try {
      await waitFor(() => starts() === 1, 60_000, 'the first proxy to start');
      writeFileSync(file, V2);
      await waitFor(() => starts() === 2, 60_000, 'the proxy to be started again');
      assert.equal(keeper.restarts('proxy-kept'), 1);
      // The first restart is immediate (the kubelet's back-off starts at the second).
      assert.equal(logs[0], 'proxy-kept exited with 1; restarting');
      assert.match(logs[1] ?? '', /^proxy-kept started again \(pid \d+, restarts 1\)$/);
      assert.equal(logs.length, 2, logs.join('\n'));
      const text = log();
      assert.ok(
        text.indexOf('Configuration file changed') < text.lastIndexOf('"Proxy started"'),
        text,
      );
      // The new proxy watches the new file too: a touch leaves it running.
      utimesSync(file, new Date(), new Date());
      await new Promise((r) => setTimeout(r, 2000));
      assert.equal(keeper.restarts('proxy-kept'), 1);
      assert.notEqual(keeper.running('proxy-kept'), undefined);
    } finally {
      await keeper.stop();
    }
  });
});
