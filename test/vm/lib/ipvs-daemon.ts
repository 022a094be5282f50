// Helpers of the VM tests of `svcnet proxy --proxy-mode ipvs` (test/vm/ipvs-daemon.test.ts):
// the svcnet CLI as a child process, `ipvsadm -L -n` listings reduced to what a sync decides
// (virtual servers, real servers, forwarding method and weight; not the connection counters),
// a TCP connection held open from a namespace (graceful termination), and a bridge that lets
// a namespace reach a loopback port of the test's own namespace without touching its links.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { resolve } from 'node:path';

const PROJECT = resolve(import.meta.dirname, '../../..');
const MAIN = resolve(PROJECT, 'src/cli/main.ts');

/** Runs `svcnet ARGS` to completion; rejects with its stderr on a non-zero exit. */
export function svcnetCli(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: PROJECT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => {
      if (code === 0) done(out);
      else fail(new Error(`svcnet ${args.join(' ')}: exit ${code}: ${err.trim()}`));
    });
  });
}

/**
 * The virtual-server and real-server lines of an `ipvsadm -L -n` listing, blanks collapsed,
 * each real server without its ActiveConn/InActConn counters (they count traffic, not state).
 */
export function listingState(listing: string): string[] {
  const out: string[] = [];
  for (const line of listing.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === '' || line.startsWith('IP Virtual Server') || line.startsWith('Prot ')) continue;
    if (f[0] === '->') {
      if (f[1] !== 'RemoteAddress:Port') out.push(`  ${f.slice(0, 4).join(' ')}`);
    } else out.push(f.join(' '));
  }
  return out;
}

/**
 * listingState grouped per virtual server (with its real servers, in the kernel's order) and
 * sorted: the kernel lists virtual servers in the order of its hash table, whose hash mixes in
 * the namespace's address in memory, so no renderer can predict that order.
 */
export function virtualServerBlocks(listing: string): string[] {
  const blocks: string[][] = [];
  for (const line of listingState(listing))
    if (!line.startsWith('  ')) blocks.push([line]);
    else blocks.at(-1)?.push(line);
  return blocks.map((b) => b.join('\n')).sort();
}

/** The real servers of one virtual server in a listing: address:port → weight. */
export function realServersOf(listing: string, vs: string): Map<string, number> {
  const rs = new Map<string, number>();
  let inside = false;
  for (const line of listingState(listing)) {
    if (!line.startsWith('  ')) inside = line.split(' ')[1] === vs;
    else if (inside) {
      const [, addr, , weight] = line.trim().split(' ');
      rs.set(addr ?? '', Number(weight));
    }
  }
  return rs;
}

/** A TCP connection opened from a namespace and kept open until `request()` or `close()`. */
export class HeldConnection {
  private readonly child: ChildProcess;
  private out = '';
  readonly opened: Promise<void>;

  constructor(ns: string, host: string, port: number) {
    // Connects, then sends one HTTP request when a line arrives on stdin.
    const js = `
const s = require('node:net').connect(${port}, ${JSON.stringify(host)}, () => console.log('open'));
process.stdin.once('data', () => s.write('GET / HTTP/1.1\\r\\nHost: held\\r\\n\\r\\n'));
s.on('data', (d) => process.stdout.write(d));
s.on('close', () => process.exit(0));
s.on('error', (e) => { console.error(e.message); process.exit(1); });`;
    this.child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child.stdout?.on('data', (d: Buffer) => (this.out += d.toString()));
    this.opened = new Promise((done, fail) => {
      this.child.once('exit', (code) => {
        fail(new Error(`held connection to ${host}:${port} exited (${code})`));
      });
      this.child.stdout?.on('data', () => {
        if (this.out.includes('open\n')) done();
      });
    });
  }

  /** Sends one request over the open connection; resolves with the response body. */
  request(): Promise<string> {
    return new Promise((done) => {
      this.child.once('exit', () => {
        done(this.out.split('\r\n\r\n').slice(1).join('\r\n\r\n').trim());
      });
      this.child.stdin?.write('go\n');
    });
  }

  close(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

function splice(a: Socket, b: Socket): void {
  a.pipe(b).pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
}

/**
 * Makes 127.0.0.1:port inside namespace `ns` reach 127.0.0.1:port of the test's namespace:
 * a forwarder child in `ns` takes the TCP connections to a Unix socket (a path, which no
 * network namespace owns) where this process forwards them over TCP. No link, address or
 * route is added anywhere.
 */
export class LoopbackBridge {
  private readonly server: Server;
  private readonly child: ChildProcess;
  private readonly path: string;
  readonly ready: Promise<void>;

  constructor(ns: string, port: number, path: string) {
    this.path = path;
    rmSync(path, { force: true });
    this.server = createServer((u) => {
      splice(u, createConnection(port, '127.0.0.1'));
    }).listen(path);
    const js = `
const net = require('node:net');
net.createServer((c) => {
  const u = net.connect(${JSON.stringify(path)});
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
}).listen(${port}, '127.0.0.1', () => console.log('ready'));`;
    this.child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', js], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.ready = new Promise((done, fail) => {
      this.child.once('exit', (code) => {
        fail(new Error(`loopback bridge in ${ns} exited (${code})`));
      });
      this.child.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) done();
      });
    });
  }

  close(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
    this.server.close();
    rmSync(this.path, { force: true });
  }
}
