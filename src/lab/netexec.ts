// An agnhost-netexec-compatible test server: what every lab Pod runs, so the checks that
// Kubernetes' own sig-network e2e tests make (load spreading via /hostname and /dial, source
// IP via /clientip, readiness via /healthz and /readyz, UDP `hostname`/`echo`/`clientip`)
// work against svcnet unchanged. It is a test workload, not a general web server: /shell is
// off unless explicitly enabled (lab only), /upload writes only under its own directory, and
// it listens only where told.
//
// Behaviour follows agnhost's netexec (kubernetes test/images/agnhost/netexec) as its code
// behaves, which is not always what its help text says: routes as its ServeMux registers
// them (an unknown path is `/`, the time; an unclean path is a 301 to the clean one); query
// values parsed as Go parses them, with its error texts; bodies byte for byte (`/healthz`
// empty, `/readyz` `ok` or `shutting down`, JSON with sorted keys and empty fields left out);
// status codes too (/dial and /shell answer 200 even when tries or the command failed; an
// /echo or /redirect code outside 100-999 drops the connection, as Go's panic does). /dial
// and the UDP side live in netexec-dial.ts and netexec-udp.ts, Go's formats in netexec-go.ts.
//
// Where we differ, on purpose: /healthz and /readyz are 200 when UDP is switched off (agnhost
// then never becomes healthy; lab Pods without a UDP port need the probe to pass); /shell is
// opt-in; /serverport (the local port that answered) is ours, for multi-port Pods; no TLS, no
// SCTP, no --http-override, and form values come from the query string only (agnhost also
// reads a POSTed urlencoded body).

import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealExecer, type Execer } from '../os/exec.js';
import {
  canonicalHeaderKey,
  cleanRequestPath,
  goAtoi,
  goJson,
  goQuote,
  goTimeString,
  headerMap,
  joinHostPort,
  redirectBody,
  redirectLocation,
} from './netexec-go.js';
import { checkDialQuery, resolveDialHost, runDial } from './netexec-dial.js';
import { parseGoDuration } from '../util/duration.js';
import { serveUdp } from './netexec-udp.js';
import { processSockets, type NetexecSockets } from './netexec-sockets.js';
import { handleUpload } from './netexec-upload.js';

export { answerUdp } from './netexec-udp.js';

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
  /** Where /upload stores files (default: `netexec-uploads` in the OS temp directory). */
  readonly uploadDir?: string;
  /** Runs /shell commands (default RealExecer). */
  readonly execer?: Execer;
  /** Where its sockets are opened (default: this process's namespace). */
  readonly sockets?: NetexecSockets;
  /**
   * Told one line per request (`GET /hostname`), as agnhost logs them; the probe paths
   * /healthz and /readyz are left out, or a Pod's log would be mostly its kubelet's probes.
   */
  readonly log?: (line: string) => void;
}

/** Requests not worth a log line: the kubelet's probes. */
const QUIET_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** What /exit or /shutdown asked for. */
export interface ExitRequest {
  readonly code: number;
  /** Exit at once (agnhost: `timeout` 0, or /shutdown), no response sent. */
  readonly immediate: boolean;
  /** Otherwise: stop accepting, give open connections this long, then exit. */
  readonly graceMs: number;
}

export interface Netexec {
  readonly httpPort: number | undefined;
  readonly udpPort: number | undefined;
  /** Makes /readyz fail (as after SIGTERM) while still serving traffic. */
  markTerminating(): void;
  /** Stops accepting, lets open connections finish for up to `graceMs`, then closes all. */
  shutdown(graceMs: number): Promise<void>;
  close(): Promise<void>;
  /** Resolves when a client asked /exit or /shutdown. */
  readonly exitRequested: Promise<ExitRequest>;
}

const TEXT = 'text/plain; charset=utf-8';

