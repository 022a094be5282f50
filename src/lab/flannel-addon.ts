// The lab's flannel: deploy/flannel.yaml (ServiceAccount, RBAC, ConfigMap kube-flannel-cfg,
// DaemonSet kube-flannel), the very manifest a real cluster applies, in a flannel lab
// (`--pod-network flannel|flannel-host-gw`), with the lab's values: net-conf.json holds the
// plan's cluster network and the network's backend (vxlan on VNI 1, UDP 8472, or host-gw).
// The Pod template loses what installs CNI on a real node, because the lab's node agent is
// the node's container runtime and keeps each node's CNI network and plugins itself, as kind's
// node image has them: the init container that copies the plugin into /opt/cni/bin and the
// install-cni container that writes /etc/cni/net.d from subnet.env (both would write the
// host's own folders here: the lab's nodes share one file system). The kube-flannel container
// runs as the manifest says, `svcnet flannel --ip-masq` in the node's namespace (hostNetwork),
// with the uplink named (`--iface eth0`) and subnet.env written to the node's own folder,
// `$(NODE_NAME)` expanded by the node agent, where that node's CNI network reads it. Pure but
// for reading the manifest.

import type { KubeObject } from '../kube/types.js';
import { NET_CONF_CONFIGMAP } from '../podnet/parse-net-conf.js';
import { flannelSubnetFile } from './components.js';
import {
  isObject,
  manifestDocs,
  readDeployManifest,
  withContainers,
  withPodSpec,
} from './deploy-manifest.js';
import { podNetworkOf, type LabPlan } from './topology.js';

export const FLANNEL_MANIFEST = 'flannel.yaml';
/** The DaemonSet's container that runs `svcnet flannel`. */
const AGENT_CONTAINER = 'kube-flannel';

/** deploy/flannel.yaml's objects with the lab's values (manifest text given); none unless flannel. */
export function flannelObjects(manifest: string, plan: LabPlan, stateDir: string): KubeObject[] {
  const net = podNetworkOf(plan);
  if (net !== 'flannel' && net !== 'flannel-host-gw') return [];
  const backend = net === 'flannel' ? { Type: 'vxlan', VNI: 1, Port: 8472 } : { Type: 'host-gw' };
  const { name, key } = NET_CONF_CONFIGMAP;
  return manifestDocs(manifest).map((doc) => {
    const meta = isObject(doc.metadata) ? doc.metadata : {};
    if (doc.kind === 'ConfigMap' && meta.name === name) {
      const data = isObject(doc.data) ? doc.data : {};
      const conf = { Network: plan.clusterCIDR, Backend: backend };
      return { ...doc, data: { ...data, [key]: `${JSON.stringify(conf, null, 2)}\n` } };
    }
    if (doc.kind !== 'DaemonSet') return doc;
    const agentOnly = withPodSpec(doc, (spec) => {
      const rest = { ...spec };
      delete rest.initContainers;
      const containers = Array.isArray(spec.containers) ? (spec.containers as unknown[]) : [];
      return {
        ...rest,
        containers: containers.filter((c) => isObject(c) && c.name === AGENT_CONTAINER),
      };
    });
    return withContainers(agentOnly, (c) => ({
      ...c,
      command: [
        ...(Array.isArray(c.command) ? (c.command as unknown[]) : []),
        '--iface',
        'eth0',
        '--subnet-file',
        flannelSubnetFile(stateDir, '$(NODE_NAME)'),
      ],
    }));
  });
}

/** The lab's flannel objects, from the deploy/ manifest on disk (none unless flannel). */
export function flannelAddon(plan: LabPlan, stateDir: string): KubeObject[] {
  const net = podNetworkOf(plan);
  if (net !== 'flannel' && net !== 'flannel-host-gw') return [];
  return flannelObjects(readDeployManifest(FLANNEL_MANIFEST), plan, stateDir);
}
