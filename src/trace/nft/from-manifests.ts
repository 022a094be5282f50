// `svcnet trace -f FILE... --mode nftables`: the nftables ruleset kube-proxy's nftables mode
// (our planner, one full sync of a fresh proxy) would program on one node for the Services
// and EndpointSlices (and ServiceCIDRs: the drop rule for unallocated ClusterIPs) in the
// manifests — the same table `svcnet render --mode nftables` prints, applied to the atomic
// Fake. Pure: the caller reads and parses the manifests.

import type { ManifestSet } from '../../kube/manifest.js';
import { isServiceCIDR, serviceCIDRsOf } from '../../kube/service-cidr.js';
import type { Ruleset } from '../../netfilter/nftables/model.js';
import { NftFake } from '../../netfilter/nftables/fake.js';
import { defaultProxyConfig } from '../../proxy/config.js';
import { planNftablesFromObjects } from '../../proxy/nftables/plan-objects.js';
import { nftablesProxierOptionsFor } from '../../proxy/proxier-options.js';
import type { NodeSettings } from '../from-manifests.js';

/** The node the rules are rendered for (as for iptables), and its zone (topology hints). */
export type NftNodeSettings = Omit<NodeSettings, 'options'> & { readonly zone?: string };

export interface ManifestRuleset {
  readonly ruleset: Ruleset;
  readonly warnings: readonly string[];
}

/** Renders the manifests' Services, EndpointSlices and ServiceCIDRs as one node's nftables ruleset. */
export function nftRulesFromManifests(set: ManifestSet, node: NftNodeSettings): ManifestRuleset {
  const config = {
    ...defaultProxyConfig(node.nodeName),
    clusterCIDRs: node.clusterCIDR === '' ? [] : [node.clusterCIDR],
  };
  const options = nftablesProxierOptionsFor(
    config,
    { name: node.nodeName, ips: [node.nodeIP], zone: node.zone ?? '', podCIDRs: [] },
    {
      localAddresses: [node.family === 'IPv4' ? '127.0.0.1/8' : '::1/128', ...node.localAddresses],
    },
    node.family,
    serviceCIDRsOf(set.others.filter(isServiceCIDR)),
  );
  const { plan, warnings } = planNftablesFromObjects(
    set.services,
    set.endpointSlices,
    options,
    node.family,
  );
  const fake = new NftFake();
  fake.run(plan.transaction);
  return { ruleset: fake.ruleset(), warnings: [...warnings, ...plan.warnings] };
}
