// Parses `ip route` / `ip -6 route` text (also `ip route show table all`) into routes: the
// type (unicast, blackhole, unreachable, prohibit, throw, local, …), the destination prefix
// (`default` is /0; a bare address is a host route), the gateway (`via`), the device, the
// `onlink` flag, metric and table, and the `nexthop` lines of a multipath route. The words
// iproute2 prints are known; any other word, a bad address or a missing value is an
// INVALID_INPUT error naming the line. Pure.

import { parseCIDR, parseIP, type IPFamily, type ParsedCIDR } from '../../util/ip.js';
import { Words, type DumpLine } from './dump-line.js';

export const ROUTE_TYPES = [
  'unicast',
  'local',
  'broadcast',
  'multicast',
  'anycast',
  'blackhole',
  'unreachable',
  'prohibit',
  'throw',
  'nat',
] as const;
export type RouteType = (typeof ROUTE_TYPES)[number];

/** One way out: a gateway and/or a device (a route has one, a multipath route several). */
export interface NextHop {
  readonly via?: string;
  readonly dev?: string;
  readonly onlink: boolean;
  readonly weight?: number;
}

export interface Route extends NextHop {
  /** Line in the input, and the line as printed (trimmed). */
  readonly line: number;
  readonly text: string;
  readonly type: RouteType;
  readonly dst: ParsedCIDR;
  readonly metric: number;
  /** `table X`; absent means main. */
  readonly table?: string;
  readonly scope?: string;
  readonly proto?: string;
  readonly src?: string;
  /** The `nexthop` lines of a multipath route (empty otherwise). */
  readonly nexthops: readonly NextHop[];
}

/** Keywords followed by one value (route attributes and metrics iproute2 prints). */
const VALUE_KEYS = new Set([
  'proto',
  'scope',
  'src',
  'metric',
  'table',
  'pref',
  'error',
  'mtu',
  'advmss',
  'rtt',
  'rttvar',
  'reordering',
  'window',
  'cwnd',
  'initcwnd',
  'initrwnd',
  'ssthresh',
  'realm',
  'realms',
  'rto_min',
  'hoplimit',
  'features',
  'quickack',
  'congctl',
  'expires',
  'fastopen_no_cookie',
  'tos',
  'dsfield',
  'from',
  'nhid',
  'ttl-propagate',
  'weight',
  'age',
  'used',
]);

/** Flags iproute2 prints after a route or next hop. */
const FLAGS = new Set([
  'onlink',
  'linkdown',
  'dead',
  'pervasive',
  'offload',
  'notify',
  'trap',
  'rt_offload',
  'rt_trap',
  'rt_offload_failed',
  'cache',
]);

/** The prefix of a route's destination word (`default`, `10.0.0.0/8`, `10.0.0.1`). */
function destinationOf(w: Words, text: string, family: IPFamily | undefined): ParsedCIDR {
  if (text === 'default') return { family: family ?? 'IPv4', base: 0n, prefix: 0 };
  const cidr = text.includes('/') ? parseCIDR(text) : undefined;
  if (cidr !== undefined) return cidr;
  const ip = text.includes('/') ? undefined : parseIP(text);
  if (ip === undefined)
    throw w.fail(`not a destination (default, ADDRESS or PREFIX/LEN): ${JSON.stringify(text)}`);
  return { family: ip.family, base: ip.value, prefix: ip.family === 'IPv4' ? 32 : 128 };
}

interface Attributes {
  via?: string;
  dev?: string;
  onlink: boolean;
  weight?: number;
  values: Map<string, string>;
}

/** Reads `key value` pairs and flags to the end of the line. */
function readAttributes(w: Words): Attributes {
  const a: Attributes = { onlink: false, values: new Map() };
  while (!w.done) {
    const word = w.next();
    if (word === 'via') {
      // `via inet6 ADDR` (an IPv4 route over an IPv6 gateway) names the gateway's family.
      if (w.peek() === 'inet' || w.peek() === 'inet6') w.next();
      a.via = w.addressOf('via');
    } else if (word === 'dev') a.dev = w.valueOf('dev');
    else if (word === 'weight') a.weight = w.numberOf('weight');
    else if (word === 'onlink') a.onlink = true;
    else if (FLAGS.has(word)) continue;
    else if (VALUE_KEYS.has(word)) {
      let v = w.valueOf(word);
      // `mtu lock 1400`: a locked metric.
      if (v === 'lock') v = w.valueOf(word);
      a.values.set(word, v);
    } else throw w.fail(`unknown word ${JSON.stringify(word)}`);
  }
  return a;
}

function routeOf(line: DumpLine, family: IPFamily | undefined): Route {
  const w = new Words(line, 'ip route');
  let first = w.next();
  let type: RouteType = 'unicast';
  if ((ROUTE_TYPES as readonly string[]).includes(first)) {
    type = first as RouteType;
    first = w.next();
  }
  const a = readAttributes(w);
  const viaFamily = a.via === undefined ? undefined : parseIP(a.via)?.family;
  const dst = destinationOf(w, first, family ?? viaFamily);
  const metricText = a.values.get('metric');
  const src = a.values.get('src');
  const table = a.values.get('table');
  const scope = a.values.get('scope');
  const proto = a.values.get('proto');
  return {
    line: line.no,
    text: line.text.trim(),
    type,
    dst,
    ...(a.via !== undefined ? { via: a.via } : {}),
    ...(a.dev !== undefined ? { dev: a.dev } : {}),
    onlink: a.onlink,
    metric: metricText === undefined ? 0 : Number(metricText),
    ...(table !== undefined ? { table } : {}),
    ...(scope !== undefined ? { scope } : {}),
    ...(proto !== undefined ? { proto } : {}),
    ...(src !== undefined ? { src } : {}),
    nexthops: [],
  };
}

function nexthopOf(line: DumpLine): NextHop {
  const w = new Words(line, 'ip route');
  w.next(); // `nexthop`
  const a = readAttributes(w);
  if (a.via === undefined && a.dev === undefined) throw w.fail('nexthop without via or dev');
  return {
    ...(a.via !== undefined ? { via: a.via } : {}),
    ...(a.dev !== undefined ? { dev: a.dev } : {}),
    onlink: a.onlink,
    ...(a.weight !== undefined ? { weight: a.weight } : {}),
  };
}

/**
 * Routes of `ip route` / `ip -6 route` lines. `family` is the family of a `default` route
 * without a gateway (the section's: `ip -6 route` is IPv6); otherwise the gateway's, else IPv4.
 * Blank lines are skipped; an indented `nexthop` line belongs to the route above it.
 */
export function parseRoutes(lines: readonly DumpLine[], family?: IPFamily): Route[] {
  const out: Route[] = [];
  for (const line of lines) {
    const t = line.text.trim();
    if (t === '') continue;
    if (t.startsWith('nexthop ') || t === 'nexthop') {
      const prev = out.pop();
      if (prev === undefined)
        throw new Words(line, 'ip route').fail('a nexthop line with no route above it');
      out.push({ ...prev, nexthops: [...prev.nexthops, nexthopOf(line)] });
      continue;
    }
    out.push(routeOf(line, family));
  }
  return out;
}
