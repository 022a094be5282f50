// The settings an nftables plan depends on (kube-proxy's nftables proxier fields): node name,
// IPs and zone, the local-traffic detector, the masquerade mark, masqueradeAll,
// nodePortAddresses (default `primary` in this mode), the host's addresses and the cluster's
// ServiceCIDRs; plus their resolution for one IP family (nodeport-ips, ServiceCIDRs of the
// family). Pure.

import type { IPFamily } from '../../util/ip.js';
import { formatCIDR, parseCIDRSloppy } from '../../util/ip.js';
import {
  DEFAULT_OPTIONS as IPTABLES_DEFAULTS,
  resolveNodePortAddresses,
} from '../iptables/options.js';
import type { IptablesProxierOptions } from '../iptables/options.js';

export type { LocalDetector } from '../iptables/options.js';

/**
 * Everything besides Services and endpoints that decides one family's nftables rules. The
 * node, detector, masquerade and address fields mean what they mean in iptables mode.
 */
export interface NftablesProxierOptions extends Pick<
  IptablesProxierOptions,
  'nodeName' | 'nodeIP' | 'nodeZone' | 'localDetector' | 'masqueradeMark' | 'masqueradeAll'
> {
  /**
   * CIDRs and keywords (`primary`, `localhost`, `all`). Empty means `primary`, the nftables
   * default; `all` (or no entry of this family) means every local address (the fib rule).
   */
  readonly nodePortAddresses: readonly string[];
  /**
   * The node's interface addresses nodePortAddresses resolves against (any family, with or
   * without /prefix); nftablesProxierOptionsFor passes only those it can select. They reach
   * only the nodeport-ips set, which a partial sync rewrites when its contents change, so
   * they never force a full sync.
   */
  readonly localAddresses: readonly string[];
  /**
   * The cluster's ServiceCIDRs (any family; ServiceCIDR objects): traffic to an unallocated
   * ClusterIP inside them is dropped. Empty: no drop rule.
   */
  readonly serviceCIDRs: readonly string[];
}

/** kube-proxy's defaults for the options that have one. */
export const DEFAULT_NFTABLES_OPTIONS: Omit<NftablesProxierOptions, 'nodeName' | 'nodeIP'> = {
  nodeZone: '',
  localDetector: { mode: 'None' },
  masqueradeMark: '0x4000',
  masqueradeAll: false,
  nodePortAddresses: ['primary'],
  localAddresses: [],
  serviceCIDRs: [],
};

export type NftNodePortDestinations =
  | { readonly matchAll: true; readonly warnings: readonly string[] }
  | { readonly matchAll: false; readonly ips: readonly string[]; readonly warnings: string[] };

/**
 * nodePortAddresses for one family: `matchAll` (the `fib daddr type local` dispatch) or the
 * node's non-loopback addresses inside the listed CIDRs (the nodeport-ips set). nftables mode
 * never serves NodePorts on localhost: loopback matches are dropped with a warning.
 */
export function resolveNftNodePortAddresses(
  opts: NftablesProxierOptions,
  family: IPFamily,
): NftNodePortDestinations {
  const r = resolveNodePortAddresses(
    {
      ...IPTABLES_DEFAULTS,
      nodeName: opts.nodeName,
      nodeIP: opts.nodeIP,
      nodePortAddresses: opts.nodePortAddresses.length === 0 ? ['primary'] : opts.nodePortAddresses,
      localAddresses: opts.localAddresses,
      localhostNodePorts: false,
    },
    family,
  );
  if (r.matchAll) return { matchAll: true, warnings: [] };
  const warnings = r.warnings.map((w) =>
    w.replace(/, but .*$/, ', but nftables mode does not serve NodePorts on localhost'),
  );
  return { matchAll: false, ips: r.ips, warnings };
}

/** The ServiceCIDRs of one family, canonical, in order (kube-proxy's OnServiceCIDRsChanged). */
export function serviceCIDRsOfFamily(cidrs: readonly string[], family: IPFamily): string[] {
  const out: string[] = [];
  for (const c of cidrs) {
    const p = parseCIDRSloppy(c.trim());
    if (p?.family !== family) continue;
    const text = formatCIDR(p);
    if (!out.includes(text)) out.push(text);
  }
  return out;
}
