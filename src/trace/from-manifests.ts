// `svcnet trace -f FILE...`: the rules kube-proxy (our iptables planner, one full sync) would
// program on one node for the Services and EndpointSlices in the manifests, including the
// jumps it ensures in the built-in chains (each inserted at the top, as kube-proxy does).
// Pure: the caller reads and parses the manifests.

import type { ManifestSet } from '../kube/manifest.js';
import type { IptablesDocument, Rule, TableDoc } from '../netfilter/iptables/model.js';
import { defaultProxyConfig } from '../proxy/config.js';
import { hooksInLiveOrder } from '../proxy/iptables/hooks.js';
import { DEFAULT_OPTIONS, type IptablesProxierOptions } from '../proxy/iptables/options.js';
import { planFromObjects } from '../proxy/iptables/plan-objects.js';
import { proxierOptionsFor } from '../proxy/proxier-options.js';
import type { IPFamily } from '../util/ip.js';

export interface NodeSettings {
  readonly family: IPFamily;
  /** The node whose rules are rendered (endpoint locality, traffic policies). */
  readonly nodeName: string;
  /** Primary node IP ('' when unknown). */
  readonly nodeIP: string;
  /** The node's addresses (nodePortAddresses resolution); loopback is added. */
  readonly localAddresses: readonly string[];
  /** Pod CIDR for kube-proxy's ClusterCIDR local-traffic detector; none when empty. */
  readonly clusterCIDR: string;
  /** Other proxier options (e.g. no nfacct counters on a host without them). */
  readonly options?: Partial<IptablesProxierOptions>;
}

export interface ManifestRules {
  readonly document: IptablesDocument;
  readonly warnings: readonly string[];
}

/** Renders the manifests' Services and EndpointSlices as one node's iptables rules. */
export function rulesFromManifests(set: ManifestSet, node: NodeSettings): ManifestRules {
  const config = {
    ...defaultProxyConfig(node.nodeName),
    clusterCIDRs: node.clusterCIDR === '' ? [] : [node.clusterCIDR],
  };
  const options = proxierOptionsFor(
    config,
    { name: node.nodeName, ips: [node.nodeIP], zone: '', podCIDRs: [] },
    {
      localAddresses: [node.family === 'IPv4' ? '127.0.0.1/8' : '::1/128', ...node.localAddresses],
      conntrackTCPLiberal: DEFAULT_OPTIONS.conntrackTCPLiberal,
      nfacct: DEFAULT_OPTIONS.nfacct,
    },
    node.family,
  );
  const { plan, warnings } = planFromObjects(
    set.services,
    set.endpointSlices,
    { ...options, ...node.options },
    node.family,
  );
  // The jumps from the built-in chains as the proxy leaves them on a node it set up alone.
  const hooks = hooksInLiveOrder('proxy-only', plan.jumps);
  const tables: TableDoc[] = plan.document.tables.map((t) => {
    const builtins = [
      ...new Set(plan.jumps.filter((j) => j.table === t.name).map((j) => j.sourceChain)),
    ];
    const jumpRules: Rule[] = hooks
      .filter((j) => j.table === t.name)
      .map((j) => ({ chain: j.sourceChain, args: j.args }));
    return {
      ...t,
      chains: [...builtins.map((name) => ({ name, policy: 'ACCEPT' })), ...t.chains],
      rules: [...jumpRules, ...t.rules],
    };
  });
  return { document: { tables }, warnings: [...warnings, ...plan.warnings] };
}
