// Connection bookkeeping for the API server's listener: every accepted socket, whether it
// has carried an authenticated request, whether a request is in flight, and since when it
// has been idle. It enforces a cap that sheds idle connections — unauthenticated (including
// those still in their TLS handshake) oldest first, then authenticated ones — so a client
// holding thousands of idle sockets cannot lock out clients with a token; and a deadline for
// the first request (TLS handshake + headers) on a fresh connection. Sockets are only ever
// destroyed, through the `Closable` they were registered with; time comes from a clock.

import { realClock, type Clock } from '../util/clock.js';

/** What the tracker needs of a socket. */
export interface Closable {
  destroy(): void;
}

interface Conn {
  readonly sock: Closable;
  readonly createdAt: number;
  authenticated: boolean;
  active: number;
  requests: number;
}

export interface ConnectionLimits {
  /** Connections held at most; a new one past it sheds an idle one (or is refused). */
  readonly maxConnections: number;
  /** A connection with no request started by then is closed (TLS handshake + headers). */
  readonly firstRequestTimeoutMs: number;
}

export interface ConnectionStats {
  readonly open: number;
  readonly active: number;
  /** Idle connections closed to make room, since start. */
  readonly shed: number;
  /** New connections refused because nothing idle could be shed. */
  readonly refused: number;
  /** Connections closed for sending no request in time. */
  readonly expired: number;
}

function first<K, V>(m: Map<K, V>): [K, V] | undefined {
  for (const e of m) return e;
  return undefined;
}

/** Idle/active/authenticated state of every open connection, keyed by `addr:port`. */
export class ConnectionTracker {
  private readonly conns = new Map<string, Conn>();
  /** Idle connections that never authenticated, longest idle first (Map keeps insertion order). */
  private readonly unauthIdle = new Map<string, Conn>();
  private readonly authIdle = new Map<string, Conn>();
  /** Connections that have not started a request, oldest first. */
  private readonly fresh = new Map<string, Conn>();
  private shed = 0;
  private refused = 0;
  private expired = 0;
  private readonly limits: ConnectionLimits;
  private readonly clock: Pick<Clock, 'now'>;

  /** `clock` times the first-request deadline (default the wall clock). */
  constructor(limits: ConnectionLimits, clock: Pick<Clock, 'now'> = realClock) {
    this.limits = limits;
    this.clock = clock;
  }

  /**
   * Registers a new connection. At the cap, the longest-idle unauthenticated connection is
   * closed to make room, else the longest-idle authenticated one; with none idle, the new
   * connection is closed and false returned.
   */
  accept(key: string, sock: Closable): boolean {
    if (this.conns.size >= this.limits.maxConnections) {
      const victim = first(this.unauthIdle) ?? first(this.authIdle);
      if (!victim) {
        this.refused++;
        sock.destroy();
        return false;
      }
      this.shed++;
      this.close(victim[0]);
    }
    const c: Conn = {
      sock,
      createdAt: this.clock.now(),
      authenticated: false,
      active: 0,
      requests: 0,
    };
    this.conns.set(key, c);
    this.unauthIdle.set(key, c);
    this.fresh.set(key, c);
    return true;
  }

  /** A request started on the connection; `authenticated` when it carried the token. */
  begin(key: string, authenticated: boolean): void {
    const c = this.conns.get(key);
    if (!c) return;
    c.active++;
    c.requests++;
    if (authenticated) c.authenticated = true;
    this.fresh.delete(key);
    this.unauthIdle.delete(key);
    this.authIdle.delete(key);
  }

  /** A request on the connection was answered (or aborted). */
  end(key: string): void {
    const c = this.conns.get(key);
    if (!c || c.active === 0) return;
    c.active--;
    if (c.active > 0) return;
    (c.authenticated ? this.authIdle : this.unauthIdle).set(key, c);
  }

  /** The socket closed; `sock`, when given, must be the one registered under `key`. */
  forget(key: string, sock?: Closable): void {
    if (sock !== undefined && this.conns.get(key)?.sock !== sock) return;
    this.conns.delete(key);
    this.unauthIdle.delete(key);
    this.authIdle.delete(key);
    this.fresh.delete(key);
  }

  /** Closes connections that started no request within the deadline; returns how many. */
  sweep(): number {
    const deadline = this.clock.now() - this.limits.firstRequestTimeoutMs;
    let n = 0;
    for (const [key, c] of this.fresh) {
      if (c.createdAt > deadline) break;
      this.close(key);
      this.expired++;
      n++;
    }
    return n;
  }

  stats(): ConnectionStats {
    let active = 0;
    for (const c of this.conns.values()) if (c.active > 0) active++;
    return {
      open: this.conns.size,
      active,
      shed: this.shed,
      refused: this.refused,
      expired: this.expired,
    };
  }

  private close(key: string): void {
    const c = this.conns.get(key);
    this.forget(key);
    c?.sock.destroy();
  }
}

/** Headroom kept below RLIMIT_NOFILE for files, the store, DNS and client sockets. */
export const FD_RESERVE = 1024;

/** The default cap: what the descriptor limit leaves after the reserve (at least 64). */
export function defaultMaxConnections(noFileSoftLimit: number): number {
  if (!Number.isFinite(noFileSoftLimit)) return 1_000_000;
  return Math.max(64, noFileSoftLimit - FD_RESERVE);
}
