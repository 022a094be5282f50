// Name lookups as seen from inside a Pod, for the pod host's /dial (netexec-sockets.ts): the
// Pod's own hosts file first, then its resolv.conf's nameservers through its search path
// as glibc's resolver walks it (a name with at least `ndots` dots, or ending in a dot, is
// tried as written first; otherwise each search domain first, then the name as written).
// A Pod process started with `ip netns exec` got this from getaddrinfo for free (the Pod's
// /etc/netns files shown as /etc); one process serving many Pods has to read each Pod's
// files itself. The queries go out from the pod host's namespace (the node's), which reaches
// the cluster DNS Service as the Pod would. `searchNames` and `hostsAddresses` are pure.

import { Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseResolvConf, type ResolvConf } from '../dns/resolvconf.js';
import type { LookedUp } from './netexec-sockets.js';

/** glibc's default `ndots`. */
const DEFAULT_NDOTS = 1;

function ndotsOf(rc: ResolvConf): number {
  for (const o of [...rc.options].reverse()) {
    const m = /^ndots:(\d+)$/.exec(o);
    if (m) return Math.min(15, Number(m[1]));
  }
  return DEFAULT_NDOTS;
}

/** The names the resolver asks for, in order, for `name` under `rc` (glibc's res_search). */
export function searchNames(name: string, rc: ResolvConf): string[] {
  if (name.endsWith('.')) return [name.slice(0, -1)];
  const dots = name.split('.').length - 1;
  const searched = rc.searches.map((d) => `${name}.${d.replace(/\.$/, '')}`);
  return dots >= ndotsOf(rc) ? [name, ...searched] : [...searched, name];
}

/** The addresses a hosts file gives `name` (case-insensitive, aliases included), in file order. */
export function hostsAddresses(hosts: string, name: string): LookedUp[] {
  const want = name.replace(/\.$/, '').toLowerCase();
  const out: LookedUp[] = [];
  for (const raw of hosts.split('\n')) {
    const [addr, ...names] = (raw.split('#')[0] ?? '').trim().split(/\s+/);
    const family = isIP(addr ?? '');
    if (addr === undefined || family === 0) continue;
    if (names.some((n) => n.toLowerCase() === want))
      out.push({ address: addr, family: family === 6 ? 6 : 4 });
  }
  return out;
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'ESERVFAIL', 'EREFUSED']);

/**
 * A lookup over the Pod's files `resolvConfPath` and `hostsPath`, read at each call (the
 * kubelet may rewrite them). Rejects with ENOTFOUND when no candidate has an address.
 */
export function podLookup(
  resolvConfPath: string,
  hostsPath: string,
): (name: string) => Promise<LookedUp[]> {
  return async (name) => {
    const fromHosts = hostsAddresses(readOr(hostsPath), name);
    if (fromHosts.length > 0) return fromHosts;
    let rc: ResolvConf = { nameservers: [], searches: [], options: [] };
    try {
      rc = parseResolvConf(readOr(resolvConfPath), resolvConfPath);
    } catch {
      // as getaddrinfo: a broken file means no nameservers of its own
    }
    if (rc.nameservers.length > 0) {
      const resolver = new Resolver({ timeout: 2000, tries: 2 });
      resolver.setServers([...rc.nameservers]);
      for (const candidate of searchNames(name, rc)) {
        const answers: LookedUp[] = [];
        for (const family of [4, 6] as const) {
          try {
            const addrs =
              family === 4
                ? await resolver.resolve4(candidate)
                : await resolver.resolve6(candidate);
            for (const address of addrs) answers.push({ address, family });
          } catch (e) {
            if (!NOT_FOUND.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
          }
        }
        if (answers.length > 0) return answers;
      }
    }
    throw Object.assign(new Error(`lookup ${name}: no such host`), { code: 'ENOTFOUND' });
  };
}
