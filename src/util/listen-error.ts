// The one error a daemon gives when one of its listeners cannot bind: the address, what it
// was for, the reason in words and the flag that changes it, e.g. `cannot listen on
// 0.0.0.0:8080 (/health): address already in use; change --health-listen`. Daemons close
// whatever they had bound and exit 1 with it, as CoreDNS and kube-proxy do, rather than run
// half-started.

import { SvcnetError } from '../errors.js';

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this host',
  EACCES: 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)',
  EINVAL: 'invalid address',
  ENOTFOUND: 'host not found',
};

function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** A LISTEN_FAILED error naming the address, its purpose and the flag to change. */
export function listenFailed(
  what: string,
  host: string,
  port: number,
  flag: string,
  cause: unknown,
): SvcnetError {
  const code =
    typeof cause === 'object' && cause !== null && 'code' in cause ? String(cause.code) : '';
  const reason =
    REASONS[code] ?? (cause instanceof Error ? cause.message : String(cause)).split('\n')[0];
  return new SvcnetError(
    'LISTEN_FAILED',
    `cannot listen on ${hostPort(host, port)} (${what}): ${reason ?? ''}; change ${flag}`,
    { cause },
  );
}
