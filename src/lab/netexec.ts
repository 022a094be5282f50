// An agnhost-netexec-compatible test server: what every lab Pod runs, so the checks that
// Kubernetes' own sig-network e2e tests make (load spreading via /hostname, source IP via
// /clientip, reachability via /dial, readiness via /readyz, UDP `hostname`/`echo`) work
// against svcnet unchanged. It is a test workload, not a general web server: /shell is off
// unless explicitly enabled (lab only), and it listens only where told.
//
// Behaviour follows agnhost's netexec (kubernetes test/images/agnhost/netexec): /dial answers
// 200 when the last try succeeded and 417 otherwise, 400 on bad parameters; /healthz is 200
// once the UDP server is up (412 before); /readyz fails after SIGTERM while traffic is still
// served for --delay-shutdown seconds.

import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { RealExecer, type Execer } from '../os/exec.js';

export interface NetexecOptions {
  /** TCP port for HTTP (0 picks a free one, -1 disables). */
  readonly httpPort: number;
  /** UDP port, or -1 to disable (0 picks a free one). */
  readonly udpPort: number;
  /** What /hostname answers: the Pod name in the lab. */
  readonly hostname: string;
  /** Listen address; default all addresses of the namespace. */
  readonly host?: string;
  /** Enables /shell (runs /bin/sh -c). Lab only; off by default. */
  readonly enableShell?: boolean;
  /** Timeout for each /dial try, ms (agnhost: 5 s). */
  readonly dialTimeoutMs?: number;
  /** Runs /shell commands (default RealExecer). */
  readonly execer?: Execer;
}

export interface Netexec {
  readonly httpPort: number | undefined;
  readonly udpPort: number | undefined;
  /** Makes /readyz fail (as after SIGTERM) while still serving traffic. */
  markTerminating(): void;
  close(): Promise<void>;
  /** Resolves when a client asked /exit or /shutdown; carries the requested exit code. */
  readonly exitRequested: Promise<number>;
}

interface DialResult {
  responses: string[];
  errors: string[];
}

