// HTTP to the API server, on a KubeConfig's transport (kubeconfig.ts): a request whose JSON
// answer is returned or whose failure is a KubeApiError (status and reason from the server's
// Status; status 0 and reason ConnectionError when no answer came, the socket error kept as
// its cause), and a watch that hands each event of the newline-delimited stream to a callback.
// Every request has an idle timeout, so none can wait forever on a dead connection.

import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { SvcnetError } from '../errors.js';
import type { KubeConfig } from './kubeconfig.js';

/** An API error with its HTTP status (0: no answer) and Kubernetes reason. */
export class KubeApiError extends SvcnetError {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message: string, options?: { cause?: unknown }) {
    super(codeForStatus(status), message, options);
    this.status = status;
    this.reason = reason;
    this.name = 'KubeApiError';
  }
}

function codeForStatus(status: number): SvcnetError['code'] {
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 400 || status === 422) return 'INVALID_INPUT';
  return 'INTERNAL';
}

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

export interface RequestOptions {
  readonly method?: string;
  readonly query?: Query;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** Default application/json. */
  readonly contentType?: string;
  /** Idle timeout of the connection while waiting (default 60 s). */
  readonly timeoutMs?: number;
}

function withQuery(path: string, query: Query | undefined): string {
  if (query === undefined) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s === '' ? path : `${path}${path.includes('?') ? '&' : '?'}${s}`;
}

/** The error for a non-2xx answer: the Status's reason and message when the body is one. */
function statusError(status: number, text: string, what: string): KubeApiError {
  let reason = '';
  let message = `${what}: HTTP ${String(status)}`;
  try {
    const s = JSON.parse(text) as { reason?: unknown; message?: unknown };
    if (typeof s.reason === 'string') reason = s.reason;
    if (typeof s.message === 'string' && s.message !== '') message = s.message;
  } catch {
    if (text.trim() !== '')
      message = `${message}: ${text.trim().split('\n')[0]?.slice(0, 200) ?? ''}`;
  }
  if (reason === '' && status === 410) reason = 'Expired';
  return new KubeApiError(status, reason, message);
}

function connectionError(e: unknown, what: string): KubeApiError {
  if (e instanceof KubeApiError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new KubeApiError(0, 'ConnectionError', `${what}: ${msg}`, { cause: e });
}

/** Opens a request; resolves with the response once its headers arrived. */
async function open(
  kc: KubeConfig,
  path: string,
  opts: RequestOptions,
  accept: string,
  onRequest: (req: ClientRequest) => void = () => undefined,
): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  const method = opts.method ?? 'GET';
  const what = `${method} ${path.split('?')[0] ?? path}`;
  const url = new URL(kc.server);
  const base = url.pathname.replace(/\/$/, '');
  const { agent, headers } = await kc.transport();
  const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'http:' ? httpRequest : httpsRequest)(
      {
        method,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        path: `${base}${withQuery(path, opts.query)}`,
        agent,
        headers: {
          ...headers,
          Accept: accept,
          'User-Agent': 'svcnet',
          ...(body !== undefined
            ? {
                'Content-Type': opts.contentType ?? 'application/json',
                'Content-Length': body.length,
              }
            : {}),
        },
        timeout: timeoutMs,
      },
      (res) => {
        resolve({ req, res });
      },
    );
    onRequest(req);
    req.on('timeout', () => {
      req.destroy(new Error(`no answer in ${String(timeoutMs)} ms`));
    });
    req.on('error', (e) => {
      reject(connectionError(e, what));
    });
    req.end(body);
  });
}

/** One request; resolves with the parsed JSON answer (undefined for an empty body). */
export async function kubeRequest<T>(
  kc: KubeConfig,
  path: string,
  opts: RequestOptions = {},
): Promise<T> {
  const what = `${opts.method ?? 'GET'} ${path}`;
  const { req, res } = await open(kc, path, opts, 'application/json');
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', (e) => {
      reject(connectionError(e, what));
    });
    req.on('error', (e) => {
      reject(connectionError(e, what));
    });
  });
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) throw statusError(status, text, what);
  try {
    return (text === '' ? undefined : JSON.parse(text)) as T;
  } catch (e) {
    throw new KubeApiError(status, 'BadResponse', `${what}: the answer is not JSON`, { cause: e });
  }
}

export interface WatchEvent {
  readonly type: string;
  readonly object: unknown;
}

export interface Watch {
  /** Resolves when the server ends the stream; rejects on an error or a non-200 answer. */
  readonly done: Promise<void>;
  /** Ends the watch; `done` then resolves. */
  abort(): void;
}

/**
 * A watch: GET `path` with `watch=1` and `query`. `onOpen` runs once the server accepted it;
 * `onEvent` runs for every event, in order. A callback that throws ends the watch, and `done`
 * rejects with what it threw.
 */
export function kubeWatch(
  kc: KubeConfig,
  path: string,
  query: Query,
  onEvent: (e: WatchEvent) => void,
  onOpen: () => void = () => undefined,
  idleTimeoutMs = 0,
): Watch {
  let aborted = false;
  let current: ClientRequest | undefined;
  const what = `watch ${path}`;
  const run = async (): Promise<void> => {
    const { req, res } = await open(
      kc,
      path,
      { query: { ...query, watch: 1 }, timeoutMs: idleTimeoutMs > 0 ? idleTimeoutMs : 60_000 },
      'application/json',
      (r) => {
        current = r;
        if (aborted) r.destroy();
      },
    );
    if (aborted) {
      req.destroy();
      return;
    }
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      throw statusError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), what);
    }
    // A watch may be quiet for long: after the headers only the caller's idle bound applies.
    req.setTimeout(idleTimeoutMs);
    onOpen();
    await new Promise<void>((resolve, reject) => {
      let rest = '';
      const fail = (e: unknown): void => {
        req.destroy();
        reject(
          e instanceof KubeApiError || e instanceof SvcnetError ? e : connectionError(e, what),
        );
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        rest += chunk;
        let nl: number;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const line = rest.slice(0, nl).trim();
          rest = rest.slice(nl + 1);
          if (line === '') continue;
          try {
            onEvent(JSON.parse(line) as WatchEvent);
          } catch (e) {
            fail(e);
            return;
          }
        }
      });
      res.on('end', () => {
        resolve();
      });
      res.on('error', (e) => {
        if (aborted) resolve();
        else fail(e);
      });
      req.on('error', (e) => {
        if (aborted) resolve();
        else fail(e);
      });
      res.on('close', () => {
        if (aborted) resolve();
        else if (!res.complete) fail(new Error('the connection closed mid-watch'));
      });
    });
  };
  const done = run().catch((e: unknown) => {
    if (!aborted) throw e;
  });
  return {
    done,
    abort() {
      aborted = true;
      current?.destroy();
    },
  };
}
