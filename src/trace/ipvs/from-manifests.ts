// `svcnet trace -f FILE... --proxy-mode ipvs`: what kube-proxy's IPVS mode (our planner,
// proxy/ipvs, one full sync) would program on one node for the Services and EndpointSlices in
// the manifests — the iptables rules (as `svcnet render --mode ipvs` prints them), the ipsets
// and the virtual servers, each virtual server named by its Service port. Pure: the caller
// reads and parses the manifests.

import type { ManifestSet } from '../../kube/manifest.js';
import type { IptablesDocument } from '../../netfilter/iptables/model.js';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { DEFAULT_IPVS_OPTIONS, type IpvsProxierOptions } from '../../proxy/ipvs/options.js';
import { planIpvsFromObjects } from '../../proxy/ipvs/plan-objects.js';
import { renderIpvsIptables } from '../../proxy/ipvs/rules.js';
import { ipFamilyOf } from '../../util/ip.js';
import type { NodeSettings } from '../from-manifests.js';
import { ipsetsOf } from './ipset.js';
import { vsKey, virtualServersOf } from './ipvsadm.js';
import type { IpvsTraceState } from './step.js';

export type IpvsNodeSettings = Omit<NodeSettings, 'options'> & { readonly zone?: string };

export interface ManifestIpvs {
  readonly document: IptablesDocument;
  readonly ipvs: IpvsTraceState;
  readonly warnings: readonly string[];
}

/** Plans the manifests' Services and EndpointSlices as one node's IPVS-mode state. */
export function ipvsRulesFromManifests(set: ManifestSet, node: IpvsNodeSettings): ManifestIpvs {
  const sameFamily = node.localAddresses.filter((a) => ipFamilyOf(a) === node.family);
  const options: IpvsProxierOptions = {
    ...DEFAULT_IPVS_OPTIONS,
    nodeName: node.nodeName,
    ...(node.zone !== undefined ? { nodeZone: node.zone } : {}),
    nodeIP: node.nodeIP,
    localDetector:
      node.clusterCIDR === '' ? { mode: 'None' } : { mode: 'ClusterCIDR', cidr: node.clusterCIDR },
    nodePortIPs: sameFamily,
    localAddresses: sameFamily,
  };
  const { plan, warnings } = planIpvsFromObjects(
    set.services,
    set.endpointSlices,
    options,
    node.family,
  );
  const virtualServers = virtualServersOf(plan.virtualServers);
  const serviceNames = new Map<string, string>();
  plan.virtualServers.forEach((p, i) => {
    const v = virtualServers[i];
    if (v) serviceNames.set(vsKey(v.protocol, v.ip, v.port), p.servicePort);
  });
  return {
    document: parseDocument(renderIpvsIptables(plan.iptables)),
    ipvs: {
      ipsets: ipsetsOf(plan.ipsets),
      ipvs: { virtualServers, ignored: [] },
      serviceNames,
    },
    warnings,
  };
}