function send(res: ServerResponse, code: number, body: string, type = 'text/plain'): void {
  res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function formatPeer(addr: string | undefined, port: number | undefined): string {
  const a = addr?.startsWith('::ffff:') ? addr.slice(7) : (addr ?? '');
  return a.includes(':') ? `[${a}]:${port ?? 0}` : `${a}:${port ?? 0}`;
}

function dialHttp(host: string, port: number, path: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host, port, path: `/${path.replace(/^\//, '')}`, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function dialUdp(host: string, port: number, payload: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error(`reading from udp connection failed: timeout after ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('message', (msg) => {
      clearTimeout(timer);
      sock.close();
      resolve(msg.toString('utf8'));
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      sock.close();
      reject(
        (e as NodeJS.ErrnoException).code === 'ECONNREFUSED'
          ? new Error(`reading from udp connection failed: connection refused (${e.message})`)
          : e,
      );
    });
    // Connected, as agnhost's net.DialUDP: an ICMP port unreachable then surfaces as
    // ECONNREFUSED instead of the try silently timing out.
    sock.connect(port, host, () => {
      sock.send(payload);
    });
  });
}

/** Answers one UDP command the way agnhost does: `hostname`, `echo <msg>`, `clientip`. */
export function answerUdp(command: string, hostname: string, peer: string): string | undefined {
  const text = command.trim();
  if (text === 'hostname') return hostname;
  if (text === 'clientip') return peer;
  if (text.startsWith('echo ')) return text.slice(5);
  return undefined;
}

function bindOne(type: 'udp4' | 'udp6', port: number, host: string | undefined): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = createSocket({ type, ipv6Only: false });
    sock.once('error', (e) => {
      sock.close();
      reject(e);
    });
    sock.bind(port, host, () => {
      resolve(sock);
    });
  });
}

/** Binds UDP on `host`, or dual-stack on all addresses (IPv4 only where IPv6 is off). */
async function bindUdp(port: number, host: string | undefined): Promise<Socket> {
  if (host !== undefined) return bindOne(host.includes(':') ? 'udp6' : 'udp4', port, host);
  try {
    return await bindOne('udp6', port, undefined);
  } catch {
    return bindOne('udp4', port, undefined);
  }
}

/** What one HTTP request's handler sees. */
interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly q: URLSearchParams;
}

/** The server's mutable state the handlers read and change. */
interface ServerState {
  udpReady: boolean;
  terminating: boolean;
  requestExit: (code: number) => void;
}

type Handler = (c: RequestContext) => void | Promise<void>;

const DIAL_USAGE =
  'bad parameters: need host, port (1-65535), request, protocol http|udp, tries >= 1';

async function handleDial({ res, q }: RequestContext, timeoutMs: number): Promise<void> {
  const host = q.get('host');
  const port = Number(q.get('port'));
  const request = q.get('request') ?? '';
  const protocol = q.get('protocol') ?? 'http';
  const tries = Number(q.get('tries') ?? '1');
  if (
    !host ||
    !Number.isInteger(port) ||
    port < 1 ||
    port > 65535 ||
    !Number.isInteger(tries) ||
    tries < 1 ||
    (protocol !== 'http' && protocol !== 'udp')
  ) {
    send(res, 400, DIAL_USAGE);
    return;
  }
  const result: DialResult = { responses: [], errors: [] };
  let lastOk = false;
  for (let i = 0; i < Math.min(tries, 1000); i++) {
    try {
      const r =
        protocol === 'http'
          ? await dialHttp(host, port, request, timeoutMs)
          : await dialUdp(host, port, request, timeoutMs);
      result.responses.push(r);
      lastOk = true;
    } catch (e) {
      result.errors.push(e instanceof Error ? e.message : String(e));
      lastOk = false;
    }
  }
  send(res, lastOk ? 200 : 417, JSON.stringify(result), 'application/json');
}

/** /shell: `/bin/sh -c CMD`, output and error as agnhost reports them (execFile's wording). */
async function handleShell(
  { res, q }: RequestContext,
  enabled: boolean,
  execer: Execer,
): Promise<void> {
  if (!enabled) {
    send(res, 404, '/shell is disabled (start with --enable-shell)');
    return;
  }
  const cmd = q.get('shellCommand') ?? q.get('cmd') ?? '';
  let out: { output: string; error: string };
  try {
    const r = await execer.run({ cmd: '/bin/sh', args: ['-c', cmd], timeoutMs: 30_000 });
    out = {
      output: r.stdout + r.stderr,
      error: r.code === 0 ? '' : `Command failed: /bin/sh -c ${cmd}\n${r.stderr}`,
    };
  } catch (e) {
    out = { output: '', error: e instanceof Error ? e.message : String(e) };
  }
  send(res, out.error === '' ? 200 : 417, JSON.stringify(out), 'application/json');
}

function handleEcho({ res, q }: RequestContext): void {
  const code = Number(q.get('code') ?? '200');
  send(res, Number.isInteger(code) && code >= 100 && code <= 599 ? code : 200, q.get('msg') ?? '');
}

function handleRedirect({ res, q }: RequestContext): void {
  const location = q.get('location') ?? '/';
  const code = Number(q.get('code') ?? '303');
  res.writeHead(code >= 300 && code < 400 ? code : 303, { Location: location });
  res.end();
}

/** The route table: path → handler, as agnhost's netexec registers them. */
function netexecRoutes(opts: NetexecOptions, state: ServerState): Record<string, Handler> {
  const dialTimeout = opts.dialTimeoutMs ?? 5000;
  const execer = opts.execer ?? new RealExecer();
  const hostname: Handler = ({ res }) => {
    send(res, 200, opts.hostname);
  };
  const exit: Handler = ({ res, url, q }) => {
    const code = url.pathname === '/shutdown' ? 0 : Number(q.get('code') ?? '0');
    send(res, 200, 'exiting');
    state.requestExit(Number.isInteger(code) ? code : 0);
  };
  return {
    '/': ({ res }) => {
      send(res, 200, `NOW: ${new Date().toISOString()}`);
    },
    '/hostname': hostname,
    '/hostName': hostname,
    '/clientip': ({ req, res }) => {
      send(res, 200, formatPeer(req.socket.remoteAddress, req.socket.remotePort));
    },
    '/serverport': ({ req, res }) => {
      send(res, 200, String((req.socket.address() as AddressInfo).port));
    },
    '/echo': handleEcho,
    '/healthz': ({ res }) => {
      const ok = state.udpReady || opts.udpPort < 0;
      send(res, ok ? 200 : 412, ok ? 'ok' : 'udp server not up');
    },
    '/readyz': ({ res }) => {
      send(res, state.terminating ? 503 : 200, state.terminating ? 'terminating' : 'ok');
    },
    '/dial': (c) => handleDial(c, dialTimeout),
    '/shell': (c) => handleShell(c, opts.enableShell === true, execer),
    '/exit': exit,
    '/shutdown': exit,
    '/redirect': handleRedirect,
  };
}

export async function startNetexec(opts: NetexecOptions): Promise<Netexec> {
  let udp: Socket | undefined;
  const state: ServerState = { udpReady: false, terminating: false, requestExit: () => undefined };
  const exitRequested = new Promise<number>((resolve) => {
    state.requestExit = resolve;
  });
  const routes = new Map(Object.entries(netexecRoutes(opts, state)));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://netexec');
    const route = routes.get(url.pathname);
    if (route === undefined) send(res, 404, `404 page not found: ${url.pathname}`);
    else await route({ req, res, url, q: url.searchParams });
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      send(res, 500, e instanceof Error ? e.message : String(e));
    });
  });
  let httpPort: number | undefined;
  if (opts.httpPort >= 0) {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(opts.httpPort, opts.host, () => {
        resolve();
      });
    });
    httpPort = (http.address() as AddressInfo).port;
  }

  let udpPort: number | undefined;
  if (opts.udpPort >= 0) {
    const sock = await bindUdp(opts.udpPort, opts.host);
    udp = sock;
    sock.on('message', (msg, rinfo) => {
      const answer = answerUdp(
        msg.toString('utf8'),
        opts.hostname,
        formatPeer(rinfo.address, rinfo.port),
      );
      if (answer !== undefined) sock.send(answer, rinfo.port, rinfo.address);
    });
    udpPort = sock.address().port;
    state.udpReady = true;
  }

  return {
    httpPort,
    udpPort,
    exitRequested,
    markTerminating: () => {
      state.terminating = true;
    },
    close: async () => {
      if (http.listening) {
        http.closeAllConnections();
        await new Promise<void>((resolve) =>
          http.close(() => {
            resolve();
          }),
        );
      }
      const u = udp;
      if (u)
        await new Promise<void>((resolve) =>
          u.close(() => {
            resolve();
          }),
        );
    },
  };
}
