// A tiny node-and-pods topology for the proxy's integration tests, made of `ip netns`
// namespaces with a per-run prefix (swept at start, removed by `destroy()`): one node
// namespace, pod namespaces attached to it ptp-style (each pod has a /32 and the node routes
// to it, like the CNI ptp plugin, so every pod-to-pod packet crosses the node's netfilter),
// and an "external client" namespace on a /24 "node network". Pods run a small HTTP server
// answering `NAME CLIENT_IP:PORT`, and a UDP server answering `NAME`. Nothing is created in
// the namespace the test runs in.

import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { missingToolsReason } from './prereq.js';

export const NODE_IP = '172.30.0.2';
export const CLIENT_IP = '172.30.0.100';
export const POD_GATEWAY = '10.244.0.1';

/** Runs a command, throwing with stderr on failure. */
export function sh(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 30_000 });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Runs a command inside a namespace. */
export function nsExec(ns: string, cmd: string, args: string[], input?: string): string {
  return sh('ip', ['netns', 'exec', ns, cmd, ...args], input);
}

/** Why the integration tests cannot run here, or undefined when they can. */
export function skipReason(
  tools: string[] = ['ip', 'iptables-restore', 'curl'],
): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  if (process.env.SVCNET_PRIVATE_NETNS !== '1')
    return 'needs the private network namespace of `npm run test:integration`';
  return missingToolsReason(tools);
}