/** Writes a response as Go's server would: a Content-Type only when there is a body. */
function send(
  res: ServerResponse,
  code: number,
  body: string,
  headers: OutgoingHttpHeaders = {},
): void {
  res.writeHead(code, {
    ...(body !== '' ? { 'Content-Type': TEXT } : {}),
    ...headers,
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** http.Error: the message and a newline, nosniff. */
function httpError(res: ServerResponse, code: number, message: string): void {
  send(res, code, `${message}\n`, { 'X-Content-Type-Options': 'nosniff' });
}

/**
 * A status a handler asked for by number: Go panics on one outside 100-999 and the client
 * sees the connection drop, so we drop it too (false: nothing more to write).
 */
function usableCode(res: ServerResponse, code: number): boolean {
  if (code >= 100 && code <= 999) return true;
  res.destroy();
  return false;
}

/** What one HTTP request's handler sees. */
interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The request path, percent-decoded (r.URL.Path). */
  readonly path: string;
  readonly query: URLSearchParams;
  /** r.FormValue: the first value, '' when absent. */
  readonly form: (key: string) => string;
}

/** The server's mutable state the handlers read and change. */
interface ServerState {
  udpReady: boolean;
  terminating: boolean;
  requestExit: (r: ExitRequest) => void;
}

type Handler = (c: RequestContext) => void | Promise<void>;

function handleEcho({ res, form }: RequestContext): void {
  const msg = form('msg');
  const codeString = form('code');
  if (codeString === '') {
    send(res, 200, msg);
    return;
  }
  const code = goAtoi(codeString);
  if (!code.ok)
    send(res, 200, `argument 'code' must be an integer or empty, got ${goQuote(codeString)}\n`);
  else if (usableCode(res, code.value)) send(res, code.value, msg);
}

function handleRedirect({ req, res, path, form }: RequestContext): void {
  const codeString = form('code');
  let code = 302;
  if (codeString !== '') {
    const c = goAtoi(codeString);
    if (!c.ok) {
      send(res, 200, `argument 'code' must be an integer or empty, got ${goQuote(codeString)}\n`);
      return;
    }
    code = c.value;
  }
  if (!usableCode(res, code)) return;
  writeRedirect(req, res, redirectLocation(form('location'), path), code);
}

function writeRedirect(
  req: IncomingMessage,
  res: ServerResponse,
  location: string,
  code: number,
): void {
  const getOrHead = req.method === 'GET' || req.method === 'HEAD';
  const body = req.method === 'GET' ? redirectBody(location, code) : '';
  res.writeHead(code, {
    Location: location,
    ...(getOrHead ? { 'Content-Type': 'text/html; charset=utf-8' } : {}),
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function handleHeader({ req, res, form }: RequestContext): void {
  const key = form('key');
  if (key === '') {
    send(res, 200, goJson(headerMap(req.rawHeaders)));
    return;
  }
  send(res, 200, headerMap(req.rawHeaders)[canonicalHeaderKey(key)]?.[0] ?? '');
}

/**
 * One optional /exit argument: empty is 0, otherwise `parse`; undefined after answering with
 * agnhost's message (`argument 'wait' must be … or empty, got "x"`) when it does not parse.
 */
function exitArg(
  { res, form }: RequestContext,
  name: string,
  what: string,
  parse: (text: string) => { ok: true; value: number } | { ok: false },
): number | undefined {
  const text = form(name);
  const r = text === '' ? { ok: true as const, value: 0 } : parse(text);
  if (r.ok) return r.value;
  send(res, 200, `argument '${name}' must be ${what} or empty, got ${goQuote(text)}\n`);
  return undefined;
}

async function handleExit(ctx: RequestContext, state: ServerState): Promise<void> {
  const { res } = ctx;
  const timeoutMs = exitArg(ctx, 'timeout', 'a valid golang duration', parseGoDuration);
  if (timeoutMs === undefined) return;
  const waitMs = exitArg(ctx, 'wait', 'a valid golang duration', parseGoDuration);
  if (waitMs === undefined) return;
  const code = exitArg(ctx, 'code', 'an integer [0-127]', goAtoi);
  if (code === undefined) return;
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  if (timeoutMs === 0) {
    res.destroy();
    state.requestExit({ code, immediate: true, graceMs: 0 });
    return;
  }
  send(res, 200, '');
  state.requestExit({ code, immediate: false, graceMs: Math.max(0, timeoutMs) });
}

async function handleDial(
  { res, query }: RequestContext,
  timeoutMs: number,
  sockets: NetexecSockets,
): Promise<void> {
  const checked = checkDialQuery(query);
  if (!checked.ok) {
    httpError(res, 400, checked.message);
    return;
  }
  let host: string;
  try {
    host = await resolveDialHost(checked.params.host, sockets.lookup);
  } catch (e) {
    httpError(
      res,
      400,
      `host and/or port param are invalid. ${e instanceof Error ? e.message : String(e)}`,
    );
    return;
  }
  send(res, 200, await runDial({ ...checked.params, host }, timeoutMs, sockets));
}

/** /shell: `/bin/sh -c CMD`; `output` is stdout then stderr, `error` Go's `exit status N`. */
async function handleShell(
  { res, form }: RequestContext,
  enabled: boolean,
  execer: Execer,
): Promise<void> {
  if (!enabled) {
    send(res, 404, '/shell is disabled (start with --enable-shell)');
    return;
  }
  const cmd = form('shellCommand') !== '' ? form('shellCommand') : form('cmd');
  let output = '';
  let error = '';
  try {
    const r = await execer.run({ cmd: '/bin/sh', args: ['-c', cmd] });
    output = r.stdout + r.stderr;
    if (r.code !== 0) error = `exit status ${String(r.code)}`;
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  send(
    res,
    200,
    goJson({ ...(error !== '' ? { error } : {}), ...(output !== '' ? { output } : {}) }),
  );
}

/** The route table: path → handler, as agnhost's netexec registers them (plus /serverport). */
function netexecRoutes(opts: NetexecOptions, state: ServerState): Record<string, Handler> {
  const dialTimeout = opts.dialTimeoutMs ?? 5000;
  const execer = opts.execer ?? new RealExecer();
  const sockets = opts.sockets ?? processSockets;
  const uploadDir = opts.uploadDir ?? join(tmpdir(), 'netexec-uploads');
  const ready = (): boolean => state.udpReady || opts.udpPort < 0;
  const hostname: Handler = ({ res }) => {
    send(res, 200, opts.hostname);
  };
  return {
    '/': ({ res }) => {
      send(res, 200, `NOW: ${goTimeString(new Date())}`);
    },
    '/clientip': ({ req, res }) => {
      send(res, 200, joinHostPort(req.socket.remoteAddress, req.socket.remotePort));
    },
    '/header': handleHeader,
    '/dial': (c) => handleDial(c, dialTimeout, sockets),
    '/echo': handleEcho,
    '/exit': (c) => handleExit(c, state),
    '/healthz': ({ res }) => {
      send(res, ready() ? 200 : 412, '');
    },
    '/readyz': ({ res }) => {
      if (state.terminating) send(res, 503, 'shutting down');
      else if (ready()) send(res, 200, 'ok');
      else send(res, 412, '');
    },
    '/hostname': hostname,
    '/redirect': handleRedirect,
    '/shell': (c) => handleShell(c, opts.enableShell === true, execer),
    '/upload': async ({ req, res }) => {
      const a = await handleUpload(req, uploadDir);
      send(res, a.status, a.body);
    },
    '/hostName': hostname,
    '/shutdown': ({ res }) => {
      res.destroy();
      state.requestExit({ code: 0, immediate: true, graceMs: 0 });
    },
    '/serverport': ({ req, res }) => {
      send(res, 200, String((req.socket.address() as AddressInfo).port));
    },
  };
}

function decodePath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export async function startNetexec(opts: NetexecOptions): Promise<Netexec> {
  let udp: Socket | undefined;
  const state: ServerState = { udpReady: false, terminating: false, requestExit: () => undefined };
  const exitRequested = new Promise<ExitRequest>((resolve) => {
    state.requestExit = resolve;
  });
  const routes = new Map(Object.entries(netexecRoutes(opts, state)));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Split by hand: WHATWG URL would read a `//x` path as a host.
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const rawPath = q >= 0 ? target.slice(0, q) : target;
    const search = q >= 0 ? target.slice(q) : '';
    const path = decodePath(rawPath);
    const clean = cleanRequestPath(path);
    if (clean !== path) {
      writeRedirect(req, res, clean + search, 301);
      return;
    }
    if (opts.log !== undefined && !QUIET_PATHS.has(path))
      opts.log(`${req.method ?? 'GET'} ${path}${search}`);
    const query = new URLSearchParams(search);
    const route = routes.get(path) ?? routes.get('/');
    const form = (key: string): string => query.get(key) ?? '';
    await route?.({ req, res, path, query, form });
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) httpError(res, 500, e instanceof Error ? e.message : String(e));
      else res.destroy();
    });
  });
  const sockets = opts.sockets ?? processSockets;
  const httpPort =
    opts.httpPort >= 0 ? await sockets.listenTcp(http, opts.httpPort, opts.host) : undefined;

  let udpPort: number | undefined;
  if (opts.udpPort >= 0) {
    const sock = await sockets.bindUdp(opts.udpPort, opts.host);
    udp = sock;
    serveUdp(sock, opts.hostname);
    udpPort = sock.address().port;
    state.udpReady = true;
  }

  const closeUdp = async (): Promise<void> => {
    const u = udp;
    udp = undefined;
    if (u)
      await new Promise<void>((resolve) =>
        u.close(() => {
          resolve();
        }),
      );
  };
  const shutdown = async (graceMs: number): Promise<void> => {
    if (http.listening) {
      const closed = new Promise<void>((resolve) =>
        http.close(() => {
          resolve();
        }),
      );
      http.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
      http.closeAllConnections();
      await closed;
    }
    await closeUdp();
  };

  return {
    httpPort,
    udpPort,
    exitRequested,
    markTerminating: () => {
      state.terminating = true;
    },
    shutdown,
    close: () => shutdown(0),
  };
}
