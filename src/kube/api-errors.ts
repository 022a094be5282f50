// Kubernetes API failures for people: what a request or watch throws (rest.ts's KubeApiError
// with the server's status and message, or a socket error underneath one) turned into one
// line and a reason to branch on, plus the hint a user needs the first time (which token, which server, which kubeconfig to check). The
// informers retry with backoff and count failures; they log these lines, never stacks.
// Pure: no I/O.

import { SvcnetError } from '../errors.js';

export type ApiFailureReason = 'Unauthorized' | 'Forbidden' | 'Unreachable' | 'TLS' | 'HTTP';

export interface ApiFailure {
  readonly reason: ApiFailureReason;
  /** One line, e.g. `connection refused (ECONNREFUSED)` or `HTTP 401 Unauthorized`. */
  readonly text: string;
}

/** Where the client's configuration came from and what it points at, for the hints. */
export interface ApiClientOrigin {
  /** e.g. `--kubeconfig /tmp/lab.kubeconfig`, `$KUBECONFIG /x`, `in-cluster config`. */
  readonly source: string;
  readonly server: string;
  readonly user: string;
}

const NETWORK_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed',
};

function prop(o: unknown, key: string): unknown {
  return typeof o === 'object' && o !== null && key in o
    ? (o as Record<string, unknown>)[key]
    : undefined;
}

function statusMessage(body: unknown): string {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.split('\n')[0]?.slice(0, 200) ?? '';
    }
  }
  const m = prop(parsed, 'message');
  return typeof m === 'string' ? m : '';
}

/** The error's system code (`ECONNREFUSED`, ...) from it or its causes. */
function systemCode(e: unknown): string | undefined {
  // Our own errors' codes (INTERNAL, ...) are not system codes: look beneath them.
  const start = e instanceof SvcnetError ? e.cause : e;
  for (
    let c: unknown = start, depth = 0;
    c !== undefined && depth < 5;
    c = prop(c, 'cause'), depth++
  ) {
    const code = prop(c, 'code');
    if (typeof code === 'string' && code !== '') return code;
    const errno = prop(c, 'errno');
    if (typeof errno === 'string' && errno !== '') return errno;
  }
  return undefined;
}

/** Classifies any error a list, watch or request can raise. */
export function summarizeApiError(e: unknown): ApiFailure {
  const own = prop(e, 'status');
  const status =
    typeof own === 'number' && own > 0
      ? own
      : (prop(e, 'statusCode') ??
        (typeof prop(e, 'code') === 'number' ? prop(e, 'code') : undefined));
  if (typeof status === 'number') {
    // rest.ts's KubeApiError carries the Status message as its own; others keep the body.
    const msg =
      typeof own === 'number' && e instanceof Error ? e.message : statusMessage(prop(e, 'body'));
    const name = status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : '';
    const text = `HTTP ${status}${name !== '' ? ` ${name}` : ''}${msg !== '' ? `: ${msg}` : ''}`;
    return {
      reason: status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : 'HTTP',
      text,
    };
  }
  const code = systemCode(e);
  if (code !== undefined && Object.hasOwn(NETWORK_CODES, code))
    return { reason: 'Unreachable', text: `${NETWORK_CODES[code] ?? code} (${code})` };
  if (code !== undefined && /CERT|SSL|TLS|SELF_SIGNED|VERIFY/.test(code))
    return { reason: 'TLS', text: `TLS certificate problem (${code})` };
  const msg = e instanceof Error ? e.message : String(e);
  return { reason: 'HTTP', text: (msg.split('\n')[0] ?? '').slice(0, 300) };
}

/** What to check for a failure of this reason: one sentence naming the token, server or file. */
export function hintFor(reason: ApiFailureReason, origin: ApiClientOrigin): string {
  switch (reason) {
    case 'Unauthorized':
      return `check the token or client certificate of user ${origin.user} in ${origin.source}`;
    case 'Forbidden':
      return `user ${origin.user} (${origin.source}) lacks permission: check its RBAC bindings`;
    case 'Unreachable':
      return `check that the API server runs at ${origin.server} (the server address in ${origin.source})`;
    case 'TLS':
      return `check certificate-authority-data or insecure-skip-tls-verify for ${origin.server} in ${origin.source}`;
    case 'HTTP':
      return `check the server address ${origin.server} in ${origin.source}`;
  }
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms / 100) / 10}s`;
}

/** A failed list or watch of an informer, as one line with the count and the next retry. */
export class InformerError extends SvcnetError {
  readonly resource: string;
  readonly reason: ApiFailureReason;
  readonly failures: number;
  readonly retryInMs: number;

  constructor(
    resource: string,
    failure: ApiFailure,
    failures: number,
    retryInMs: number,
    hint: string | undefined,
    cause: unknown,
  ) {
    super(
      'API_FAILED',
      `list/watch ${resource}: ${failure.text} (failure ${failures}, retrying in ${seconds(retryInMs)})${hint !== undefined ? `; ${hint}` : ''}`,
      { cause },
    );
    this.name = 'InformerError';
    this.resource = resource;
    this.reason = failure.reason;
    this.failures = failures;
    this.retryInMs = retryInMs;
  }
}