/** Removes namespaces left by earlier runs of this test file (by prefix stem). */
export function sweep(stem: string): void {
  const out = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
  for (const line of out.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    if (!name.startsWith(stem)) continue;
    // Only namespaces whose creating process is gone.
    const pid = /-t(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && pid !== String(process.pid) && processAlive(Number(pid))) continue;
    spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((p) => p !== '')
      .forEach((p) => {
        try {
          process.kill(Number(p), 'SIGKILL');
        } catch {
          // already gone
        }
      });
    spawnSync('ip', ['netns', 'del', name]);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Pod {
  readonly name: string;
  readonly ns: string;
  readonly ip: string;
}

const POD_SERVER = `
const http = require('node:http');
const dgram = require('node:dgram');
const [name, port] = process.argv.slice(1);
http.createServer((req, res) => {
  res.setHeader('Connection', 'close');
  res.end(name + ' ' + req.socket.remoteAddress + ':' + req.socket.remotePort + '\\n');
}).listen(Number(port), '0.0.0.0');
const udp = dgram.createSocket('udp4');
udp.on('message', (_m, rinfo) => udp.send(name, rinfo.port, rinfo.address));
udp.bind(Number(port), '0.0.0.0');
`;

/** The topology; create with `ProxyLab.create(stem)`. */
export class ProxyLab {
  readonly prefix: string;
  readonly node: string;
  readonly client: string;
  readonly pods: Pod[] = [];
  private readonly procs: ChildProcess[] = [];
  private nextPod = 0;

  private constructor(prefix: string) {
    this.prefix = prefix;
    this.node = `${prefix}node`;
    this.client = `${prefix}client`;
  }

  /** Creates node and client namespaces (sweeping leftovers of `stem` first). */
  static create(stem: string): ProxyLab {
    sweep(stem);
    const lab = new ProxyLab(`${stem}-t${process.pid}-`);
    try {
      lab.setup();
    } catch (e) {
      lab.destroy();
      throw e;
    }
    return lab;
  }

  private setup(): void {
    for (const ns of [this.node, this.client]) {
      sh('ip', ['netns', 'add', ns]);
      nsExec(ns, 'ip', ['link', 'set', 'lo', 'up']);
    }
    nsExec(this.node, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    // Node network: node <-> client veth pair.
    sh('ip', [
      'link',
      'add',
      'svct-n0',
      'netns',
      this.node,
      'type',
      'veth',
      'peer',
      'name',
      'svct-c0',
      'netns',
      this.client,
    ]);
    nsExec(this.node, 'ip', ['link', 'set', 'svct-n0', 'name', 'eth0']);
    nsExec(this.client, 'ip', ['link', 'set', 'svct-c0', 'name', 'eth0']);
    nsExec(this.node, 'ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth0']);
    nsExec(this.client, 'ip', ['addr', 'add', `${CLIENT_IP}/24`, 'dev', 'eth0']);
    nsExec(this.node, 'ip', ['link', 'set', 'eth0', 'up']);
    nsExec(this.client, 'ip', ['link', 'set', 'eth0', 'up']);
    nsExec(this.client, 'ip', ['route', 'add', 'default', 'via', NODE_IP]);
    // Like a real node, send unknown destinations to the network: traffic to a Service IP
    // without rules then leaves the node and times out, instead of failing at routing.
    nsExec(this.node, 'ip', ['route', 'add', 'default', 'via', CLIENT_IP]);
  }

  /** Adds a pod namespace with a /32 address routed via the node, running the servers. */
  addPod(name: string, port: number): Pod {
    const i = this.nextPod++;
    const ns = `${this.prefix}${name}`;
    const ip = `10.244.0.${10 + i}`;
    const hostIf = `svct-p${i}`;
    sh('ip', ['netns', 'add', ns]);
    nsExec(ns, 'ip', ['link', 'set', 'lo', 'up']);
    sh('ip', [
      'link',
      'add',
      hostIf,
      'netns',
      this.node,
      'type',
      'veth',
      'peer',
      'name',
      `svct-q${i}`,
      'netns',
      ns,
    ]);
    nsExec(ns, 'ip', ['link', 'set', `svct-q${i}`, 'name', 'eth0']);
    nsExec(ns, 'ip', ['addr', 'add', `${ip}/32`, 'dev', 'eth0']);
    nsExec(ns, 'ip', ['link', 'set', 'eth0', 'up']);
    nsExec(ns, 'ip', ['route', 'add', POD_GATEWAY, 'dev', 'eth0', 'scope', 'link']);
    nsExec(ns, 'ip', ['route', 'add', 'default', 'via', POD_GATEWAY, 'dev', 'eth0']);
    nsExec(this.node, 'ip', ['addr', 'add', `${POD_GATEWAY}/32`, 'dev', hostIf]);
    nsExec(this.node, 'ip', ['link', 'set', hostIf, 'up']);
    nsExec(this.node, 'ip', ['route', 'add', `${ip}/32`, 'dev', hostIf]);
    // Proxy ARP lets the pod reach the gateway address on a /32 link.
    nsExec(this.node, 'sysctl', ['-qw', `net.ipv4.conf.${hostIf}.proxy_arp=1`]);
    const pod: Pod = { name, ns, ip };
    this.pods.push(pod);
    const proc = spawn(
      'ip',
      ['netns', 'exec', ns, process.execPath, '-e', POD_SERVER, name, String(port)],
      {
        stdio: 'ignore',
      },
    );
    this.procs.push(proc);
    return pod;
  }

  /** Starts a long-running process inside a namespace; it is killed by destroy(). */
  spawnIn(ns: string, cmd: string, args: string[], env: Record<string, string> = {}): ChildProcess {
    const proc = spawn('ip', ['netns', 'exec', ns, cmd, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    this.procs.push(proc);
    return proc;
  }

  /** Waits until every pod answers on its own IP (servers started). */
  async waitForPods(port: number, timeoutMs = 10_000): Promise<void> {
    for (const p of this.pods)
      await waitFor(
        () => this.tryHttp(this.node, `${p.ip}:${port}`) !== undefined,
        timeoutMs,
        `pod ${p.name} server`,
      );
  }

  /** HTTP GET from a namespace; the body, or undefined on failure (refused/timeout). */
  tryHttp(ns: string, target: string, maxTimeSec = 2): string | undefined {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns, 'curl', '-sS', '--max-time', String(maxTimeSec), `http://${target}/`],
      {
        encoding: 'utf8',
        timeout: (maxTimeSec + 5) * 1000,
      },
    );
    return r.status === 0 ? r.stdout.trim() : undefined;
  }

  /** curl's exit code for a GET (7 = refused, 28 = timed out). */
  httpExitCode(ns: string, target: string, maxTimeSec = 2): number {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns, 'curl', '-sS', '--max-time', String(maxTimeSec), `http://${target}/`],
      {
        encoding: 'utf8',
        timeout: (maxTimeSec + 5) * 1000,
      },
    );
    return r.status ?? -1;
  }

  /** One UDP request from `ns` with a fixed source port; the reply text or undefined. */
  udpRequest(
    ns: string,
    target: string,
    port: number,
    srcPort: number,
    timeoutMs = 1500,
  ): string | undefined {
    const script = `
const s = require('node:dgram').createSocket({ type: 'udp4', reuseAddr: true });
const t = setTimeout(() => { process.exit(3); }, ${timeoutMs});
s.on('message', (m) => { process.stdout.write(m.toString()); clearTimeout(t); s.close(); });
s.bind(${srcPort}, () => s.send('q', ${port}, '${target}'));`;
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script], {
      encoding: 'utf8',
      timeout: timeoutMs + 5000,
    });
    return r.status === 0 ? r.stdout.trim() : undefined;
  }

  /** Kills every process started here and deletes every namespace. */
  destroy(): void {
    for (const p of this.procs) if (p.pid !== undefined && p.exitCode === null) p.kill('SIGKILL');
    sweep(this.prefix);
  }
}

/** Polls `cond` every 100 ms until it holds or `timeoutMs` passes (then throws). */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await cond()) return Date.now() - start;
    if (Date.now() - start > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
