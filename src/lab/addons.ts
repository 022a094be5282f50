// The lab's add-on objects built in code rather than read from deploy/ (the cluster DNS and
// kube-proxy come from deploy/'s manifests: coredns-addon.ts, kube-proxy-addon.ts): a flannel
// lab gets kube-flannel's ConfigMap kube-system/kube-flannel-cfg, whose net-conf.json every
// node's `svcnet flannel` reads: the cluster network and the backend (vxlan, or host-gw). Pure.

import type { KubeObject } from '../kube/types.js';
import { NET_CONF_CONFIGMAP } from '../podnet/parse-net-conf.js';
import { podNetworkOf, type LabPlan } from './topology.js';

/** kube-flannel-cfg for a flannel lab (none for the other pod networks). */
export function flannelAddon(plan: LabPlan): KubeObject[] {
  const net = podNetworkOf(plan);
  if (net !== 'flannel' && net !== 'flannel-host-gw') return [];
  const backend = net === 'flannel' ? { Type: 'vxlan', VNI: 1, Port: 8472 } : { Type: 'host-gw' };
  const { namespace, name, key } = NET_CONF_CONFIGMAP;
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels: { app: 'flannel', tier: 'node' } },
    data: {
      [key]: `${JSON.stringify({ Network: plan.clusterCIDR, Backend: backend }, null, 2)}\n`,
    },
  };
  return [configMap] as KubeObject[];
}
