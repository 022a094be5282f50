// netexec's /dial: the probe Kubernetes' sig-network e2e tests run from inside a Pod ("ask
// this Pod to reach host:port `tries` times and report what answered"). It behaves as agnhost
// does where a test can tell:
//
// - Every try is a NEW connection (agnhost builds a fresh Go transport per try). Reusing one
//   keep-alive connection would pin all tries to the one endpoint the proxy picked for it,
//   and "30 tries reach all 3 endpoints" or session-affinity checks would prove nothing.
// - Parameters are checked in agnhost's order with its 400 texts; `host` is resolved once
//   (names to their first IPv4 address), `port` may be empty (0); `tries` is any integer
//   (<= 0 makes no try); the protocol is `http` (default) or `udp` — no SCTP here.
// - The answer is 200 with Go's JSON of `{"errors":[...],"responses":[...]}`: keys sorted, a
//   key left out when its list is empty, and — agnhost's quirk — `responses` left out
//   whenever the LAST try failed or answered an empty body. (agnhost's help text promises
//   417 when the last try failed; its code has always answered 200, so we do too.)
// - An http try is a GET of `http://HOST:PORT/REQUEST` that follows up to 10 redirects, gives
//   up after 5 s (the whole try), and returns the body whatever the status; errors read as
//   Go's client prints them (`Get "URL": dial tcp IP:PORT: connect: connection refused`).

import { request as httpRequest, type ClientRequest } from 'node:http';
import { isIP } from 'node:net';
import { goAtoi, goJson, joinHostPort } from './netexec-go.js';
import { dialUdp, errnoText } from './netexec-udp.js';
import type { NetexecSockets } from './netexec-sockets.js';

export interface DialParams {
  readonly host: string;
  readonly port: number;
  readonly request: string;
  readonly protocol: 'http' | 'udp';
  readonly tries: number;
}

export type DialCheck = { ok: true; params: DialParams } | { ok: false; message: string };

/** Checks /dial's query as agnhost does, in its order; `message` is the 400 body. */
export function checkDialQuery(q: URLSearchParams): DialCheck {
  const triesParam = q.get('tries') ?? '';
  let tries = 1;
  if (triesParam !== '') {
    const t = goAtoi(triesParam);
    if (!t.ok) return { ok: false, message: `tries parameter is invalid. ${t.error}` };
    tries = t.value;
  }
  const request = q.get('request') ?? '';
  if (request === '') return { ok: false, message: 'request parameter not specified. <nil>' };
  const protocol = (q.get('protocol') ?? '').toLowerCase();
  if (protocol !== '' && protocol !== 'http' && protocol !== 'udp')
    return { ok: false, message: `unsupported protocol. ${q.get('protocol') ?? ''}` };
  const host = q.get('host') ?? '';
  const portParam = q.get('port') ?? '';
  const invalid = (why: string): DialCheck => ({
    ok: false,
    message: `host and/or port param are invalid. ${why}`,
  });
  if (host.includes('[') || host.includes(']'))
    return invalid(`address ${joinHostPort(host, portParam)}: unexpected character in address`);
  let port = 0;
  if (portParam !== '') {
    if (!/^\d+$/.test(portParam))
      return invalid(`lookup ${protocol === 'udp' ? 'udp' : 'tcp'}/${portParam}: unknown port`);
    port = Number(portParam);
    if (port > 65535) return invalid(`address ${portParam}: invalid port`);
  }
  return {
    ok: true,
    params: { host, port, request, protocol: protocol === 'udp' ? 'udp' : 'http', tries },
  };
}

/**
 * Resolves /dial's host once, as Go's ResolveTCPAddr: '' stays '' (this machine), an IP is
 * itself, a name becomes its first IPv4 address (else its first address).
 */
export async function resolveDialHost(
  host: string,
  lookup: NetexecSockets['lookup'],
): Promise<string> {
  if (host === '' || isIP(host) !== 0) return host;
  try {
    const all = await lookup(host);
    const pick = all.find((a) => a.family === 4) ?? all[0];
    if (pick === undefined) throw new Error('no such host');
    return pick.address;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(
      `lookup ${host}: ${code === 'ENOTFOUND' || code === 'ENODATA' ? 'no such host' : errnoText(e)}`,
      { cause: e },
    );
  }
}

