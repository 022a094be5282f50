// Helpers of the VM tier's tests (test/vm): they run inside the VM that scripts/vm/run.ts boots
// (SVCNET_VM=1), as root in a throwaway kernel that has ip_vs. Each test still builds its
// pieces in network namespaces of its own and removes them, so tests never see each other's
// state and the VM's root namespace stays as booted.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

/** The `skip` option of every VM test: they run only inside the VM. */
export const notInVm: string | false =
  process.env.SVCNET_VM === '1' ? false : 'runs inside the VM only: npm run test:vm';

export function sh(cmd: string, args: readonly string[], input?: string): string {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return r.stdout;
}

export function inNs(ns: string, cmd: string, args: readonly string[], input?: string): string {
  return sh('ip', ['netns', 'exec', ns, cmd, ...args], input);
}

/** A set of namespaces named `<stem>-<short>`, removed together, with the processes in them. */
export class NetnsSet {
  private readonly names: string[] = [];
  private readonly children: ChildProcess[] = [];
  private links = 0;
  private readonly stem: string;

  constructor(stem: string) {
    this.stem = stem;
  }

  add(short: string): string {
    const name = `${this.stem}-${short}`;
    sh('ip', ['netns', 'add', name]);
    this.names.push(name);
    inNs(name, 'ip', ['link', 'set', 'lo', 'up']);
    return name;
  }

  /**
   * A veth pair between two namespaces, each end with one address (CIDR form), both up;
   * returns the names of the two ends.
   */
  link(a: string, aAddr: string, b: string, bAddr: string): [string, string] {
    const n = this.links++;
    const [ea, eb] = [`v${n}a`, `v${n}b`];
    inNs(a, 'ip', ['link', 'add', ea, 'type', 'veth', 'peer', 'name', eb, 'netns', b]);
    inNs(a, 'ip', ['addr', 'add', aAddr, 'dev', ea]);
    inNs(b, 'ip', ['addr', 'add', bAddr, 'dev', eb]);
    inNs(a, 'ip', ['link', 'set', ea, 'up']);
    inNs(b, 'ip', ['link', 'set', eb, 'up']);
    return [ea, eb];
  }

  /**
   * Starts an HTTP server in `ns` on addr:port that answers every request with its own
   * address; resolves once it listens.
   */
  serve(ns: string, addr: string, port: number): Promise<void> {
    const js =
      `require('node:http').createServer((q, r) => r.end(${JSON.stringify(addr)}))` +
      `.listen(${port}, ${JSON.stringify(addr)}, () => console.log('ready'))`;
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.children.push(child);
    return new Promise((done, fail) => {
      child.once('exit', (code) => {
        fail(new Error(`server ${addr}:${port} in ${ns} exited (${code})`));
      });
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) done();
      });
    });
  }

  /** Stops the servers and deletes the namespaces (and so every link, rule and IPVS table). */
  removeAll(): void {
    for (const c of this.children) c.kill('SIGKILL');
    for (const n of this.names) spawnSync('ip', ['netns', 'del', n]);
    this.names.length = 0;
  }
}
