// The lab's kube-proxy: deploy/kube-proxy.yaml (ServiceAccount, RBAC, the `kube-proxy`
// ConfigMap with config.conf, the DaemonSet), the very manifest a real cluster applies, with
// the lab's values put into its KubeProxyConfiguration: the proxy mode, the cluster CIDR(s)
// (both families in a dual-stack lab), the iptables backend the lab detected
// (`iptables.svcnetVariant`), and nodePortAddresses left to the default (every local address,
// 127.0.0.1 included), as the lab's proxies always served NodePorts. In nftables mode the
// sync periods go to the `nftables:` section, which that mode reads. The DaemonSet's readiness
// probe runs every second (the manifest's 10 s is a real cluster's), so `lab up` sees a proxy
// Ready as soon as it serves. The node agent runs its Pod as `svcnet proxy` in the node's
// namespace (hostNetwork), with `$(NODE_NAME)` expanded to the node's name and the config file
// read through the configMap volume (configmap-volume.ts). Pure but for reading the manifest.

import { parse as parseYaml, stringify } from 'yaml';
import type { IptablesVariant } from '../netfilter/iptables/backend.js';
import type { KubeObject } from '../kube/types.js';
import {
  isObject,
  manifestDocs,
  readDeployManifest,
  withReadinessPeriod,
  type Json,
} from './deploy-manifest.js';
import { clusterCIDRs, type LabPlan } from './topology.js';

export const KUBE_PROXY_MANIFEST = 'kube-proxy.yaml';
export const KUBE_PROXY_LABELS = { 'k8s-app': 'kube-proxy' } as const;

export interface KubeProxyValues {
  readonly proxyMode: 'iptables' | 'nftables';
  readonly iptablesVariant?: IptablesVariant;
  /** The readiness probe's period (default 1 s). */
  readonly readinessPeriodSeconds?: number;
}

/** The KubeProxyConfiguration text with the lab's values. */
export function labKubeProxyConfig(text: string, plan: LabPlan, values: KubeProxyValues): string {
  const parsed: unknown = parseYaml(text);
  if (!isObject(parsed)) throw new Error(`${KUBE_PROXY_MANIFEST}: config.conf: not a mapping`);
  const cfg: Json = {
    ...parsed,
    mode: values.proxyMode,
    clusterCIDR: clusterCIDRs(plan).join(','),
  };
  delete cfg.nodePortAddresses;
  const iptables: Json = isObject(cfg.iptables) ? { ...cfg.iptables } : {};
  if (values.proxyMode === 'iptables' && values.iptablesVariant !== undefined)
    iptables.svcnetVariant = values.iptablesVariant;
  cfg.iptables = iptables;
  if (values.proxyMode === 'nftables') {
    const nft: Json = isObject(cfg.nftables) ? { ...cfg.nftables } : {};
    for (const k of ['masqueradeBit', 'minSyncPeriod', 'syncPeriod'])
      if (iptables[k] !== undefined && nft[k] === undefined) nft[k] = iptables[k];
    cfg.nftables = nft;
  }
  return stringify(cfg);
}

/** deploy/kube-proxy.yaml's objects with the lab's values (manifest text given). */
export function kubeProxyObjects(
  manifest: string,
  plan: LabPlan,
  values: KubeProxyValues,
): KubeObject[] {
  return manifestDocs(manifest).map((doc) => {
    const kind = doc.kind;
    if (kind === 'ConfigMap') {
      const data = isObject(doc.data) ? doc.data : {};
      const conf = data['config.conf'];
      if (typeof conf !== 'string')
        throw new Error(`${KUBE_PROXY_MANIFEST}: ConfigMap kube-proxy: data.config.conf missing`);
      return { ...doc, data: { ...data, 'config.conf': labKubeProxyConfig(conf, plan, values) } };
    }
    if (kind === 'DaemonSet') return withReadinessPeriod(doc, values.readinessPeriodSeconds ?? 1);
    return doc;
  });
}

/** The lab's kube-proxy objects, from the deploy/ manifest on disk. */
export function kubeProxyAddon(plan: LabPlan, values: KubeProxyValues): KubeObject[] {
  return kubeProxyObjects(readDeployManifest(KUBE_PROXY_MANIFEST), plan, values);
}