/** The body agnhost writes for a finished /dial (see the header for the quirks). */
export function dialBody(
  responses: readonly string[],
  errors: readonly string[],
  last: string,
): string {
  return goJson({
    ...(errors.length > 0 ? { errors } : {}),
    ...(last !== '' ? { responses } : {}),
  });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 10;

interface Hop {
  readonly status: number;
  readonly location: string | undefined;
  readonly body: string;
}

/** One GET on a connection of its own (`Connection: close`), to `ip` (the URL's host resolved). */
function getOnce(url: string, ip: string, deadline: number, sockets: NetexecSockets): Promise<Hop> {
  return new Promise((resolve, reject) => {
    let phase: 'headers' | 'body' = 'headers';
    let conn = '';
    let req: ClientRequest | undefined;
    const timer = setTimeout(
      () => {
        const msg =
          phase === 'headers'
            ? `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
            : 'context deadline exceeded (Client.Timeout or context cancellation while reading body)';
        req?.destroy(new Error(msg));
      },
      Math.max(0, deadline - Date.now()),
    );
    const fail = (e: unknown): void => {
      clearTimeout(timer);
      const err = e as NodeJS.ErrnoException;
      if (err.message.startsWith('Get "') || err.message.startsWith('context deadline'))
        reject(err);
      else if (conn === '')
        reject(new Error(`Get "${url}": dial ${describeTarget(url)}: connect: ${errnoText(e)}`));
      else if (phase === 'body') reject(new Error('unexpected EOF'));
      else if (err.code === 'ECONNRESET' && err.syscall === 'read')
        reject(new Error(`Get "${url}": read ${conn}: read: connection reset by peer`));
      else reject(new Error(`Get "${url}": EOF`));
    };
    try {
      const port = Number(new URL(url).port || 80);
      req = httpRequest(url, {
        headers: { 'User-Agent': 'Go-http-client/1.1', Connection: 'close' },
        createConnection: () => sockets.connectTcp(ip, port),
      });
    } catch (e) {
      fail(e);
      return;
    }
    req.on('socket', (s) => {
      s.once('connect', () => {
        conn = `tcp ${joinHostPort(s.localAddress, s.localPort)}->${joinHostPort(s.remoteAddress, s.remotePort)}`;
      });
    });
    req.on('response', (res) => {
      phase = 'body';
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        // Closed after each try, as agnhost drops its per-try transport's connections.
        req.destroy();
        const location = res.headers.location;
        resolve({
          status: res.statusCode ?? 0,
          location,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.on('error', fail);
    req.end();
  });
}

/** `tcp HOST:PORT` of a URL as written (URL objects drop a default :80 Go would print). */
function describeTarget(url: string): string {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(url)?.[1] ?? url;
  return `tcp ${authority}`;
}

/** One /dial try over HTTP: GET, following redirects as Go's client does; resolves the body. */
export async function dialHttp(
  host: string,
  port: number,
  request: string,
  timeoutMs: number,
  sockets: NetexecSockets,
): Promise<string> {
  let url = `http://${joinHostPort(host, port)}/${request}`;
  if (host === '') throw new Error(`Get "${url}": http: no Host in request URL`);
  const deadline = Date.now() + timeoutMs;
  for (let hop = 0; ; hop++) {
    const r = await getOnce(url, await hopAddress(url, sockets), deadline, sockets);
    if (!REDIRECTS.has(r.status) || r.location === undefined) return r.body;
    const next = new URL(r.location, url).toString();
    if (hop + 1 >= MAX_REDIRECTS) throw new Error(`Get "${next}": stopped after 10 redirects`);
    url = next;
  }
}

/** The address a hop's URL connects to: its host, or (a redirect to a name) the name looked up. */
async function hopAddress(url: string, sockets: NetexecSockets): Promise<string> {
  const name = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(name) !== 0) return name;
  const all = await sockets.lookup(name).catch(() => []);
  const pick = all.find((a) => a.family === 4) ?? all[0];
  if (pick === undefined) throw new Error(`Get "${url}": dial tcp: lookup ${name}: no such host`);
  return pick.address;
}

/** Runs a checked /dial whose host is resolved: every try in turn, then agnhost's JSON body. */
export async function runDial(
  p: DialParams,
  timeoutMs: number,
  sockets: NetexecSockets,
): Promise<string> {
  const host = p.host;
  const responses: string[] = [];
  const errors: string[] = [];
  let last = '';
  for (let i = 0; i < p.tries; i++) {
    try {
      last =
        p.protocol === 'http'
          ? await dialHttp(host, p.port, p.request, timeoutMs, sockets)
          : await dialUdp(host, p.port, p.request, timeoutMs, (t) => sockets.dialUdp(t));
      responses.push(last);
    } catch (e) {
      last = '';
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  return dialBody(responses, errors, last);
}
