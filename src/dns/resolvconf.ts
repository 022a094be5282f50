// resolv.conf, as the kubelet reads and writes it (pkg/kubelet/network/dns/dns.go): parsing a
// node's file (nameserver lines accumulate, the last search and the last options line win,
// comments dropped, trailing dots stripped), the pod's DNS config per dnsPolicy with
// dnsConfig merged in and the limits applied (3 nameservers; search entries ≤ 253 chars,
// ≤ 32 entries and ≤ 2048 chars, or 6/256 before ExpandedDNSConfig), and rendering. The DNS
// server uses parseResolvConf for its default upstreams; the lab writes pods' files. Pure.

import { SvcnetError } from '../errors.js';

export interface ResolvConf {
  readonly nameservers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** Parses resolv.conf text; a `nameserver` line without an address is an error. */
export function parseResolvConf(text: string, source = 'resolv.conf'): ResolvConf {
  const nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (line === '') return;
    const fields = line.split(/\s+/);
    const key = fields[0];
    const args = fields.slice(1);
    if (key === 'nameserver') {
      if (args.length === 0)
        throw new SvcnetError(
          'INVALID_INPUT',
          `${source}:${i + 1}: nameserver line without an address`,
        );
      nameservers.push(args[0] ?? '');
    } else if (key === 'search') {
      searches = args.map((s) => (s.endsWith('.') && s !== '.' ? s.slice(0, -1) : s));
    } else if (key === 'options') {
      options = args;
    }
  });
  return { nameservers, searches, options };
}

export interface SearchLimits {
  readonly maxPaths: number;
  readonly maxChars: number;
  readonly maxPathLen: number;
}

export const SEARCH_LIMITS: SearchLimits = { maxPaths: 32, maxChars: 2048, maxPathLen: 253 };
export const LEGACY_SEARCH_LIMITS: SearchLimits = { maxPaths: 6, maxChars: 256, maxPathLen: 253 };
export const MAX_NAMESERVERS = 3;

/** Applies the kubelet's search limits; `cut` says whether a DNSConfigForming event is due. */
export function limitSearches(
  searches: readonly string[],
  limits: SearchLimits = SEARCH_LIMITS,
): { searches: string[]; cut: boolean } {
  let cut = false;
  let out = searches.filter((s) => {
    if (s.length > limits.maxPathLen) {
      cut = true;
      return false;
    }
    return true;
  });
  if (out.length > limits.maxPaths) {
    out = out.slice(0, limits.maxPaths);
    cut = true;
  }
  while (out.length > 0 && out.join(' ').length > limits.maxChars) {
    out = out.slice(0, -1);
    cut = true;
  }
  return { searches: out, cut };
}

export function limitNameservers(ns: readonly string[]): { nameservers: string[]; cut: boolean } {
  return { nameservers: ns.slice(0, MAX_NAMESERVERS), cut: ns.length > MAX_NAMESERVERS };
}

export interface PodDNSOption {
  readonly name: string;
  readonly value?: string;
}

/** Merges pod dnsConfig options into existing ones by name; the pod's values win. */
export function mergeOptions(
  existing: readonly string[],
  pod: readonly PodDNSOption[] | null | undefined,
): string[] {
  const byName = new Map<string, string>();
  for (const o of existing) {
    const i = o.indexOf(':');
    byName.set(i < 0 ? o : o.slice(0, i), o);
  }
  for (const o of pod ?? [])
    byName.set(o.name, o.value === undefined ? o.name : `${o.name}:${o.value}`);
  return [...byName.values()];
}

export type DNSPolicyType = 'cluster' | 'host' | 'none';

/** How a pod's DNS is built from its dnsPolicy (kubelet getPodDNSType). */
export function dnsPolicyType(policy: string, hostNetwork: boolean): DNSPolicyType {
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      if (!hostNetwork) return 'cluster';
      return 'host';
    case 'Default':
      return 'host';
    default:
      throw new SvcnetError('INVALID_INPUT', `invalid dnsPolicy ${JSON.stringify(policy)}`);
  }
}

