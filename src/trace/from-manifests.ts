// `svcnet trace -f FILE...`: the rules kube-proxy (our iptables planner, one full sync) would
// program on one node for the Services and EndpointSlices in the manifests, including the
// jumps it ensures in the built-in chains (each inserted at the top, as kube-proxy does).
// Pure: the caller reads and parses the manifests.

import type { ManifestSet } from '../kube/manifest.js';
import type { IptablesDocument, Rule, TableDoc } from '../netfilter/iptables/model.js';
import { planIptables } from '../proxy/iptables/plan.js';
import {
  DEFAULT_OPTIONS,
  type IptablesProxierOptions,
  type LocalDetector,
} from '../proxy/iptables/options.js';
import { EndpointsChangeTracker } from '../proxy/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../proxy/model/service-change-tracker.js';
import { takeSnapshot } from '../proxy/model/snapshot.js';
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
  const services = new ServiceChangeTracker(node.family);
  const endpoints = new EndpointsChangeTracker(node.family, node.nodeName);
  for (const s of set.services) services.update(undefined, s);
  for (const e of set.endpointSlices) endpoints.update(undefined, e);
  const warnings = services.takeWarnings();
  const snap = takeSnapshot(services, endpoints);
  const detector: LocalDetector =
    node.clusterCIDR === '' ? { mode: 'None' } : { mode: 'ClusterCIDR', cidr: node.clusterCIDR };
  const plan = planIptables({
    family: node.family,
    services: snap.services,
    endpoints: snap.endpoints,
    options: {
      ...DEFAULT_OPTIONS,
      nodeName: node.nodeName,
      nodeIP: node.nodeIP,
      localDetector: detector,
      localAddresses: [node.family === 'IPv4' ? '127.0.0.1/8' : '::1/128', ...node.localAddresses],
      ...node.options,
    },
  });
  warnings.push(...plan.warnings);
  const tables: TableDoc[] = plan.document.tables.map((t) => {
    const jumps = plan.jumps.filter((j) => j.table === t.name);
    const builtins = [...new Set(jumps.map((j) => j.sourceChain))];
    // Each jump is inserted at the top of its chain, so the last ensured comes first.
    const jumpRules: Rule[] = jumps.reverse().map((j) => ({ chain: j.sourceChain, args: j.args }));
    return {
      ...t,
      chains: [...builtins.map((name) => ({ name, policy: 'ACCEPT' })), ...t.chains],
      rules: [...jumpRules, ...t.rules],
    };
  });
  return { document: { tables }, warnings };
}
