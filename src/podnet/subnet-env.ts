// flannel's subnet.env, the one file between the node agent and the CNI side: the agent
// (flannel-agent.ts) renders it, svcnet-cni's `flannel` type parses it. Same variables and
// meaning as flanneld's: FLANNEL_NETWORK (the cluster's pod network), FLANNEL_SUBNET (this
// node's subnet written as its gateway address, e.g. 10.244.1.1/24), FLANNEL_MTU and
// FLANNEL_IPMASQ (true when flanneld itself masquerades, so the bridge must not). Pure.

import { formatCIDR, formatIP, parseCIDR, parseIP } from '../util/ip.js';

/** What subnet.env says, canonical. */
export interface SubnetEnv {
  /** FLANNEL_NETWORK as a canonical network CIDR. */
  readonly network: string;
  /** FLANNEL_SUBNET's network (host bits cleared), e.g. `10.244.1.0/24`. */
  readonly subnet: string;
  /** FLANNEL_SUBNET's address, the gateway flanneld chose, e.g. `10.244.1.1`. */
  readonly gateway: string;
  readonly mtu: number;
  readonly ipMasq: boolean;
}

/** Renders subnet.env for a node whose podCIDR is `selfPodCIDR` (the gateway is its .1). */
export function renderSubnetEnv(
  conf: { readonly network: string },
  selfPodCIDR: string,
  mtu: number,
  ipMasq: boolean,
): string {
  const c = parseCIDR(selfPodCIDR);
  const gw = c ? formatIP({ family: c.family, value: c.base + 1n }) : '';
  return [
    `FLANNEL_NETWORK=${conf.network}`,
    `FLANNEL_SUBNET=${gw}/${String(c?.prefix ?? 0)}`,
    `FLANNEL_MTU=${String(mtu)}`,
    `FLANNEL_IPMASQ=${String(ipMasq)}`,
    '',
  ].join('\n');
}

/**
 * Parses subnet.env text (`KEY=value` lines; blank lines and `#` comments ignored; unknown
 * keys such as FLANNEL_IPV6_* tolerated). Returns the problems instead when a variable is
 * missing or malformed, each naming `what` and the variable.
 */
export function parseSubnetEnv(
  text: string,
  what: string,
): { env: SubnetEnv; problems: [] } | { env: undefined; problems: string[] } {
  const vars = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) vars.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  const problems: string[] = [];
  const need = (key: string): string | undefined => {
    const v = vars.get(key);
    if (v === undefined || v === '') problems.push(`${what}: ${key}: missing`);
    return v === '' ? undefined : v;
  };
  const networkText = need('FLANNEL_NETWORK');
  const subnetText = need('FLANNEL_SUBNET');
  const mtuText = need('FLANNEL_MTU');
  const masqText = need('FLANNEL_IPMASQ');
  const network = networkText === undefined ? undefined : parseCIDR(networkText);
  if (networkText !== undefined && !network)
    problems.push(`${what}: FLANNEL_NETWORK: not a CIDR: "${networkText}"`);
  const subnet = subnetText === undefined ? undefined : parseCIDR(subnetText);
  const gateway = subnetText === undefined ? undefined : parseIP(subnetText.split('/')[0] ?? '');
  if (subnetText !== undefined && (!subnet || !gateway))
    problems.push(`${what}: FLANNEL_SUBNET: not an address/prefix: "${subnetText}"`);
  const mtu = Number(mtuText);
  if (mtuText !== undefined && (!/^\d+$/.test(mtuText) || mtu < 576 || mtu > 65535))
    problems.push(`${what}: FLANNEL_MTU: must be an integer 576-65535, got "${mtuText}"`);
  if (masqText !== undefined && masqText !== 'true' && masqText !== 'false')
    problems.push(`${what}: FLANNEL_IPMASQ: must be true or false, got "${masqText}"`);
  if (problems.length > 0 || !network || !subnet || !gateway) return { env: undefined, problems };
  return {
    env: {
      network: formatCIDR(network),
      subnet: formatCIDR(subnet),
      gateway: formatIP(gateway),
      mtu,
      ipMasq: masqText === 'true',
    },
    problems: [],
  };
}
