// The rules kube-proxy's iptables mode writes regardless of Services: KUBE-POSTROUTING and
// KUBE-MARK-MASQ, the localhost-NodePort KUBE-FIREWALL rule, the trailing NodePort jump(s)
// of nat KUBE-SERVICES, filter KUBE-FORWARD, and the jump rules from the built-in chains
// (ensured separately, on full syncs). Pure.

import type { IptablesTableName, Rule } from '../../netfilter/iptables/model.js';
import type { IPFamily } from '../../util/ip.js';
import {
  COMMENT_FORWARD,
  COMMENT_FORWARD_CONNTRACK,
  COMMENT_LOCALNET,
  COMMENT_NODEPORTS_LAST,
  COMMENT_SNAT,
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_MARK_MASQ,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
  NFACCT_CT_STATE_INVALID_DROPPED,
} from './names.js';
import { resolveNodePortAddresses } from './options.js';
import type { IptablesProxierOptions } from './options.js';

export function postroutingRules(o: IptablesProxierOptions): Rule[] {
  const m = o.masqueradeMark;
  return [
    { chain: KUBE_POSTROUTING, args: ['-m', 'mark', '!', '--mark', `${m}/${m}`, '-j', 'RETURN'] },
    { chain: KUBE_POSTROUTING, args: ['-j', 'MARK', '--xor-mark', m] },
    {
      chain: KUBE_POSTROUTING,
      args: [
        ...['-m', 'comment', '--comment', COMMENT_SNAT, '-j', 'MASQUERADE'],
        ...(o.hasRandomFully ? ['--random-fully'] : []),
      ],
    },
  ];
}

export function markMasqRules(o: IptablesProxierOptions): Rule[] {
  return [{ chain: KUBE_MARK_MASQ, args: ['-j', 'MARK', '--or-mark', o.masqueradeMark] }];
}

/** Whether filter KUBE-FIREWALL is written (IPv4 with localhost NodePorts only). */
export function writesKubeFirewall(o: IptablesProxierOptions, family: IPFamily): boolean {
  return family === 'IPv4' && o.localhostNodePorts;
}

/** Guards 127.0.0.0/8 against martian traffic once route_localnet is on (issue #90259). */
export function kubeFirewallRules(): Rule[] {
  return [
    {
      chain: KUBE_FIREWALL,
      args: [
        ...['-m', 'comment', '--comment', COMMENT_LOCALNET],
        ...['-d', '127.0.0.0/8', '!', '-s', '127.0.0.0/8'],
        ...['-m', 'conntrack', '!', '--ctstate', 'RELATED,ESTABLISHED,DNAT', '-j', 'DROP'],
      ],
    },
  ];
}

/** The last rule(s) of nat KUBE-SERVICES: hand local-destination traffic to KUBE-NODEPORTS. */
export function nodePortsJumpRules(
  o: IptablesProxierOptions,
  family: IPFamily,
): { rules: Rule[]; warnings: string[] } {
  const c = ['-m', 'comment', '--comment', COMMENT_NODEPORTS_LAST];
  const dst = resolveNodePortAddresses(o, family);
  if (dst.matchAll) {
    const local = ['-m', 'addrtype', '--dst-type', 'LOCAL'];
    if (family === 'IPv6') local.push('!', '-d', '::1/128');
    else if (!o.localhostNodePorts) local.push('!', '-d', '127.0.0.0/8');
    return {
      rules: [{ chain: KUBE_SERVICES, args: [...c, ...local, '-j', KUBE_NODEPORTS] }],
      warnings: [],
    };
  }
  return {
    rules: dst.ips.map((ip) => ({
      chain: KUBE_SERVICES,
      args: [...c, '-d', ip, '-j', KUBE_NODEPORTS],
    })),
    warnings: dst.warnings,
  };
}

export function forwardRules(o: IptablesProxierOptions): Rule[] {
  const rules: Rule[] = [];
  if (!o.conntrackTCPLiberal)
    rules.push({
      chain: KUBE_FORWARD,
      args: [
        ...['-m', 'conntrack', '--ctstate', 'INVALID'],
        ...(o.nfacct.ctStateInvalidDropped
          ? ['-m', 'nfacct', '--nfacct-name', NFACCT_CT_STATE_INVALID_DROPPED]
          : []),
        '-j',
        'DROP',
      ],
    });
  const m = o.masqueradeMark;
  rules.push({
    chain: KUBE_FORWARD,
    args: [
      ...['-m', 'comment', '--comment', COMMENT_FORWARD],
      ...['-m', 'mark', '--mark', `${m}/${m}`, '-j', 'ACCEPT'],
    ],
  });
  rules.push({
    chain: KUBE_FORWARD,
    args: [
      ...['-m', 'comment', '--comment', COMMENT_FORWARD_CONNTRACK],
      ...['-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'],
    ],
  });
  return rules;
}

/** A rule to insert at the top of a built-in chain (if not present) on full syncs. */
export interface JumpRule {
  readonly table: IptablesTableName;
  /** The built-in chain, e.g. PREROUTING. */
  readonly sourceChain: string;
  /** The kube-proxy chain jumped to (ensure it exists first). */
  readonly targetChain: string;
  /** Full rule arguments, ending in `-j targetChain`. */
  readonly args: readonly string[];
}

function jump(
  table: IptablesTableName,
  sourceChain: string,
  targetChain: string,
  comment: string,
  newOnly: boolean,
): JumpRule {
  return {
    table,
    sourceChain,
    targetChain,
    args: [
      ...(newOnly ? ['-m', 'conntrack', '--ctstate', 'NEW'] : []),
      ...(comment === '' ? [] : ['-m', 'comment', '--comment', comment]),
      '-j',
      targetChain,
    ],
  };
}

/** kube-proxy's jump rules, in the order it ensures them. */
export function jumpRules(): JumpRule[] {
  const ext = 'kubernetes externally-visible service portals';
  const portals = 'kubernetes service portals';
  const lbfw = 'kubernetes load balancer firewall';
  return [
    jump('filter', 'INPUT', KUBE_EXTERNAL_SERVICES, ext, true),
    jump('filter', 'FORWARD', KUBE_EXTERNAL_SERVICES, ext, true),
    jump('filter', 'INPUT', KUBE_NODEPORTS, 'kubernetes health check service ports', false),
    jump('filter', 'FORWARD', KUBE_SERVICES, portals, true),
    jump('filter', 'OUTPUT', KUBE_SERVICES, portals, true),
    jump('filter', 'FORWARD', KUBE_FORWARD, COMMENT_FORWARD, false),
    jump('filter', 'INPUT', KUBE_PROXY_FIREWALL, lbfw, true),
    jump('filter', 'OUTPUT', KUBE_PROXY_FIREWALL, lbfw, true),
    jump('filter', 'FORWARD', KUBE_PROXY_FIREWALL, lbfw, true),
    jump('nat', 'OUTPUT', KUBE_SERVICES, portals, false),
    jump('nat', 'PREROUTING', KUBE_SERVICES, portals, false),
    jump('filter', 'INPUT', KUBE_FIREWALL, '', false),
    jump('filter', 'OUTPUT', KUBE_FIREWALL, '', false),
    jump('nat', 'POSTROUTING', KUBE_POSTROUTING, 'kubernetes postrouting rules', false),
  ];
}