export interface PodDNSInput {
  readonly nodeResolvConf: ResolvConf;
  readonly clusterDNS: readonly string[];
  readonly clusterDomain: string;
  readonly namespace: string;
  readonly dnsPolicy: string;
  readonly hostNetwork: boolean;
  readonly dnsConfig?: {
    readonly nameservers?: readonly string[];
    readonly searches?: readonly string[];
    readonly options?: readonly PodDNSOption[];
  } | null;
  readonly legacyLimits?: boolean;
}

function appendUnique(base: readonly string[], more: readonly string[]): string[] {
  const out = [...base];
  for (const m of more) if (!out.includes(m)) out.push(m);
  return out;
}

/** The pod's resolv.conf content (kubelet GetPodDNS), and whether limits cut anything. */
export function podDNSConfig(input: PodDNSInput): ResolvConf & { cut: boolean } {
  const type = dnsPolicyType(input.dnsPolicy, input.hostNetwork);
  let nameservers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  if (type === 'cluster' && input.clusterDNS.length > 0) {
    nameservers = [...input.clusterDNS];
    const d = input.clusterDomain;
    searches = appendUnique(
      [`${input.namespace}.svc.${d}`, `svc.${d}`, d],
      input.nodeResolvConf.searches,
    );
    options = ['ndots:5'];
  } else if (type !== 'none') {
    nameservers = [...input.nodeResolvConf.nameservers];
    searches = [...input.nodeResolvConf.searches];
    options = [...input.nodeResolvConf.options];
  }
  if (input.dnsConfig) {
    nameservers = appendUnique(nameservers, input.dnsConfig.nameservers ?? []);
    searches = appendUnique(searches, input.dnsConfig.searches ?? []);
    options = mergeOptions(options, input.dnsConfig.options);
  }
  const ns = limitNameservers(nameservers);
  const s = limitSearches(searches, input.legacyLimits ? LEGACY_SEARCH_LIMITS : SEARCH_LIMITS);
  return { nameservers: ns.nameservers, searches: s.searches, options, cut: ns.cut || s.cut };
}

/** Renders resolv.conf text (lines omitted when empty). */
export function formatResolvConf(c: ResolvConf): string {
  const lines = c.nameservers.map((n) => `nameserver ${n}`);
  if (c.searches.length > 0) lines.push(`search ${c.searches.join(' ')}`);
  if (c.options.length > 0) lines.push(`options ${c.options.join(' ')}`);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

/**
 * The names a stub resolver tries for `name`, in order (resolv.conf(5)): a name ending in a
 * dot is tried as is; one with at least `ndots` dots first as is, then with each search
 * domain; otherwise with each search domain first and as is last.
 */
export function searchCandidates(
  name: string,
  conf: { searches: readonly string[]; ndots: number },
): string[] {
  if (name.endsWith('.')) return [name];
  const dots = name.split('.').length - 1;
  const expanded = conf.searches.map((s) => `${name}.${s.replace(/\.$/, '')}.`);
  return dots >= conf.ndots ? [`${name}.`, ...expanded] : [...expanded, `${name}.`];
}

/** ndots from resolv.conf options (default 1, capped at 15 as glibc does). */
export function ndotsOf(options: readonly string[]): number {
  let n = 1;
  for (const o of options) {
    const m = /^ndots:(\d+)$/.exec(o);
    if (m) n = Math.min(Number(m[1]), 15);
  }
  return n;
}

export interface SearchStep {
  readonly name: string;
  readonly type: string;
  readonly rcode: string;
}

/**
 * Walks the search list the way musl does (only NXDOMAIN moves on to the next candidate;
 * glibc also moves on after NODATA, which never happens for the names in question here).
 */
export async function walkSearch(
  name: string,
  type: string,
  conf: ResolvConf,
  query: (fqdn: string, type: string) => Promise<string>,
): Promise<{ steps: SearchStep[]; resolvedAs: string | undefined }> {
  const steps: SearchStep[] = [];
  for (const candidate of searchCandidates(name, {
    searches: conf.searches,
    ndots: ndotsOf(conf.options),
  })) {
    const rcode = await query(candidate, type);
    steps.push({ name: candidate, type, rcode });
    if (rcode !== 'NXDOMAIN')
      return { steps, resolvedAs: rcode === 'NOERROR' ? candidate : undefined };
  }
  return { steps, resolvedAs: undefined };
}
